"""Squared radii R_i of the training sequences (math.md section 6, paper Appendix C).

R_i estimates max_y ||F(x_i, y_i) - F(x_i, y)||^2 by the labeling y' that is constant,
equal to a label c_i absent from y_i (the smallest such id), or when every label occurs in
y_i, to the least frequent label of y_i (ties: smallest id). F counts, for a labeling y:

- emission E (A x K): tokens t with attribute a active and y_t = k (an attribute active
  at several tokens adds up in its row), each counted with the attribute's value;
- bias B (K x 3): every token, the first token, the last token, labeled k;
- transition W (K x K): positions t < T with (y_t, y_{t+1}) = (k, l);
- W_B (E x K x K), with transition attributes: tokens t > 0 with transition attribute e
  active and (y_{t-1}, y_t) = (k, l), each counted with its value; y' has (c, c).

With m[a, k] the emission counts of y_i and n[a] = sum_k m[a, k] (those of y' are n[a] in
column c), the emission part is sum m^2 - sum_a m[a, c]^2 + sum_a (m[a, c] - n[a])^2, and
similarly for the bias and transition blocks. Everything is vectorized over the whole split
but the rows of a dense block (its columns are attributes of their own, each token's
value in m and n), summed a sequence at a time.
The radii ignore a feature mask (:mod:`crfsdca.model.features`): for a restricted model they
are upper bounds, which is what importance sampling and the theoretical step need.
"""

from __future__ import annotations

import numpy as np

from crfsdca.data.sequences import Sequences


def _grouped_square_sums(keys: np.ndarray, group_of_key, n_groups: int,
                         weights: np.ndarray | None = None):
    """Unique keys with their counts (or sums of ``weights``), and per group the sum of
    squared counts."""
    if weights is None:
        uniq, counts = np.unique(keys, return_counts=True)
    else:
        uniq, inverse = np.unique(keys, return_inverse=True)
        counts = np.bincount(inverse, weights=weights, minlength=len(uniq))
    groups = group_of_key(uniq)
    sq = np.bincount(groups, weights=counts.astype(np.float64) ** 2, minlength=n_groups)
    return uniq, counts, groups, sq


def constant_labels(seq: Sequences, n_labels: int) -> np.ndarray:
    """The label c_i of the constant labeling y' of every sequence (see module docstring)."""
    n, K = seq.n_sequences, n_labels
    seq_of_tok = np.repeat(np.arange(n, dtype=np.int64), seq.lengths())
    counts = np.bincount(seq_of_tok * K + seq.labels, minlength=n * K).reshape(n, K)
    # argmin returns the first minimum: the smallest absent label if any (count 0), else
    # the least frequent label with ties broken by the smallest id.
    return np.argmin(counts, axis=1).astype(np.int64)


def _dense_emission(seq: Sequences, y: np.ndarray, c: np.ndarray, K: int) -> np.ndarray:
    """The dense block's share of the emission part of every R_i: with m = Y^T X (K x D,
    Y the one-hot gold labels) and n = the column sums of X, sum m^2 - sum m[c]^2 +
    sum (m[c] - n)^2."""
    out = np.empty(seq.n_sequences)
    eye = np.eye(K)
    for i in range(seq.n_sequences):
        a, b = seq.offsets[i], seq.offsets[i + 1]
        X = seq.dense[a:b]
        m = eye[y[a:b]].T @ X
        mc = m[c[i]]
        out[i] = (m * m).sum() - mc @ mc + ((mc - X.sum(axis=0)) ** 2).sum()
    return out


