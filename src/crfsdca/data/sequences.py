"""The one in-memory representation of a split: flat arrays numba reads directly.

A split of n sequences and N tokens is four arrays:

- ``offsets`` (int64, n + 1): tokens of sequence i are ``offsets[i]:offsets[i+1]``;
- ``labels`` (int32, N): gold label of every token, in ``0..K-1``;
- ``attr_indptr`` (int64, N + 1): attributes of token t are
  ``attr_indices[attr_indptr[t]:attr_indptr[t+1]]`` (CSR, binary values);
- ``attr_indices`` (int32, nnz): attribute ids in ``0..A-1``;
- ``attr_values`` (float64, nnz, or empty): the value of each (token, attribute) entry, as
  python-crfsuite's real-valued attributes; empty means every value is 1 (binary
  attributes, CRFsuite's default extractors and the paper's datasets), which the kernels
  treat without reading an array;
- ``weights`` (float64, n, or empty): the weight c_i of each sequence in the objective
  sum_i c_i NLL_i (scikit-learn's ``sample_weight``, CRFsuite's ``@weight``); empty means
  every weight is 1, which the kernels treat without reading an array;
- ``dense`` (float64, N x D, C order; 0 x 0 when there is none) and ``dense_attr`` (int32,
  D): the dense block of vector attributes (:mod:`crfsdca.data.dense`), the value of
  column d at every token, column d being attribute ``dense_attr[d]``; an attribute is
  never both a column and a sparse entry.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Sequences(NamedTuple):
    """One split (train or test) as flat arrays; a numba-friendly named tuple."""

    offsets: np.ndarray
    labels: np.ndarray
    attr_indptr: np.ndarray
    attr_indices: np.ndarray
    attr_values: np.ndarray
    weights: np.ndarray = np.zeros(0)
    dense: np.ndarray = np.zeros((0, 0))
    dense_attr: np.ndarray = np.zeros(0, dtype=np.int32)
    edge_indptr: np.ndarray = np.zeros(0, dtype=np.int64)
    edge_indices: np.ndarray = np.zeros(0, dtype=np.int32)
    edge_values: np.ndarray = np.zeros(0)

    @property
    def has_edges(self) -> bool:
        """Whether tokens carry transition attributes (``edge_indptr`` not empty)."""
        return len(self.edge_indptr) > 0

    @property
    def n_sequences(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def nnz(self) -> int:
        return int(self.attr_indptr[-1])

    @property
    def binary(self) -> bool:
        """Whether every attribute value is 1 (no values array)."""
        return len(self.attr_values) == 0

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def weighted(self) -> bool:
        """Whether the sequences carry weights (else every weight is 1)."""
        return len(self.weights) > 0

    def sequence_weights(self) -> np.ndarray:
        """The weight of every sequence (ones when unweighted)."""
        return self.weights if self.weighted else np.ones(self.n_sequences)

    @property
    def n_dense(self) -> int:
        """D, the columns of the dense block (0: none)."""
        return len(self.dense_attr)


NO_VALUES = np.zeros(0)
"""The values array of binary attributes."""
NO_WEIGHTS = Sequences._field_defaults["weights"]
"""The weights array of unweighted sequences (every weight 1)."""
NO_DENSE = Sequences._field_defaults["dense"]
NO_DENSE_ATTR = Sequences._field_defaults["dense_attr"]
"""The dense block of a split without one."""
NO_EDGES = (Sequences._field_defaults["edge_indptr"],
            Sequences._field_defaults["edge_indices"], NO_VALUES)
"""The transition attributes of a split without any."""


def make_sequences(offsets, labels, attr_indptr, attr_indices, attr_values=None,
                   weights=None, dense=None, dense_attr=None, edges=None) -> Sequences:
    """Build a :class:`Sequences` with canonical dtypes and C-contiguous arrays, checking shapes.

    ``attr_values`` None (or all ones) gives binary attributes; ``weights`` None (or all
    ones) unweighted sequences; ``dense`` None (or no column) no dense block; ``edges``
    None or (edge_indptr, edge_indices, edge_values or None) the transition attributes.
    """
    values = NO_VALUES if attr_values is None else np.ascontiguousarray(attr_values,
                                                                       dtype=np.float64)
    if len(values) and np.all(values == 1.0):
        values = NO_VALUES
    seq_weights = NO_WEIGHTS if weights is None else np.ascontiguousarray(weights,
                                                                          dtype=np.float64)
    if len(seq_weights) and np.all(seq_weights == 1.0):
        seq_weights = NO_WEIGHTS
    block, columns = NO_DENSE, NO_DENSE_ATTR
    if dense is not None and np.shape(dense)[1:] != (0,):
        block = np.ascontiguousarray(dense, dtype=np.float64)
        columns = np.ascontiguousarray(dense_attr, dtype=np.int32)
    seq = Sequences(
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(labels, dtype=np.int32),
        np.ascontiguousarray(attr_indptr, dtype=np.int64),
        np.ascontiguousarray(attr_indices, dtype=np.int32),
        values,
        seq_weights,
        block,
        columns,
        *_edge_arrays(edges),
    )
    validate_sequences(seq)
    return seq


def _edge_arrays(edges) -> tuple:
    """The canonical (edge_indptr, edge_indices, edge_values) of ``edges`` (None: none)."""
    if edges is None:
        return NO_EDGES
    indptr, indices, values = edges
    values = NO_VALUES if values is None else np.ascontiguousarray(values, dtype=np.float64)
    if len(values) and np.all(values == 1.0):
        values = NO_VALUES
    return (np.ascontiguousarray(indptr, dtype=np.int64),
            np.ascontiguousarray(indices, dtype=np.int32), values)


def validate_sequences(seq: Sequences, n_labels: int | None = None,
                       n_attributes: int | None = None) -> None:
    """Raise ValueError if the arrays are not a consistent split."""
    off, lab, ptr, idx, val = (seq.offsets, seq.labels, seq.attr_indptr, seq.attr_indices,
                               seq.attr_values)
    if off.ndim != 1 or len(off) < 1 or off[0] != 0:
        raise ValueError("offsets must be a 1-d array starting at 0")
    if np.any(np.diff(off) < 1):
        raise ValueError("every sequence must have at least one token "
                         "(offsets strictly increasing)")
    if len(lab) != off[-1]:
        raise ValueError(f"labels has {len(lab)} entries but offsets end at {off[-1]}")
    if len(ptr) != len(lab) + 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
        raise ValueError("attr_indptr must have N + 1 non-decreasing entries starting at 0")
    if ptr[-1] != len(idx):
        raise ValueError(f"attr_indptr ends at {ptr[-1]} but attr_indices has {len(idx)} entries")
    if len(val) and len(val) != len(idx):
        raise ValueError(f"attr_values has {len(val)} entries but attr_indices has {len(idx)}")
    if len(val) and not np.all(np.isfinite(val)):
        raise ValueError("attribute values must be finite numbers")
    if len(seq.weights):
        check_sequence_weights(seq.weights, len(off) - 1, "weights", any_positive=False)
    if seq.n_dense:
        _validate_dense(seq, n_attributes)
    if seq.has_edges:
        _validate_edges(seq)
    if len(lab) and lab.min() < 0:
        raise ValueError("labels must be non-negative")
    if n_labels is not None and len(lab) and lab.max() >= n_labels:
        raise ValueError(f"label id {lab.max()} out of range for K = {n_labels}")
    if len(idx) and idx.min() < 0:
        raise ValueError("attribute ids must be non-negative")
    if n_attributes is not None and len(idx) and idx.max() >= n_attributes:
        raise ValueError(f"attribute id {idx.max()} out of range for A = {n_attributes}")


def _validate_dense(seq: Sequences, n_attributes: int | None) -> None:
    """Raise ValueError if the dense block does not fit the split (see the module)."""
    D, cols = seq.n_dense, seq.dense_attr
    if seq.dense.shape != (len(seq.labels), D):
        raise ValueError(f"dense has shape {seq.dense.shape}, expected ({len(seq.labels)}, "
                         f"{D}): a row per token, a column per entry of dense_attr")
    if cols.min() < 0 or (n_attributes is not None and cols.max() >= n_attributes):
        raise ValueError("dense_attr holds an attribute id out of range")
    dense = np.zeros(int(max(cols.max(), seq.attr_indices.max(initial=-1))) + 1, dtype=bool)
    dense[cols] = True
    if len(np.unique(cols)) != D or np.any(dense[seq.attr_indices]):
        raise ValueError("an attribute is twice a dense column, or both a dense column and "
                         "a sparse entry")
    if not np.all(np.isfinite(seq.dense)):
        raise ValueError("dense values must be finite numbers")


def _validate_edges(seq: Sequences) -> None:
    """Raise ValueError if the transition attributes do not fit the split."""
    ptr, idx, val = seq.edge_indptr, seq.edge_indices, seq.edge_values
    if len(ptr) != len(seq.labels) + 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0) \
            or ptr[-1] != len(idx):
        raise ValueError("edge_indptr must have N + 1 non-decreasing entries from 0 to the "
                         "number of edge_indices")
    if np.any(ptr[seq.offsets[:-1] + 1] != ptr[seq.offsets[:-1]]):
        raise ValueError("the first token of a sequence has no transition into it: no "
                         "transition attribute there")
    if len(idx) and idx.min() < 0:
        raise ValueError("transition attribute ids must be non-negative")
    if len(val) and (len(val) != len(idx) or not np.all(np.isfinite(val))):
        raise ValueError("edge_values must hold a finite number per entry of edge_indices")


def check_sequence_weights(weights, n: int, name: str = "sample_weight",
                           any_positive: bool = True) -> np.ndarray:
    """``weights`` as n float64 sequence weights, or ValueError naming ``name`` and the
    first bad entry: one finite number >= 0 per sequence (scikit-learn's rule; a weight
    of 0 leaves the sequence out of the objective), and with ``any_positive`` not all 0
    (a training set)."""
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers, one per sequence") from None
    if w.shape != (n,):
        raise ValueError(f"{name} has shape {w.shape}, expected ({n},): one weight per "
                         "sequence")
    bad = np.flatnonzero(~(np.isfinite(w) & (w >= 0)))
    if len(bad):
        j = int(bad[0])
        raise ValueError(f"{name}[{j}] = {float(w[j])!r}: sequence weights must be finite and "
                         f">= 0 ({len(bad)} such)")
    if any_positive and n and not np.any(w > 0):
        raise ValueError(f"{name} is 0 for every sequence: nothing to train on")
    return w


def with_weights(seq: Sequences, weights) -> Sequences:
    """``seq`` with sequence weights ``weights`` (None or all ones: unweighted), checked."""
    if weights is None:
        return seq._replace(weights=NO_WEIGHTS)
    w = check_sequence_weights(weights, seq.n_sequences, "weights", any_positive=False)
    return seq._replace(weights=NO_WEIGHTS if np.all(w == 1.0) else np.ascontiguousarray(w))


def subset_sequences(seq: Sequences, stop: int) -> Sequences:
    """The first ``stop`` sequences of a split, as a new split."""
    stop = min(stop, seq.n_sequences)
    n_tok = int(seq.offsets[stop])
    nnz = int(seq.attr_indptr[n_tok])
    return make_sequences(seq.offsets[: stop + 1], seq.labels[:n_tok],
                          seq.attr_indptr[: n_tok + 1], seq.attr_indices[:nnz],
                          None if seq.binary else seq.attr_values[:nnz],
                          seq.weights[:stop] if seq.weighted else None,
                          seq.dense[:n_tok] if seq.n_dense else None, seq.dense_attr,
                          _edges_upto(seq, n_tok))


def _edges_upto(seq: Sequences, n_tok: int):
    """The transition attributes of the first ``n_tok`` tokens (None: none)."""
    if not seq.has_edges:
        return None
    m = int(seq.edge_indptr[n_tok])
    return (seq.edge_indptr[:n_tok + 1], seq.edge_indices[:m],
            seq.edge_values[:m] if len(seq.edge_values) else None)


def join(parts: list[Sequences]) -> Sequences:
    """The splits of ``parts`` one after another, as one split (a dense block over the
    union of their columns, zeros where a split lacks one).

    ``parts`` is emptied as it is copied, each part dropped once its arrays are in the
    result: the result's arrays are allocated whole but untouched, so that the memory
    held grows with the result while it shrinks with the parts (a streamed corpus of
    many chunks is joined in about its own size, not twice it)."""
    if not parts:
        raise ValueError("no split to join")
    if any(p.has_edges for p in parts):
        raise ValueError("join: splits with transition attributes are not joined")
    n = sum(p.n_sequences for p in parts)
    N = sum(p.n_tokens for p in parts)
    nnz = sum(p.nnz for p in parts)
    valued = not all(p.binary for p in parts)
    weighted = any(p.weighted for p in parts)
    columns = list(dict.fromkeys(c for p in parts for c in p.dense_attr.tolist()))
    offsets = np.empty(n + 1, dtype=np.int64)
    labels = np.empty(N, dtype=np.int32)
    indptr = np.empty(N + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=parts[0].attr_indices.dtype)
    values = np.empty(nnz) if valued else None
    weights = np.empty(n) if weighted else None
    dense = np.zeros((N, len(columns))) if columns else None
    where = {col: j for j, col in enumerate(columns)}
    offsets[0] = indptr[0] = 0
    i = t = e = 0
    parts.reverse()  # popped from the end: the first part first
    while parts:
        p = parts.pop()
        offsets[i + 1:i + p.n_sequences + 1] = p.offsets[1:] + t
        labels[t:t + p.n_tokens] = p.labels
        indptr[t + 1:t + p.n_tokens + 1] = p.attr_indptr[1:] + e
        indices[e:e + p.nnz] = p.attr_indices
        if valued:
            values[e:e + p.nnz] = 1.0 if p.binary else p.attr_values
        if weighted:
            weights[i:i + p.n_sequences] = p.sequence_weights()
        if p.n_dense:
            dense[t:t + p.n_tokens, [where[c] for c in p.dense_attr.tolist()]] = p.dense
        i, t, e = i + p.n_sequences, t + p.n_tokens, e + p.nnz
        del p
    return make_sequences(offsets, labels, indptr, indices, values, weights, dense,
                          columns or None)
