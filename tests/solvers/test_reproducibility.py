"""Bitwise reproducibility: the same seed gives the same weights, whatever ran before.

A run's last bits used to depend on where its arrays lay in memory (vectorized sums in
loops that also store get runtime alias checks with a scalar fallback; ``crfsdca.runtime.jit``):
here every solver runs after another solver, with arrays of random sizes allocated in
between, and must give the same weights bit for bit each time.
"""

import numpy as np
import pytest

from crfsdca.data.radii import squared_radii
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.solvers.base import Problem
from crfsdca.solvers.registry import SOLVER_NAMES, make_solver


def _problem():
    K, A = 20, 300  # long sequences, many labels: the sizes where the old kernels varied
    train = synthetic_sequences(60, 4, 30, K, A, 6, seed=3)
    return Problem(train, A, K, 1.0 / 60, radii=squared_radii(train, K, A))


@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_same_seed_same_weights_after_other_solvers(solver):
    p = _problem()
    rng = np.random.default_rng(0)
    runs = []
    for other in ("oeg", "sdca", "sag-nus"):
        make_solver(other, p, seed=1).run(p.n)  # state left behind, other addresses
        junk = [np.empty(int(rng.integers(1, 50000))) for _ in range(9)]  # noqa: F841
        s = make_solver(solver, p, seed=7)
        s.run(3 * s.steps_per_epoch if solver != "lbfgs" else 5)
        runs.append(np.array(s.weights()))
    for w in runs[1:]:
        assert np.array_equal(w, runs[0])
