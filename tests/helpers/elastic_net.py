"""Elastic-net (L1 + L2) problems and their references, shared by
solvers/test_elastic_net.py and solvers/test_catalyst.py: the same objective minimized by
scipy's L-BFGS-B on w = p - q with p, q >= 0, and the dual recomputed in full."""

import numpy as np
import scipy.optimize

from crfsdca.model.features import crfsuite_mask
from crfsdca.model.objective import (
    primal,
    primal_and_gradient,
    sequence_entropies,
    weights_from_marginals,
)
from crfsdca.solvers.base import Problem
from helpers.bruteforce import random_split


def l1_problem(l1=0.02, seed=5, n=25, K=3, A=8, real=True, masked=False):
    rng = np.random.default_rng(seed)
    seq = random_split(rng, n, 6, K, A, max_attrs=3, real=real)
    mask = crfsuite_mask(seq, A, K) if masked else None
    return Problem(seq, A, K, 1.0 / n, feature_mask=mask, l1=l1)


def split_lbfgs_optimum(p: Problem):
    """(w*, P*) minimizing P with its L1 term, over p - q with p, q >= 0."""
    keep = np.ones(p.dim, bool) if p.feature_mask is None else p.feature_mask.astype(bool)
    m = int(keep.sum())

    def fun(z):
        w = np.zeros(p.dim)
        w[keep] = z[:m] - z[m:]
        f, g = primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam)
        g = g[keep]
        return f + p.l1 * z.sum(), np.concatenate([g + p.l1, -g + p.l1])

    res = scipy.optimize.minimize(fun, np.zeros(2 * m), jac=True, method="L-BFGS-B",
                                  bounds=[(0.0, None)] * (2 * m),
                                  options={"maxiter": 20_000, "gtol": 1e-13, "ftol": 1e-16,
                                           "maxcor": 50})
    w = np.zeros(p.dim)
    w[keep] = res.x[:m] - res.x[m:]
    return w, primal(w, p.train, p.n_attributes, p.n_labels, p.lam, p.l1)


def full_dual(p: Problem, mu_u, mu_p) -> float:
    """D(mu) = mean H~(mu_i) - lam g*(v), g*(v) = 1/2 sum (|v| - kappa)_+^2, recomputed."""
    v = weights_from_marginals(mu_u, mu_p, p.train, p.n_attributes, p.n_labels, p.lam,
                               p.feature_mask)
    ent = sequence_entropies(mu_u, mu_p, p.n_labels, p.train.offsets, np.empty(p.n))
    gstar = 0.5 * float(np.sum(np.maximum(np.abs(v) - p.kappa, 0.0) ** 2))
    return float(ent.mean()) - p.lam * gstar
