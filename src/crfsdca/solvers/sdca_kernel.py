"""The SDCA iteration in numba (``math.md`` section 5, Algorithm 2 of the paper).

One step on sequence i (:func:`sdca_step`) runs five phases, each a function of its
own, inlined into the step, whose cycles the step counts (``SDCA.phase_cycles``):

1. ``oracle`` (:func:`_oracle`): the marginals nu_i(w) and log Z;
2. ``gap`` (:func:`_gap`): the fresh block gap, and delta = nu_i - mu_i in place of nu_i;
3. ``direction`` (:func:`_direction`): the sparse primal direction u;
4. ``line_search`` (:func:`~.sdca_linesearch.line_search`): the step size gamma, maximizing
   f(gamma) = H~(mu_i + gamma delta) - (lambda n / 2) ||w + gamma u||^2
   (:mod:`.sdca_linesearch`);
5. ``update`` (:func:`_update`): mu_i += gamma delta and w += gamma u.

Mini-batch SDCA (:mod:`.minibatch`) runs phases 1-4 of a batch's steps on several
threads against the same weights, then phase 5 of each in turn on one thread.

The sum of the entropies H~(mu_i) and ||w||^2 are kept up to date, so the dual objective
is known at every step.

Every pass over the T*K*K pairwise entries is fused: the first computes the
gap (without a logarithm) and delta together; each line-search evaluation
computes f', f'' and the entropy at the trial point together, so the accepted
point's entropy costs nothing more.

A split with transition attributes (:mod:`crfsdca.data.transitions`) has a table of
transition log-potentials per edge (``w_trans`` holds them, from
:func:`~crfsdca.model.oracle.edge_potentials`), read at a stride of K*K where the one
table W is read at a stride of 0; the direction gains a K*K row per transition attribute
of the sequence (in ``v_rows``, the elastic net's, which is not offered with them).

A loop over a block of the store slices the block first and indexes the slice from 0:
numba wraps negative indices, so an index ``m0 + j`` whose sign LLVM cannot prove costs
a select per entry and keeps the loop from vectorizing to contiguous loads (one
line-search evaluation: 4.2 against 2.7 cycles per entry, ``docs/benchmarks.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.chain import chain_entropy
from ..model.fastmath import flog
from ..model.objective import sequence_weight
from ..model.oracle import (
    NO_LABELS,
    Workspace,
    chain_marginals,
    edge_potentials,
    forward_logz,
    prefetch_scores,
    strided_logz,
    strided_marginals,
    sum_products,
    transition_offset,
    transition_potentials,
    unary_scores,
)
from ..model.stats import add_dense_outer, mask_direction
from ..runtime.jit import NJIT, NJIT_FAST, cycles, prefetch_range
from .compact_store import bound_line_search, chain_score_entropy, move_compact
from .sampling import draw, record_gap
from .sdca_linesearch import (
    FIXED,
    SINGLE_NEWTON,
    Block,
    l1_split,
    line_search,
    quadratic,
    soft,
)

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


class SDCABuffers(NamedTuple):
    ws: Workspace  # the oracle's; its unary and pair hold nu_i, then delta = nu_i - mu_i
    v_emission: np.ndarray  # max distinct attributes * K
    v_bias: np.ndarray  # 3K
    v_trans: np.ndarray  # KK
    w_trans: np.ndarray  # KK: the transition weights the oracle read (per edge, (T-1) KK,
    #                      with transition attributes)
    v_rows: np.ndarray  # elastic net: v's rows of the sequence's attributes, gathered; with
    #                     transition attributes (never with the elastic net) the K*K rows
    #                     of the direction on them (a field of its own, copied into every
    #                     call, made the steps 2-3% slower everywhere)
    cross_v: np.ndarray  # elastic net: v and u of the entries whose sign may change in a
    cross_u: np.ndarray  # step (Block.n_cross of them); u's largest support


class SDCAOptions(NamedTuple):
    """What a step needs besides the state (``math.md`` section 5)."""

    lam_n: float  # lambda n
    method: int  # line search, a code of sdca_linesearch.LINE_SEARCH_CODES
    tol: float  # sub-precision
    fixed_step: float  # the step of the fixed line search
    exact_store: bool  # float64 store: the dual update's entropy is exact
    midpoint: bool  # the paper's rtsafe from 0.5 instead of our regula-falsi start
    mask: np.ndarray  # the feature mask (uint8 per weight), empty: every weight
    kappa: float  # l1 / lam: the L1 threshold of the elastic net (0: ridge only)
    compact: bool  # the compact store (:mod:`.compact_store`): pair sums, entropy bounds
    l1_bound: bool  # elastic net: the line search on the smoothness bound (l1_line_search)


@njit(inline="always", **NJIT)
def l1_split_search(opt):
    """Whether a step's line search takes the elastic net's L1 part exactly
    (:func:`~.sdca_linesearch.l1_split`); with ``l1_bound`` (and without an L1 term) its
    quadratic is 1/2 ||w + gamma u||^2, from <w, u> and ||u||^2: with an L1 term an upper
    bound of g*(v + gamma u), g* being 1-smooth, so the step found raises the dual at
    least as much as the search's objective says (``math.md`` section 8)."""
    return opt.kappa != 0.0 and not opt.l1_bound


