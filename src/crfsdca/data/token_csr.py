"""Token-major CSR of encoded items, in one pass: ids sorted and unique within a token.

Encoding a corpus ends with millions of (attribute id, weight) entries in item order;
the split wants each token's ids sorted, a repeated id's weights added, and entries of
weight 0 left out (and reported: CRFsuite still makes state features of them). A token
holds tens of entries, so an insertion sort per token does it in a pass, where a global
``np.unique`` over token x attribute keys sorted all of them at once (0.3-0.9 s of a
4-million-entry corpus); a token of more than :data:`LONG_TOKEN` entries is merge-sorted.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..runtime.jit import NJIT

LONG_TOKEN = 64
"""Entries of a token above which a stable merge sort replaces the insertion sort (whose
cost grows with the square of the count: bag-of-words items hold thousands)."""


@njit(**NJIT)
def _merge_sorted(ids, weights, first, last, indices, values, out):
    """Append the entries [first, last) to ``indices``/``values`` at ``out``, sorted by a
    stable sort (repeats added in the order given, as the insertion sort adds them);
    returns the new end."""
    order = np.argsort(ids[first:last], kind="mergesort")
    start = out
    for m in range(len(order)):
        k = first + order[m]
        a = ids[k]
        if a < 0:
            continue
        if out > start and indices[out - 1] == a:
            values[out - 1] += weights[k]
        else:
            indices[out] = a
            values[out] = weights[k]
            out += 1
    return out


@njit(**NJIT)
def _insertion_sorted(ids, weights, first, last, indices, values, out):
    """:func:`_merge_sorted` by insertion, for a few entries."""
    start = out
    for k in range(first, last):
        a = ids[k]
        if a < 0:
            continue
        j = out
        while j > start and indices[j - 1] > a:
            j -= 1
        if j > start and indices[j - 1] == a:
            values[j - 1] += weights[k]
            continue
        for m in range(out, j, -1):
            indices[m] = indices[m - 1]
            values[m] = values[m - 1]
        indices[j] = a
        values[j] = weights[k]
        out += 1
    return out


@njit(**NJIT)
def _token_csr(counts, ids, weights, indptr, indices, values, zero_attr, zero_tok):
    """Fill the CSR of the entries (``counts[t]`` of token t, in order; an id < 0 is left
    out); returns (entries kept, zero-weight entries)."""
    src = 0
    out = 0
    n_zero = 0
    for t in range(len(counts)):
        first = out
        last = src + counts[t]
        if counts[t] > LONG_TOKEN:
            out = _merge_sorted(ids, weights, src, last, indices, values, out)
        else:
            out = _insertion_sorted(ids, weights, src, last, indices, values, out)
        src = last
        kept = first
        for m in range(first, out):
            if values[m] != 0.0:
                indices[kept] = indices[m]
                values[kept] = values[m]
                kept += 1
            else:
                zero_attr[n_zero] = indices[m]
                zero_tok[n_zero] = t
                n_zero += 1
        out = kept
        indptr[t + 1] = out
    return out, n_zero


def token_csr(counts: np.ndarray, ids: np.ndarray, weights: np.ndarray):
    """(indptr, int32 ids, weights, zeros) of entries given per token (``counts``), ids
    sorted and unique within each token (weights added), no zero weights; ``zeros`` the
    (attribute, token) pairs left out for their zero weight, an int64 array (m, 2) in
    token then attribute order. Ids below 0 (attributes a model lacks) are dropped."""
    n = len(ids)
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    indices = np.empty(n, dtype=np.int32)
    values = np.empty(n, dtype=np.float64)
    zero_attr = np.empty(n, dtype=np.int64)
    zero_tok = np.empty(n, dtype=np.int64)
    kept, n_zero = _token_csr(np.asarray(counts, dtype=np.int64),
                              np.asarray(ids, dtype=np.int64),
                              np.asarray(weights, dtype=np.float64), indptr, indices,
                              values, zero_attr, zero_tok)
    zeros = np.stack([zero_attr[:n_zero], zero_tok[:n_zero]], axis=1)
    if kept < n:  # entries left out: do not keep the rest of the buffers alive
        indices, values = indices[:kept].copy(), values[:kept].copy()
    return indptr, indices, values, zeros
