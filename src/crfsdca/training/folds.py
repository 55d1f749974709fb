"""Cross-validation folds as views of one encoding: the items are encoded once, and each
fold takes its rows of the encoded arrays (a gather, not a re-encoding).

A fold's training split keeps the attributes and labels that its own sequences hold
(those of weight 0 included, as ``crfsdca.data.items.encode`` counts them), renumbered
in the order of the whole encoding; so its feature set, ``all_possible_states`` and
``all_possible_transitions`` included, is the one a fit on the fold's items alone would
have, up to the order of the attributes and labels. Its test split keeps the attributes
that the training split knows (the others have no weight) and no labels (it is only
predicted).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..data.items import split_values
from ..data.sequences import Sequences, make_sequences


class Fold(NamedTuple):
    """One fold: its training split (ids of the fold), the (attribute, token) pairs of
    weight 0 of that split, its test split, and the names of its labels and attributes."""

    train: Sequences
    zero_entries: np.ndarray
    test: Sequences
    labels: list[str]
    attributes: list[str]


def take_rows(seq: Sequences, rows: np.ndarray) -> tuple[Sequences, np.ndarray, np.ndarray]:
    """Sequences ``rows`` of ``seq``, in that order, as a split; with the positions of its
    tokens and of its attribute entries in ``seq`` (for renumbering)."""
    rows = np.asarray(rows, dtype=np.int64)
    lengths = np.diff(seq.offsets)[rows]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = _ranges(seq.offsets[rows], lengths)
    counts = np.diff(seq.attr_indptr)[tokens]
    indptr = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    entries = _ranges(seq.attr_indptr[tokens], counts)
    part = make_sequences(offsets, seq.labels[tokens], indptr, seq.attr_indices[entries],
                          None if seq.binary else seq.attr_values[entries],
                          seq.weights[rows] if seq.weighted else None,
                          seq.dense[tokens] if seq.n_dense else None, seq.dense_attr)
    return part, tokens, entries


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of range(s, s + l) for each start s and length l."""
    total = int(lengths.sum())
    first = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=first[1:])
    return np.repeat(starts - first, lengths) + np.arange(total, dtype=np.int64)


def make_fold(seq: Sequences, zero_entries: np.ndarray, attributes: list[str],
              labels: list[str], train_rows, test_rows) -> Fold:
    """The fold of ``train_rows`` and ``test_rows`` of the encoding ``seq`` (with its
    ``zero_entries`` and vocabularies, as ``crfsdca.data.items.encode`` gave them)."""
    train, tokens, _ = take_rows(seq, train_rows)
    test, _, test_entries = take_rows(seq, test_rows)
    zero_entries = np.asarray(zero_entries, dtype=np.int64).reshape(-1, 2)
    position = np.full(seq.n_tokens, -1, dtype=np.int64)
    position[tokens] = np.arange(len(tokens))
    zeros = zero_entries[position[zero_entries[:, 1]] >= 0]
    zeros = np.column_stack([zeros[:, 0], position[zeros[:, 1]]]) if len(zeros) else \
        np.zeros((0, 2), dtype=np.int64)
    kept_attributes = np.unique(np.concatenate([train.attr_indices.astype(np.int64),
                                                zeros[:, 0], train.dense_attr]))
    attribute_id = np.full(len(attributes), -1, dtype=np.int64)
    attribute_id[kept_attributes] = np.arange(len(kept_attributes))
    kept_labels = np.unique(train.labels)
    label_id = np.full(len(labels), -1, dtype=np.int64)
    label_id[kept_labels] = np.arange(len(kept_labels))
    train = train._replace(attr_indices=attribute_id[train.attr_indices].astype(np.int32),
                           labels=label_id[train.labels].astype(np.int32),
                           dense_attr=attribute_id[train.dense_attr].astype(np.int32))
    if len(zeros):
        zeros = np.column_stack([attribute_id[zeros[:, 0]], zeros[:, 1]])
    return Fold(train, zeros, _known(test, attribute_id), [labels[k] for k in kept_labels],
                [attributes[a] for a in kept_attributes])


def _known(test: Sequences, attribute_id: np.ndarray) -> Sequences:
    """``test`` with the attributes of ``attribute_id`` renumbered and the others dropped,
    labels all 0 (a split to predict)."""
    ids = attribute_id[test.attr_indices]
    keep = ids >= 0
    kept = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    indptr = kept[test.attr_indptr]
    dense_keep = attribute_id[test.dense_attr] >= 0
    return make_sequences(test.offsets, np.zeros(test.n_tokens, dtype=np.int32), indptr,
                          ids[keep], None if test.binary else split_values(test)[keep],
                          None, test.dense[:, dense_keep] if test.n_dense else None,
                          attribute_id[test.dense_attr[dense_keep]])


__all__ = ["Fold", "make_fold", "take_rows"]