@njit(inline="always", **NJIT)
def _stride(idx, K):
    """Where the transition tables of consecutive edges lie apart: K*K with transition
    attributes (a table per edge), else 0 (the one W)."""
    return K * K if len(idx.edge_indptr) > 0 else 0


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


@njit(**NJIT_FAST)
def _edge_pair_scores(mu, m0, rows, KK, tw, ow, stride):
    """:func:`_pair_scores` with table r's log-potentials at ``tw[ow + r * stride:]``."""
    score = 0.0
    for r in range(rows):
        w = tw[ow + r * stride:ow + r * stride + KK]
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
                ow, logz, entropy, stride, rows):
    """Turn nu into delta = nu - mu in place; return the block gap D~(mu || nu).

    The gap comes from the Fenchel-Young identity of the chain,
    D~(mu || nu(w)) = log Z - E_mu[score] - H~(mu) (``math.md`` section 5.2), with
    ``entropy`` = H~(mu) kept by the solver and ``scores``, ``tw[ow:]`` the unary and
    transition log-potentials: no logarithm at all. ``delta_sum`` receives the pairwise
    delta summed over edges. The block holds ``rows`` pairwise tables (T - 1; one, their
    sum, in the compact store).
    """
    KK = K * K
    for j in range(KK):
        delta_sum[j] = 0.0
    gap = _block_gap(mu_unary, u0, mu_pair, p0, scores, tw, ow, T, K, logz, entropy, stride,
                     rows)
    if T > 1:
        _to_delta(mu_pair, p0, nu_pair, rows * KK, delta_sum, KK)
    _to_delta(mu_unary, u0, nu_unary, T * K, delta_sum, 0)
    return gap


@njit(inline="always", **NJIT)
def _block_gap(mu_unary, u0, mu_pair, p0, scores, tw, ow, T, K, logz, entropy, stride, rows):
    """D~(mu || nu(w)) = log Z - E_mu[score] - H~(mu) of a block (clipped at 0): its
    unary marginals against ``scores``, its ``rows`` pairwise tables against the
    transition log-potentials ``tw[ow + t * stride:]``; log Z alone stands for nu(w).
    (With the compact store, ``entropy`` is a lower bound of H~(mu): the gap bounds the
    block's from above.)"""
    score = sum_products(mu_unary, u0, scores, 0, T * K)
    if T > 1:
        if stride == 0:
            score += _pair_scores(mu_pair, p0, rows, K * K, tw, ow)
        else:
            score += _edge_pair_scores(mu_pair, p0, rows, K * K, tw, ow, stride)
    return max(logz - score - entropy, 0.0)


