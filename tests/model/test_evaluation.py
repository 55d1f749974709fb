"""Token error and chunk F1 against a line-by-line port of conlleval's counting loop."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.model.evaluation import chunk_f1, chunk_scheme, token_error

LABELS = ["B-NP", "I-NP", "B-VP", "I-VP", "O", "E-NP", "S-VP"]


def _end(pt, t, pty, ty):
    ends = {("B", "B"), ("B", "O"), ("B", "S"), ("I", "B"), ("I", "S"), ("I", "O"),
            ("E", "E"), ("E", "I"), ("E", "O"), ("E", "S"), ("E", "B"),
            ("S", "E"), ("S", "I"), ("S", "O"), ("S", "S"), ("S", "B")}
    return (pt, t) in ends or (pt != "O" and pty != ty)


def _start(pt, t, pty, ty):
    starts = {("B", "B"), ("I", "B"), ("O", "B"), ("S", "B"), ("E", "B"),
              ("B", "S"), ("I", "S"), ("O", "S"), ("S", "S"), ("E", "S"),
              ("O", "I"), ("S", "I"), ("E", "I"), ("S", "E"), ("E", "E"), ("O", "E")}
    return (pt, t) in starts or (t != "O" and pty != ty)


def _split(lab):
    return ("O", "") if lab == "O" else tuple(lab.split("-", 1))


def conlleval(sentences):
    """(precision, recall, F1) the way conlleval.pl counts, for [(gold, guess)] sentences."""
    correct = found_gold = found_guess = 0
    for gold, guess in sentences:
        in_correct = False
        lc = lg = ("O", "")
        for g, p in list(zip(gold, guess, strict=True)) + [("O", "O")]:
            cg, cp = _split(g), _split(p)
            end_g = _end(lc[0], cg[0], lc[1], cg[1])
            end_p = _end(lg[0], cp[0], lg[1], cp[1])
            start_g = _start(lc[0], cg[0], lc[1], cg[1])
            start_p = _start(lg[0], cp[0], lg[1], cp[1])
            if in_correct:
                if end_g and end_p and lg[1] == lc[1]:
                    in_correct = False
                    correct += 1
                elif end_g != end_p or cg[1] != cp[1]:
                    in_correct = False
            if start_g and start_p and cg[1] == cp[1]:
                in_correct = True
            found_gold += start_g
            found_guess += start_p
            lc, lg = cg, cp
    p = 100.0 * correct / found_guess if found_guess else 0.0
    r = 100.0 * correct / found_gold if found_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(range(len(LABELS))),
                                   st.sampled_from(range(len(LABELS)))),
                         min_size=1, max_size=8), min_size=1, max_size=5))
def test_chunk_f1_matches_conlleval(sentences):
    gold = np.array([g for s in sentences for g, _ in s], dtype=np.int32)
    pred = np.array([p for s in sentences for _, p in s], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sentences])])
    scheme = chunk_scheme(LABELS)
    ref = conlleval([([LABELS[g] for g, _ in s], [LABELS[p] for _, p in s]) for s in sentences])
    assert chunk_f1(gold, pred, offsets, scheme) == pytest.approx(ref)


def test_chunk_scheme_rejects_pos_tags():
    assert chunk_scheme(["NN", "VB", "DT"]) is None
    assert chunk_scheme(["O"]) is None
    assert chunk_scheme(["B-PER", "I-PER", "O"]) is not None


def test_token_error():
    assert token_error(np.array([1, 2, 3, 4]), np.array([1, 0, 3, 0])) == 0.5
