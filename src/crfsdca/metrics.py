"""Scores of label sequences: ``sklearn_crfsuite.metrics`` without sklearn-crfsuite, plus
conlleval's chunk precision, recall and F1.

The ``flat_*`` functions flatten ``y_true`` and ``y_pred`` (lists of label sequences) into
one list of labels each and call scikit-learn's metric of the same name with the same
arguments, as sklearn-crfsuite 0.5 does (so its outputs, warnings and errors are
scikit-learn's). String labels are handed to it as integer codes numbered in their sorted
order (scikit-learn's own order of string labels), where that cannot change a result:
scikit-learn sorts and encodes 87,000 strings in 0.15 s and the codes in 0.02 s, and a
search such as [`CRFCV`][crfsdca.cv.CRFCV] scores every point of every fold.
[`sequence_accuracy_score`][crfsdca.metrics.sequence_accuracy_score] is
the fraction of sequences labeled exactly right.
[`chunk_precision_recall_f1`][crfsdca.metrics.chunk_precision_recall_f1] scores the chunks
(entities) of BIO labels as the CoNLL shared tasks' ``conlleval`` script does.
"""

from __future__ import annotations

from functools import wraps
from itertools import chain

import numpy as np

from .model.evaluation import chunk_f1, chunk_scheme

__all__ = [
    "chunk_precision_recall_f1",
    "flat_accuracy_score",
    "flat_classification_report",
    "flat_f1_score",
    "flat_fbeta_score",
    "flat_precision_score",
    "flat_recall_score",
    "sequence_accuracy_score",
]


def _flatten(y) -> list:
    """All labels of all sequences, in order (sklearn-crfsuite's ``utils.flatten``)."""
    return list(chain.from_iterable(y))


def _flattens_y(func):
    """Call ``func`` on the flattened ``y_true`` and ``y_pred``, as their
    ``_label_codes`` where it gives them.

    As sklearn-crfsuite, it does not check that the sequences pair up: only the total
    numbers of labels must agree (scikit-learn's check).
    """

    @wraps(func)
    def wrapper(y_true, y_pred, *args, **kwargs):
        flat_true, flat_pred = _flatten(y_true), _flatten(y_pred)
        coded = _label_codes(flat_true, flat_pred, kwargs)
        if coded is not None:
            flat_true, flat_pred, kwargs = coded
        return func(flat_true, flat_pred, *args, **kwargs)

    return wrapper


def _label_codes(flat_true: list, flat_pred: list, kwargs: dict):
    """(y_true, y_pred, kwargs) with every label, and those of a ``labels`` argument, as
    its rank among them all sorted; None where the codes could change what scikit-learn
    returns or says: a label that is not a string, no labels, or an average that may be
    'binary' (its ``pos_label`` names a label; the default, 1, is a valid code but no
    valid string). Labels sorted are the order scikit-learn gives string labels, and
    ``labels`` keeps its own order, so every per-label array and every average is summed
    in the same order, to the same bits."""
    if not flat_true or kwargs.get("average", "") in ("binary", "") or "pos_label" in kwargs:
        return None
    labels = kwargs.get("labels")
    given = [] if labels is None else list(labels)
    names = set(flat_true)
    names.update(flat_pred, given)
    if not all(isinstance(name, str) for name in names):
        return None
    code = {name: i for i, name in enumerate(sorted(names))}
    coded = [np.fromiter(map(code.__getitem__, flat), dtype=np.int64, count=len(flat))
             for flat in (flat_true, flat_pred)]
    if labels is not None:
        kwargs = {**kwargs, "labels": [code[name] for name in given]}
    return coded[0], coded[1], kwargs


@_flattens_y
def flat_accuracy_score(y_true, y_pred):
    """Accuracy of the items (``sklearn.metrics.accuracy_score``)."""
    from sklearn import metrics  # lazy: 0.8 s to import; the chunk scores need none

    return metrics.accuracy_score(y_true, y_pred)


