"""Training sequences read once, a chunk at a time: the same encoding as a whole list's,
chunks released as they are encoded, errors naming the sequence by its place in the
stream."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.data.items import Vocabulary, encode
from crfsdca.data.sequences import join
from crfsdca.data.stream import encode_stream, is_stream, labeled_pairs

NAMES = st.sampled_from(["a", "b", "c", "dd", "e:1", "ß"])
VALUES = st.one_of(st.sampled_from(["x", "y"]), st.sampled_from([0, 1, 2.5, True, False]))
DICT_ITEM = st.dictionaries(NAMES, VALUES, max_size=4)
LIST_ITEM = st.lists(st.one_of(NAMES, st.tuples(NAMES, st.sampled_from([0.0, 1.0, -2.0]))),
                     max_size=4)
LABELS = st.sampled_from(["B", "I", "O"])


@st.composite
def corpora(draw):
    """Sequences of dict items or of list items (the two fast paths) or mixed."""
    item = draw(st.sampled_from([DICT_ITEM, LIST_ITEM, st.one_of(DICT_ITEM, LIST_ITEM)]))
    lengths = draw(st.lists(st.integers(1, 5), min_size=1, max_size=12))
    X = [[draw(item) for _ in range(T)] for T in lengths]
    y = [[draw(LABELS) for _ in range(T)] for T in lengths]
    return X, y


def _same_split(a, b) -> None:
    for name in a._fields:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


@settings(max_examples=150, deadline=None)
@given(corpora(), st.integers(1, 12))
def test_chunks_encode_as_the_whole_list(corpus, chunk_tokens):
    X, y = corpus
    whole_a, whole_l = Vocabulary(), Vocabulary()
    whole = encode(X, y, whole_a, whole_l, grow=True, digests=True)
    a, lab = Vocabulary(), Vocabulary()
    got = encode_stream(zip(X, y, strict=True), a, lab, digests=True, chunk_tokens=chunk_tokens)
    assert a.strings() == whole_a.strings() and lab.strings() == whole_l.strings()
    _same_split(got.seq, whole.seq)
    assert got.digests == whole.digests
    assert np.array_equal(got.zero_entries.reshape(-1, 2), whole.zero_entries.reshape(-1, 2))


def test_join_keeps_weights_values_and_dense_columns():
    parts, attrs, labels = [], Vocabulary(), Vocabulary()
    for X, y in (([[{"a": 2.0}], [{"b": 1}]], [["L"], ["M"]]),
                 ([[{"v": np.array([1.0, 2.0])}, {"a": 1}]], [["L", "M"]])):
        parts.append(encode(X, y, attrs, labels, grow=True).seq)
    parts[0] = parts[0]._replace(weights=np.array([2.0, 0.5]))
    seq = join(list(parts))
    assert seq.offsets.tolist() == [0, 1, 2, 4]
    assert seq.weights.tolist() == [2.0, 0.5, 1.0]
    assert seq.attr_values.tolist() == [2.0, 1.0, 1.0]
    assert seq.dense.tolist() == [[0.0, 0.0], [0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]
    emptied = list(parts)
    join(emptied)
    assert emptied == []
    with pytest.raises(ValueError, match="no split"):
        join([])


class Tracked(list):
    """A sequence that can be watched (a list subclass takes a weak reference)."""


def test_a_chunk_is_released_once_encoded():
    alive: list[weakref.ref] = []
    held_at_end = []

    def pairs():
        for i in range(40):
            xseq = Tracked([{"w": f"t{i}"}, {"w": "u"}])
            alive.append(weakref.ref(xseq))
            yield xseq, ["A", "B"]
        gc.collect()
        held_at_end.append(sum(r() is not None for r in alive))

    enc = encode_stream(pairs(), Vocabulary(), Vocabulary(), chunk_tokens=10)
    assert enc.seq.n_sequences == 40
    assert held_at_end[0] <= 5  # the last, open chunk: at most chunk_tokens / 2 sequences


def test_errors_name_the_sequence_in_the_stream():
    X = [[{"a": 1}]] * 7 + [[]]
    with pytest.raises(ValueError, match="^sequence 7 is empty"):
        encode_stream(zip(X, [["L"]] * 8, strict=True), Vocabulary(), Vocabulary(), chunk_tokens=2)
    X = [[{"a": 1}]] * 5 + [[{"a": None}]]
    with pytest.raises(ValueError, match="^sequence 5, item 0"):
        encode_stream(zip(X, [["L"]] * 6, strict=True), Vocabulary(), Vocabulary(), chunk_tokens=2)
    with pytest.raises(ValueError, match="no training sequences"):
        encode_stream(iter(()), Vocabulary(), Vocabulary())


@pytest.mark.parametrize("chunk_tokens", [2, 1000])
def test_left_out_empty_sequences_keep_the_stream_positions(chunk_tokens):
    """Empty sequences left out (``skipped``) still count in the positions that errors
    name, in the first chunk and in later ones."""
    X = [[]] + [[{"a": 1}]] * 5 + [[], [{"a": None}]]
    skipped: list[int] = []
    with pytest.raises(ValueError, match="^sequence 7, item 0"):
        encode_stream(zip(X, [[]] + [["L"]] * 5 + [[], ["L"]], strict=True), Vocabulary(),
                      Vocabulary(), chunk_tokens=chunk_tokens, skipped=skipped)
    assert skipped == [0, 6]
    enc = encode_stream(zip(X[:6], [[]] + [["L"]] * 5, strict=True), Vocabulary(),
                        Vocabulary(), chunk_tokens=chunk_tokens, skipped=skipped)
    assert enc.seq.n_sequences == 5 and skipped == [0, 6, 0]


def test_a_column_in_one_chunk_and_an_attribute_in_another_is_refused():
    X = [[{"v": np.array([1.0, 2.0])}], [{"v[0]": 1.0}]]
    with pytest.raises(ValueError, match=r"'v\[0\]' is both"):
        encode_stream(zip(X, [["L"], ["L"]], strict=True), Vocabulary(), Vocabulary(),
                      chunk_tokens=1)


def test_pairs_and_lengths():
    assert list(labeled_pairs([[1], [2]], [["a"], ["b"]])) == [([1], ["a"]), ([2], ["b"])]
    assert list(labeled_pairs(iter([([1], ["a"])]), None)) == [([1], ["a"])]
    with pytest.raises(ValueError, match="y has more than 1"):
        list(labeled_pairs(iter([[1]]), iter([["a"], ["b"]])))
    with pytest.raises(ValueError, match="X has more than 1"):
        list(labeled_pairs(iter([[1], [2]]), iter([["a"]])))
    with pytest.raises(ValueError, match="sequence 1: with y None"):
        list(labeled_pairs([([1], ["a"]), [1, 2, 3]], None))
    with pytest.raises(ValueError, match="X must be an iterable"):
        list(labeled_pairs("abc", None))
    assert not is_stream([[1]], [["a"]]) and not is_stream(([1],), np.array([["a"]]))
    assert is_stream(iter([[1]]), [["a"]]) and is_stream([[1]], None)
