"""The SDCA iteration in numba (``math.md`` section 5, Algorithm 2 of the paper).

One step on sequence i: oracle at w, fresh block gap, ascent direction
delta = nu_i - mu_i, sparse primal direction v, line search on
f(gamma) = H~(mu_i + gamma delta) - (lambda n / 2) ||w + gamma v||^2, then
mu_i += gamma delta and w += gamma v. The sum of the entropies H~(mu_i) and
||w||^2 are kept up to date, so the dual objective is known at every step.

Every pass over the T*K*K pairwise entries is fused: the first computes the
gap (without a logarithm) and delta together; each line-search evaluation
computes f', f'' and the entropy at the trial point together, so the accepted
point's entropy costs nothing more.

A loop over a block of the store slices the block first and indexes the slice from 0:
numba wraps negative indices, so an index ``m0 + j`` whose sign LLVM cannot prove costs
a select per entry and keeps the loop from vectorizing to contiguous loads (one
line-search evaluation: 4.2 against 2.7 cycles per entry, ``docs/benchmarks.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..jit import NJIT, NJIT_FAST, cycles, lock, prefetch_range, unlock
from ..model.chain import chain_entropy
from ..model.fastmath import flog, flog_normal
from ..model.oracle import (
    NO_LABELS,
    Workspace,
    chain_marginals,
    sum_products,
    transition_offset,
    transition_potentials,
    unary_scores,
)
from .registry import LINE_SEARCHES
from .sampling import draw, record_gap

LINE_SEARCH_CODES = {name: code for code, name in enumerate(LINE_SEARCHES)}
NEWTON, SINGLE_NEWTON, FIXED, GOLDEN = (
    LINE_SEARCH_CODES[name] for name in ("newton", "single-newton", "fixed", "golden"))
MAX_LINE_SEARCH_ITERATIONS = 100
_INV_PHI = 0.6180339887498949

# scalars[]: running quantities of the state
W_NORM2, SUM_ENTROPY, SUM_GAPS = 0, 1, 2
# counters[]: oracle calls, parameter updates, line-search evaluations, steps whose
# step size was zero, then cycles spent in each phase of a step (a profile)
ORACLE, UPDATES, LS_EVALS, NULL_STEPS = range(4)
CYC_ORACLE, CYC_GAP, CYC_DIRECTION, CYC_LS, CYC_UPDATE = range(4, 9)
PHASES = ("oracle", "gap", "direction", "line_search", "update")
N_COUNTERS = 9
# sums[]: step sizes since the last reset
SUM_STEP = 0


class SDCAState(NamedTuple):
    w: np.ndarray  # S_kappa(v): the weights the oracle uses
    v: np.ndarray  # w_hat(mu), unthresholded (the same array as w when kappa = 0)
    mu_unary: np.ndarray
    mu_pair: np.ndarray
    entropies: np.ndarray  # H~(mu_i)
    scalars: np.ndarray  # float64: ||w||^2, sum_i H_i, sum of stored gaps
    counters: np.ndarray  # int64, see above
    sums: np.ndarray  # float64 accumulators (step sizes)
    locks: np.ndarray  # int32, shared by the threads: the locks of w's rows (row_locks)


class SDCABuffers(NamedTuple):
    ws: Workspace  # the oracle's; its unary and pair hold nu_i, then delta = nu_i - mu_i
    v_emission: np.ndarray  # max distinct attributes * K
    v_bias: np.ndarray  # 3K
    v_trans: np.ndarray  # KK
    w_trans: np.ndarray  # KK: the transition weights the oracle read (threads change w)


class SDCAOptions(NamedTuple):
    """What a step needs besides the state (``math.md`` section 5)."""

    lam_n: float  # lambda n
    method: int  # line search, a code of LINE_SEARCH_CODES
    tol: float  # sub-precision
    fixed_step: float  # the step of the fixed line search
    exact_store: bool  # float64 store: the dual update's entropy is exact
    midpoint: bool  # the paper's rtsafe from 0.5 instead of our regula-falsi start
    mask: np.ndarray  # the feature mask (uint8 per weight), empty: every weight
    kappa: float  # l1 / lam: the L1 threshold of the elastic net (0: ridge only)
    atomic: bool  # other threads update w too: add to it under the rows' locks


@njit(**NJIT_FAST)
def _pair_scores(mu, m0, rows, KK, tw, ow):
    """sum mu W over ``rows`` pairwise tables of KK entries, W being the transition
    log-potentials ``tw[ow:ow + KK]``: the tables' share of E_mu[score].

    A loop that writes nothing: a vectorized reduction in a loop that also stores gets
    runtime alias checks, whose scalar fallback sums in another order, so the result
    would depend on where the arrays lie in memory.
    """
    score = 0.0
    w = tw[ow:ow + KK]
    for r in range(rows):
        m_row = mu[m0 + r * KK:m0 + (r + 1) * KK]
        for j in range(KK):
            score += np.float64(m_row[j]) * w[j]
    return score


@njit(**NJIT)
def _to_delta(mu, m0, nu, size, delta_sum, width):
    """nu <- nu - mu over ``size`` entries; with ``width`` > 0, delta_sum[j] += the change
    of entry j modulo ``width`` (the pairwise delta summed over edges)."""
    m_blk = mu[m0:m0 + size]
    for j in range(size):
        nu[j] -= np.float64(m_blk[j])
    if width > 0:
        for r in range(size // width):
            row = nu[r * width:(r + 1) * width]
            for j in range(width):
                delta_sum[j] += row[j]


@njit(**NJIT)
def _first_pass(mu_unary, u0, mu_pair, p0, nu_unary, nu_pair, T, K, delta_sum, scores, tw,
                ow, logz, entropy):
    """Turn nu into delta = nu - mu in place; return the block gap D~(mu || nu).

    The gap comes from the Fenchel-Young identity of the chain,
    D~(mu || nu(w)) = log Z - E_mu[score] - H~(mu) (``math.md`` section 5.2), with
    ``entropy`` = H~(mu) kept by the solver and ``scores``, ``tw[ow:]`` the unary and
    transition log-potentials: no logarithm at all. ``delta_sum`` receives the pairwise
    delta summed over edges.
    """
    KK = K * K
    for j in range(KK):
        delta_sum[j] = 0.0
    score = sum_products(mu_unary, u0, scores, 0, T * K)
    if T > 1:
        score += _pair_scores(mu_pair, p0, T - 1, KK, tw, ow)
        _to_delta(mu_pair, p0, nu_pair, (T - 1) * KK, delta_sum, KK)
    _to_delta(mu_unary, u0, nu_unary, T * K, delta_sum, 0)
    return max(logz - score - entropy, 0.0)


@njit(**NJIT_FAST)
def _entropy_terms(mu, m0, d, size, gamma):
    """(-sum d log q, -sum d^2 / q, -sum q log q) at q = mu + gamma d over a table."""
    fp = 0.0
    fpp = 0.0
    h = 0.0
    m_blk = mu[m0:m0 + size]
    for j in range(size):
        dj = d[j]
        q = m_blk[j] + gamma * dj
        lq = flog_normal(q)
        pos = q > 0.0
        fp -= dj * lq if pos else 0.0
        fpp -= dj * dj / q if pos else 0.0
        h -= q * lq if pos else 0.0
    return fp, fpp, h


@njit(**NJIT)
def _evaluate(mu_unary, u0, mu_pair, p0, d_unary, d_pair, T, K, gamma):
    """(f'_H, f''_H, H~) at mu + gamma delta: entropy part of f and its derivatives."""
    if T == 1:
        return _entropy_terms(mu_unary, u0, d_unary, K, gamma)
    fp, fpp, h = _entropy_terms(mu_pair, p0, d_pair, (T - 1) * K * K, gamma)
    fps, fpps, hs = _entropy_terms(mu_unary, u0 + K, d_unary[K:], (T - 2) * K, gamma)
    return fp - fps, fpp - fpps, h - hs


@njit(**NJIT)
def _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, scale, v_em, v_bias, v_trans,
                      sum_trans, mask):
    """v = scale * E_delta[F(x_i, .)], restricted to the features of ``mask``, into the
    sparse buffers; returns (<w, v>, ||v||^2).

    With ``sum_trans`` false, ``v_trans`` already holds delta summed over the edges.
    """
    start = idx.offsets[i]
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    real = len(idx.attr_values) > 0
    masked = len(mask) > 0
    for j in range(nu * K):
        v_em[j] = 0.0
    for t in range(T):
        tok = start + t
        d_t = d_unary[t * K:(t + 1) * K]
        for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
            base = idx.local[j] * K
            v_a = v_em[base:base + K]
            if real:
                x = idx.attr_values[j]
                for k in range(K):
                    v_a[k] += x * d_t[k]
            else:
                for k in range(K):
                    v_a[k] += d_t[k]
    for k in range(K):
        s = 0.0
        for t in range(T):
            s += d_unary[t * K + k]
        v_bias[3 * k] = scale * s
        v_bias[3 * k + 1] = scale * d_unary[k]
        v_bias[3 * k + 2] = scale * d_unary[(T - 1) * K + k]
    KK = K * K
    if sum_trans:
        for j in range(KK):
            v_trans[j] = 0.0
        for t in range(T - 1):
            d_t = d_pair[t * KK:(t + 1) * KK]
            for j in range(KK):
                v_trans[j] += d_t[j]
    ob = n_attr * K
    ow = transition_offset(n_attr, K)
    if masked:
        for r in range(nu):
            base = idx.uniq_attr[ua0 + r] * K
            for k in range(K):
                v_em[r * K + k] *= mask[base + k]
        for j in range(3 * K):
            v_bias[j] *= mask[ob + j]
        for j in range(KK):
            v_trans[j] *= mask[ow + j]
    wv = 0.0
    vv = 0.0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        w_a = w[base:base + K]
        v_a = v_em[r * K:(r + 1) * K]
        for k in range(K):
            x = scale * v_a[k]
            v_a[k] = x
            wv += w_a[k] * x
            vv += x * x
    w_b = w[ob:ob + 3 * K]
    for j in range(3 * K):
        wv += w_b[j] * v_bias[j]
        vv += v_bias[j] * v_bias[j]
    w_t = w[ow:ow + KK]
    for j in range(KK):
        x = scale * v_trans[j]
        v_trans[j] = x
        wv += w_t[j] * x
        vv += x * x
    return wv, vv


