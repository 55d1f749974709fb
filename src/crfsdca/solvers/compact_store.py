"""SDCA's compact dual store (``math.md`` section 5.6): per sequence, its unary marginals,
its pairwise marginals summed over the edges (K^2) and a lower bound h_i of its entropy,
in place of every edge's pairwise table: n K^2 pairwise entries instead of (N - n) K^2
(CoNLL-2000: 72 MB in place of 823; the POS sample: 92 MB in place of 1.4 GB).

The weights need only the sums (the transitions are shared by the edges), and a lower
bound of each block's entropy gives a lower bound of the dual, so every gap is still a
certificate (P(w) - D_h >= P(w) - D). The step's line search maximizes the dual with the
entropy of the mixture mu_i + gamma delta replaced by a bound that the store can
evaluate (:func:`bound_line_search`): dual points are mixtures of chains, and a mixture's
entropy exceeds the mixed entropies by the mutual information of the mixing choice and the
labelling, at least that with one position's label (data processing)::

    H~((1 - gamma) mu + gamma nu) >= (1 - gamma) h_i + gamma H(nu)
                                     + JS_gamma(mu_t, nu_t)

with t the position whose unary marginals move most, and JS_gamma(a, b) = H((1 - gamma) a
+ gamma b) - (1 - gamma) H(a) - gamma H(b). The bound is concave in gamma and costs K
logarithms an evaluation (the exact search: (T - 1) K^2). h_i takes the bound's value at
the step. Measured against the exact store (``benchmarks/studies/compact_dual.py``): to
the default relative gap 1.0-1.17x its epochs; a longer start.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..data.sequences import Sequences
from ..model.chain import chain_entropy, smoothed_dirac_marginals
from ..model.objective import unary_store
from ..model.oracle import make_workspace, sum_products
from ..model.passes import chunk_bounds, claim, claims, sequence_weight
from ..model.stats import (
    add_dense_label_stats,
    add_dense_marginal_stats,
    add_label_stats,
    add_marginal_stats,
    apply_mask,
)
from ..runtime.jit import NJIT, aligned_empty, aligned_zeros, stream_empty
from ..runtime.threads import run_parallel
from .sdca_linesearch import (
    MAX_LINE_SEARCH_ITERATIONS,
    _entropy_terms,
    newton_step,
    quadratic,
)


def compact_sizes(seq: Sequences, n_labels: int) -> tuple[int, int]:
    """Unary and pairwise entries of the compact store of a split."""
    K = n_labels
    return seq.n_tokens * K, seq.n_sequences * K * K


@njit(**NJIT)
def chain_score_entropy(ws, w_trans, T, K, logz):
    """H(nu) = log Z - E_nu[score] of the chain the oracle just solved: its unary marginals
    in ``ws.unary`` against ``ws.scores``, its pairwise ones summed over the edges in
    ``ws.pair[:K*K]`` against the transitions ``w_trans``."""
    score = sum_products(ws.unary, 0, ws.scores, 0, T * K)
    if T > 1:
        score += sum_products(ws.pair, 0, w_trans, 0, K * K)
    return max(logz - score, 0.0)


@njit(**NJIT)
def move_compact(mu_unary, u0, mu_pair, p0, d_unary, d_pair, T, K, gamma):
    """mu_i += gamma delta in the compact store (the pairwise delta summed over edges)."""
    m_u = mu_unary[u0:u0 + T * K]
    for j in range(T * K):
        m_u[j] += gamma * d_unary[j]
    if T > 1:
        m_p = mu_pair[p0:p0 + K * K]
        for j in range(K * K):
            m_p[j] += gamma * d_pair[j]


@njit(**NJIT)
def _moving_position(d_unary, T, K):
    """The position whose unary marginals move most (largest sum of |delta|)."""
    best, where = -1.0, 0
    for t in range(T):
        s = 0.0
        for k in range(K):
            s += abs(d_unary[t * K + k])
        if s > best:
            best, where = s, t
    return where


@njit(inline="always", **NJIT)
def _opens_support(a, d, K):
    """Whether the step gives mass to a label that the position's marginals give none
    (a block that reached a chain whose probabilities underflowed to 0): there
    -d log(a + gamma d) makes the bound's slope at gamma = 0 infinite, which a sum over
    the positive entries alone would leave out, and the block would never move again."""
    for k in range(K):
        if a[k] <= 0.0 < d[k]:
            return True
    return False


@njit(**NJIT)
def _position_entropy(a, d, K, gamma):
    """H(a + gamma d) over K entries."""
    h = 0.0
    for k in range(K):
        q = a[k] + gamma * d[k]
        h -= q * np.log(q) if q > 0.0 else 0.0
    return h


@njit(inline="always", **NJIT)
def _slope(blk, buf, mu_unary, a0, d, slope, gamma):
    """(f'(gamma), f''(gamma), H(a + gamma d)) of :func:`bound_line_search`'s f."""
    fph, fpph, h = _entropy_terms(mu_unary, a0, d, blk.K, gamma)
    d1, d2, _ = quadratic(blk, buf, gamma)
    return slope + fph - blk.lam_n * d1, fpph - blk.lam_n * d2, h


@njit(**NJIT)
def bound_line_search(blk, buf, mu_unary, d_unary, h_old, h_nu, tol):
    """The step of the compact store: gamma in [0, 1] maximizing f(gamma) = B(gamma) -
    lam n Q(gamma), B the entropy bound of the module's docstring (``h_old`` = h_i, ``h_nu``
    = H(nu_i)) and Q the quadratic part (:func:`~.sdca_linesearch.quadratic`); safeguarded
    Newton on f' (f is concave) to ``tol``. Returns (gamma, evaluations, B(gamma))."""
    K, T = blk.K, blk.T
    t = _moving_position(d_unary, T, K)
    a0 = blk.u0 + t * K
    d = d_unary[t * K:(t + 1) * K]
    a = mu_unary[a0:a0 + K]
    h_a = _position_entropy(a, d, K, 0.0)
    h_b = _position_entropy(a, d, K, 1.0)
    slope = h_nu - h_old + h_a - h_b  # B'(gamma) = slope - sum d log(a + gamma d)
    fp0 = np.inf if _opens_support(a, d, K) else _slope(blk, buf, mu_unary, a0, d, slope,
                                                         0.0)[0]
    if not fp0 > 0.0:
        return 0.0, 1, h_old
    fp1 = _slope(blk, buf, mu_unary, a0, d, slope, 1.0)[0]
    gamma, evals = 1.0, 2
    if fp1 < 0.0:
        lo, hi = 0.0, 1.0
        gamma = fp0 / (fp0 - fp1) if fp0 < np.inf else 0.5
        fp_prev = np.inf
        for _ in range(MAX_LINE_SEARCH_ITERATIONS):
            fp, fpp, _ = _slope(blk, buf, mu_unary, a0, d, slope, gamma)
            evals += 1
            new, lo, hi = newton_step(gamma, fp, fpp, fp_prev, lo, hi)
            fp_prev = fp
            if abs(new - gamma) < tol:
                break
            gamma = new
    # B(gamma) = (1 - gamma) h_i + gamma H(nu) + JS_gamma(a, a + d)
    h = _position_entropy(a, d, K, gamma)
    return gamma, evals, (1.0 - gamma) * (h_old - h_a) + gamma * (h_nu - h_b) + h


