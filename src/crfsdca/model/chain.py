"""Entropy and divergence of chain marginals (``math.md`` eq. 18-19).

Marginals of a sequence are ``unary[u0 : u0 + T*K]`` and
``pair[p0 : p0 + (T-1)*K*K]`` in the token-major layout of :mod:`.oracle`, so
the same kernels read oracle buffers and slices of the dual marginal store.
"""

import numpy as np
from numba import njit

from ..runtime.jit import NJIT, NJIT_FAST
from .fastmath import flog, xlogx
from .oracle import chain_marginals, transition_potentials


@njit(**NJIT_FAST)
def chain_entropy(unary, u0, pair, p0, T, K):
    """H~(mu) = sum of clique entropies - sum of inner separator entropies; H(mu_1) if T = 1."""
    if T == 1:
        h = 0.0
        for k in range(K):
            h -= xlogx(np.float64(unary[u0 + k]))
        return h
    h = 0.0
    for j in range(p0, p0 + (T - 1) * K * K):
        h -= xlogx(np.float64(pair[j]))
    for j in range(u0 + K, u0 + (T - 1) * K):
        h += xlogx(np.float64(unary[j]))
    return h


@njit(**NJIT_FAST)
def _kl_terms(p, p0, q, q0, size):
    s = 0.0
    for j in range(size):
        pj = np.float64(p[p0 + j])
        s += 0.0 if pj <= 0.0 else pj * (flog(pj) - flog(np.float64(q[q0 + j])))
    return s


@njit(**NJIT_FAST)
def chain_divergence(mu_unary, mu_u0, mu_pair, mu_p0, nu_unary, nu_u0, nu_pair, nu_p0, T, K):
    """D~(mu || nu) = sum of clique KLs - sum of inner separator KLs; KL(mu_1 || nu_1) if T = 1."""
    if T == 1:
        return _kl_terms(mu_unary, mu_u0, nu_unary, nu_u0, K)
    d = _kl_terms(mu_pair, mu_p0, nu_pair, nu_p0, (T - 1) * K * K)
    d -= _kl_terms(mu_unary, mu_u0 + K, nu_unary, nu_u0 + K, (T - 2) * K)
    return d


@njit(**NJIT)
def smoothed_dirac_marginals(labels, start, T, K, c, ws, zeros):
    """Marginals of the chain scoring c on the true labels and on the true transitions
    (``math.md`` section 5.1: [LP]'s smoothed Dirac, in place of eq. 21), into
    ``ws.unary``/``ws.pair`` (offset 0). ``zeros`` holds K*K zeros (the transition
    log-potentials). Solved by the oracle's recursion with a bonus c on the gold edges.
    """
    for t in range(T):
        for k in range(K):
            ws.scores[t * K + k] = 0.0
        ws.scores[t * K + labels[start + t]] = c
    tmax = transition_potentials(zeros, 0, K, ws.trans)
    chain_marginals(ws, T, K, zeros, 0, tmax, c, labels, start, False)
