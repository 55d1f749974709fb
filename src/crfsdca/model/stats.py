"""Sufficient statistics Phi_i(q) = E_q[F(x_i, .)] added into weight-shaped vectors.

Phi_i depends on the marginals only through the unary marginals and the
pairwise marginals summed over edges (``baselines.md`` section 1). Its emission
part touches only the rows of attributes present in sequence i, each entry weighted by
the attribute's value (1 for binary attributes); the rows of a dense block's columns,
weighted by the token's row of the dense matrix, are added by functions of their own
(:func:`add_dense_marginal_stats`, :func:`add_dense_label_stats`), which the passes call
only for a split that has one, so that the sparse functions compile as without it (their
code had grown by a dense branch never taken, and a gradient pass took 5-10% longer).

A split with transition attributes (:mod:`crfsdca.data.transitions`) needs each edge's
pairwise marginals for its W_B rows: :func:`add_edge_label_stats` and
:func:`add_edge_marginal_stats`, called besides the others for such a split only.

The feature mask (uint8 per weight, 1 = a feature; empty: every weight is one,
:mod:`crfsdca.model.features`) restricts such vectors: :func:`apply_mask` a dense one,
:func:`mask_direction` the sparse directions of the stochastic solvers (SDCA's primal
direction, SAG's gradient, OEG's change of w).
"""

from numba import njit

from ..runtime.jit import NJIT


@njit(**NJIT)  # not inlined: the sparse path stays as compact as it was
def add_dense_outer(out, scale, cols, X, start, q, q0, T, K, d0, d1):
    """out's rows of the dense columns d0 <= d < d1 (row cols[d] for column d) += scale
    sum_t X[start + t, d] q_t[k], q_t the K values of token t in ``q[q0:]``: the dense
    block's part of E_q[F] (and of SDCA's direction; a full-batch pass gives each thread
    its range of columns, summed in the same order whatever the range). Four tokens at a
    time, so that each row is loaded and stored once per four tokens rather than once per
    token."""
    t = 0
    while t + 4 <= T:
        r0, r1 = X[start + t], X[start + t + 1]
        r2, r3 = X[start + t + 2], X[start + t + 3]
        b = q0 + t * K
        g0, g1 = q[b:b + K], q[b + K:b + 2 * K]
        g2, g3 = q[b + 2 * K:b + 3 * K], q[b + 3 * K:b + 4 * K]
        for d in range(d0, d1):
            x0, x1, x2, x3 = scale * r0[d], scale * r1[d], scale * r2[d], scale * r3[d]
            o = out[cols[d] * K:cols[d] * K + K]
            for k in range(K):
                o[k] += (x0 * g0[k] + x1 * g1[k]) + (x2 * g2[k] + x3 * g3[k])
        t += 4
    while t < T:
        r = X[start + t]
        g = q[q0 + t * K:q0 + (t + 1) * K]
        for d in range(d0, d1):
            c = scale * r[d]
            o = out[cols[d] * K:cols[d] * K + K]
            for k in range(K):
                o[k] += c * g[k]
        t += 1


@njit(**NJIT)
def add_marginal_stats(out, scale, unary, u0, pair, p0, T, K, n_attr, seq, i, pair_rows):
    """out += scale * Phi_i(mu) but for a dense block's rows; ``unary[u0:]`` is T x K,
    ``pair[p0:]`` holds ``pair_rows`` K x K tables: the T - 1 edges' pairwise marginals,
    or their sum over the edges (one table; Phi_i needs only the sum)."""
    start = seq.offsets[i]
    real = len(seq.attr_values) > 0
    ob = n_attr * K
    ow = ob + 3 * K
    bias = out[ob:ob + 3 * K]
    for t in range(T):
        u = unary[u0 + t * K:u0 + (t + 1) * K]
        tok = start + t
        for j in range(seq.attr_indptr[tok], seq.attr_indptr[tok + 1]):
            base = seq.attr_indices[j] * K
            o = out[base:base + K]
            c = scale * seq.attr_values[j] if real else scale
            for k in range(K):
                o[k] += c * u[k]
        for k in range(K):
            bias[3 * k] += scale * u[k]
    first = unary[u0:u0 + K]
    last = unary[u0 + (T - 1) * K:u0 + T * K]
    for k in range(K):
        bias[3 * k + 1] += scale * first[k]
        bias[3 * k + 2] += scale * last[k]
    KK = K * K
    trans = out[ow:ow + KK]
    for t in range(pair_rows):
        table = pair[p0 + t * KK:p0 + (t + 1) * KK]
        for j in range(KK):
            trans[j] += scale * table[j]


@njit(**NJIT)
def add_dense_label_stats(out, scale, K, seq, i):
    """The dense block's part of :func:`add_label_stats`: out[a_d K + y_t] += scale
    x_t[d] (a split's passes call it besides when it has a dense block: the sparse
    functions stay as compact as without one)."""
    cols, labels = seq.dense_attr, seq.labels
    start = seq.offsets[i]
    for t in range(seq.offsets[i + 1] - start):
        x = seq.dense[start + t]
        y = labels[start + t]
        for d in range(len(cols)):
            out[cols[d] * K + y] += scale * x[d]