@njit(inline="always", **NJIT)
def _weight_terms(seq, K, n_attr, scale, mu_unary, mu_pair, i, w_hat):
    """Sequence i's terms of w_hat(mu) from its block of the compact store."""
    start = seq.offsets[i]
    T = seq.offsets[i + 1] - start
    u0 = start * K
    s = scale * sequence_weight(seq, i)
    add_label_stats(w_hat, s, K, n_attr, seq, i)
    add_marginal_stats(w_hat, -s, mu_unary, u0, mu_pair, i * K * K, T, K, n_attr, seq, i,
                       1 if T > 1 else 0)
    if len(seq.dense_attr) > 0:
        add_dense_label_stats(w_hat, s, K, seq, i)
        add_dense_marginal_stats(w_hat, -s, mu_unary, u0, T, K, seq, i)


@njit(inline="always", **NJIT)
def _dirac_block(seq, K, c, mu_unary, mu_pair, entropies, ws, zeros, i):
    """Sequence i's block of the compact store at the smoothed Dirac and its exact
    entropy (the workspace ``ws`` holds the block's exact marginals meanwhile)."""
    start = seq.offsets[i]
    T = seq.offsets[i + 1] - start
    smoothed_dirac_marginals(seq.labels, start, T, K, c, ws, zeros)
    entropies[i] = chain_entropy(ws.unary, 0, ws.pair, 0, T, K)
    _from_exact_block(ws.unary, 0, ws.pair, 0, T, K, mu_unary, start * K, mu_pair, i)


