"""Tagging in numpy alone, for ``crfsdca tag``: the labels and their scores.

A command that tags one file would spend 0.8 s importing numba and loading its first
kernel (numba's target context, which imports scipy's BLAS) before it tags anything,
more than reading and tagging a test set takes. These functions give the labels of
:func:`crfsdca.model.objective.predict` without numba: the split's entries as
:func:`~crfsdca.data.token_csr.token_csr` makes them (ids sorted within a token, a
repeated id's weights added in order, zero weights left out), each token's scores summed
in the kernel's order, and the Viterbi recursion over all sequences at once, position by
position, with the kernel's ties (the smallest label).
"""

from __future__ import annotations

import numpy as np


def _add_in_order(out: np.ndarray, rows: np.ndarray, starts: np.ndarray,
                  sizes: np.ndarray, term) -> None:
    """out[rows[g]] += term(starts[g] + r) for r = 0 .. sizes[g] - 1 in turn: a loop's
    sequential sums, in its order, for every group at once (``rows`` distinct)."""
    for r in range(int(sizes.max(initial=0))):
        has = sizes > r
        out[rows[has]] += term(starts[has] + r)


def csr_entries(counts: np.ndarray, ids: np.ndarray, weights: np.ndarray):
    """(indptr, ids, weights) of the entries given per token (``counts``): what
    :func:`~crfsdca.data.token_csr.token_csr` gives, weights added in the same order."""
    n_tokens = len(counts)
    tok = np.repeat(np.arange(n_tokens, dtype=np.int64), counts)
    keep = ids >= 0
    # by token, then id, repeats in the order given (stable); one int64 key sorts 10x
    # faster than np.lexsort's two (ids < 2^31: int32 in the split)
    key = (tok[keep] << 32) + ids[keep]
    order = np.argsort(key, kind="stable")
    key, weights = key[order], weights[keep][order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, len(key)))
    values = weights[starts]
    repeated = np.flatnonzero(sizes > 1)
    _add_in_order(values, repeated, starts[repeated] + 1, sizes[repeated] - 1,
                  weights.__getitem__)
    key = key[starts]
    nonzero = values != 0.0
    key, values = key[nonzero], values[nonzero]
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    np.cumsum(np.bincount(key >> 32, minlength=n_tokens), out=indptr[1:])
    return indptr, (key & 0xFFFFFFFF).astype(np.int32), values


def token_scores(layout, w: np.ndarray, offsets: np.ndarray, indptr: np.ndarray,
                 indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(tokens x K) unary scores: each label's bias (plus its first- and last-item
    biases), then each entry's value times its weights, in the entries' order, as the
    kernel adds them."""
    E, B = layout.emission(w), layout.bias(w)
    n_tokens = len(indptr) - 1
    out = np.repeat(B[None, :, 0], n_tokens, axis=0)
    out[offsets[:-1]] += B[:, 1]
    out[offsets[1:] - 1] += B[:, 2]
    _add_in_order(out, np.arange(n_tokens), indptr[:-1], np.diff(indptr),
                  lambda j: values[j, None] * E[indices[j]])
    return out


def viterbi_paths(scores: np.ndarray, offsets: np.ndarray, W: np.ndarray) -> np.ndarray:
    """The best labeling of every sequence (int32, one label per token), for the tokens'
    ``scores`` and the K x K transitions ``W``: position by position over the sequences
    that reach it, each label's best predecessor the first of the largest, as
    :func:`~crfsdca.model.oracle.viterbi` picks it."""
    lens = np.diff(offsets)
    order = np.argsort(-lens, kind="stable")  # longest first: those that reach t are a prefix
    starts, lens = offsets[:-1][order], lens[order]
    T = int(lens[0]) if len(lens) else 0
    reach = np.searchsorted(-lens, -np.arange(T + 1), side="left")  # lens > t
    delta = scores[starts]
    last = np.empty(len(lens), dtype=np.int64)  # the best last label of each
    back = [None] * T
    for t in range(1, T + 1):
        m = reach[t]
        last[m:reach[t - 1]] = np.argmax(delta[m:], axis=1)  # those of length t
        if t == T:
            break
        cand = delta[:m, :, None] + W[None, :, :]
        arg = np.argmax(cand, axis=1)
        delta = np.take_along_axis(cand, arg[:, None, :], axis=1)[:, 0, :]
        back[t] = arg.astype(np.uint8 if W.shape[0] <= 256 else np.int32)
        delta += scores[starts[:m] + t]
    path = np.empty(len(scores), dtype=np.int32)
    label = np.empty(len(lens), dtype=np.int64)
    for t in range(T - 1, -1, -1):
        m = reach[t]
        label[reach[t + 1]:m] = last[reach[t + 1]:m]
        path[starts[:m] + t] = label[:m]
        if t:
            label[:m] = back[t][np.arange(m), label[:m]]
    return path


def _values(seq) -> np.ndarray:
    """The weight of every attribute entry of a split (ones for binary splits), as
    :func:`crfsdca.data.items.split_values` gives it without importing numba."""
    return seq.attr_values if len(seq.attr_values) else np.ones(len(seq.attr_indices))


def predict(layout, w: np.ndarray, seq) -> np.ndarray:
    """:func:`crfsdca.model.objective.predict` of a split (a
    :class:`~crfsdca.data.sequences.Sequences`) in numpy: the same labels."""
    scores = token_scores(layout, w, seq.offsets, seq.attr_indptr, seq.attr_indices,
                          _values(seq))
    return viterbi_paths(scores, seq.offsets, layout.transition(w))


def path_scores(layout, w: np.ndarray, seq, pred: np.ndarray) -> np.ndarray:
    """score(x, y) of the labeling ``pred`` of every sequence (CRFsuite's ``@score``)."""
    E, B, W = layout.emission(w), layout.bias(w), layout.transition(w)
    tok = np.repeat(np.arange(seq.n_tokens), np.diff(seq.attr_indptr))
    unary = np.bincount(tok, weights=E[seq.attr_indices, pred[tok]] * _values(seq),
                        minlength=seq.n_tokens).astype(np.float64)  # int64 with no entry
    unary += B[pred, 0]
    first, last = seq.offsets[:-1], seq.offsets[1:] - 1
    unary[first] += B[pred[first], 1]
    unary[last] += B[pred[last], 2]
    inner = np.ones(seq.n_tokens, dtype=bool)
    inner[last] = False
    t = np.flatnonzero(inner)
    trans = np.zeros(seq.n_tokens)
    trans[t] = W[pred[t], pred[t + 1]]
    seq_of = np.repeat(np.arange(seq.n_sequences), np.diff(seq.offsets))
    return np.bincount(seq_of, weights=unary + trans, minlength=seq.n_sequences)
