"""Test measures: token error rate and chunk / entity F1 by the conlleval convention."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..jit import NJIT

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


@njit(**NJIT)
def _chunk_end(prev_tag, tag, prev_type, typ):
    if prev_tag == _O:
        return False
    if prev_tag in (_E, _S):
        return True
    if tag in (_B, _O, _S):
        return True
    return prev_type != typ


@njit(**NJIT)
def _chunk_start(prev_tag, tag, prev_type, typ):
    if tag == _O:
        return False
    if tag in (_B, _S):
        return True
    if prev_tag in (_O, _E, _S):
        return True
    return prev_type != typ


@njit(**NJIT)
def _chunks(y, offsets, tags, types, out):
    """Write chunks (start, end, type) of every sequence into out; return their count."""
    n = len(offsets) - 1
    count = 0
    for i in range(n):
        prev_tag = _O
        prev_type = 0
        begin = -1
        for t in range(offsets[i], offsets[i + 1] + 1):
            if t < offsets[i + 1]:
                tag = tags[y[t]]
                typ = types[y[t]]
            else:
                tag = _O
                typ = 0
            if begin >= 0 and _chunk_end(prev_tag, tag, prev_type, typ):
                out[count, 0] = begin
                out[count, 1] = t - 1
                out[count, 2] = prev_type
                count += 1
                begin = -1
            if _chunk_start(prev_tag, tag, prev_type, typ):
                begin = t
            prev_tag = tag
            prev_type = typ
    return count


@njit(**NJIT)
def _count_matches(a, na, b, nb):
    i = 0
    j = 0
    m = 0
    while i < na and j < nb:
        if a[i, 0] < b[j, 0]:
            i += 1
        elif a[i, 0] > b[j, 0]:
            j += 1
        else:
            if a[i, 1] == b[j, 1] and a[i, 2] == b[j, 2]:
                m += 1
            i += 1
            j += 1
    return m


def chunk_f1(gold: np.ndarray, pred: np.ndarray, offsets: np.ndarray,
             scheme: ChunkScheme) -> tuple[float, float, float]:
    """Precision, recall and F1 (in %) of exactly matching chunks, as conlleval computes them."""
    buf_g = np.empty((len(gold), 3), dtype=np.int64)
    buf_p = np.empty((len(pred), 3), dtype=np.int64)
    ng = _chunks(gold, offsets, scheme.tags, scheme.types, buf_g)
    npred = _chunks(pred, offsets, scheme.tags, scheme.types, buf_p)
    m = _count_matches(buf_g, ng, buf_p, npred)
    precision = 100.0 * m / npred if npred else 0.0
    recall = 100.0 * m / ng if ng else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def token_error(gold: np.ndarray, pred: np.ndarray) -> float:
    """Fraction of tokens whose predicted label differs from the gold one."""
    return float(np.mean(gold != pred)) if len(gold) else 0.0
