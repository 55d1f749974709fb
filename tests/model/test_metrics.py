"""crfsdca.metrics: sklearn-crfsuite's metrics exactly (checked against sklearn-crfsuite on
random label sequences), and conlleval's chunk scores (checked against conlleval's own
algorithm, transcribed below from its Perl source, and on hand-counted examples)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crfsdca import metrics

skm = pytest.importorskip("sklearn_crfsuite.metrics")

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
LABELS = ["a", "b", "c", "d"]


@st.composite
def paired(draw, alphabet=LABELS, min_seqs=1, max_len=6):
    """(y_true, y_pred): the same number of sequences, of the same lengths."""
    lengths = draw(st.lists(st.integers(1, max_len), min_size=min_seqs, max_size=6))
    label = st.sampled_from(alphabet)
    y_true = [draw(st.lists(label, min_size=n, max_size=n)) for n in lengths]
    y_pred = [draw(st.lists(label, min_size=n, max_size=n)) for n in lengths]
    return y_true, y_pred


def same(ours, theirs):
    """Equal results: numbers (nan equal to nan), arrays, or report strings."""
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def both(name, *args, **kwargs):
    """(ours, sklearn-crfsuite's) result of metric ``name``, or their exception types."""
    out = []
    for module in (metrics, skm):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(getattr(module, name)(*args, **kwargs))
            except Exception as e:  # noqa: BLE001 (the type is compared)
                out.append((type(e), str(e)))
    return out


AVERAGES = st.sampled_from([None, "micro", "macro", "weighted"])
SUBSETS = st.one_of(st.none(), st.lists(st.sampled_from([*LABELS, "z", "B-x"]), min_size=1,
                                        max_size=5, unique=True))
"""``labels`` arguments: any order, with labels the data lack ("z", and "B-x", which sorts
before them all)."""


@SETTINGS
@given(paired(), AVERAGES, SUBSETS, st.sampled_from([0, 1, "warn"]))
def test_flat_scores_equal_sklearn_crfsuite(y, average, labels, zero_division):
    y_true, y_pred = y
    kw = dict(average=average, labels=labels, zero_division=zero_division)
    same(*both("flat_accuracy_score", y_true, y_pred))
    for name in ("flat_precision_score", "flat_recall_score", "flat_f1_score"):
        same(*both(name, y_true, y_pred, **kw))
    same(*both("flat_fbeta_score", y_true, y_pred, 0.5, **kw))
    same(*both("flat_fbeta_score", y_true, y_pred, beta=2.0, **kw))


def test_string_labels_reach_scikit_learn_as_codes_where_no_result_can_change(monkeypatch):
    import sklearn.metrics

    seen = []
    real = sklearn.metrics.f1_score
    monkeypatch.setattr(sklearn.metrics, "f1_score",
                        lambda a, b, **kw: seen.append((a, kw)) or real(a, b, **kw))
    y_true, y_pred = [["b", "a", "c"]], [["b", "c", "c"]]
    metrics.flat_f1_score(y_true, y_pred, average="weighted", labels=["c", "b"])
    codes, kw = seen[-1]
    assert codes.tolist() == [1, 0, 2] and kw["labels"] == [2, 1]
    metrics.flat_f1_score([["b", "a"]], [["b", "b"]], average="binary", pos_label="b")
    assert seen[-1][0] == ["b", "a"]  # pos_label names a label: as given
    metrics.flat_f1_score([[1, 2]], [[1, 1]], average="macro")
    assert seen[-1][0] == [1, 2]  # not strings: as given


@SETTINGS
@given(paired(), SUBSETS, st.integers(1, 5), st.booleans())
def test_flat_classification_report_equals_sklearn_crfsuite(y, labels, digits, as_dict):
    y_true, y_pred = y
    kw = dict(labels=labels, digits=digits, output_dict=as_dict, zero_division=0)
    ours, theirs = both("flat_classification_report", y_true, y_pred, **kw)
    assert ours == theirs


def test_binary_average_needs_pos_label_as_in_sklearn_crfsuite():
    y_true, y_pred = [["a", "b"], ["b"]], [["a", "a"], ["b"]]
    ours, theirs = both("flat_f1_score", y_true, y_pred)  # average="binary", pos_label=1
    assert ours == theirs and ours[0] is ValueError
    same(*both("flat_f1_score", y_true, y_pred, pos_label="a"))


@pytest.mark.parametrize("name", ["flat_accuracy_score", "flat_precision_score",
                                  "flat_recall_score", "flat_f1_score",
                                  "flat_classification_report"])
@pytest.mark.parametrize("y_true, y_pred", [([], []), ([[]], [[]]), ([["a", "b"]], [["a"]]),
                                            ([["a"], ["b"]], [["a"]])])
def test_flat_errors_equal_sklearn_crfsuite(name, y_true, y_pred):
    """Inputs scikit-learn refuses: the same exception and message (scikit-learn 1.3
    scores empty ones: then the same result)."""
    ours, theirs = both(name, y_true, y_pred)
    if isinstance(theirs, tuple) or isinstance(ours, tuple):
        assert ours == theirs
    else:
        same(ours, theirs)


def test_flat_scores_pair_items_not_sequences_as_sklearn_crfsuite():
    """Only the total number of labels must agree (sklearn-crfsuite flattens first)."""
    y_true, y_pred = [["a", "b"], ["c"]], [["a"], ["b", "c"]]
    assert metrics.flat_accuracy_score(y_true, y_pred) == skm.flat_accuracy_score(
        y_true, y_pred) == 1.0


def reference_sequence_accuracy(y_true, y_pred):
    return sum(list(a) == list(b) for a, b in zip(y_true, y_pred, strict=True)) / len(y_true)


@SETTINGS
@given(paired(alphabet=["a", "b"], max_len=3))
def test_sequence_accuracy(y):
    y_true, y_pred = y
    ours = metrics.sequence_accuracy_score(y_true, y_pred)
    assert ours == reference_sequence_accuracy(y_true, y_pred)
    if len({len(s) for s in y_true}) > 1:  # ragged: sklearn-crfsuite's numpy trick works
        assert ours == skm.sequence_accuracy_score(y_true, y_pred)


def test_sequence_accuracy_where_sklearn_crfsuite_counts_items():
    """Sequences of one length: sklearn-crfsuite compares 2-d arrays item by item."""
    y_true, y_pred = [["a", "b"], ["a", "b"]], [["a", "c"], ["a", "b"]]
    assert skm.sequence_accuracy_score(y_true, y_pred) == 1.5
    assert metrics.sequence_accuracy_score(y_true, y_pred) == 0.5
    assert metrics.sequence_accuracy_score([[], []], [[], []]) == 1.0
    assert metrics.sequence_accuracy_score([("a", "b")], [["a", "b"]]) == 1.0


def test_sequence_accuracy_edges():
    assert metrics.sequence_accuracy_score([], []) == 0 == skm.sequence_accuracy_score([], [])
    with pytest.raises(ValueError, match="2 sequences but y_pred has 1"):
        metrics.sequence_accuracy_score([["a"], ["b"]], [["a"]])


# ------------------------------------------------------------------ conlleval chunks

def _split(tag: str) -> tuple[str, str]:
    """conlleval: ``/^([^-]*)-(.*)$/`` gives (tag, type); otherwise the type is empty."""
    head, sep, kind = tag.partition("-")
    return (head, kind) if sep else (tag, "")


def _end_of_chunk(prev, tag, prev_type, typ):
    end = (prev, tag) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O")}
    return end or (prev not in ("O", ".") and prev_type != typ)


def _start_of_chunk(prev, tag, prev_type, typ):
    start = (prev, tag) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I")}
    return start or (tag not in ("O", ".") and prev_type != typ)


def conlleval(y_true, y_pred):
    """conlleval's counting (its B, I, O rules), a sentence boundary read as O."""
    found_c = found_g = correct = 0
    in_correct = False
    last_c, last_g, last_ct, last_gt = "O", "O", "", ""
    stream = []
    for a, b in zip(y_true, y_pred, strict=True):
        stream += list(zip(a, b, strict=True)) + [("O", "O")]
    for c_tag, g_tag in stream:
        (c, ct), (g, gt) = _split(c_tag), _split(g_tag)
        end_c, end_g = _end_of_chunk(last_c, c, last_ct, ct), _end_of_chunk(last_g, g, last_gt, gt)
        start_c = _start_of_chunk(last_c, c, last_ct, ct)
        start_g = _start_of_chunk(last_g, g, last_gt, gt)
        if in_correct:
            if end_c and end_g and last_gt == last_ct:
                in_correct = False
                correct += 1
            elif end_c != end_g or gt != ct:
                in_correct = False
        if start_c and start_g and gt == ct:
            in_correct = True
        found_c += start_c
        found_g += start_g
        last_c, last_g, last_ct, last_gt = c, g, ct, gt
    correct += in_correct
    p = 100.0 * correct / found_g if found_g else 0.0
    r = 100.0 * correct / found_c if found_c else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


BIO = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]


