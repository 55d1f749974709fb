"""Plain-numpy CRF code in the style of the paper's implementation, as a speed reference.

Vectorized over labels, a Python loop over tokens, log-space recursions with
``scipy.special.logsumexp``. Only the benchmarks use it: ratios to it show what
the numba core buys.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def unary_scores(w, seq, i, A, K):
    E = w[: A * K].reshape(A, K)
    B = w[A * K : A * K + 3 * K].reshape(K, 3)
    start, stop = seq.offsets[i], seq.offsets[i + 1]
    T = stop - start
    u = np.empty((T, K))
    for t in range(T):
        tok = start + t
        attrs = seq.attr_indices[seq.attr_indptr[tok] : seq.attr_indptr[tok + 1]]
        u[t] = E[attrs].sum(axis=0) + B[:, 0]
    u[0] += B[:, 1]
    u[-1] += B[:, 2]
    return u


def oracle(w, seq, i, A, K):
    """log Z, unary (T, K) and pairwise (T-1, K, K) marginals of sequence i."""
    W = w[A * K + 3 * K :].reshape(K, K)
    u = unary_scores(w, seq, i, A, K)
    T = len(u)
    la = np.empty((T, K))
    lb = np.zeros((T, K))
    la[0] = u[0]
    for t in range(1, T):
        la[t] = logsumexp(la[t - 1][:, None] + W, axis=0) + u[t]
    for t in range(T - 2, -1, -1):
        lb[t] = logsumexp(W + (u[t + 1] + lb[t + 1])[None, :], axis=1)
    logz = logsumexp(la[-1])
    unary = np.exp(la + lb - logz)
    pair = np.exp(la[:-1, :, None] + W[None] + (u[1:] + lb[1:])[:, None, :] - logz)
    return logz, unary, pair


def chain_entropy(un, pa):
    """H~ of marginals (T, K) and (T-1, K, K), numpy."""
    if len(pa) == 0:
        return -np.sum(un * np.log(un))
    return -np.sum(pa * np.log(pa)) + np.sum(un[1:-1] * np.log(un[1:-1]))


class NumpySDCA:
    """SDCA with gap sampling written as plain numpy code (one sequence per Python step)."""

    def __init__(self, seq, A, K, lam, mu_unary, mu_pair, w, seed=0):
        self.seq, self.A, self.K, self.lam = seq, A, K, lam
        self.n = seq.n_sequences
        off = seq.offsets
        self.mu_u = [mu_unary[off[i] * K : off[i + 1] * K].reshape(-1, K).copy()
                     for i in range(self.n)]
        self.mu_p = [mu_pair[(off[i] - i) * K * K : (off[i + 1] - i - 1) * K * K]
                     .reshape(-1, K, K).copy() for i in range(self.n)]
        self.w = w.copy()
        self.rng = np.random.default_rng(seed)
        self.gaps = np.full(self.n, 100.0)

    def step(self, i, tol=1e-3):
        A, K, seq = self.A, self.K, self.seq
        lam_n = self.lam * self.n
        _, nu_u, nu_p = oracle(self.w, seq, i, A, K)
        mu_u, mu_p = self.mu_u[i], self.mu_p[i]
        d_u, d_p = nu_u - mu_u, nu_p - mu_p
        self.gaps[i] = (np.sum(mu_p * np.log(mu_p / nu_p))
                        - np.sum(mu_u[1:-1] * np.log(mu_u[1:-1] / nu_u[1:-1])))
        # primal direction, dense in emission for simplicity of the reference
        v = np.zeros_like(self.w)
        start = seq.offsets[i]
        E = v[: A * K].reshape(A, K)
        for t in range(len(d_u)):
            tok = start + t
            E[seq.attr_indices[seq.attr_indptr[tok] : seq.attr_indptr[tok + 1]]] += d_u[t]
        Bv = v[A * K : A * K + 3 * K].reshape(K, 3)
        Bv[:, 0] = d_u.sum(axis=0)
        Bv[:, 1] += d_u[0]
        Bv[:, 2] += d_u[-1]
        v[A * K + 3 * K :] = d_p.sum(axis=0).ravel()
        v *= -1.0 / lam_n
        wv, vv = self.w @ v, v @ v

        def derivatives(g):
            qp, qu = mu_p + g * d_p, mu_u[1:-1] + g * d_u[1:-1]
            fp = (-np.sum(d_p * np.log(qp)) + np.sum(d_u[1:-1] * np.log(qu))
                  - lam_n * (wv + g * vv))
            fpp = -np.sum(d_p**2 / qp) + np.sum(d_u[1:-1] ** 2 / qu) - lam_n * vv
            return fp, fpp

        lo, hi, g = 0.0, 1.0, 0.5
        for _ in range(50):
            fp, fpp = derivatives(g)
            lo, hi = (g, hi) if fp > 0 else (lo, g)
            new = g - fp / fpp
            if not lo < new < hi:
                new = 0.5 * (lo + hi)
            if abs(new - g) < tol:
                break
            g = new
        mu_u += g * d_u
        mu_p += g * d_p
        self.w += g * v

    def run(self, n_steps, theta=0.8):
        for _ in range(n_steps):
            if self.rng.random() < theta:
                i = int(self.rng.choice(self.n, p=self.gaps / self.gaps.sum()))
            else:
                i = int(self.rng.integers(self.n))
            self.step(i)
