"""What the end of a Catalyst round costs, timed in one process (issue 28).

Question: What does the end of a Catalyst round cost: x_k's certificate by a primal pass
    against a refresh of every stored gap?
Date: 2026-11-26
Commit: 57e9967
Answer: x_k's certificate 0.094 s against 0.131 s on Dutch, 0.349 s against 0.439 s on
    CoNLL-2000 (c1 = 0.5, c2 = 0.01, after 3 epochs). (Since 2026-11-27 the solver comes
    from `run_solver` on the estimator's problem, not from patching a fit.)
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/round_end.py`.

A round of the default fit ends with two certificates (``SDCA._end_round``): x_k's by a
primal pass (``_primal_gap``: the scores, the forward pass, the gold labeling) and the
moved w's by a refresh of every stored gap (``_refreshed_gap``: the same, plus
E_mu[score] over the whole marginal store, which leaves the sampler the new round's
gaps). Both give P(w) - D(mu) exactly; this times each, and their parts, alternated on
the solver of a default fit stopped after a few epochs (the practitioner's data:
the tutorial's features on CoNLL-2002 Dutch, CRFsuite's chunking features on
CoNLL-2000; one thread). Medians of ``--repeat`` calls.

    cd benchmarks/studies && python round_end.py --datasets ner chunk --c1 0.5 --c2 0.01
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import machine, markdown_table  # noqa: E402
from practitioner import load  # noqa: E402


def solver_of_a_fit(name: str, c1: float, c2: float, epochs: int):
    """The SDCA solver of ``crfsdca.CRF(c1, c2, all_possible_transitions=True).fit`` after
    ``epochs`` epochs: the estimator's problem and solver configuration, run by
    ``run_solver`` as the fit runs it (no stopping rule)."""
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.training.feature_set import crfsuite_feature_mask
    from crfsdca.training.learn import make_problem, solver_config
    from crfsdca.training.run import run_solver

    X, y, _, _ = load(name)
    attributes, labels = Vocabulary(()), Vocabulary(())
    train, _, zero_entries = encode(X, y, attributes, labels, grow=True)
    A, K = len(attributes), len(labels)
    mask = crfsuite_feature_mask(train, A, K, False, True, 0.0, False, zero_entries)
    problem = make_problem(train, A, K, labels.strings(), c2, mask, c1=c1)
    config = solver_config("sdca", {})
    return run_solver(problem, config, epochs=epochs, evaluate_test=False,
                      certify=config.spec.converges, early=()).solver


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", type=float, default=0.5)
    ap.add_argument("--c2", type=float, default=0.01)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    from crfsdca.model.objective import primal

    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = []
    for name in args.datasets:
        s = solver_of_a_fit(name, args.c1, args.c2, args.epochs)
        p = s.problem
        parts = {
            "x_k: primal pass + dual": s._primal_gap,
            "moved w: refresh + O(d) rest": s._refreshed_gap,
            "primal pass alone": lambda s=s, p=p: primal(
                s.state.w, p.train, p.n_attributes, p.n_labels, p.lam, p.l1, s.threads),
            "refresh alone": s.refresh_gaps,
        }
        seconds = {part: [] for part in parts}
        for _ in range(args.repeat + 1):  # the first round of calls is a warm-up
            for part, fn in parts.items():
                t0 = time.perf_counter()
                fn()
                seconds[part].append(time.perf_counter() - t0)
        row = {"dataset": name, "weights": f"{len(s.state.w):,}"}
        row.update({f"{part} s": f"{statistics.median(v[1:]):.4f}"
                    for part, v in seconds.items()})
        rows.append(row)
        print(row, flush=True)
    print(markdown_table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
