"""The marginalization oracle of one sequence: scores, forward-backward, Viterbi.

All kernels write into a caller-owned :class:`Workspace`, so that solvers allocate
nothing per iteration. It holds token-major arrays for a sequence of length T:
``scores[t*K + k]`` (unary log-potentials) and ``unary[t*K + k]`` (unary marginals),
``pair[t*K*K + k*K + l] = p(y_t = k, y_{t+1} = l)`` for the T - 1 edges, and
``trans`` = exp(W - max W) of the transition log-potentials W.

A model with transition attributes (:mod:`crfsdca.data.transitions`) has a K x K table of
log-potentials per edge, G_t = W + sum_e x_{t,e} W_B[e] (:func:`edge_potentials`, into the
workspace's ``edges``, and ``trans`` one table per edge). The ``strided_*`` functions read
the table of edge t at ``t * stride`` (K*K there; 0 gives the shared W's functions). The
scaled recursion for them is a copy of the shared one with a stride
(:func:`_forward_edges`, :func:`_chain_scaled_edges`): one function for both made SDCA's
steps 3-8% slower on Dutch, which has no transition attributes.

One recursion serves every chain the package solves (:func:`chain_marginals`): the
model's (unary scores and transition weights of w), OEG's dual chains and the smoothed
Dirac start (``math.md`` section 5.1), which add a log-potential ``bonus`` on the gold
transition of every edge, and may sum the pairwise marginals over the edges.

Forward-backward runs on scaled probabilities (Rabiner's scaling), after subtracting the
per-token maximum of the unary scores and the maximum of the transition matrix; log Z
keeps the logs of all scale factors. When a scale factor underflows (extreme weights),
the sequence is redone in log space. Not quite exact at any weight magnitude: at weights
of about 200 N(0, 1), a label's mass that a product underflowed to 0 while the scale factor
stayed in range can matter later (6 of 1,200 random tiny sequences, against brute force);
trained models are far from such weights.

The loops over labels slice a token's (or a transition row's) entries first and index
the slice from 0: numba wraps negative indices, and an index ``row + k`` whose sign LLVM
cannot prove costs a select per entry and keeps the loop from vectorizing.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..runtime.jit import NJIT, NJIT_FAST, aligned_empty, aligned_zeros, prefetch_range
from .fastmath import fexp, flog

_SAFE_MIN = 1e-280
_SAFE_MAX = 1e280
_SPAN = 700.0
"""The widest range of log-potentials within a token's scores or an edge's table that the
per-edge scaled recursion takes (exp of less than -708 underflows to 0); wider goes to
log space."""


class Workspace(NamedTuple):
    """Scratch buffers of the oracle for sequences of at most ``max_len`` tokens."""

    scores: np.ndarray  # T*K unary scores
    emit: np.ndarray  # T*K exp(scores - rowmax), then backward messages
    alpha: np.ndarray  # T*K scaled forward messages
    beta: np.ndarray  # T*K scaled backward messages
    scale: np.ndarray  # T forward scale factors
    trans: np.ndarray  # K*K exp(W - max W)
    unary: np.ndarray  # T*K unary marginals
    pair: np.ndarray  # (T-1)*K*K pairwise marginals
    path: np.ndarray  # T int32 Viterbi labels
    back: np.ndarray  # T*K int32 Viterbi back-pointers


def make_workspace(max_len: int, n_labels: int, edges: bool = False) -> Workspace:
    """Allocate the scratch buffers for sequences up to ``max_len`` tokens (``edges``: of
    a model with transition attributes, ``trans`` a table per edge; their log-potentials
    G go in an :func:`edge_tables` array of their own: a field more in this tuple, copied
    into every call that takes it, made SDCA's steps 2-3% slower everywhere)."""
    T, K = max(int(max_len), 1), int(n_labels)
    per_edge = max(T - 1, 1) if edges else 1
    return Workspace(
        scores=aligned_zeros(T * K),
        emit=aligned_zeros(T * K),
        alpha=aligned_zeros(T * K),
        beta=aligned_zeros(T * K),
        scale=aligned_zeros(T),
        trans=aligned_zeros(per_edge * K * K),
        unary=aligned_zeros(T * K),
        pair=aligned_zeros(max(T - 1, 1) * K * K),
        path=np.zeros(T, dtype=np.int32),
        back=np.zeros(T * K, dtype=np.int32),
    )


_NONE = aligned_zeros(0)


def edge_tables(max_len: int, n_labels: int, edges: bool = True) -> np.ndarray:
    """A buffer for the per-edge log-potentials G of sequences up to ``max_len`` tokens
    (:func:`edge_potentials`); empty without ``edges``."""
    T, K = max(int(max_len), 1), int(n_labels)
    return aligned_zeros(max(T - 1, 1) * K * K) if edges else aligned_zeros(0)


def make_decode_workspace(max_len: int, n_labels: int) -> Workspace:
    """A :class:`Workspace` with only what :func:`viterbi` uses after :func:`unary_scores`
    (``scores``, ``emit`` as its 2K-entry ``delta``, ``back``, ``path``), uninitialized; the
    other fields are empty. A one-sentence prediction then allocates 4 arrays instead of
    10, the largest of them T*K*K zeros."""
    T, K = max(int(max_len), 1), int(n_labels)
    return Workspace(
        scores=aligned_empty(T * K), emit=aligned_empty(2 * K), alpha=_NONE, beta=_NONE,
        scale=_NONE, trans=_NONE, unary=_NONE, pair=_NONE,
        path=np.empty(T, dtype=np.int32), back=np.empty(T * K, dtype=np.int32))


@njit(inline="always", **NJIT)
def transition_offset(n_attr, K):
    """Where the K x K transition block starts in w (``model/layout.py``)."""
    return n_attr * K + 3 * K


NO_LABELS = np.zeros(0, dtype=np.int32)
"""The gold labels of a chain without a bonus (never read)."""


@njit(inline="always", **NJIT)
def add_end_bias(bias, K, t, T, o):
    """Add the first-position and last-position bias to the scores ``o`` of token t."""
    if t == 0:
        for k in range(K):
            o[k] += bias[3 * k + 1]
    if t == T - 1:
        for k in range(K):
            o[k] += bias[3 * k + 2]


@njit(**NJIT)  # not inlined: the sparse path stays as compact as it was
def add_dense_scores(w, scale, K, dense, cols, start, T, out):
    """out[t*K + k] += scale sum_d x[start + t, d] E[a_d, k] for the T tokens from
    ``start``, over the columns d of the dense block ``dense`` (E's row a_d at
    ``w[cols[d] * K:]``: the attribute's row of the weights, or a gathered copy's): each
    token's row of the matrix against the block's rows of the emission weights (which
    the scores' other attributes never share).

    Four columns at a time, summed in pairs before they reach the score: a score that
    took one column after another would wait D times for its own previous sum (a
    floating-point addition's latency), the bound of a long sparse item too."""
    D = len(cols)
    for t in range(T):
        x = dense[start + t]
        o = out[t * K:(t + 1) * K]
        d = 0
        while d + 4 <= D:
            v0, v1 = scale * x[d], scale * x[d + 1]
            v2, v3 = scale * x[d + 2], scale * x[d + 3]
            w0 = w[cols[d] * K:cols[d] * K + K]
            w1 = w[cols[d + 1] * K:cols[d + 1] * K + K]
            w2 = w[cols[d + 2] * K:cols[d + 2] * K + K]
            w3 = w[cols[d + 3] * K:cols[d + 3] * K + K]
            for k in range(K):
                o[k] += (v0 * w0[k] + v1 * w1[k]) + (v2 * w2[k] + v3 * w3[k])
            d += 4
        while d < D:
            v = scale * x[d]
            wa = w[cols[d] * K:cols[d] * K + K]
            for k in range(K):
                o[k] += v * wa[k]
            d += 1


@njit(inline="always", **NJIT)
def add_token_rows(rows, K, indptr, cols, values, real, tok, o):
    """o += sum_j x_j rows[cols[j] * K:][:K] over token ``tok``'s entries j of the CSR
    (``indptr``, ``cols``; values x_j, 1 unless ``real``): a token's share of its unary
    scores from the rows of w (cols: attribute ids) or a gathered copy of them (cols: the
    rows' places in the copy)."""
    for j in range(indptr[tok], indptr[tok + 1]):
        base = cols[j] * K
        wa = rows[base:base + K]
        if real:
            x = values[j]
            for k in range(K):
                o[k] += x * wa[k]
        else:
            for k in range(K):
                o[k] += wa[k]


@njit(inline="always", **NJIT)
def _token_scores(w, scale, scaled, n_attr, K, seq, i, out):
    """The one loop of :func:`unary_scores` and :func:`scaled_unary_scores` (``scaled``, a
    constant at each call, picks the order of the sums; each keeps its own bits)."""
    start = seq.offsets[i]
    T = seq.offsets[i + 1] - start
    real = len(seq.attr_values) > 0
    ob = n_attr * K
    bias = w[ob:ob + 3 * K]
    for t in range(T):
        o = out[t * K:(t + 1) * K]
        if scaled:
            for k in range(K):
                o[k] = 0.0
        else:
            for k in range(K):
                o[k] = bias[3 * k]
            add_end_bias(bias, K, t, T, o)
        add_token_rows(w, K, seq.attr_indptr, seq.attr_indices, seq.attr_values, real,
                       start + t, o)
        if scaled:
            for k in range(K):
                o[k] = scale * o[k] + bias[3 * k]
            add_end_bias(bias, K, t, T, o)
    if len(seq.dense_attr) > 0:  # the dense block last, its own rows of E
        add_dense_scores(w, scale, K, seq.dense, seq.dense_attr, start, T, out)
    return T


PREFETCH_MIN_WEIGHTS = 4 * 2**20
"""The weights (32 MiB) from which :func:`prefetch_scores` fetches rows: below, they stay in
the last-level cache and fetching costs more than it saves (CoNLL-2002 Dutch, 0.74
million weights: a loss pass 63.6 -> 70.0 ms, a gradient's first phase 95.4 -> 104.3 ms;
CoNLL-2000, 7.4 million: 150.9 -> 141.1 and 253.7 -> 241.6 ms)."""


@njit(inline="always", **NJIT)
def prefetch_scores(w, K, seq, i):
    """Fetch the rows of ``w`` that :func:`unary_scores` of sequence i reads (a hint, no
    effect on values), where ``w`` has :data:`PREFETCH_MIN_WEIGHTS` or more; nothing past
    the last sequence. A pass over the sequences calls it one sequence ahead: the rows of
    rare attributes come from memory (on CoNLL-2000, 59 MB of rows, the scores take twice
    their in-cache time), and so arrive while the chain of the current sequence computes."""
    if len(w) < PREFETCH_MIN_WEIGHTS or i + 1 >= len(seq.offsets):
        return
    start = seq.offsets[i]
    for j in range(seq.attr_indptr[start], seq.attr_indptr[seq.offsets[i + 1]]):
        base = seq.attr_indices[j] * K
        prefetch_range(w, base, base + K)


@njit(**NJIT)
def entry_scores(w, n_attr, K, counts, ids, values, out):
    """:func:`unary_scores` of one sequence given as its items' entries in order
    (``counts[t]`` for item t; attribute ``ids[j]``, -1 for one the model lacks, of weight
    ``values[j]``, all 1 if ``values`` is empty): the same sums in the same order."""
    T = len(counts)
    real = len(values) > 0
    ob = n_attr * K
    bias = w[ob:ob + 3 * K]
    stop = 0
    for t in range(T):
        o = out[t * K:(t + 1) * K]
        for k in range(K):
            o[k] = bias[3 * k]
        add_end_bias(bias, K, t, T, o)
        start, stop = stop, stop + counts[t]
        for j in range(start, stop):
            a = ids[j]
            if a < 0:
                continue
            wa = w[a * K:(a + 1) * K]
            if real:
                v = values[j]
                for k in range(K):
                    o[k] += v * wa[k]
            else:
                for k in range(K):
                    o[k] += wa[k]
    return T


@njit(**NJIT)
def unary_scores(w, n_attr, K, seq, i, out):
    """Write u_t(k) of sequence i of ``seq`` (a :class:`~crfsdca.data.sequences.Sequences`
    or anything with its arrays) into ``out[:T*K]`` and return T."""
    return _token_scores(w, 1.0, False, n_attr, K, seq, i, out)


@njit(**NJIT)
def scaled_unary_scores(w, scale, n_attr, K, seq, i, out):
    """:func:`unary_scores` of the weights whose emission block is ``scale`` times that of
    ``w`` (bias block as in ``w``): SAG's lazily scaled emission block E = c V."""
    return _token_scores(w, scale, True, n_attr, K, seq, i, out)


@njit(**NJIT_FAST)
def transition_potentials(tw, ow, K, trans):
    """Write exp(W - max W) into ``trans[:K*K]`` and return max W, for the K x K
    log-potentials W = ``tw[ow:ow + K*K]``."""
    W = tw[ow:ow + K * K]
    mx = -np.inf
    for j in range(K * K):
        mx = max(mx, W[j])
    for j in range(K * K):
        trans[j] = fexp(W[j] - mx)
    return mx


@njit(**NJIT_FAST)
def _forward(scores, T, K, trans, trans_max, emit, alpha, scale, e1, labels, start):
    """Scaled forward pass; returns log Z, or NaN if a scale factor left the safe range.

    ``e1`` = exp(bonus) - 1 multiplies in the bonus of the gold transition of each edge
    (labels[start + t - 1], labels[start + t]); 0 for no bonus.
    """
    logz = (T - 1) * trans_max
    for t in range(T):
        s = scores[t * K:(t + 1) * K]
        e = emit[t * K:(t + 1) * K]
        mx = -np.inf
        for k in range(K):
            mx = max(mx, s[k])
        logz += mx
        for k in range(K):
            e[k] = fexp(s[k] - mx)
    for t in range(T):
        a = alpha[t * K:(t + 1) * K]
        if t == 0:
            for k in range(K):
                a[k] = emit[k]
        else:
            a_prev = alpha[(t - 1) * K:t * K]
            for k in range(K):
                a[k] = 0.0
            for k in range(K):
                ak = a_prev[k]
                tr = trans[k * K:(k + 1) * K]
                for l in range(K):
                    a[l] += ak * tr[l]
            if e1 != 0.0:
                ya = labels[start + t - 1]
                yb = labels[start + t]
                a[yb] += a_prev[ya] * trans[ya * K + yb] * e1
            e = emit[t * K:(t + 1) * K]
            for k in range(K):
                a[k] *= e[k]
        c = 0.0
        for k in range(K):
            c += a[k]
        if not (c > _SAFE_MIN and c < _SAFE_MAX):
            return np.nan
        inv = 1.0 / c
        for k in range(K):
            a[k] *= inv
        scale[t] = c
        logz += flog(c)
    return logz


@njit(**NJIT_FAST)
def _forward_edges(scores, T, K, trans, trans_max, emit, alpha, scale, e1, labels, start,
                   stride):
    """:func:`_forward` with a table per edge: edge t - 1's at ``trans[(t - 1) * stride:]``
    (a copy of it with a stride, so that the shared table's recursion compiles as it did:
    one function for both made SDCA's steps 3-8% slower on Dutch). NaN also where a
    token's scores span more than :data:`_SPAN` (an emission would underflow to 0 while a
    transition may favour it: the scaled recursion would lose that mass without a scale
    factor leaving its range; :func:`edge_potentials` checks the tables likewise)."""
    logz = (T - 1) * trans_max
    for t in range(T):
        s = scores[t * K:(t + 1) * K]
        e = emit[t * K:(t + 1) * K]
        mx = -np.inf
        mn = np.inf
        for k in range(K):
            mx = max(mx, s[k])
            if s[k] > -np.inf:  # a label a constraint removed (decoding) is exactly 0
                mn = min(mn, s[k])
        if mx - mn > _SPAN:
            return np.nan
        logz += mx
        for k in range(K):
            e[k] = fexp(s[k] - mx)
    for t in range(T):
        a = alpha[t * K:(t + 1) * K]
        if t == 0:
            for k in range(K):
                a[k] = emit[k]
        else:
            a_prev = alpha[(t - 1) * K:t * K]
            for k in range(K):
                a[k] = 0.0
            table = trans[(t - 1) * stride:(t - 1) * stride + K * K]
            for k in range(K):
                ak = a_prev[k]
                tr = table[k * K:(k + 1) * K]
                for l in range(K):
                    a[l] += ak * tr[l]
            if e1 != 0.0:
                ya = labels[start + t - 1]
                yb = labels[start + t]
                a[yb] += a_prev[ya] * table[ya * K + yb] * e1
            e = emit[t * K:(t + 1) * K]
            for k in range(K):
                a[k] *= e[k]
        c = 0.0
        for k in range(K):
            c += a[k]
        if not (c > _SAFE_MIN and c < _SAFE_MAX):
            return np.nan
        inv = 1.0 / c
        for k in range(K):
            a[k] *= inv
        scale[t] = c
        logz += flog(c)
    return logz


@njit(**NJIT)
def logsumexp(x, start, stop):
    """log sum_j exp(x[j]) over ``x[start:stop]`` (-inf for an empty or all -inf range)."""
    mx = -np.inf
    for j in range(start, stop):
        mx = max(mx, x[j])
    if mx == -np.inf:
        return mx
    s = 0.0
    for j in range(start, stop):
        s += np.exp(x[j] - mx)
    return mx + np.log(s)


@njit(**NJIT)
def _chain_log(scores, T, K, tw, ow, bonus, labels, start, alpha, beta, tmp, unary, pair,
               sum_pairs, stride):
    """:func:`chain_marginals` in log space (slow, exact at any scale).

    ``alpha``/``beta`` receive log messages; ``tmp`` is a K-sized scratch buffer; edge t's
    log-potentials are ``tw[ow + t * stride:]``.
    """
    KK = K * K
    for k in range(K):
        alpha[k] = scores[k]
    for t in range(1, T):
        gold = labels[start + t - 1] * K + labels[start + t] if bonus != 0.0 else -1
        for l in range(K):
            for k in range(K):
                b = bonus if k * K + l == gold else 0.0
                tmp[k] = alpha[(t - 1) * K + k] + tw[ow + (t - 1) * stride + k * K + l] + b
            alpha[t * K + l] = logsumexp(tmp, 0, K) + scores[t * K + l]
    logz = logsumexp(alpha, (T - 1) * K, T * K)
    for k in range(K):
        beta[(T - 1) * K + k] = 0.0
    for t in range(T - 2, -1, -1):
        gold = labels[start + t] * K + labels[start + t + 1] if bonus != 0.0 else -1
        for k in range(K):
            for l in range(K):
                b = bonus if k * K + l == gold else 0.0
                tmp[l] = (tw[ow + t * stride + k * K + l] + b + scores[(t + 1) * K + l]
                          + beta[(t + 1) * K + l])
            beta[t * K + k] = logsumexp(tmp, 0, K)
    for j in range(T * K):
        unary[j] = np.exp(alpha[j] + beta[j] - logz)
    if sum_pairs:
        for j in range(KK):
            pair[j] = 0.0
    true_mass = 0.0
    for t in range(T - 1):
        gold = labels[start + t] * K + labels[start + t + 1] if bonus != 0.0 else -1
        prow = 0 if sum_pairs else t * KK
        for k in range(K):
            for l in range(K):
                b = bonus if k * K + l == gold else 0.0
                x = np.exp(alpha[t * K + k] + tw[ow + t * stride + k * K + l] + b
                           + scores[(t + 1) * K + l] + beta[(t + 1) * K + l] - logz)
                if sum_pairs:
                    pair[prow + k * K + l] += x
                else:
                    pair[prow + k * K + l] = x
                if k * K + l == gold:
                    true_mass += x
    return logz, true_mass


@njit(inline="always", **NJIT_FAST)
def sum_products(a, a0, b, b0, n):
    """sum_l a[a0 + l] b[b0 + l], in a loop that writes nothing.

    A vectorized (reassociated) sum in a loop that also stores gets runtime alias checks,
    whose scalar fallback sums in another order: the result would depend on where the
    arrays lie in memory, and runs would not be reproducible bit for bit.
    """
    x = a[a0:a0 + n]
    y = b[b0:b0 + n]
    s = 0.0
    for l in range(n):
        s += x[l] * y[l]
    return s


@njit(**NJIT_FAST)
def _chain_scaled(scores, T, K, trans, trans_max, emit, alpha, beta, scale, unary, pair, e1,
                  labels, start, sum_pairs):
    """The scaled forward-backward alone; returns (log Z, gold mass), log Z = NaN if it
    left the safe range.

    On success the buffers also hold what the log-marginals are made of:
    ``alpha[t*K + k]`` = normalized forward message a_t(k) and, for t >= 1,
    ``emit[t*K + l]`` = g_t(l) = exp(s_t(l) - max_k s_t(k)) b_t(l) / c_t, so that
    p(y_t = k, y_{t+1} = l) = a_t(k) exp(W[k, l] - max W) g_{t+1}(l) (times exp(bonus)
    on the gold transition).
    """
    logz = _forward(scores, T, K, trans, trans_max, emit, alpha, scale, e1, labels, start)
    if logz != logz:
        return logz, 0.0
    KK = K * K
    last = (T - 1) * K
    for k in range(K):
        beta[last + k] = 1.0
        unary[last + k] = alpha[last + k]
    if sum_pairs:
        for j in range(KK):
            pair[j] = 0.0
    true_mass = 0.0
    bmax = 0.0
    for t in range(T - 2, -1, -1):
        row = t * K
        nxt = row + K
        inv = 1.0 / scale[t + 1]
        # emit of token t+1 is no longer needed: reuse it for g = emit * beta / c
        g = emit[nxt:nxt + K]
        b_next = beta[nxt:nxt + K]
        for l in range(K):
            g[l] = g[l] * b_next[l] * inv
        prow = 0 if sum_pairs else t * KK
        table = pair[prow:prow + KK]
        for k in range(K):
            ak = alpha[row + k]
            mrow = k * K
            tr = trans[mrow:mrow + K]
            out = table[mrow:mrow + K]
            # the sum in a loop of its own: see sum_products
            s = sum_products(tr, 0, g, 0, K)
            if sum_pairs:
                for l in range(K):
                    out[l] += ak * (tr[l] * g[l])
            else:
                for l in range(K):
                    out[l] = ak * (tr[l] * g[l])
            beta[row + k] = s
            unary[row + k] = ak * s
            bmax = max(bmax, s)
        if e1 != 0.0:
            ya = labels[start + t]
            yb = labels[start + t + 1]
            x = trans[ya * K + yb] * emit[nxt + yb]
            beta[row + ya] += x * e1
            pair[prow + ya * K + yb] += alpha[row + ya] * x * e1
            true_mass += alpha[row + ya] * x * (e1 + 1.0)
            unary[row + ya] = alpha[row + ya] * beta[row + ya]
            bmax = max(bmax, beta[row + ya])
    if not bmax < _SAFE_MAX:
        return np.nan, 0.0
    return logz, true_mass


@njit(**NJIT_FAST)
def _chain_scaled_edges(scores, T, K, trans, trans_max, emit, alpha, beta, scale, unary, pair,
                        e1, labels, start, sum_pairs, stride):
    """:func:`_chain_scaled` with a table per edge, edge t's at ``trans[t * stride:]`` (a
    copy with a stride, as :func:`_forward_edges`)."""
    logz = _forward_edges(scores, T, K, trans, trans_max, emit, alpha, scale, e1, labels,
                          start, stride)
    if logz != logz:
        return logz, 0.0
    KK = K * K
    last = (T - 1) * K
    for k in range(K):
        beta[last + k] = 1.0
        unary[last + k] = alpha[last + k]
    if sum_pairs:
        for j in range(KK):
            pair[j] = 0.0
    true_mass = 0.0
    bmax = 0.0
    for t in range(T - 2, -1, -1):
        row = t * K
        nxt = row + K
        inv = 1.0 / scale[t + 1]
        # emit of token t+1 is no longer needed: reuse it for g = emit * beta / c
        g = emit[nxt:nxt + K]
        b_next = beta[nxt:nxt + K]
        for l in range(K):
            g[l] = g[l] * b_next[l] * inv
        prow = 0 if sum_pairs else t * KK
        table = pair[prow:prow + KK]
        edge = trans[t * stride:t * stride + KK]
        for k in range(K):
            ak = alpha[row + k]
            mrow = k * K
            tr = edge[mrow:mrow + K]
            out = table[mrow:mrow + K]
            # the sum in a loop of its own: see sum_products
            s = sum_products(tr, 0, g, 0, K)
            if sum_pairs:
                for l in range(K):
                    out[l] += ak * (tr[l] * g[l])
            else:
                for l in range(K):
                    out[l] = ak * (tr[l] * g[l])
            beta[row + k] = s
            unary[row + k] = ak * s
            bmax = max(bmax, s)
        if e1 != 0.0:
            ya = labels[start + t]
            yb = labels[start + t + 1]
            x = edge[ya * K + yb] * emit[nxt + yb]
            beta[row + ya] += x * e1
            pair[prow + ya * K + yb] += alpha[row + ya] * x * e1
            true_mass += alpha[row + ya] * x * (e1 + 1.0)
            unary[row + ya] = alpha[row + ya] * beta[row + ya]
            bmax = max(bmax, beta[row + ya])
    if not bmax < _SAFE_MAX:
        return np.nan, 0.0
    return logz, true_mass


@njit(**NJIT)
def chain_marginals(ws, T, K, tw, ow, trans_max, bonus, labels, start, sum_pairs):
    """:func:`strided_marginals` of the one transition table ``tw[ow:ow + K*K]``."""
    e1 = np.expm1(bonus) if bonus != 0.0 else 0.0
    logz, true_mass = _chain_scaled(ws.scores, T, K, ws.trans, trans_max, ws.emit, ws.alpha,
                                    ws.beta, ws.scale, ws.unary, ws.pair, e1, labels, start,
                                    sum_pairs)
    if logz != logz:
        return _chain_log(ws.scores, T, K, tw, ow, bonus, labels, start, ws.alpha, ws.beta,
                          ws.emit, ws.unary, ws.pair, sum_pairs, 0)
    return logz, true_mass


@njit(**NJIT)
def strided_marginals(ws, T, K, tw, ow, trans_max, bonus, labels, start, sum_pairs,
                      stride):
    """Marginals of the chain with unary log-potentials ``ws.scores[:T*K]``, transition
    log-potentials W = ``tw[ow:ow + K*K]`` (``ws.trans`` = exp(W - trans_max) already, from
    :func:`transition_potentials`) and a log-potential ``bonus`` on the gold transition
    (``labels[start + t]``, ``labels[start + t + 1]``) of every edge.

    Writes the unary marginals into ``ws.unary[:T*K]`` and the pairwise marginals into
    ``ws.pair``, per edge, or summed over the edges into ``ws.pair[:K*K]`` if
    ``sum_pairs``. Returns (log Z, sum over edges of the gold transition's probability).
    Scaled recursion, redone in log space if a scale factor under- or overflows.
    Edge t's table is at ``t * stride`` in ``tw[ow:]`` and in ``ws.trans``
    (:func:`edge_potentials` writes both with ``stride`` = K*K; 0: one table).
    """
    if stride == 0:
        return chain_marginals(ws, T, K, tw, ow, trans_max, bonus, labels, start, sum_pairs)
    e1 = np.expm1(bonus) if bonus != 0.0 else 0.0
    logz, true_mass = _chain_scaled_edges(ws.scores, T, K, ws.trans, trans_max, ws.emit,
                                          ws.alpha, ws.beta, ws.scale, ws.unary, ws.pair, e1,
                                          labels, start, sum_pairs, stride)
    if logz != logz:
        return _chain_log(ws.scores, T, K, tw, ow, bonus, labels, start, ws.alpha, ws.beta,
                          ws.emit, ws.unary, ws.pair, sum_pairs, stride)
    return logz, true_mass


@njit(**NJIT)
def forward_backward(ws, T, K, trans_max, w, n_attr):
    """log Z of the model's chain (unary scores in ``ws.scores``, ``ws.trans`` from
    :func:`transition_potentials` at the same weights ``w``), with its unary and pairwise
    marginals in ``ws.unary[:T*K]`` and ``ws.pair[:(T-1)*K*K]``."""
    return chain_marginals(ws, T, K, w, transition_offset(n_attr, K), trans_max, 0.0,
                           NO_LABELS, 0, False)[0]


@njit(**NJIT_FAST)
def forward_logz(ws, T, K, trans_max, tw, ow):
    """log Z alone (one forward pass) of the chain of ``ws.scores`` and the transition
    log-potentials ``tw[ow:]``, falling back to log space like :func:`chain_marginals`."""
    logz = _forward(ws.scores, T, K, ws.trans, trans_max, ws.emit, ws.alpha, ws.scale, 0.0,
                    NO_LABELS, 0)
    if logz != logz:
        return _chain_log(ws.scores, T, K, tw, ow, 0.0, NO_LABELS, 0, ws.alpha, ws.beta,
                          ws.emit, ws.unary, ws.pair, False, 0)[0]
    return logz


@njit(**NJIT_FAST)
def strided_logz(ws, T, K, trans_max, tw, ow, stride):
    """:func:`forward_logz` with edge t's table at ``t * stride`` (as
    :func:`strided_marginals`; a stride of 0 is :func:`forward_logz`)."""
    if stride == 0:
        return forward_logz(ws, T, K, trans_max, tw, ow)
    logz = _forward_edges(ws.scores, T, K, ws.trans, trans_max, ws.emit, ws.alpha, ws.scale,
                          0.0, NO_LABELS, 0, stride)
    if logz != logz:
        return _chain_log(ws.scores, T, K, tw, ow, 0.0, NO_LABELS, 0, ws.alpha, ws.beta,
                          ws.emit, ws.unary, ws.pair, False, stride)[0]
    return logz


@njit(**NJIT)
def viterbi(scores, T, K, w, n_attr, delta, back, path):
    """:func:`strided_viterbi` of the model's one transition table (its stride a constant
    0, folded where the recursion is inlined)."""
    return _viterbi(scores, T, K, w, transition_offset(n_attr, K), 0, delta, back, path)


@njit(**NJIT)
def strided_viterbi(scores, T, K, tw, ow, stride, delta, back, path):
    """:func:`_viterbi` with edge t's table at ``tw[ow + t * stride:]``."""
    return _viterbi(scores, T, K, tw, ow, stride, delta, back, path)


@njit(inline="always", **NJIT)
def _viterbi(scores, T, K, tw, ow, stride, delta, back, path):
    """MAP labeling of the sequence into ``path[:T]``; returns its score.

    ``delta`` needs 2*K entries, ``back`` T*K. Ties go to the smallest label: for each
    label l of token t, the previous labels k are tried in increasing order and one
    replaces the best so far only if its score is strictly greater (a NaN never does;
    when none beats -inf, label 0).

    The loop over the previous label k is the outer one, over the labels l of token t the
    inner one: it reads row k of the transition weights contiguously and keeps the best
    score and label of every l in ``delta`` and ``back``, so that it vectorizes over l
    (a compare and a masked store per vector of labels). With k inner, each l is a
    serial chain of compares and unpredictable branches (3x slower on CoNLL-2000,
    K = 22), and LLVM does not vectorize that argmax even over a transposed, contiguous
    transition matrix (slower still).

    The transition log-potentials of edge t (into token t + 1) are ``tw[ow + t * stride:]``.
    """
    for k in range(K):
        delta[k] = scores[k]
    cur = 0
    for t in range(1, T):
        nxt = K - cur
        prev = delta[cur:cur + K]
        best = delta[nxt:nxt + K]
        arg = back[t * K:(t + 1) * K]
        for l in range(K):
            best[l] = -np.inf
            arg[l] = 0
        e0 = ow + (t - 1) * stride
        for k in range(K):
            dk = prev[k]
            row = tw[e0 + k * K:e0 + (k + 1) * K]
            for l in range(K):
                v = dk + row[l]
                if v > best[l]:
                    best[l] = v
                    arg[l] = k
        s = scores[t * K:(t + 1) * K]
        for l in range(K):
            best[l] += s[l]
        cur = nxt
    best = -np.inf
    arg = 0
    for k in range(K):
        if delta[cur + k] > best:
            best = delta[cur + k]
            arg = k
    path[T - 1] = arg
    for t in range(T - 1, 0, -1):
        arg = back[t * K + arg]
        path[t - 1] = arg
    return best


@njit(**NJIT)
def labeling_score(scores, T, K, w, n_attr, labels, start):
    """score(x, y) of the labeling ``labels[start:start+T]`` given the unary scores."""
    return strided_labeling_score(scores, T, K, w, transition_offset(n_attr, K), 0, labels,
                                  start)


@njit(**NJIT)
def strided_labeling_score(scores, T, K, tw, ow, stride, labels, start):
    """:func:`labeling_score` with edge t's log-potentials at ``tw[ow + t * stride:]``."""
    s = 0.0
    for t in range(T):
        s += scores[t * K + labels[start + t]]
    for t in range(T - 1):
        s += tw[ow + t * stride + labels[start + t] * K + labels[start + t + 1]]
    return s


@njit(**NJIT)
def edge_potentials(w, n_attr, K, seq, i, G, trans):
    """The log-potentials G_t = W + sum_e x_{t+1,e} W_B[e] of the T - 1 edges of sequence
    i (edge t into token t + 1, its transition attributes ``seq.edge_*``) into
    ``G[t*K*K:]``, and exp(G_t - m_t) into ``trans`` likewise, m_t the largest entry of
    G_t (unless ``trans`` is empty: for Viterbi); returns the mean of the m_t, which the
    recursions count T - 1 times in log Z, as they count the one W's max, or NaN where a
    table spans more than :data:`_SPAN` (the recursion then goes to log space). Each edge
    is scaled by its own max: with one max over all of them, an edge far below it
    underflowed while its own terms were the ones that mattered. The attributes add in the
    CSR's order, each table from W."""
    KK = K * K
    ow = transition_offset(n_attr, K)
    oe = ow + KK
    W = w[ow:ow + KK]
    start = seq.offsets[i]
    T = seq.offsets[i + 1] - start
    real = len(seq.edge_values) > 0
    total = 0.0
    for t in range(T - 1):
        g = G[t * KK:(t + 1) * KK]
        for j in range(KK):
            g[j] = W[j]
        tok = start + t + 1
        for p in range(seq.edge_indptr[tok], seq.edge_indptr[tok + 1]):
            b = oe + seq.edge_indices[p] * KK
            wb = w[b:b + KK]
            if real:
                v = seq.edge_values[p]
                for j in range(KK):
                    g[j] += v * wb[j]
            else:
                for j in range(KK):
                    g[j] += wb[j]
        mx = -np.inf
        mn = np.inf
        for j in range(KK):
            mx = max(mx, g[j])
            mn = min(mn, g[j])
        total += mx if mx - mn <= _SPAN else np.nan
        if len(trans) > 0:
            e = trans[t * KK:(t + 1) * KK]
            for j in range(KK):
                e[j] = fexp(g[j] - mx)
    return total / (T - 1) if T > 1 else 0.0


def sequence_marginals(w, n_attr, K, seq, i):
    """log Z, unary (T, K) and pairwise (T-1, K, K) marginals of sequence i (allocating)."""
    T = int(seq.offsets[i + 1] - seq.offsets[i])
    ws = make_workspace(T, K, edges=seq.has_edges)
    unary_scores(w, n_attr, K, seq, i, ws.scores)
    if seq.has_edges:
        G = edge_tables(T, K)
        tmax = edge_potentials(w, n_attr, K, seq, i, G, ws.trans)
        logz = strided_marginals(ws, T, K, G, 0, tmax, 0.0, NO_LABELS, 0, False,
                                 K * K)[0]
    else:
        tmax = transition_potentials(w, transition_offset(n_attr, K), K, ws.trans)
        logz = forward_backward(ws, T, K, tmax, w, n_attr)
    return (logz, ws.unary[: T * K].reshape(T, K).copy(),
            ws.pair[: (T - 1) * K * K].reshape(T - 1, K, K).copy())