@_flattens_y
def flat_precision_score(y_true, y_pred, **kwargs):
    """Precision of the items (``sklearn.metrics.precision_score``)."""
    from sklearn import metrics  # lazy: 0.8 s to import; the chunk scores need none

    return metrics.precision_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_recall_score(y_true, y_pred, **kwargs):
    """Recall of the items (``sklearn.metrics.recall_score``)."""
    from sklearn import metrics  # lazy: 0.8 s to import; the chunk scores need none

    return metrics.recall_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_f1_score(y_true, y_pred, **kwargs):
    """F1 of the items (``sklearn.metrics.f1_score``)."""
    from sklearn import metrics  # lazy: 0.8 s to import; the chunk scores need none

    return metrics.f1_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    """F-beta of the items (``sklearn.metrics.fbeta_score``)."""
    from sklearn import metrics  # lazy: 0.8 s to import; the chunk scores need none

    return metrics.fbeta_score(y_true, y_pred, beta=beta, **kwargs)


@_flattens_y
def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """Per-label report of the items (``sklearn.metrics.classification_report``)."""
    from sklearn import metrics  # lazy: 0.8 s to import; the chunk scores need none

    return metrics.classification_report(y_true, y_pred, labels=labels, **kwargs)


def sequence_accuracy_score(y_true, y_pred):
    """Fraction of the sequences whose predicted labels all equal the true ones (0 if none).

    sklearn-crfsuite compares numpy object arrays, which goes wrong when all sequences
    have the same length (it then counts matching items: ``[['a', 'b']]`` against
    ``[['a', 'c']]`` scores 1.0, two such pairs 1.5); this compares whole sequences, and
    raises ValueError when the numbers of sequences differ.
    """
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}")
    if not y_true:
        return 0
    matches = sum(list(a) == list(b) for a, b in zip(y_true, y_pred, strict=True))
    return matches / len(y_true)


def _paired_lengths(y_true: list, y_pred: list) -> list[int]:
    """The length of every sequence, after checking that y_true and y_pred pair up."""
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}")
    lengths = []
    for i, (a, b) in enumerate(zip(y_true, y_pred, strict=True)):
        if len(a) != len(b):
            raise ValueError(f"sequence {i} has {len(a)} true labels but {len(b)} "
                             "predicted ones")
        lengths.append(len(a))
    return lengths


def _chunk_labels(flat_true: list, flat_pred: list) -> list[str]:
    """The labels seen, sorted; ValueError unless all are strings."""
    names = set(flat_true) | set(flat_pred)
    bad = [lab for lab in names if not isinstance(lab, str)]
    if bad:
        raise ValueError(f"chunk scores need string labels (O, B-X, I-X...), got {bad[0]!r}")
    return sorted(names)


def chunk_precision_recall_f1(y_true, y_pred) -> tuple[float, float, float]:
    """Precision, recall and F1 (in percent) of the chunks, as ``conlleval`` computes them.

    Labels are chunk tags: ``O`` or ``X-TYPE`` with X in B, I (IOB1 and IOB2, read by
    conlleval's rules), E, S (BIOES); a chunk counts as correct when its start, end and
    type all match. Sequences are scored separately (no chunk crosses a sequence end).
    Raises ValueError when the labels are not chunk tags (POS tags, say) or when the
    sequences of ``y_true`` and ``y_pred`` do not pair up. No chunk at all (empty input,
    only ``O``): (0.0, 0.0, 0.0), as conlleval prints.
    """
    y_true, y_pred = list(y_true), list(y_pred)
    lengths = _paired_lengths(y_true, y_pred)
    flat_true, flat_pred = _flatten(y_true), _flatten(y_pred)
    names = _chunk_labels(flat_true, flat_pred)
    if not names or names == ["O"]:
        return 0.0, 0.0, 0.0

    scheme = chunk_scheme(names)
    if scheme is None:
        raise ValueError("the labels are not chunk tags (O, or B-, I-, E-, S- and a type): "
                         + ", ".join(repr(n) for n in names[:10])
                         + (", ..." if len(names) > 10 else ""))
    ids = {lab: k for k, lab in enumerate(names)}
    n = len(flat_true)
    gold = np.fromiter(map(ids.__getitem__, flat_true), dtype=np.int32, count=n)
    pred = np.fromiter(map(ids.__getitem__, flat_pred), dtype=np.int32, count=n)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
    precision, recall, f1 = chunk_f1(gold, pred, offsets, scheme)
    return float(precision), float(recall), float(f1)