@settings(max_examples=300, deadline=None)
@given(paired(alphabet=BIO, max_len=8))
def test_chunk_scores_equal_conlleval(y):
    y_true, y_pred = y
    assert metrics.chunk_precision_recall_f1(y_true, y_pred) == pytest.approx(
        conlleval(y_true, y_pred), abs=1e-9)


@pytest.mark.parametrize("y_true, y_pred, expected", [
    # IOB2: 2 gold chunks, 2 guessed, 1 right
    ([["B-NP", "I-NP", "O", "B-VP"]], [["B-NP", "I-NP", "O", "B-NP"]], (50.0, 50.0, 50.0)),
    # IOB1: I- after O starts a chunk; B- splits two adjacent chunks of a type
    ([["I-NP", "I-NP", "B-NP", "O"]], [["B-NP", "I-NP", "I-NP", "O"]], (0.0, 0.0, 0.0)),
    ([["I-NP", "I-NP", "B-NP", "O"]], [["B-NP", "I-NP", "B-NP", "O"]], (100.0, 100.0, 100.0)),
    # a change of type inside I- tags ends a chunk; sequences are scored apart
    ([["I-NP", "I-VP"], ["I-NP"]], [["B-NP", "B-VP"], ["B-NP"]], (100.0, 100.0, 100.0)),
    ([["B-NP"], ["I-NP"]], [["B-NP"], ["B-VP"]], (50.0, 50.0, 50.0)),
    # BIOES: E- ends a chunk, S- is one of its own
    ([["B-NP", "E-NP", "S-NP", "O"]], [["B-NP", "I-NP", "E-NP", "O"]], (0.0, 0.0, 0.0)),
    ([["B-NP", "E-NP", "S-NP", "O"]], [["B-NP", "E-NP", "B-NP", "O"]], (100.0, 100.0, 100.0)),
    ([["B-NP", "E-NP", "S-NP", "O"]], [["B-NP", "E-NP", "I-NP", "E-NP"]], (50.0, 50.0, 50.0)),
    ([["S-NP", "S-NP"]], [["S-NP", "O"]], (100.0, 50.0, 100 * 2 / 3)),
])
def test_chunk_scores_hand_counted(y_true, y_pred, expected):
    assert metrics.chunk_precision_recall_f1(y_true, y_pred) == pytest.approx(expected)