@njit(inline="always", **NJIT)
def pair_rows(T, compact):
    """The pairwise tables of a block of T tokens: one per edge, or in the compact store
    one (their sum), none for T = 1."""
    return 0 if T < 2 else 1 if compact else T - 1


@njit(inline="always", **NJIT)
def pair_start(start, i, K, compact):
    """Where sequence i's pairwise tables start in the store (its tokens from ``start``)."""
    return i * K * K if compact else (start - i) * K * K


@njit(**NJIT)
def _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, scale, v_em, v_bias, v_trans,
                      sum_trans, mask, inner_products):
    """v = scale * E_delta[F(x_i, .)], restricted to the features of ``mask``, into the
    sparse buffers (the dense block's D x K rows sum x_t delta_t^T over the tokens);
    returns (<w, v>, ||v||^2) when ``inner_products``, else (0, 0) without reading w (the
    elastic net's split computes <w, v> itself).

    With ``sum_trans`` false, ``v_trans`` already holds delta summed over the edges. The
    rows of transition attributes are :func:`_edge_direction`'s.
    """
    start = idx.offsets[i]
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    real = len(idx.attr_values) > 0
    D = len(idx.dense_attr)
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
    if D > 0:  # the dense columns: the sequence's first D rows (index.py)
        add_dense_outer(v_em, 1.0, idx.dense_rows, idx.dense, start, d_unary, 0, T, K, 0, D)
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
    mask_direction(mask, idx, i, K, n_attr, v_em, v_bias, v_trans)
    ob = n_attr * K
    ow = transition_offset(n_attr, K)
    wv = 0.0
    vv = 0.0
    if not inner_products:
        for j in range(nu * K):
            v_em[j] *= scale
        for j in range(KK):
            v_trans[j] *= scale
        return wv, vv
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


@njit(**NJIT)
def _edge_direction(w, oe, K, idx, i, T, d_pair, scale, v_edges, inner_products):
    """The transition attributes' rows of the direction into ``v_edges``: row r (attribute
    ``edge_uniq_attr[edge_uniq_ptr[i] + r]``) = scale sum of x delta_t over the edges t
    into the tokens that have it; returns their (<w, v>, ||v||^2) (W_B's rows of w from
    ``oe``) when ``inner_products``, else (0, 0)."""
    KK = K * K
    e0 = idx.edge_uniq_ptr[i]
    ne = idx.edge_uniq_ptr[i + 1] - e0
    start = idx.offsets[i]
    real = len(idx.edge_values) > 0
    for j in range(ne * KK):
        v_edges[j] = 0.0
    for t in range(1, T):
        d_t = d_pair[(t - 1) * KK:t * KK]
        tok = start + t
        for p in range(idx.edge_indptr[tok], idx.edge_indptr[tok + 1]):
            x = idx.edge_values[p] if real else 1.0
            base = idx.edge_local[p] * KK
            row = v_edges[base:base + KK]
            for j in range(KK):
                row[j] += x * d_t[j]
    wv = 0.0
    vv = 0.0
    for r in range(ne):
        row = v_edges[r * KK:(r + 1) * KK]
        base = oe + idx.edge_uniq_attr[e0 + r] * KK
        w_e = w[base:base + KK]
        for j in range(KK):
            x = scale * row[j]
            row[j] = x
            if inner_products:
                wv += w_e[j] * x
                vv += x * x
    return wv, vv


@njit(**NJIT)
def _apply_edges(w, oe, K, idx, i, gamma, v_edges):
    """W_B's rows (from ``oe``) += gamma u on the sequence's transition attributes."""
    KK = K * K
    e0 = idx.edge_uniq_ptr[i]
    for r in range(idx.edge_uniq_ptr[i + 1] - e0):
        base = oe + idx.edge_uniq_attr[e0 + r] * KK
        w_e = w[base:base + KK]
        row = v_edges[r * KK:(r + 1) * KK]
        for j in range(KK):
            w_e[j] += gamma * row[j]


