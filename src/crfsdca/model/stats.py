"""Sufficient statistics Phi_i(q) = E_q[F(x_i, .)] added into weight-shaped vectors.

Phi_i depends on the marginals only through the unary marginals and the
pairwise marginals summed over edges (``baselines.md`` section 1). Its emission
part touches only the rows of attributes present in sequence i, each entry weighted by
the attribute's value (1 for binary attributes).
"""

from numba import njit

from ..jit import NJIT


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
