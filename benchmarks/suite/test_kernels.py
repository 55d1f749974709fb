"""The kernels' rates on the default fit's problem (Dutch, the tutorial's features and
arguments, CRFsuite's feature set): one oracle pass (scores, exp(W), forward-backward with
all marginals, every training sentence) and one SDCA-GAP epoch, with the epoch's cost in
bare passes and its steps' cycles by phase (the solver's counters).
"""

from __future__ import annotations

import numpy as np
import pytest
import workload

from crfsdca.model.objective import oracle_pass
from crfsdca.solvers.sdca import SDCA

ROUNDS = 7


@pytest.fixture(scope="module")
def problem(dutch):
    return workload.problem_of(dutch[0], dutch[1], workload.DEFAULT_FIT["c2"])


def _pass(problem):
    w = np.random.default_rng(0).normal(scale=0.1, size=problem.dim)  # trained |w| ~ 0.1-1
    return lambda: oracle_pass(w, problem.train, problem.n_attributes, problem.n_labels)


def _facts(problem) -> dict:
    return {"sentences": problem.n, "tokens": int(problem.train.n_tokens),
            "labels": problem.n_labels, "weights": int(problem.dim)}


def test_oracle_pass(benchmark, problem):
    benchmark.pedantic(_pass(problem), rounds=ROUNDS, warmup_rounds=1)
    facts = _facts(problem)
    benchmark.extra_info.update(
        facts, tokens_per_second=round(facts["tokens"] / benchmark.stats.stats.median))


def test_sdca_epoch(benchmark, problem):
    solver = SDCA(problem, sampler="gap", seed=0)
    solver.run(problem.n)  # a warm-up epoch: out of the first epoch's regime
    solver.diagnostics()
    bare = workload.seconds(_pass(problem))
    benchmark.pedantic(lambda: solver.run(problem.n), rounds=ROUNDS)
    diagnostics = solver.diagnostics()
    benchmark.extra_info.update(
        _facts(problem), bare_pass_seconds=round(bare, 6),
        passes_per_epoch=round(benchmark.stats.stats.median / bare, 2),
        line_search_evaluations_per_step=round(diagnostics["ls_iters"], 3),
        cycle_shares={k[len("share_"):]: round(v, 4) for k, v in diagnostics.items()
                      if k.startswith("share_")})
