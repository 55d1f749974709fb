"""Test measures: token error rate and chunk / entity F1 by the conlleval convention."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_O, _B, _I, _E, _S = 0, 1, 2, 3, 4
_TAGS = {"B": _B, "I": _I, "E": _E, "S": _S}


class ChunkScheme(NamedTuple):
    """Per label id: its chunk tag (O/B/I/E/S as 0..4) and its chunk type id."""

    tags: np.ndarray
    types: np.ndarray


def chunk_scheme(labels: list[str]) -> ChunkScheme | None:
    """The BIO(ES) reading of a label set, or None if the labels are not chunk tags.

    Labels are ``O`` or ``X-TYPE`` with X in B, I, E, S (CoNLL chunking and NER);
    a label set such as POS tags has no chunk reading and gets no F1.
    """
    tags = np.zeros(len(labels), dtype=np.int8)
    types = np.zeros(len(labels), dtype=np.int32)
    type_ids: dict[str, int] = {}
    chunked = False
    for j, lab in enumerate(labels):
        if lab == "O":
            continue
        prefix, sep, kind = lab.partition("-")
        if not sep or prefix not in _TAGS or not kind:
            return None
        tags[j] = _TAGS[prefix]
        types[j] = type_ids.setdefault(kind, len(type_ids) + 1)
        chunked = True
    return ChunkScheme(tags, types) if chunked else None


def _chunks(y: np.ndarray, offsets: np.ndarray, scheme: ChunkScheme) -> np.ndarray:
    """The chunks of a labeling as sorted keys (start, end, type) packed in one int64.

    conlleval's rules, position by position over all sequences at once: a chunk starts
    at a B or S, or an I or E after O, E, S or another type; the chunk before a token
    ends when that one is O, B or S, follows an E or S, or changes the type; a
    sequence's end ends its last chunk. A token inside a chunk is never O, so the
    starts and the ends alternate, and the k-th start pairs with the k-th end."""
    tag = scheme.tags[y].astype(np.int64)
    typ = scheme.types[y].astype(np.int64)
    prev_tag = np.roll(tag, 1)
    prev_typ = np.roll(typ, 1)
    first = offsets[:-1]
    prev_tag[first] = _O
    prev_typ[first] = 0
    boundary = (prev_tag == _E) | (prev_tag == _S) | (prev_typ != typ)
    starts = np.flatnonzero((tag != _O) & (boundary | (tag == _B) | (tag == _S)
                                           | (prev_tag == _O)))
    closes = (prev_tag != _O) & (boundary | (tag == _B) | (tag == _O) | (tag == _S))
    last = offsets[1:] - 1
    ends = np.sort(np.concatenate([np.flatnonzero(closes) - 1, last[tag[last] != _O]]))
    n = len(y) + 1
    return (starts * n + ends) * (int(scheme.types.max(initial=0)) + 1) + typ[starts]


def chunk_f1(gold: np.ndarray, pred: np.ndarray, offsets: np.ndarray,
             scheme: ChunkScheme) -> tuple[float, float, float]:
    """Precision, recall and F1 (in %) of exactly matching chunks, as conlleval computes
    them (numpy alone: ``crfsdca tag -t`` need not import numba for it)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    true, found = _chunks(gold, offsets, scheme), _chunks(pred, offsets, scheme)
    m = len(np.intersect1d(true, found, assume_unique=True))
    precision = 100.0 * m / len(found) if len(found) else 0.0
    recall = 100.0 * m / len(true) if len(true) else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def token_error(gold: np.ndarray, pred: np.ndarray) -> float:
    """Fraction of tokens whose predicted label differs from the gold one."""
    return float(np.mean(gold != pred)) if len(gold) else 0.0
