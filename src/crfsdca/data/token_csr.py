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


@njit(inline="always", **NJIT)
def _entry(ids, weights, which, k):
    """(id, weight) of entry k: of the distinct entry ``which[k]``, or of k without
    ``which`` (empty)."""
    if len(which):
        p = which[k]
        return ids[p], weights[p]
    return ids[k], weights[k]


@njit(**NJIT)
def _merge_sorted(ids, weights, which, first, last, indices, values, out):
    """Append the entries [first, last) to ``indices``/``values`` at ``out``, sorted by a
    stable sort (repeats added in the order given, as the insertion sort adds them);
    returns the new end."""
    own = np.empty(last - first, dtype=np.int64)  # a long token's ids (allocated per token)
    for k in range(first, last):
        own[k - first] = _entry(ids, weights, which, k)[0]
    order = np.argsort(own, kind="mergesort")
    start = out
    for m in range(len(order)):
        a, w = _entry(ids, weights, which, first + order[m])
        if a < 0:
            continue
        if out > start and indices[out - 1] == a:
            values[out - 1] += w
        else:
            indices[out] = a
            values[out] = w
            out += 1
    return out


@njit(**NJIT)
def _insertion_sorted(ids, weights, which, first, last, indices, values, out):
    """:func:`_merge_sorted` by insertion, for a few entries."""
    start = out
    for k in range(first, last):
        a, w = _entry(ids, weights, which, k)
        if a < 0:
            continue
        j = out
        while j > start and indices[j - 1] > a:
            j -= 1
        if j > start and indices[j - 1] == a:
            values[j - 1] += w
            continue
        for m in range(out, j, -1):
            indices[m] = indices[m - 1]
            values[m] = values[m - 1]
        indices[j] = a
        values[j] = w
        out += 1
    return out


@njit(**NJIT)
def _token_csr(counts, ids, weights, which, indptr, indices, values, zeros):
    """Fill the CSR of the entries (``counts[t]`` of token t, in order; an id < 0 is left
    out) and the first ``len(zeros)`` zero-weight ones; returns (entries kept, zero-weight
    entries), the latter counting those beyond ``len(zeros)`` too."""
    src = 0
    out = 0
    n_zero = 0
    for t in range(len(counts)):
        first = out
        last = src + counts[t]
        if counts[t] > LONG_TOKEN:
            out = _merge_sorted(ids, weights, which, src, last, indices, values, out)
        else:
            out = _insertion_sorted(ids, weights, which, src, last, indices, values, out)
        src = last
        kept = first
        for m in range(first, out):
            if values[m] != 0.0:
                indices[kept] = indices[m]
                values[kept] = values[m]
                kept += 1
            else:
                if n_zero < len(zeros):
                    zeros[n_zero, 0] = indices[m]
                    zeros[n_zero, 1] = t
                n_zero += 1
        out = kept
        indptr[t + 1] = out
    return out, n_zero


NO_WHICH = np.empty(0, dtype=np.int32)


def token_csr(counts: np.ndarray, ids: np.ndarray, weights: np.ndarray,
              which: np.ndarray | None = None):
    """(indptr, int32 ids, weights, zeros) of entries given per token (``counts``), ids
    sorted and unique within each token (weights added), no zero weights; ``zeros`` the
    (attribute, token) pairs left out for their zero weight, an int64 array (m, 2) in
    token then attribute order. Ids below 0 (attributes a model lacks) are dropped.

    With ``which`` (int32 or int64), entry k is the distinct entry ``which[k]`` of ``ids``
    and ``weights``: a corpus of dict items repeats a few thousand (key, value) pairs
    millions of times, and no array of entry length but ``which``, one of booleans and the
    result is allocated (CoNLL-2002 Dutch: 3.7 million entries, 220 MiB at encoding's
    peak before). None, or an empty ``which`` with empty ``ids``, is each entry its own."""
    ids = np.asarray(ids, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    which = NO_WHICH if which is None else np.asarray(which)
    if len(which) and not 0 <= int(which.min()) <= int(which.max()) < len(ids):
        raise IndexError(f"an entry's position is outside the {len(ids)} distinct entries")
    n = len(which) if len(which) else len(ids)
    counts = np.asarray(counts, dtype=np.int64)
    zero = weights == 0.0  # the zero-weight entries; repeats adding to 0 make more (rare)
    capacity = int(np.count_nonzero(zero[which]) if len(which) else zero.sum())
    while True:
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        indices = np.empty(n, dtype=np.int32)
        values = np.empty(n, dtype=np.float64)
        zeros = np.empty((capacity, 2), dtype=np.int64)
        kept, n_zero = _token_csr(counts, ids, weights, which, indptr, indices, values, zeros)
        if n_zero <= capacity:
            break
        capacity = n_zero  # repeats added to 0: once more, with room for every one
    if kept < n:  # entries left out: give their room back (realloc, not a copy)
        indices.resize(kept, refcheck=False)
        values.resize(kept, refcheck=False)
    return indptr, indices, values, zeros[:n_zero]
