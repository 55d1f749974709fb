"""Per-sequence index of distinct attributes: what sparse updates of w touch.

Every dual method (SDCA, SAG, OEG) changes w only on the emission rows of the attributes
present in the visited sequence. The index lists them once per sequence, and maps each
(token, attribute) entry to its row in that list, so that the update of a sequence costs
O(distinct attributes x K), not O(tokens x attributes x K). The columns of a dense block
(:mod:`crfsdca.data.dense`) come first in every sequence's list, in their order: column d
is row d of the sequence's rows. Transition attributes (:mod:`crfsdca.data.transitions`)
get lists of their own (``edge_uniq_*``, ``edge_local``), their rows K*K wide.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..runtime.jit import NJIT


class SequenceIndex(NamedTuple):
    """A split's arrays (the fields of :class:`~crfsdca.data.sequences.Sequences`, so the
    oracle reads it as one) plus, per sequence, its distinct attributes."""

    offsets: np.ndarray
    labels: np.ndarray
    attr_indptr: np.ndarray
    attr_indices: np.ndarray
    attr_values: np.ndarray  # empty for binary attributes
    weights: np.ndarray  # sequence weights, empty when every weight is 1
    dense: np.ndarray  # N x D values of the dense block (0 x 0: none)
    dense_attr: np.ndarray  # D: the attribute of each dense column
    dense_rows: np.ndarray  # 0..D-1: the row of each dense column in a sequence's list
    uniq_ptr: np.ndarray  # n + 1: distinct attributes of i are uniq_attr[uniq_ptr[i]:...]
    uniq_attr: np.ndarray
    local: np.ndarray  # nnz: row of each (token, attribute) in its sequence's distinct list
    edge_indptr: np.ndarray  # the split's transition attributes (empty: none)
    edge_indices: np.ndarray
    edge_values: np.ndarray
    edge_uniq_ptr: np.ndarray  # n + 1 (empty: none), as uniq_ptr for them
    edge_uniq_attr: np.ndarray
    edge_local: np.ndarray  # per transition entry, its row in the sequence's list


@njit(**NJIT)
def build_index(offsets, attr_indptr, attr_indices, n_attr, uniq_ptr, uniq_attr, local,
                dense_attr):
    """Fill the distinct-attribute lists of every sequence (the dense columns
    ``dense_attr`` first); returns their total length."""
    n = len(offsets) - 1
    mark = np.full(n_attr, -1, dtype=np.int64)
    pos = np.zeros(n_attr, dtype=np.int64)
    total = 0
    uniq_ptr[0] = 0
    for i in range(n):
        count = 0
        for d in range(len(dense_attr)):
            uniq_attr[total + count] = dense_attr[d]
            count += 1
        for j in range(attr_indptr[offsets[i]], attr_indptr[offsets[i + 1]]):
            a = attr_indices[j]
            if mark[a] != i:
                mark[a] = i
                pos[a] = count
                uniq_attr[total + count] = a
                count += 1
            local[j] = pos[a]
        total += count
        uniq_ptr[i + 1] = total
    return total


def sequence_index(seq, n_attributes: int) -> SequenceIndex:
    """The split plus per-sequence distinct attribute lists used by sparse updates."""
    n = seq.n_sequences
    uniq_ptr = np.zeros(n + 1, dtype=np.int64)
    uniq_attr = np.zeros(seq.nnz + n * seq.n_dense, dtype=np.int32)
    local = np.zeros(seq.nnz, dtype=np.int32)
    total = build_index(seq.offsets, seq.attr_indptr, seq.attr_indices, n_attributes, uniq_ptr,
                        uniq_attr, local, seq.dense_attr)
    edges = _edge_lists(seq)
    return SequenceIndex(seq.offsets, seq.labels, seq.attr_indptr, seq.attr_indices,
                         seq.attr_values, seq.weights, seq.dense, seq.dense_attr,
                         np.arange(seq.n_dense, dtype=np.int32), uniq_ptr,
                         uniq_attr[:total].copy(), local, seq.edge_indptr, seq.edge_indices,
                         seq.edge_values, *edges)


def _edge_lists(seq) -> tuple:
    """(edge_uniq_ptr, edge_uniq_attr, edge_local) of the split's transition attributes
    (empty arrays without any)."""
    if not seq.has_edges:
        return (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32),
                np.zeros(0, dtype=np.int32))
    n = seq.n_sequences
    ptr = np.zeros(n + 1, dtype=np.int64)
    attr = np.zeros(len(seq.edge_indices), dtype=np.int32)
    local = np.zeros(len(seq.edge_indices), dtype=np.int32)
    total = build_index(seq.offsets, seq.edge_indptr, seq.edge_indices,
                        int(seq.edge_indices.max(initial=-1)) + 1, ptr, attr, local,
                        np.zeros(0, dtype=np.int32))
    return ptr, attr[:total].copy(), local


def max_distinct_attributes(index: SequenceIndex) -> int:
    """The most distinct attributes of one sequence (the size of a sparse update's rows)."""
    return int(np.max(np.diff(index.uniq_ptr))) if len(index.uniq_ptr) > 1 else 0


def max_distinct_edge_attributes(index: SequenceIndex) -> int:
    """The most distinct transition attributes of one sequence (0 without any)."""
    ptr = index.edge_uniq_ptr
    return int(np.max(np.diff(ptr))) if len(ptr) > 1 else 0
