"""Entropy and divergence of chain marginals (``math.md`` eq. 18-19).

Marginals of a sequence are ``unary[u0 : u0 + T*K]`` and
``pair[p0 : p0 + (T-1)*K*K]`` in the token-major layout of :mod:`.oracle`, so
the same kernels read oracle buffers and slices of the dual marginal store.
"""

import numpy as np
from numba import njit

from ._fastmath import NJIT_FAST, flog, xlogx


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


@njit(**NJIT_FAST)
def smoothed_dirac_marginals(labels, start, T, K, c, scores, trans, emit, alpha, beta, scale,
                             unary, pair):
    """Marginals of the chain scoring c on the true labels and transitions (eq. 21).

    Written into ``unary``/``pair`` (offset 0); ``scores`` and ``trans`` are
    scratch buffers. Forward-backward is done in closed form-free generality by
    the oracle's scaled recursion with a position-specific pairwise term.
    """
    # Unary potentials: exp(c) on the true label. Pairwise: exp(c) on the true
    # transition of each edge, which differs per edge, so run the recursion here.
    KK = K * K
    big = np.exp(c)
    for t in range(T):
        for k in range(K):
            emit[t * K + k] = 1.0
        emit[t * K + labels[start + t]] = big
    # forward
    for t in range(T):
        row = t * K
        if t == 0:
            for k in range(K):
                alpha[k] = emit[k]
        else:
            prev = row - K
            ya = labels[start + t - 1]
            yb = labels[start + t]
            s = 0.0
            for k in range(K):
                s += alpha[prev + k]
            for l in range(K):
                alpha[row + l] = s
            alpha[row + yb] += alpha[prev + ya] * (big - 1.0)
            for l in range(K):
                alpha[row + l] *= emit[row + l]
        z = 0.0
        for k in range(K):
            z += alpha[row + k]
        for k in range(K):
            alpha[row + k] /= z
        scale[t] = z
    last = (T - 1) * K
    for k in range(K):
        beta[last + k] = 1.0
        unary[last + k] = alpha[last + k]
    for t in range(T - 2, -1, -1):
        row = t * K
        nxt = row + K
        ya = labels[start + t]
        yb = labels[start + t + 1]
        for l in range(K):
            scores[l] = emit[nxt + l] * beta[nxt + l] / scale[t + 1]
        g_sum = 0.0
        for l in range(K):
            g_sum += scores[l]
        for k in range(K):
            ak = alpha[row + k]
            for l in range(K):
                pair[t * KK + k * K + l] = ak * scores[l]
            beta[row + k] = g_sum
        pair[t * KK + ya * K + yb] *= big
        beta[row + ya] += scores[yb] * (big - 1.0)
        for k in range(K):
            unary[row + k] = alpha[row + k] * beta[row + k]