@njit(**NJIT)
def _compact_dirac(seq, K, c, n_attr, scale, mu_unary, mu_pair, entropies, w_hat, ws):
    """Every sequence's block of the compact store at the smoothed Dirac (its exact
    entropy: a lower bound too) and, with ``w_hat`` (not empty), w_hat's terms, in
    sequence order."""
    zeros = np.zeros(K * K)
    for i in range(len(seq.offsets) - 1):
        _dirac_block(seq, K, c, mu_unary, mu_pair, entropies, ws, zeros, i)
        if len(w_hat):
            _weight_terms(seq, K, n_attr, scale, mu_unary, mu_pair, i, w_hat)


@njit(**NJIT)
def _compact_dirac_chunks(seq, K, c, mu_unary, mu_pair, entropies, ws, bounds, counter,
                          locks):
    """:func:`_compact_dirac`'s blocks and entropies for the chunks of ``bounds`` this
    thread claims (w_hat's terms are summed after, in sequence order)."""
    zeros = np.zeros(K * K)
    while True:
        ch = claim(counter, locks)
        if ch >= len(bounds) - 1:
            return
        for i in range(bounds[ch], bounds[ch + 1]):
            _dirac_block(seq, K, c, mu_unary, mu_pair, entropies, ws, zeros, i)


@njit(inline="always", **NJIT)
def _from_exact_block(unary, u0, pair, p0, T, K, mu_unary, v0, mu_pair, i):
    """A block of the exact store (unary from ``u0``, T - 1 pairwise tables from ``p0``)
    into sequence i's block of the compact store (its unary from ``v0``)."""
    KK = K * K
    for j in range(T * K):
        mu_unary[v0 + j] = unary[u0 + j]
    m_p = mu_pair[i * KK:(i + 1) * KK]
    for j in range(KK):
        m_p[j] = 0.0
    for r in range(T - 1):
        table = pair[p0 + r * KK:p0 + (r + 1) * KK]
        for j in range(KK):
            m_p[j] += table[j]


@njit(**NJIT)
def _from_exact(seq, K, unary, pair, mu_unary, mu_pair, entropies):
    """The whole exact store in the compact one, each block's entropy exact."""
    for i in range(len(seq.offsets) - 1):
        start = seq.offsets[i]
        T = seq.offsets[i + 1] - start
        p0 = (start - i) * K * K
        entropies[i] = chain_entropy(unary, start * K, pair, p0, T, K)
        _from_exact_block(unary, start * K, pair, p0, T, K, mu_unary, start * K, mu_pair, i)


@njit(**NJIT)
def _weights(seq, K, n_attr, scale, mu_unary, mu_pair, w_hat):
    for i in range(len(seq.offsets) - 1):
        _weight_terms(seq, K, n_attr, scale, mu_unary, mu_pair, i, w_hat)


