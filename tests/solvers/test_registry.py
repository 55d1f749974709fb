"""Adding a solver is its registry entry plus its module: a toy solver (full-batch gradient
descent with a backtracking step) registered here trains through the estimator, the
``train`` command and the memory check, with nothing else changed."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from crfsdca import CRF
from crfsdca.cli import main
from crfsdca.data.hdf5 import Dataset, write_dataset
from crfsdca.data.radii import squared_radii
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import ConfigError
from crfsdca.model.objective import primal_and_gradient
from crfsdca.runtime import memory
from crfsdca.solvers.base import Problem, Solver
from crfsdca.solvers.options import Option, OptionTable
from crfsdca.solvers.registry import SOLVERS, SolverSpec, spec

TOY_OPTIONS = OptionTable("toy", [
    Option("shrink", float, 0.5, "step factor of the backtracking search", bounds="(0, 1)"),
], prefix="toy")


class GradientDescent(Solver):
    """Gradient descent on P with an Armijo backtracking step: one iteration per step."""

    name = "toy"
    OPTIONS = TOY_OPTIONS

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1, w0=None, **options):
        super().__init__(problem, seed, threads, **options)
        self.w = np.zeros(problem.dim) if w0 is None else np.array(w0, dtype=float)
        self.evals = self.iterations = 0
        self.step = 1.0

    @property
    def steps_per_epoch(self) -> int:
        return 1

    def _fun(self, w):
        p = self.problem
        self.evals += 1
        return primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam,
                                   p.feature_mask)

    def run(self, n_steps: int) -> None:
        for _ in range(n_steps):
            f, g = self._fun(self.w)
            gg = float(g @ g)
            t = 2 * self.step
            while True:
                trial = self.w - t * g
                if self._fun(trial)[0] <= f - 0.5 * t * gg or t < 1e-12:
                    break
                t *= self.opts["shrink"]
            self.w, self.step = trial, t
            self.iterations += 1

    def prepare(self) -> None:
        pass

    def weights(self):
        return self.w

    def counters(self):
        n = self.problem.n
        return {"oracle_fb": self.evals * n, "oracle_fwd": 0, "updates": self.iterations,
                "ls_evals": self.evals}

    def memory_bytes(self):
        return {"weights": self.w.nbytes}


TOY = SolverSpec("toy", "Toy GD", TOY_OPTIONS, f"{__name__}:GradientDescent",
                 state=lambda options, sizes: {"weights": 8 * sizes.dim},
                 seeded=False, continues_from="weights")


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(SOLVERS, "toy", TOY)
    return TOY


def _problem(K=3, A=12, n=40):
    train = synthetic_sequences(n, 2, 6, K, A, 3, seed=5)
    return Problem(train=train, n_attributes=A, n_labels=K, lam=0.1,
                   radii=squared_radii(train, K, A), label_names=("a", "b", "c"))


def test_the_memory_estimate_is_the_entry_s(toy):
    p = _problem()
    built = spec("toy").configure().build(p)
    sizes = memory.DataSizes.of_problem(p)
    assert spec("toy").configure().state_bytes(sizes) == built.memory_bytes()
    assert spec("toy").configure().train_bytes(sizes) > built.memory_bytes()["weights"]


def test_the_estimator_trains_continues_and_refuses_what_the_entry_does_not_offer(toy):
    X = [[{"w": "x"}, {"w": "y"}], [{"w": "y"}, {"w": "z"}, {"w": "x"}]] * 10
    y = [["A", "B"], ["B", "C", "A"]] * 10
    crf = CRF(algorithm="toy", c2=0.1, epsilon=1e-6, max_iterations=500).fit(X, y)
    assert crf.predict(X) == y
    assert crf.training_log_[-1]["relative_gap"] <= 1e-6  # the gradient certificate
    assert crf.model_.training["status"] == "converged"
    crf.set_params(warm_start=True)
    crf.fit(X, y)  # continues from the weights, as the entry says
    assert len(crf.training_log_) <= 3
    with pytest.raises(ConfigError, match="toy does not handle an L1 term"):
        CRF(algorithm="toy", c1=0.1).fit(X, y)
    with pytest.raises(ConfigError, match="partial_fit continues a dual state"):
        CRF(algorithm="toy").partial_fit(X, y)


def test_the_train_command_runs_it_with_its_options(toy, tmp_path):
    p = _problem()
    ds = Dataset("syn", p.train, None, list("abc"), [f"a{j}" for j in range(12)], p.radii)
    data = write_dataset(tmp_path / "syn.h5", ds)
    out = tmp_path / "run"
    assert main(["train", "--data", str(data), "--solver", "toy", "--toy-shrink", "0.3",
                 "--epochs", "20", "--out", str(out), "--progress", "off"]) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["solver"]["solver"] == "toy" and meta["solver"]["shrink"] == 0.3
    rows = (out / "trace.csv").read_text().splitlines()
    assert math.isfinite(float(rows[-1].split(",")[rows[0].split(",").index("primal")]))


def test_only_the_runs_that_use_the_radii_compute_them(monkeypatch):
    """The radii R_i cost a pass over the data: the estimator makes it only for the
    importance samplers and SDCA's theoretical step, which fail without them."""
    from crfsdca import CRF
    from crfsdca.cli.precompile import tiny_data

    sdca = SOLVERS["sdca"]
    assert not sdca.configure({}).needs_radii()
    assert sdca.configure({"sampler": "importance"}).needs_radii()
    assert sdca.configure({"sampler": "gap-importance"}).needs_radii()
    assert sdca.configure({"line_search": "fixed"}).needs_radii()
    assert not sdca.configure({"line_search": "fixed", "step_size": 0.5}).needs_radii()
    assert not SOLVERS["lbfgs"].configure().needs_radii()
    import crfsdca.data.radii as radii

    computed = []
    real = radii.squared_radii
    monkeypatch.setattr(radii, "squared_radii", lambda *a: computed.append(1) or real(*a))
    X, y = tiny_data(2)
    for options, needed in (({"sampler": "importance"}, True),
                            ({"line_search": "fixed"}, True), ({}, False)):
        computed.clear()
        crf = CRF(max_iterations=3, **options).fit(X, y)
        assert crf.training_log_.last_iteration["epoch"] == 3
        assert computed == ([1] if needed else [])