@njit(**NJIT)
def _apply_primal(w, n_attr, K, idx, i, gamma, v_em, v_bias, v_trans):
    """w += gamma u on the support of the direction."""
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        w_a = w[base:base + K]
        v_a = v_em[r * K:(r + 1) * K]
        for k in range(K):
            w_a[k] += gamma * v_a[k]
    ob = n_attr * K
    w_b = w[ob:ob + 3 * K]
    for j in range(3 * K):
        w_b[j] += gamma * v_bias[j]
    ow = ob + 3 * K
    w_t = w[ow:ow + K * K]
    for j in range(K * K):
        w_t[j] += gamma * v_trans[j]


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
    m_u = mu_unary[u0:u0 + T * K]  # sliced: see the module's docstring
    for j in range(T * K):
        old = np.float64(m_u[j])
        m_u[j] = old + gamma * d_unary[j]
        d_unary[j] = (np.float64(m_u[j]) - old) * inv
    m_p = mu_pair[p0:p0 + (T - 1) * K * K]
    for j in range((T - 1) * K * K):
        old = np.float64(m_p[j])
        m_p[j] = old + gamma * d_pair[j]
        d_pair[j] = (np.float64(m_p[j]) - old) * inv


@njit(inline="always", **NJIT)
def _move_l1(v, w, u, gamma, kappa):
    """v += gamma u, w = S_kappa(v) over a row."""
    for k in range(len(u)):
        y = v[k] + gamma * u[k]
        v[k] = y
        w[k] = soft(y, kappa)


@njit(**NJIT)
def _apply_primal_l1(st, idx, buf, blk, gamma, kappa):
    """v += gamma u and w = S_kappa(v) on the support of u (the change of ||w||^2 is
    2 (Q(gamma) - Q(0)), known from the line search's split; with ``l1_bound`` its upper
    bound, until the solver recomputes ||w||^2 before reading it)."""
    K = blk.K
    ua0 = idx.uniq_ptr[blk.i]
    for r in range(idx.uniq_ptr[blk.i + 1] - ua0):
        base = idx.uniq_attr[ua0 + r] * K
        _move_l1(st.v[base:base + K], st.w[base:base + K],
                 buf.v_emission[r * K:(r + 1) * K], gamma, kappa)
    ob = blk.n_attr * K
    _move_l1(st.v[ob:ob + 3 * K], st.w[ob:ob + 3 * K], buf.v_bias, gamma, kappa)
    ow = ob + 3 * K
    _move_l1(st.v[ow:ow + K * K], st.w[ow:ow + K * K], buf.v_trans, gamma, kappa)


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


@njit(inline="always", **NJIT)
def _read_potentials(w, n_attr, K, idx, i, buf):
    """The transition log-potentials the oracle reads into ``buf.w_trans`` (the one W, or
    with transition attributes a table per edge of sequence i) and their exp into the
    workspace's ``trans``; returns their max."""
    if len(idx.edge_indptr) > 0:
        return edge_potentials(w, n_attr, K, idx, i, buf.w_trans, buf.ws.trans)
    return _read_transitions(w, n_attr, K, buf)


@njit(inline="always", **NJIT)
def _chain(buf, T, K, tmax, stride, sum_pairs):
    """log Z of the chain of the unary scores ``buf.ws.scores`` and the transition weights
    ``buf.w_trans`` (exp(W - tmax) in ``buf.ws.trans``; a table per edge at ``stride``),
    its marginals nu in the workspace's unary and pair (with ``sum_pairs``, the pairwise
    ones summed over the edges)."""
    if stride == 0:
        return chain_marginals(buf.ws, T, K, buf.w_trans, 0, tmax, 0.0, NO_LABELS, 0,
                               sum_pairs)[0]
    return strided_marginals(buf.ws, T, K, buf.w_trans, 0, tmax, 0.0, NO_LABELS, 0, False,
                             stride)[0]


