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


def chunk_label(label: str) -> tuple[str, str] | None:
    """(prefix, type) of a chunk label: ``("O", "")`` for ``O``, ``("B", "PER")`` for
    ``B-PER`` (prefix B, I, E or S, a nonempty type after the first hyphen), None for a
    label that is neither (a POS tag)."""
    if label == "O":
        return "O", ""
    prefix, sep, kind = label.partition("-")
    return (prefix, kind) if sep and prefix in _TAGS and kind else None


def chunk_scheme(labels: list[str]) -> ChunkScheme | None:
    """The BIO(ES) reading of a label set, or None if the labels are not chunk tags.

    Labels are ``O`` or ``X-TYPE`` with X in B, I, E, S (CoNLL chunking and NER:
    :func:`chunk_label`); a label set such as POS tags has no chunk reading and gets no F1.
    """
    tags = np.zeros(len(labels), dtype=np.int8)
    types = np.zeros(len(labels), dtype=np.int32)
    type_ids: dict[str, int] = {}
    chunked = False
    for j, lab in enumerate(labels):
        parts = chunk_label(lab)
        if parts is None:
            return None
        prefix, kind = parts
        if prefix == "O":
            continue
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


def evaluation_report(gold: np.ndarray, pred: np.ndarray, offsets: np.ndarray,
                      names: list[str], n_model_labels: int) -> str:
    """CRFsuite's performance report (``crfsdca tag -t``): per label #match, #model, #ref,
    precision, recall and F1, macro averages, item and instance accuracy; and, when the
    labels are BIO chunk tags, conlleval's chunk precision, recall and F1. Gold labels
    the model does not have (ids ``n_model_labels`` and up) count as errors (CRFsuite
    leaves such sequences out)."""
    K = n_model_labels
    L = len(names)
    match = np.bincount(gold[gold == pred], minlength=L)
    by_model = np.bincount(pred, minlength=L)
    by_ref = np.bincount(gold, minlength=L)
    lines = ["Performance by label (#match, #model, #ref) (precision, recall, F1):"]
    macro = np.zeros(3)
    for k in range(K):
        m, p, r = int(match[k]), int(by_model[k]), int(by_ref[k])
        if r == 0:
            lines.append(f"    {names[k]}: ({m}, {p}, {r}) (******, ******, ******)")
            continue
        prec = m / p if p else 0.0
        rec = m / r
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        macro += (prec, rec, f1)
        lines.append(f"    {names[k]}: ({m}, {p}, {r}) ({prec:1.4f}, {rec:1.4f}, {f1:1.4f})")
    macro /= max(K, 1)
    lines.append(f"Macro-average precision, recall, F1: ({macro[0]:f}, {macro[1]:f}, "
                 f"{macro[2]:f})")
    n_items = len(gold)
    correct = int(np.sum(gold == pred))
    lines.append(f"Item accuracy: {correct} / {n_items} ({correct / max(n_items, 1):1.4f})")
    seq_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    wrong = np.bincount(seq_of, weights=(gold != pred), minlength=len(offsets) - 1)
    n_seq = len(offsets) - 1
    ok = int(np.sum(wrong == 0))
    lines.append(f"Instance accuracy: {ok} / {n_seq} ({ok / max(n_seq, 1):1.4f})")
    scheme = chunk_scheme(list(names))
    if scheme is not None:
        p, r, f = chunk_f1(gold.astype(np.int32), pred.astype(np.int32),
                           offsets.astype(np.int64), scheme)
        lines.append(f"Chunk precision, recall, F1 (conlleval): ({p:.2f}, {r:.2f}, {f:.2f})")
    return "\n".join(lines) + "\n"