_LOCK_SPACING = 16  # int32 per lock: one lock per cache line, so threads do not contend
# for a line unless they want the same lock
BIAS_LOCK = 0
TRANS_LOCK = _LOCK_SPACING


def row_locks(stripes: int = 1) -> np.ndarray:
    """The locks of parallel SDCA (all free): one for the bias block, one for the
    transition block, then ``stripes`` for the attribute rows of w, stripe s holding the
    s-th of ``stripes`` contiguous ranges of attributes (:func:`_stripe`). A step keeps a
    stripe's lock across consecutive rows in that stripe: with 2 stripes it takes a lock
    13 times a step on NER and 24 on CONLL, where a lock per row (180 and 342 rows) cost
    10% of a parallel step. The rows stay in their order (sorting them by stripe sent a
    step's updates across w, and the loss outweighed the locks saved)."""
    return np.zeros((2 + max(int(stripes), 1)) * _LOCK_SPACING, dtype=np.int32)


@njit(inline="always", **NJIT)
def _stripe(a, n_attr, locks):
    """The lock of attribute row a (an index into ``locks``)."""
    stripes = len(locks) // _LOCK_SPACING - 2
    return (2 + a * stripes // n_attr) * _LOCK_SPACING


def lane_locks(lanes: int) -> np.ndarray:
    """One lock per lane's sampler (:func:`sdca_run_lanes`), each on its own cache line."""
    return np.zeros(lanes * _LOCK_SPACING, dtype=np.int32)


@njit(**NJIT)
def _apply_primal(w, n_attr, K, idx, i, gamma, v_em, v_bias, v_trans, locks, atomic):
    """w += gamma u on the support of the direction; when threads share w, each run of
    consecutive rows in one attribute stripe, the bias block and the transition block
    under their lock (one held at a time)."""
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    held = -1
    for r in range(nu):
        a = idx.uniq_attr[ua0 + r]
        if atomic and _stripe(a, n_attr, locks) != held:
            if held >= 0:
                unlock(locks, held)
            held = _stripe(a, n_attr, locks)
            lock(locks, held)
        base = a * K
        w_a = w[base:base + K]
        v_a = v_em[r * K:(r + 1) * K]
        for k in range(K):
            w_a[k] += gamma * v_a[k]
    if held >= 0:
        unlock(locks, held)
    ob = n_attr * K
    w_b = w[ob:ob + 3 * K]
    if atomic:
        lock(locks, BIAS_LOCK)
    for j in range(3 * K):
        w_b[j] += gamma * v_bias[j]
    if atomic:
        unlock(locks, BIAS_LOCK)
        lock(locks, TRANS_LOCK)
    ow = ob + 3 * K
    w_t = w[ow:ow + K * K]
    for j in range(K * K):
        w_t[j] += gamma * v_trans[j]
    if atomic:
        unlock(locks, TRANS_LOCK)


@njit(**NJIT_FAST)
def _update_table(mu, m0, d, size, gamma):
    """mu += gamma d over a table; returns -sum q log q of the new values."""
    m_blk = mu[m0:m0 + size]
    for j in range(size):
        m_blk[j] += gamma * d[j]
    h = 0.0
    for j in range(size):  # a separate loop so that both vectorize
        q = np.float64(m_blk[j])
        h -= q * flog(q) if q > 0.0 else 0.0
    return h


@njit(**NJIT)
def _apply_dual(mu_unary, u0, mu_pair, p0, d_unary, d_pair, T, K, gamma):
    """mu_i += gamma delta; returns the chain entropy H~ of the new marginals."""
    if T == 1:
        return _update_table(mu_unary, u0, d_unary, K, gamma)
    h = _update_table(mu_pair, p0, d_pair, (T - 1) * K * K, gamma)
    h -= _update_table(mu_unary, u0 + K, d_unary[K:], (T - 2) * K, gamma)
    for j in range(K):
        mu_unary[u0 + j] += gamma * d_unary[j]
    last = (T - 1) * K
    for j in range(K):
        mu_unary[u0 + last + j] += gamma * d_unary[last + j]
    return h


@njit(**NJIT)
def _move_dual(mu_unary, u0, mu_pair, p0, d_unary, d_pair, T, K, gamma):
    """mu_i += gamma delta, when the line search already knows the new entropy."""
    m_u = mu_unary[u0:u0 + T * K]
    for j in range(T * K):
        m_u[j] += gamma * d_unary[j]
    m_p = mu_pair[p0:p0 + (T - 1) * K * K]
    for j in range((T - 1) * K * K):
        m_p[j] += gamma * d_pair[j]


@njit(**NJIT)
def _store_applied_delta(mu_unary, u0, mu_pair, p0, d_unary, d_pair, T, K, gamma):
    """Low-precision store: write mu + gamma delta, then set delta to the change really stored.

    Afterwards gamma * delta is exactly the stored change (up to float64 rounding), so
    that w = w_hat(mu) holds for the stored marginals.
    """
    inv = 1.0 / gamma
    for j in range(T * K):
        old = np.float64(mu_unary[u0 + j])
        mu_unary[u0 + j] = old + gamma * d_unary[j]
        d_unary[j] = (np.float64(mu_unary[u0 + j]) - old) * inv
    for j in range((T - 1) * K * K):
        old = np.float64(mu_pair[p0 + j])
        mu_pair[p0 + j] = old + gamma * d_pair[j]
        d_pair[j] = (np.float64(mu_pair[p0 + j]) - old) * inv


class _Block(NamedTuple):
    """A step's block of the store and the quadratic part of its line search.

    The dual's quadratic term along the step is lam n g*(v + gamma u) with v the
    unthresholded weights, u the sparse direction (in the buffers) and, for the elastic
    net, g*(v) = 1/2 ||S_kappa(v)||^2 (``math.md`` section 8); with kappa = 0 it is
    1/2 ||w + gamma u||^2, known from <w, u> and ||u||^2 alone.
    """

    i: int
    u0: int  # where the block's unary marginals start in the store
    p0: int  # where its pairwise marginals start
    T: int
    K: int
    n_attr: int
    lam_n: float
    wv: float  # <w, u>
    vv: float  # ||u||^2
    kappa: float


@njit(inline="always", **NJIT)
def _soft(x, kappa):
    """The soft-threshold S_kappa(x) = sign(x) max(|x| - kappa, 0)."""
    return x - kappa if x > kappa else (x + kappa if x < -kappa else 0.0)


@njit(**NJIT)
def _quadratic(blk, st, idx, buf, gamma):
    """(Q'(gamma), Q''(gamma), Q(gamma) - Q(0)) of Q(gamma) = g*(v + gamma u)."""
    wv, vv = blk.wv, blk.vv
    if blk.kappa == 0.0:
        return wv + gamma * vv, vv, gamma * (wv + 0.5 * gamma * vv)
    kappa = blk.kappa
    d1 = 0.0
    d2 = 0.0
    val = 0.0
    K = blk.K
    ua0 = idx.uniq_ptr[blk.i]
    for r in range(idx.uniq_ptr[blk.i + 1] - ua0):
        base = idx.uniq_attr[ua0 + r] * K
        for k in range(K):
            u = buf.v_emission[r * K + k]
            x = st.v[base + k] + gamma * u
            y = _soft(x, kappa)
            d1 += u * y
            d2 += u * u if y != 0.0 else 0.0
            val += 0.5 * (y * y - st.w[base + k] * st.w[base + k])
    ob = blk.n_attr * K
    for j in range(3 * K):
        u = buf.v_bias[j]
        y = _soft(st.v[ob + j] + gamma * u, kappa)
        d1 += u * y
        d2 += u * u if y != 0.0 else 0.0
        val += 0.5 * (y * y - st.w[ob + j] * st.w[ob + j])
    ow = ob + 3 * K
    for j in range(K * K):
        u = buf.v_trans[j]
        y = _soft(st.v[ow + j] + gamma * u, kappa)
        d1 += u * y
        d2 += u * u if y != 0.0 else 0.0
        val += 0.5 * (y * y - st.w[ow + j] * st.w[ow + j])
    return d1, d2, val


@njit(**NJIT)
def _line_eval(blk, st, idx, buf, d_unary, d_pair, gamma):
    """(f'(gamma), f''(gamma), f(gamma) - f(0) + H~(mu_i), H~(mu_i + gamma delta)) of the
    line-search objective f(gamma) = H~(mu_i + gamma delta) - lam n g*(v + gamma u)."""
    fph, fpph, h = _evaluate(st.mu_unary, blk.u0, st.mu_pair, blk.p0, d_unary, d_pair,
                             blk.T, blk.K, gamma)
    d1, d2, val = _quadratic(blk, st, idx, buf, gamma)
    return fph - blk.lam_n * d1, fpph - blk.lam_n * d2, h - blk.lam_n * val, h


@njit(**NJIT)
def _slope_at_one(blk, st, idx, buf):
    """-f'(1) / (lam n) = <u, S(v + u)> - <u, w>, known without an entropy evaluation:
    at gamma = 1 the block is nu_i(w), where f'_H(1) = lam n <u, w>; ||u||^2 when
    kappa = 0."""
    if blk.kappa == 0.0:
        return blk.vv
    return _quadratic(blk, st, idx, buf, 1.0)[0] - blk.wv


@njit(inline="always", **NJIT)
def _move_l1(st, j, x, kappa):
    """v_j += x, w_j = S_kappa(v_j); returns the change of w_j^2."""
    st.v[j] += x
    y = _soft(st.v[j], kappa)
    change = y * y - st.w[j] * st.w[j]
    st.w[j] = y
    return change


@njit(**NJIT)
def _apply_primal_l1(st, idx, buf, blk, gamma, atomic):
    """v += gamma u and w = S_kappa(v) on the support of u; returns the change of ||w||^2.
    With threads, each row under its lock, so that w = S_kappa(v) holds at every unlock."""
    K, kappa = blk.K, blk.kappa
    change = 0.0
    ua0 = idx.uniq_ptr[blk.i]
    held = -1
    for r in range(idx.uniq_ptr[blk.i + 1] - ua0):
        a = idx.uniq_attr[ua0 + r]
        if atomic and _stripe(a, blk.n_attr, st.locks) != held:
            if held >= 0:
                unlock(st.locks, held)
            held = _stripe(a, blk.n_attr, st.locks)
            lock(st.locks, held)
        base = a * K
        for k in range(K):
            change += _move_l1(st, base + k, gamma * buf.v_emission[r * K + k], kappa)
    if held >= 0:
        unlock(st.locks, held)
    ob = blk.n_attr * K
    if atomic:
        lock(st.locks, BIAS_LOCK)
    for j in range(3 * K):
        change += _move_l1(st, ob + j, gamma * buf.v_bias[j], kappa)
    if atomic:
        unlock(st.locks, BIAS_LOCK)
        lock(st.locks, TRANS_LOCK)
    for j in range(K * K):
        change += _move_l1(st, ob + 3 * K + j, gamma * buf.v_trans[j], kappa)
    if atomic:
        unlock(st.locks, TRANS_LOCK)
    return change


@njit(**NJIT)
def _read_transitions(w, n_attr, K, buf):
    """Copy the transition block of w into ``buf.w_trans`` and its potentials
    exp(W - max W) into the oracle's workspace; returns max W. The oracle and the gap
    identity then use the same W, also while other threads add to w."""
    ow = transition_offset(n_attr, K)
    w_t = w[ow:ow + K * K]
    for j in range(K * K):
        buf.w_trans[j] = w_t[j]
    return transition_potentials(buf.w_trans, 0, K, buf.ws.trans)


@njit(**NJIT)
def sdca_step(i, w, n_attr, K, idx, st, buf, opt):
    """One SDCA iteration on sequence i; returns (fresh gap g_i, step size gamma)."""
    lam_n, method, tol = opt.lam_n, opt.method, opt.tol
    ws = buf.ws
    c_start = cycles()
    start = idx.offsets[i]
    T = idx.offsets[i + 1] - start
    u0 = start * K
    p0 = (start - i) * K * K
    # 1. oracle at w; meanwhile the block of the marginal store comes from memory
    prefetch_range(st.mu_pair, p0, p0 + (T - 1) * K * K)
    prefetch_range(st.mu_unary, u0, u0 + T * K)
    unary_scores(w, n_attr, K, idx, i, ws.scores)
    tmax = _read_transitions(w, n_attr, K, buf)
    logz = chain_marginals(ws, T, K, buf.w_trans, 0, tmax, 0.0, NO_LABELS, 0, False)[0]
    st.counters[ORACLE] += 1
    c_oracle = cycles()
    # 2. gap and delta
    gap = _first_pass(st.mu_unary, u0, st.mu_pair, p0, ws.unary, ws.pair, T, K, buf.v_trans,
                      ws.scores, buf.w_trans, 0, logz, st.entropies[i])
    d_unary = ws.unary
    d_pair = ws.pair
    c_gap = cycles()
    # 3. primal direction u
    wv, vv = _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, -1.0 / lam_n,
                               buf.v_emission, buf.v_bias, buf.v_trans, False, opt.mask)
    blk = _Block(i, u0, p0, T, K, n_attr, lam_n, wv, vv, opt.kappa)
    # 4. line search on f(gamma) = H~(mu + gamma delta) - lam n g*(v + gamma u)
    c_ls = cycles()
    h_old = st.entropies[i]
    # f'(0) = D~(mu || nu) + D~(nu || mu) (math.md section 5.3): the second divergence
    # needs log mu, a logarithm per entry; 2 D~(mu || nu) (equal to second order) gives
    # the search its start and the step's sign at no cost
    fp0 = 2.0 * gap
    gamma = 0.0
    evals = 0
    h_ls = np.nan  # the entropy at the accepted gamma, when the line search evaluated it
    if method == FIXED:
        gamma = opt.fixed_step
    elif fp0 > 0.0:
        max_evals = 1 if method == SINGLE_NEWTON else MAX_LINE_SEARCH_ITERATIONS
        if (method == NEWTON or method == SINGLE_NEWTON) and opt.midpoint:
            gamma, evals = _rtsafe(blk, st, idx, buf, d_unary, d_pair, tol, max_evals)
        elif method == NEWTON or method == SINGLE_NEWTON:
            gamma, evals, h_ls = _newton(blk, st, idx, buf, d_unary, d_pair, fp0, tol,
                                         max_evals)
        else:
            gamma, evals = _golden(blk, st, idx, buf, d_unary, d_pair, h_old, tol)
    c_end_ls = cycles()
    # 5. updates: the dual block (with its new entropy), then w
    if gamma != 0.0:
        if opt.exact_store and not np.isnan(h_ls):
            h_new = h_ls
            _move_dual(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
        elif opt.exact_store:
            h_new = _apply_dual(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
        else:
            _store_applied_delta(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
            wv, vv = _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, -1.0 / lam_n,
                                       buf.v_emission, buf.v_bias, buf.v_trans, True,
                                       opt.mask)
            blk = _Block(i, u0, p0, T, K, n_attr, lam_n, wv, vv, opt.kappa)
            h_new = chain_entropy(st.mu_unary, u0, st.mu_pair, p0, T, K)
        if opt.kappa == 0.0:
            gain = (h_new - h_old) - lam_n * gamma * (wv + 0.5 * gamma * vv)
        else:
            gain = (h_new - h_old) - lam_n * _quadratic(blk, st, idx, buf, gamma)[2]
        if gain < 0.0 and method != FIXED and method != SINGLE_NEWTON and not opt.midpoint:
            # rounding near a root at 0: the exact line search never lowers the dual
            h_new = _apply_dual(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K,
                                -gamma)
            gamma = 0.0
        elif opt.kappa == 0.0:
            _apply_primal(w, n_attr, K, idx, i, gamma, buf.v_emission, buf.v_bias,
                          buf.v_trans, st.locks, opt.atomic)
            st.scalars[W_NORM2] += 2.0 * gamma * wv + gamma * gamma * vv
        else:
            st.scalars[W_NORM2] += _apply_primal_l1(st, idx, buf, blk, gamma, opt.atomic)
        st.scalars[SUM_ENTROPY] += h_new - h_old
        st.entropies[i] = h_new
    if gamma == 0.0:
        st.counters[NULL_STEPS] += 1
    st.counters[UPDATES] += 1
    st.counters[LS_EVALS] += evals
    st.sums[SUM_STEP] += gamma
    c_end = cycles()
    st.counters[CYC_ORACLE] += c_oracle - c_start
    st.counters[CYC_GAP] += c_gap - c_oracle
    st.counters[CYC_DIRECTION] += c_ls - c_gap
    st.counters[CYC_LS] += c_end_ls - c_ls
    st.counters[CYC_UPDATE] += c_end - c_end_ls
    return gap, gamma


@njit(**NJIT)
def _newton(blk, st, idx, buf, d_unary, d_pair, fp0, tol, max_evals):
    """Safeguarded Newton on f' over the bracket [0, 1], where f'(0) > 0 >= f'(1).

    Starts at the regula-falsi point of the bracket, fp0 / (fp0 - f'(1)), with fp0 the
    estimate 2 D~(mu || nu) of f'(0) and f'(1) known without an entropy evaluation
    (:func:`_slope_at_one`; -lam n ||u||^2 without L1, ``math.md`` section 5.3): on the
    datasets here this needs fewer evaluations than a first Newton step from 0, where
    the log-barrier of small marginals makes f''(0) huge. The exact f'(0) would cost a
    logarithm per entry; with the estimate, whole runs need fewer evaluations per step on
    POS and a few more on OCR (``docs/benchmarks.md``). A Newton step is taken when it
    stays inside the bracket and the previous step at least halved |f'|; otherwise the
    bracket is bisected.
    Stops once the next step would be shorter than ``tol`` and returns the point just
    evaluated, which is then within about ``tol`` of the maximizer: its entropy
    H~(mu_i + gamma delta) is known, so the update need not take a logarithm again
    (``math.md`` section 5.3). After ``max_evals`` evaluations it returns the next point
    instead (1: the single-Newton-step variant, whose step is the Newton point).
    Returns (gamma, evaluations, the entropy at gamma or NaN if gamma was not evaluated).
    """
    lo = 0.0
    hi = 1.0
    gamma = fp0 / (fp0 + blk.lam_n * _slope_at_one(blk, st, idx, buf))
    fp_prev = np.inf
    evals = 0
    for _ in range(max_evals):
        fp, fpp, _f, h = _line_eval(blk, st, idx, buf, d_unary, d_pair, gamma)
        evals += 1
        if fp > 0.0:
            lo = gamma
        else:
            hi = gamma
        new = gamma - fp / fpp
        if not (lo < new < hi) or abs(fp) > 0.5 * abs(fp_prev):
            new = 0.5 * (lo + hi)
        fp_prev = fp
        if abs(new - gamma) < tol and max_evals > 1:
            return gamma, evals, h
        gamma = new
    return gamma, evals, np.nan


@njit(**NJIT)
def _rtsafe(blk, st, idx, buf, d_unary, d_pair, tol, max_evals):
    """The paper's line search: Numerical Recipes' ``rtsafe`` on f' over [0, 1] from the
    midpoint, step for step as [LP]'s ``safe_newton`` (``math.md`` section 5.3).

    f'(1) < 0 unless the direction is zero (known for free, :func:`_slope_at_one`), in
    which case the step is 1. Otherwise start at gamma = 0.5 with dx_old = dx = 1, the
    bracket width, and evaluate there. Each round: the Newton step dx = f'/f'' is kept
    when gamma - dx stays in the bracket (ends included) and |dx| <= |dx_old| / 2 (dx_old:
    the step before last), else the bracket is bisected; stop as soon as the last step is
    shorter than ``tol`` (with ``tol`` = 0.5: after one Newton step from 0.5 when it is
    kept), else evaluate at the new point and only then shrink the bracket to it. So the
    first round tests Newton against [0, 1] and a bisection there returns to 0.5; [LP]
    evaluates 0.5 again (the same values), which is skipped here: the trajectory is
    [LP]'s, the count of evaluations is one lower after such a first bisection.
    ``max_evals`` bounds the evaluations (1: the first move to a point not yet
    evaluated, Newton or bisection, is the step). Returns
    (gamma, evaluations).
    """
    if not blk.lam_n * _slope_at_one(blk, st, idx, buf) > 0.0:
        return 1.0, 0
    lo = 0.0  # f'(lo) > 0
    hi = 1.0  # f'(hi) < 0
    gamma = 0.5
    dx_old = 1.0
    dx = 1.0
    fp, fpp, _f, _h = _line_eval(blk, st, idx, buf, d_unary, d_pair, gamma)
    evals = 1
    for _ in range(MAX_LINE_SEARCH_ITERATIONS):
        newton = fp / fpp
        new = gamma - newton
        keep = lo <= new <= hi and abs(newton) <= 0.5 * abs(dx_old)  # false if NaN
        dx_old, prev = dx, gamma
        if keep:
            dx = newton
            gamma = new
        else:
            dx = 0.5 * (hi - lo)
            gamma = lo + dx
        if abs(dx) < tol:
            break
        if gamma != prev:  # [LP] evaluates again at an unchanged point: same values
            if evals >= max_evals:
                break
            fp, fpp, _f, _h = _line_eval(blk, st, idx, buf, d_unary, d_pair, gamma)
            evals += 1
        if fp > 0.0:  # f' decreases: the root is to the right
            lo = gamma
        else:
            hi = gamma
    return gamma, evals


@njit(**NJIT)
def _golden(blk, st, idx, buf, d_unary, d_pair, h0, tol):
    """Bounded golden-section search for the maximum of f on [0, 1]."""
    a = 0.0
    b = 1.0
    x1 = b - _INV_PHI * (b - a)
    x2 = a + _INV_PHI * (b - a)
    f1 = _line_eval(blk, st, idx, buf, d_unary, d_pair, x1)[2]
    f2 = _line_eval(blk, st, idx, buf, d_unary, d_pair, x2)[2]
    evals = 2
    while b - a > tol and evals < MAX_LINE_SEARCH_ITERATIONS:
        if f1 < f2:
            a = x1
            x1, f1 = x2, f2
            x2 = a + _INV_PHI * (b - a)
            f2 = _line_eval(blk, st, idx, buf, d_unary, d_pair, x2)[2]
        else:
            b = x2
            x2, f2 = x1, f1
            x1 = b - _INV_PHI * (b - a)
            f1 = _line_eval(blk, st, idx, buf, d_unary, d_pair, x1)[2]
        evals += 1
    gamma, f = (x1, f1) if f1 >= f2 else (x2, f2)
    if f < h0:  # f(0) = H~(mu) = h0 (values shifted so that f(0) is the block's entropy)
        return 0.0, evals
    return gamma, evals


@njit(**NJIT)
def sdca_run(n_steps, w, n_attr, K, idx, st, buf, sampler, rng, opt, members):
    """Run n_steps SDCA iterations on the sequences ``members`` that ``sampler`` draws from
    (its index j is sequence members[j]); stored gaps kept current."""
    for _ in range(n_steps):
        j = draw(sampler, rng)
        old = sampler.gaps[j]
        gap, _ = sdca_step(members[j], w, n_attr, K, idx, st, buf, opt)
        record_gap(sampler, j, gap)
        st.scalars[SUM_GAPS] += sampler.gaps[j] - old


@njit(**NJIT)
def sdca_run_lanes(me, quota, samplers, members, busy, lane_locks, w, n_attr, K, idx, st,
                   buf, rng, opt):
    """This thread's share of a parallel run: the draws of lane ``me`` (``quota[me]`` of
    them, from its sampler), then, while another lane has draws left, those, from that
    lane's sampler. Each lane's sampler is drawn from and updated under its lock
    (``lane_locks[t * _LOCK_SPACING]``, :func:`lane_locks`); ``busy`` marks the
    sequences a thread is stepping on, which no other thread draws meanwhile. So every
    lane's draws follow its own sampler, as with one thread per lane, and no thread
    waits for another at the end.
    """
    lanes = len(quota)
    for r in range(lanes):
        t = (me + r) % lanes
        s = samplers[t]
        mem = members[t]
        lk = t * _LOCK_SPACING
        while True:
            lock(lane_locks, lk)
            if quota[t] == 0:
                unlock(lane_locks, lk)
                break
            j = draw(s, rng)
            if busy[mem[j]] != 0:  # another thread is stepping on it: draw again
                unlock(lane_locks, lk)
                continue
            quota[t] -= 1
            busy[mem[j]] = 1
            unlock(lane_locks, lk)
            gap, _ = sdca_step(mem[j], w, n_attr, K, idx, st, buf, opt)
            lock(lane_locks, lk)
            old = s.gaps[j]
            record_gap(s, j, gap)
            st.scalars[SUM_GAPS] += s.gaps[j] - old
            busy[mem[j]] = 0
            unlock(lane_locks, lk)


@njit(**NJIT)
def refresh_gaps(w, n_attr, K, idx, st, buf, sampler, members):
    """Recompute the stored gap of the sequences ``members`` (``sampler``'s) at w."""
    ws = buf.ws
    tmax = _read_transitions(w, n_attr, K, buf)
    total = 0.0
    for j in range(len(members)):
        i = members[j]
        start = idx.offsets[i]
        T = idx.offsets[i + 1] - start
        unary_scores(w, n_attr, K, idx, i, ws.scores)
        logz = chain_marginals(ws, T, K, buf.w_trans, 0, tmax, 0.0, NO_LABELS, 0, False)[0]
        gap = _first_pass(st.mu_unary, start * K, st.mu_pair, (start - i) * K * K, ws.unary,
                          ws.pair, T, K, buf.v_trans, ws.scores, buf.w_trans, 0, logz,
                          st.entropies[i])
        record_gap(sampler, j, gap)
        total += sampler.gaps[j]
    st.counters[ORACLE] += len(members)
    st.scalars[SUM_GAPS] = total