def test_chunk_scores_without_chunks_are_zero():
    assert metrics.chunk_precision_recall_f1([], []) == (0.0, 0.0, 0.0)
    assert metrics.chunk_precision_recall_f1([["O", "O"]], [["O", "O"]]) == (0.0, 0.0, 0.0)
    assert metrics.chunk_precision_recall_f1([["O"]], [["B-X"]]) == (0.0, 0.0, 0.0)
    p, r, f = metrics.chunk_precision_recall_f1([["B-X"]], [["O"]])
    assert (p, r, f) == (0.0, 0.0, 0.0) and not any(map(math.isnan, (p, r, f)))


@pytest.mark.parametrize("y_true, y_pred, match", [
    ([["NN", "VB"]], [["NN", "NN"]], "not chunk tags"),
    ([["B-NP", "X-NP"]], [["B-NP", "O"]], "not chunk tags"),
    ([["B-"]], [["O"]], "not chunk tags"),
    ([[1, 2]], [[1, 1]], "string labels"),
    ([["O", "B-NP"]], [["O"]], "sequence 0 has 2 true labels but 1 predicted"),
    ([["O"], ["O"]], [["O"]], "2 sequences but y_pred has 1"),
])
def test_chunk_scores_errors(y_true, y_pred, match):
    with pytest.raises(ValueError, match=match):
        metrics.chunk_precision_recall_f1(y_true, y_pred)


def test_metrics_import_compiles_nothing():
    """Importing crfsdca.metrics and scoring chunks loads no numba and no kernel module of
    the package (the chunker is numpy)."""
    import subprocess
    import sys

    code = ("import sys, crfsdca.metrics as m; "
            "m.chunk_precision_recall_f1([['B-X', 'O']], [['B-X', 'O']]); "
            "print('crfsdca.runtime.jit' in sys.modules, 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
