"""An independent reference optimum: scipy's L-BFGS-B run to machine precision."""

from __future__ import annotations

import numpy as np
import scipy.optimize

from crfsdca.model.objective import primal_and_gradient
from crfsdca.solvers.base import Problem


def lbfgs_optimum(p: Problem, w0: np.ndarray | None = None, maxcor: int = 50):
    """(w*, P*) of ``p`` by scipy's L-BFGS-B from ``w0`` (zeros by default), over the
    features of ``p.feature_mask`` only (the other weights fixed at 0)."""
    keep = np.ones(p.dim, bool) if p.feature_mask is None else p.feature_mask.astype(bool)

    def fun(x):
        w = np.zeros(p.dim)
        w[keep] = x
        f, g = primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam)
        return f, g[keep]

    x0 = np.zeros(p.dim) if w0 is None else np.asarray(w0, dtype=np.float64)
    res = scipy.optimize.minimize(
        fun, x0[keep], jac=True, method="L-BFGS-B",
        options={"maxiter": 10_000, "gtol": 1e-12, "ftol": 1e-16, "maxcor": maxcor})
    w = np.zeros(p.dim)
    w[keep] = res.x
    return w, res.fun