@njit(**NJIT)
def _prefetch_rows(a, idx, i, K):
    """Fetch the rows of ``a`` (w or v) of sequence i's attributes all at once, so that
    the loads that follow wait for them together rather than one row at a time (in the
    pipeline many were last written by the other thread's core)."""
    ua0 = idx.uniq_ptr[i]
    for r in range(idx.uniq_ptr[i + 1] - ua0):
        base = idx.uniq_attr[ua0 + r] * K
        prefetch_range(a, base, base + K)


@njit(inline="always", **NJIT)
def _oracle(w, n_attr, K, idx, st, buf, i, u0, p0, T, l1, compact=False):
    """Phase ``oracle``: nu_i(w) into the workspace; returns log Z. Meanwhile the block
    of the marginal store comes from memory, and with the elastic net (``l1``) the rows
    of v the direction's split reads (v is another array than w then). ``compact``: the
    pairwise marginals summed over the edges, as the compact store keeps them."""
    prefetch_range(st.mu_pair, p0, p0 + pair_rows(T, compact) * K * K)
    prefetch_range(st.mu_unary, u0, u0 + T * K)
    if l1:
        _prefetch_rows(st.v, idx, i, K)
    unary_scores(w, n_attr, K, idx, i, buf.ws.scores)
    tmax = _read_potentials(w, n_attr, K, idx, i, buf)
    logz = _chain(buf, T, K, tmax, _stride(idx, K), compact)
    st.counters[ORACLE] += 1
    return logz


@njit(inline="always", **NJIT)
def _gap(st, buf, i, u0, p0, T, K, logz, stride, rows=-1):
    """Phase ``gap``: the block gap of sequence i (:func:`_first_pass`), the workspace's
    nu_i turned into delta = nu_i - mu_i (``rows``: the block's pairwise tables, -1 for
    the exact store's T - 1)."""
    ws = buf.ws
    return _first_pass(st.mu_unary, u0, st.mu_pair, p0, ws.unary, ws.pair, T, K, buf.v_trans,
                       ws.scores, buf.w_trans, 0, logz, st.entropies[i], stride,
                       T - 1 if rows < 0 else rows)


@njit(inline="always", **NJIT)
def _direction(w, n_attr, K, idx, i, u0, p0, T, st, buf, d_unary, d_pair, sum_trans, opt,
               lam_n):
    """Phase ``direction``: the primal direction u of delta (:func:`_primal_direction`) into
    the buffers, and with the elastic net the split of its quadratic term
    (:func:`~.sdca_linesearch.l1_split`, which gives <w, u> too); returns the step's
    :class:`~.sdca_linesearch.Block`. ``lam_n`` is the block's lambda n / c_i."""
    split = l1_split_search(opt)
    wv, vv = _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, -1.0 / lam_n,
                               buf.v_emission, buf.v_bias, buf.v_trans, sum_trans, opt.mask,
                               not split)
    if len(idx.edge_indptr) > 0:  # the transition attributes' rows, after the others
        we, ve = _edge_direction(w, transition_offset(n_attr, K) + K * K, K, idx, i, T,
                                 d_pair, -1.0 / lam_n, buf.v_rows, not split)
        wv += we
        vv += ve
    a0, b0, n_cross = 0.0, 0.0, 0
    if split:
        a0, b0, wv, n_cross = l1_split(st.v, idx, i, K, n_attr, opt.kappa,
                                       max(1.0, opt.fixed_step), buf.v_emission,
                                       buf.v_bias, buf.v_trans, buf.v_rows, buf.cross_v,
                                       buf.cross_u)
    return Block(i, u0, p0, T, K, n_attr, lam_n, wv, vv, opt.kappa if split else 0.0, a0, b0,
                 n_cross)


@njit(inline="always", **NJIT)
def refuses_losses(opt):
    """Whether a step that would lower the dual is not taken: the exact line searches
    never return one, so such a step is rounding near a root at 0; the fixed step, one
    Newton step and the paper's midpoint start take it as it comes."""
    return opt.method != FIXED and opt.method != SINGLE_NEWTON and not opt.midpoint