def compact_store(seq: Sequences, n_labels: int, directory: str | None = None):
    """Empty unary and pairwise arrays of the compact store and its entropies, in memory
    or in files of ``directory`` (as the exact store's)."""
    nu, npair = compact_sizes(seq, n_labels)
    return (unary_store(nu, np.float64, directory),
            stream_empty(npair, np.float64, directory), aligned_empty(seq.n_sequences))


def compact_weights(mu_unary, mu_pair, seq: Sequences, n_attr: int, n_labels: int,
                    lam: float, mask: np.ndarray | None = None) -> np.ndarray:
    """w_hat(mu) of the compact store (as :func:`~crfsdca.model.objective.
    weights_from_marginals` of the exact one)."""
    K = n_labels
    w_hat = aligned_zeros(n_attr * K + 3 * K + K * K)
    _weights(seq, K, n_attr, 1.0 / (lam * seq.n_sequences), mu_unary, mu_pair, w_hat)
    if mask is not None:
        apply_mask(w_hat, mask)
    return w_hat


def compact_from_exact(seq: Sequences, n_labels: int, unary, pair,
                       directory: str | None = None):
    """The compact store (unary, pairwise sums, exact entropies) of an exact store's
    marginals: a dual state kept by a fit on the exact store, continued on the compact."""
    mu_unary, mu_pair, entropies = compact_store(seq, n_labels, directory)
    _from_exact(seq, n_labels, np.asarray(unary, np.float64), np.asarray(pair, np.float64),
                mu_unary, mu_pair, entropies)
    return mu_unary, mu_pair, entropies


def compact_dirac(seq: Sequences, n_labels: int, c: float = 10.0):
    """The compact store at the smoothed Dirac alone: (mu_unary, the pairwise sums, the
    entropies), without w_hat (a continued fit's start for its new sequences)."""
    mu_unary, mu_pair, entropies = compact_store(seq, n_labels)
    ws = make_workspace(int(np.max(np.diff(seq.offsets))), n_labels)
    _compact_dirac(seq, n_labels, float(c), 0, 0.0, mu_unary, mu_pair, entropies,
                   np.zeros(0), ws)
    return mu_unary, mu_pair, entropies


def compact_dirac_start(seq: Sequences, n_attr: int, n_labels: int, lam: float,
                        mask: np.ndarray | None = None, c: float = 10.0,
                        directory: str | None = None, threads: int = 1):
    """SDCA's start at the smoothed Dirac in the compact store: (mu_unary, the pairwise
    sums, w_hat(mu), the entropies), as :func:`~crfsdca.model.objective.dirac_start` gives
    the exact store's, on ``threads`` threads with the same bits."""
    K = n_labels
    mu_unary, mu_pair, entropies = compact_store(seq, K, directory)
    w_hat = aligned_zeros(n_attr * K + 3 * K + K * K)
    scale = 1.0 / (lam * seq.n_sequences)
    if threads == 1:
        ws = make_workspace(int(np.max(np.diff(seq.offsets))), K)
        _compact_dirac(seq, K, float(c), n_attr, scale, mu_unary, mu_pair, entropies, w_hat,
                       ws)
    else:  # the blocks on every thread, then w_hat's sums in the one thread's order
        bounds = chunk_bounds(seq)
        counter, locks = claims()
        run_parallel([(lambda: _compact_dirac_chunks(
            seq, K, float(c), mu_unary, mu_pair, entropies,
            make_workspace(int(np.max(np.diff(seq.offsets))), K), bounds, counter, locks))
            for _ in range(threads)])
        _weights(seq, K, n_attr, scale, mu_unary, mu_pair, w_hat)
    if mask is not None:
        apply_mask(w_hat, mask)
    return mu_unary, mu_pair, w_hat, entropies
