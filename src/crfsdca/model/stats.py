"""Sufficient statistics Phi_i(q) = E_q[F(x_i, .)] added into weight-shaped vectors.

Phi_i depends on the marginals only through the unary marginals and the
pairwise marginals summed over edges (``baselines.md`` section 1). Its emission
part touches only the rows of attributes present in sequence i, each entry weighted by
the attribute's value (1 for binary attributes).

The feature mask (uint8 per weight, 1 = a feature; empty: every weight is one,
:mod:`crfsdca.model.features`) restricts such vectors: :func:`apply_mask` a dense one,
:func:`mask_direction` the sparse directions of the stochastic solvers (SDCA's primal
direction, SAG's gradient, OEG's change of w).
"""

from numba import njit

from ..runtime.jit import NJIT


@njit(**NJIT)
def add_marginal_stats(out, scale, unary, u0, pair, p0, T, K, n_attr, seq, i, pair_rows):
    """out += scale * Phi_i(mu); ``unary[u0:]`` is T x K, ``pair[p0:]`` holds
    ``pair_rows`` K x K tables: the T - 1 edges' pairwise marginals, or their sum over
    the edges (one table; Phi_i needs only the sum)."""
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
def add_label_stats(out, scale, K, n_attr, seq, i):
    """out += scale * F(x_i, y_i), the features of the gold labeling."""
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


@njit(inline="always", **NJIT)
def _mask_range(v, v0, mask, m0, n):
    """v[v0:v0 + n] *= mask[m0:m0 + n]."""
    for j in range(n):
        v[v0 + j] *= mask[m0 + j]


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