@njit(inline="always", **NJIT)
def _update(w, idx, st, buf, blk, d_unary, d_pair, gamma, h_ls, h_old, opt, weight,
            q_known=np.nan, moves_w=True, applied=False):
    """Phase ``update``: the dual block (with its new entropy), then w, for a step gamma
    that is not 0; returns the step taken (0 when it would lower the dual). The dual's
    entropy sum gains c_i times the block's change (``weight``). With the elastic net,
    ``q_known`` is Q(gamma) - Q(0) where a rebased move computed it (NaN: from the
    block's split), and without ``moves_w`` only v moves (the pipeline sets w = S(v)
    after its run). With ``applied`` the caller has moved the weights (w, or v without
    ``moves_w``) already, and puts them back where this returns 0."""
    i, u0, p0, T, K, n_attr = blk.i, blk.u0, blk.p0, blk.T, blk.K, blk.n_attr
    lam_n = blk.lam_n
    wv, vv = blk.wv, blk.vv
    if opt.compact:  # the bound the line search maximized, at its step
        h_new = h_ls
        move_compact(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
    elif opt.exact_store and not np.isnan(h_ls):
        h_new = h_ls
        _move_dual(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
    elif opt.exact_store:
        h_new = _apply_dual(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
    else:
        _store_applied_delta(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
        blk = _direction(w, n_attr, K, idx, i, u0, p0, T, st, buf, d_unary, d_pair, True,
                         opt, lam_n)
        wv, vv = blk.wv, blk.vv
        h_new = chain_entropy(st.mu_unary, u0, st.mu_pair, p0, T, K)
    q_change = 0.0  # Q(gamma) - Q(0) of the elastic net
    if opt.kappa == 0.0:
        gain = (h_new - h_old) - lam_n * gamma * (wv + 0.5 * gamma * vv)
    else:
        q_change = q_known if q_known == q_known else quadratic(blk, buf, gamma)[2]
        gain = (h_new - h_old) - lam_n * q_change
    if gain < 0.0 and opt.compact:  # rounding: the bound's search never lowers it
        move_compact(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, -gamma)
        h_new = h_old
        gamma = 0.0
    elif gain < 0.0 and refuses_losses(opt):
        # rounding near a root at 0: the exact line search never lowers the dual
        h_new = _apply_dual(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K,
                            -gamma)
        gamma = 0.0
    elif opt.kappa == 0.0:
        if not applied:
            _apply_primal(w, n_attr, K, idx, i, gamma, buf.v_emission, buf.v_bias,
                          buf.v_trans)
        if len(idx.edge_indptr) > 0:
            _apply_edges(w, transition_offset(n_attr, K) + K * K, K, idx, i, gamma,
                         buf.v_rows)
        st.scalars[W_NORM2] += 2.0 * gamma * wv + gamma * gamma * vv
    else:
        if moves_w:
            _apply_primal_l1(st, idx, buf, blk, gamma, opt.kappa)
        elif not applied:
            _apply_primal(st.v, n_attr, K, idx, i, gamma, buf.v_emission, buf.v_bias,
                          buf.v_trans)
        st.scalars[W_NORM2] += 2.0 * q_change
    st.scalars[SUM_ENTROPY] += weight * (h_new - h_old)
    st.entropies[i] = h_new
    return gamma


@njit(inline="always", **NJIT)
def store_line_search(blk, st, idx, buf, d_unary, d_pair, gap, h_old, h_nu, opt):
    """Phase ``line_search`` for the store in use: the exact store's search on the block's
    entropy, or the compact store's on its bound (``h_nu`` = H(nu_i)); returns (gamma,
    evaluations, the entropy or its bound at gamma, NaN if not evaluated)."""
    if opt.compact:
        return bound_line_search(blk, buf, st.mu_unary, d_unary, h_old, h_nu, opt.tol)
    return line_search(blk, st, idx, buf, d_unary, d_pair, gap, h_old, opt)


@njit(**NJIT)
def sdca_step(i, w, n_attr, K, idx, st, buf, opt):
    """One SDCA iteration on sequence i; returns (fresh gap g_i, step size gamma).

    A sequence of weight c_i > 0 is the unweighted step with lambda n / c_i (``math.md``
    section 4: the block's term of the dual is c_i [H~(mu_i) - (lambda n / c_i) / 2
    ||w + gamma u||^2] with u = -(c_i / (lambda n)) E_delta[F]); its gap g_i is c_i
    D~(mu_i || nu_i). With c_i = 1 every operation is the unweighted one."""
    ws = buf.ws
    c_start = cycles()
    weight = sequence_weight(idx, i)
    lam_n = opt.lam_n / weight
    start = idx.offsets[i]
    T = idx.offsets[i + 1] - start
    u0 = start * K
    p0 = pair_start(start, i, K, opt.compact)
    logz = _oracle(w, n_attr, K, idx, st, buf, i, u0, p0, T, l1_split_search(opt),
                   opt.compact)
    c_oracle = cycles()
    h_nu = chain_score_entropy(ws, buf.w_trans, T, K, logz) if opt.compact else 0.0
    gap = _gap(st, buf, i, u0, p0, T, K, logz, _stride(idx, K),
               pair_rows(T, opt.compact))
    d_unary = ws.unary
    d_pair = ws.pair
    c_gap = cycles()
    blk = _direction(w, n_attr, K, idx, i, u0, p0, T, st, buf, d_unary, d_pair, False, opt,
                     lam_n)
    if opt.kappa != 0.0 and opt.l1_bound:  # the rows of v the update writes
        _prefetch_rows(st.v, idx, i, K)
    c_ls = cycles()
    h_old = st.entropies[i]
    gamma, evals, h_ls = store_line_search(blk, st, idx, buf, d_unary, d_pair, gap, h_old,
                                           h_nu, opt)
    c_end_ls = cycles()
    if gamma != 0.0:
        gamma = _update(w, idx, st, buf, blk, d_unary, d_pair, gamma, h_ls, h_old, opt,
                        weight)
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
    return weight * gap, gamma


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
def gap_values(w, n_attr, K, idx, st, buf, members, out, first, stride, chunk, compact):
    """out[j] = the gap of sequence members[j] at w, for the j of chunks first,
    first + stride, ... of ``chunk`` members each: one thread's share of a refresh. The
    Fenchel-Young identity of :func:`_first_pass` needs log Z alone, one forward pass
    (the step's oracle also needs the marginals; the next member's rows of w fetched
    meanwhile). ``compact``: the store's layout."""
    edges = _stride(idx, K)
    tmax = _read_transitions(w, n_attr, K, buf) if edges == 0 else 0.0
    n = len(members)
    for c in range(first * chunk, n, stride * chunk):
        for j in range(c, min(c + chunk, n)):
            i = members[j]
            if j + 1 < n:
                prefetch_scores(w, K, idx, members[j + 1])
            start = idx.offsets[i]
            T = idx.offsets[i + 1] - start
            unary_scores(w, n_attr, K, idx, i, buf.ws.scores)
            if edges:
                tmax = edge_potentials(w, n_attr, K, idx, i, buf.w_trans, buf.ws.trans)
            if edges:
                logz = strided_logz(buf.ws, T, K, tmax, buf.w_trans, 0, edges)
            else:
                logz = forward_logz(buf.ws, T, K, tmax, buf.w_trans, 0)
            out[j] = sequence_weight(idx, i) * _block_gap(
                st.mu_unary, start * K, st.mu_pair, pair_start(start, i, K, compact),
                buf.ws.scores, buf.w_trans, 0, T, K, logz, st.entropies[i], edges,
                pair_rows(T, compact))


@njit(**NJIT)
def record_gaps(st, sampler, values):
    """Store the refreshed gaps ``values`` in the sampler, in order (whatever threads
    computed them), and their sum."""
    total = 0.0
    for j in range(len(values)):
        record_gap(sampler, j, values[j])
        total += sampler.gaps[j]
    st.counters[ORACLE] += len(values)
    st.scalars[SUM_GAPS] = total