@njit(**NJIT)
def add_dense_marginal_stats(out, scale, unary, u0, T, K, seq, i):
    """The dense block's part of :func:`add_marginal_stats` (its rows; called besides it,
    as :func:`add_dense_label_stats`)."""
    add_dense_outer(out, scale, seq.dense_attr, seq.dense, seq.offsets[i], unary, u0, T, K,
                    0, len(seq.dense_attr))


@njit(**NJIT)
def add_label_stats(out, scale, K, n_attr, seq, i):
    """out += scale * F(x_i, y_i), the features of the gold labeling (but for a dense
    block's rows)."""
    offsets, labels = seq.offsets, seq.labels
    real = len(seq.attr_values) > 0
    start = offsets[i]
    T = offsets[i + 1] - start
    ob = n_attr * K
    ow = ob + 3 * K
    for t in range(T):
        tok = start + t
        y = labels[tok]
        for j in range(seq.attr_indptr[tok], seq.attr_indptr[tok + 1]):
            out[seq.attr_indices[j] * K + y] += scale * seq.attr_values[j] if real else scale
        out[ob + 3 * y] += scale
    out[ob + 3 * labels[start] + 1] += scale
    out[ob + 3 * labels[start + T - 1] + 2] += scale
    for t in range(T - 1):
        out[ow + labels[start + t] * K + labels[start + t + 1]] += scale


@njit(**NJIT)
def add_edge_label_stats(out, scale, K, oe, seq, i):
    """out's W_B rows (from ``oe``) += scale * their part of F(x_i, y_i): each transition
    attribute e of token t > 0, of value x, adds x on (y_{t-1}, y_t) of row e."""
    KK = K * K
    start = seq.offsets[i]
    real = len(seq.edge_values) > 0
    for tok in range(start + 1, seq.offsets[i + 1]):
        pair = seq.labels[tok - 1] * K + seq.labels[tok]
        for p in range(seq.edge_indptr[tok], seq.edge_indptr[tok + 1]):
            x = scale * seq.edge_values[p] if real else scale
            out[oe + seq.edge_indices[p] * KK + pair] += x


@njit(**NJIT)
def add_edge_marginal_stats(out, scale, pair, p0, K, oe, seq, i):
    """out's W_B rows (from ``oe``) += scale * their part of Phi_i(mu): each transition
    attribute e of token t > 0, of value x, adds x times the pairwise marginals of the
    edge into t (``pair[p0 + (t - 1) K^2:]``, t counted in the sequence) to row e."""
    KK = K * K
    start = seq.offsets[i]
    real = len(seq.edge_values) > 0
    for tok in range(start + 1, seq.offsets[i + 1]):
        table = pair[p0 + (tok - start - 1) * KK:p0 + (tok - start) * KK]
        for p in range(seq.edge_indptr[tok], seq.edge_indptr[tok + 1]):
            x = scale * seq.edge_values[p] if real else scale
            row = out[oe + seq.edge_indices[p] * KK:oe + (seq.edge_indices[p] + 1) * KK]
            for j in range(KK):
                row[j] += x * table[j]


@njit(inline="always", **NJIT)
def _mask_range(v, v0, mask, m0, n):
    """v[v0:v0 + n] *= mask[m0:m0 + n], on slices indexed from 0: an index ``m0 + j``
    whose sign LLVM cannot prove keeps the loop from vectorizing (``sdca_kernel``'s
    docstring; SDCA's direction on CoNLL-2000: 48k cycles a step against 63k)."""
    vs = v[v0:v0 + n]
    ms = mask[m0:m0 + n]
    for j in range(n):
        vs[j] *= ms[j]


@njit(**NJIT)
def apply_mask(v, mask):
    """v *= mask (the feature set), unless ``mask`` is empty (every weight a feature)."""
    if len(mask):
        _mask_range(v, 0, mask, 0, len(v))


@njit(inline="always", **NJIT)
def mask_direction(mask, idx, i, K, n_attr, em, bias, trans):
    """Restrict a sparse direction on sequence i to the features of ``mask`` (nothing to
    do when it is empty): ``em`` holds the K-entry rows of the attributes of i in the
    order of ``idx.uniq_attr[idx.uniq_ptr[i]:idx.uniq_ptr[i + 1]]``
    (:mod:`crfsdca.solvers.index`), ``bias`` the 3K bias entries and ``trans`` the K*K
    transition entries."""
    if len(mask):
        ua0 = idx.uniq_ptr[i]
        for r in range(idx.uniq_ptr[i + 1] - ua0):
            _mask_range(em, r * K, mask, idx.uniq_attr[ua0 + r] * K, K)
        ob = n_attr * K
        _mask_range(bias, 0, mask, ob, 3 * K)
        _mask_range(trans, 0, mask, ob + 3 * K, K * K)