def _attribute_part(s_nz: np.ndarray, a_nz: np.ndarray, lab_nz: np.ndarray, values,
                    c: np.ndarray, n: int, A: int, L: int) -> np.ndarray:
    """The share of every R_i of a block of attribute rows over L "labels": entries of
    sequence ``s_nz``, attribute ``a_nz`` and label ``lab_nz`` (``values``: their weights,
    None for ones), against the constant label c[i] of each sequence: with m[a, k] the
    counts of y_i and n[a] their sums, sum m^2 - sum m[a, c]^2 + sum (m[a, c] - n[a])^2,
    keys (seq, a, k) and (seq, a)."""
    sa = s_nz * A + a_nz.astype(np.int64)
    u_sak, m, g_sak, sum_m2 = _grouped_square_sums(sa * L + lab_nz, lambda u: u // (A * L),
                                                   n, values)
    u_sa, n_a, _, sum_n2 = _grouped_square_sums(sa, lambda u: u // A, n, values)
    # entries (seq, a, c_seq): m[a, c] > 0; cross term -2 m[a, c] n[a]
    at_c = (u_sak % L) == c[g_sak]
    n_of = n_a[np.searchsorted(u_sa, u_sak[at_c] // L)]
    cross = np.bincount(g_sak[at_c], weights=(m[at_c] * n_of).astype(np.float64), minlength=n)
    return sum_m2 + sum_n2 - 2.0 * cross


def squared_radii(seq: Sequences, n_labels: int, n_attributes: int) -> np.ndarray:
    """R_i = ||F(x_i, y_i) - F(x_i, y'_i)||^2 for every sequence of ``seq`` (float64, n)."""
    n, K, A = seq.n_sequences, int(n_labels), max(int(n_attributes), 1)
    if n == 0:
        return np.zeros(0)
    lengths = seq.lengths()
    y = seq.labels.astype(np.int64)
    seq_of_tok = np.repeat(np.arange(n, dtype=np.int64), lengths)
    c = constant_labels(seq, K)
    c_tok = c[seq_of_tok]

    # --- emission: keys (seq, a, k) and (seq, a)
    tok_of_nz = np.repeat(np.arange(len(y), dtype=np.int64), np.diff(seq.attr_indptr))
    emission = _attribute_part(seq_of_tok[tok_of_nz], seq.attr_indices, y[tok_of_nz],
                               None if seq.binary else seq.attr_values, c, n, A, K)
    if seq.has_edges:  # transition attributes: the pair into their token, against (c, c)
        tok = np.repeat(np.arange(len(y), dtype=np.int64), np.diff(seq.edge_indptr))
        emission += _attribute_part(
            seq_of_tok[tok], seq.edge_indices, y[tok - 1] * K + y[tok],
            seq.edge_values if len(seq.edge_values) else None, c * (K + 1), n,
            int(seq.edge_indices.max(initial=0)) + 1, K * K)
    if seq.n_dense:
        emission += _dense_emission(seq, y, c, K)

    # --- bias column 0 (all tokens): counts of each label vs T tokens of label c
    _, _, _, sum_c2 = _grouped_square_sums(seq_of_tok * K + y, lambda u: u // K, n)
    cnt_c = np.bincount(seq_of_tok, weights=(y == c_tok).astype(np.float64), minlength=n)
    T = lengths.astype(np.float64)
    bias = sum_c2 - cnt_c**2 + (cnt_c - T) ** 2
    # columns 1 and 2 (first and last token): 2 unless that label is c
    first = y[seq.offsets[:-1]]
    last = y[seq.offsets[1:] - 1]
    bias += 2.0 * (first != c) + 2.0 * (last != c)

    # --- transitions (y_t, y_{t+1}) within sequences vs T - 1 transitions (c, c)
    inner = np.ones(len(y), dtype=bool)
    inner[seq.offsets[1:] - 1] = False  # the last token of a sequence has no successor
    t_idx = np.flatnonzero(inner)
    s_tr = seq_of_tok[t_idx]
    kl = y[t_idx] * K + y[t_idx + 1]
    _, _, _, sum_t2 = _grouped_square_sums(s_tr * K * K + kl, lambda u: u // (K * K), n)
    tr_cc = np.bincount(s_tr, weights=(kl == c[s_tr] * (K + 1)).astype(np.float64), minlength=n)
    transition = sum_t2 - tr_cc**2 + (tr_cc - (T - 1)) ** 2

    return emission + bias + transition
