"""An independent reference optimum: scipy's L-BFGS-B run to machine precision."""

from __future__ import annotations

import numpy as np
import scipy.optimize

from crfsdca.model.objective import primal_and_gradient
from crfsdca.solvers.base import Problem


def lbfgs_optimum(p: Problem, w0: np.ndarray | None = None, maxcor: int = 50):
    """(w*, P*) of ``p`` by scipy's L-BFGS-B from ``w0`` (zeros by default)."""
    res = scipy.optimize.minimize(
        lambda w: primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam),
        np.zeros(p.dim) if w0 is None else w0, jac=True, method="L-BFGS-B",
        options={"maxiter": 10_000, "gtol": 1e-12, "ftol": 1e-16, "maxcor": maxcor})
    return res.x, res.fun
