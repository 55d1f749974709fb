"""Items with python-crfsuite's semantics (checked against pycrfsuite.ItemSequence), the
vocabularies and their encoding, and CRFsuite's data format."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.data.crfsuite_format import format_item, parse_lines, read_file, write_sequences
from crfsdca.data.items import Vocabulary, _item_entries, encode, item_attributes
from crfsdca.errors import DataFormatError

ITEMS = [
    {"a": "x", "b": 1.5, "c": True, "f": False, "z": 0, "n": -2.5,
     "d": {"e": "f", "g": 2, "q": {"r": "s"}}, "h": ["i", "j"], "k": b"\xd0\xb1",
     "st": {"u"}, b"by": "tes"},
    ["s", "t", "s"],
    {},
    {"солнце": "не светит".encode(), "clean": 1},
]


def test_items_as_python_crfsuite_reads_them():
    pycrfsuite = pytest.importorskip("pycrfsuite")
    expected = pycrfsuite.ItemSequence(ITEMS).items()
    for item, want in zip(ITEMS, expected, strict=True):
        got: dict[str, float] = {}
        for name, value in item_attributes(item):
            got[name] = value  # python-crfsuite's items() keeps the last of a repeat
        assert got == want


def test_pairs_and_errors():
    assert item_attributes([("w", 2.0), "x", (b"y", True)]) == [("w", 2.0), ("x", 1.0),
                                                                 ("y", 1.0)]
    with pytest.raises(ValueError, match="value"):
        item_attributes({"a": None})
    with pytest.raises(ValueError, match="item"):
        item_attributes(3)
    with pytest.raises(ValueError, match="name"):
        item_attributes([1, 2])


def test_encode_first_occurrence_and_repeats():
    attrs, labels = Vocabulary(), Vocabulary()
    X = [[["b", "a"], ["a", "a", "c"]], [["c"]]]
    y = [["L2", "L1"], ["L1"]]
    enc = encode(X, y, attrs, labels, grow=True, digests=True)
    assert attrs.strings() == ["b", "a", "c"] and labels.strings() == ["L2", "L1"]
    seq = enc.seq
    assert seq.offsets.tolist() == [0, 2, 3]
    assert seq.labels.tolist() == [0, 1, 1]
    # within a token: sorted, unique ids; the repeated "a" has weight 2
    assert seq.attr_indices.tolist() == [0, 1, 1, 2, 2]
    values = getattr(seq, "attr_values", None)
    if values is not None:
        assert values.tolist() == [1.0, 1.0, 2.0, 1.0, 1.0]
    assert len(set(enc.digests)) == 2
    # tagging: unknown attributes dropped, unknown labels refused unless grow_labels
    test = encode([[["a", "new"]]], [["L3"]], attrs, Vocabulary(labels.strings()),
                  grow=False, grow_labels=True).seq
    assert test.attr_indices.tolist() == [1] and test.labels.tolist() == [2]
    with pytest.raises(ValueError, match="label"):
        encode([[["a"]]], [["L3"]], attrs, labels, grow=False)
    with pytest.raises(ValueError, match="labels"):
        encode([[["a"]]], [["L1", "L2"]], attrs, labels, grow=True)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=["a", ":", "\\", "\x00", "\ue000", "\ue001", "\ue002", "é"],
               max_size=12))
def test_field_splitting_equals_the_character_scan(text):
    """The fast split of a field (stand-ins for the escaped pairs) gives what the
    character-by-character scan gives, on runs of backslashes and colons and on fields
    that hold the stand-in characters themselves."""
    from crfsdca.data.crfsuite_format import _field, _unescape

    assert _field(text, "f", 1) == _unescape(text, "field", "f", 1)


_FIELD_TEXT = st.text(alphabet=["a", "b", ":", "\\", "1", ".", "5", "-", "@", " ", "\r",
                                 "\x00", "\ue001", "é"], max_size=8)


def _declares(text: str) -> bool:
    """Whether a line of ``text`` is a declaration: its label (first non-empty field)
    starts with ``@``, as CRFsuite's ``@weight``."""
    for line in text.split("\n"):
        line = line.rstrip("\r")
        fields = [f for f in line.split("\t") if f]
        if line.strip() and fields[0].startswith("@"):
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.just(""), st.lists(_FIELD_TEXT, min_size=1, max_size=4)),
                max_size=8))
def test_the_whole_text_parser_equals_the_line_parser(lines):
    """A file parsed at once (escapes resolved over the whole text) gives the instances
    the line-by-line parser gives; it defers to that one (None) only where that one
    reports an error, or where the text holds a declaration, a NUL or one of the
    stand-in characters (the cases its docstring names): a parser that always deferred
    fails here."""
    from crfsdca.data.crfsuite_format import _STAND_INS, _parse_plain

    text = "\n".join(line if isinstance(line, str) else "\t".join(line) for line in lines)
    fast = _parse_plain(text, 3)
    try:
        slow = parse_lines(text.split("\n"), "f", 3)
    except DataFormatError:
        assert fast is None
        return
    if fast is None:
        assert _declares(text) or "\x00" in text or any(c in text for c in _STAND_INS), \
            repr(text)
        return
    assert (fast.X, fast.y, fast.groups) == (slow.X, slow.y, slow.groups)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.just(""), st.just("@weight:2.5"),
                          st.lists(_FIELD_TEXT, min_size=1, max_size=4)), max_size=10),
       st.integers(1, 40))
def test_a_file_read_in_blocks_reads_as_whole(tmp_path_factory, lines, block_chars):
    """read_blocks (what ``crfsdca learn`` streams) gives read_file's instances, block
    after block, and its errors name the same line."""
    from crfsdca.data.crfsuite_format import Instances, read_blocks

    path = tmp_path_factory.mktemp("blocks") / "data.txt"
    path.write_text("\n".join(line if isinstance(line, str) else "\t".join(line)
                              for line in lines), encoding="utf-8")
    try:
        whole = read_file(str(path), 2)
    except DataFormatError as e:
        with pytest.raises(DataFormatError) as got:
            list(read_blocks(str(path), 2, block_chars))
        assert str(got.value) == str(e)
        return
    blocks = Instances()
    for block in read_blocks(str(path), 2, block_chars):
        blocks.extend(block)
    assert (blocks.X, blocks.y, blocks.groups, blocks.weights) == \
        (whole.X, whole.y, whole.groups, whole.weights)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.just(""), st.lists(_FIELD_TEXT, min_size=1, max_size=4)),
                max_size=8))
def test_tagging_straight_from_the_text_equals_the_reader_and_the_encoder(lines):
    """``crfsdca tag``'s path from a file's text to the split (no per-item lists) gives
    the split that the reader and the encoder give, labels the model lacks included, or
    defers to them (None) where they report an error or find no sequence."""
    from types import SimpleNamespace

    from crfsdca.cli.tag import encode_for, encode_text_for
    from crfsdca.data.crfsuite_format import _parse_plain

    model = SimpleNamespace(attributes=["a", "b", "a:b", "é", "1", "a\\b", "b:"],
                            labels=["a", "b", "1"], transition_attributes=[])
    text = "\n".join(line if isinstance(line, str) else "\t".join(line) for line in lines)
    fast = encode_text_for(model, text)
    inst = _parse_plain(text, 0)
    if inst is None or not inst.X:
        assert fast is None
        return
    seq, names = encode_for(model, inst)
    assert fast is not None and fast[1] == names
    for field in ("offsets", "labels", "attr_indptr", "attr_indices", "attr_values"):
        np.testing.assert_array_equal(getattr(fast[0], field), getattr(seq, field))


def test_crfsuite_format_round_trip(tmp_path):
    X = [[["w=a:b", ("v", 0.5)], ["back\\slash", ("x", 2.0)]], [[]]]
    y = [["B-NP", "I:NP"], ["O"]]
    path = tmp_path / "d.txt"
    with open(path, "w", encoding="utf-8") as f:
        write_sequences(f, X, y)
    text = path.read_text()
    assert "w=a\\:b" in text and "back\\\\slash" in text and "I\\:NP" in text
    inst = read_file(str(path))
    assert inst.y == y
    assert inst.X == [[["w=a:b", ("v", 0.5)], ["back\\slash", ("x", 2.0)]], [[]]]
    assert format_item("O", ["a", ("b", 1.5)]) == "O\ta\tb:1.5"


def test_a_name_ending_in_a_carriage_return_reads_back():
    """A CR before a TAB is part of a name; at a line's end it is a CRLF line end: the
    writer puts a TAB after a last name that ends with one (the fuzzer's case: written
    back, 'pos=JJ\\r' read as 'pos=JJ')."""
    X, y = [[["pos=JJ\r"], []]], [["A", "B\r"]]
    assert format_item("A", ["pos=JJ\r"]) == "A\tpos=JJ\r\t"
    out = io.StringIO()
    write_sequences(out, X, y)
    inst = parse_lines(out.getvalue().split("\n"), "mem")
    assert (inst.X, inst.y) == (X, y)
    with pytest.raises(ValueError, match="would read its line as a blank line"):
        format_item("\r", [])  # a NUL can cut a label to that; its line would be blank


def test_crfsuite_format_blank_lines_and_weights():
    inst = parse_lines(["\n", "A\tx:1\ty:\t\tz:0.25\r\n", "B\n", "\n", "\n", "@weight:1\n",
                        "C\tq\n"], "mem")
    assert inst.y == [["A", "B"], ["C"]]
    assert inst.X[0] == [["x", "y", ("z", 0.25)], []]
    assert inst.weights == [1.0, 1.0] and not inst.weighted


def test_crfsuite_format_sequence_weights_read_and_written(tmp_path):
    """``@weight:w`` weighs its sequence (anywhere in it, as CRFsuite reads it; the next
    sequence is back to 1); write_sequences writes it back, and the file reads the same."""
    inst = parse_lines(["@weight:2.5\n", "A\tx\n", "B\ty\n", "\n", "C\tz\n", "\n",
                        "D\tz\n", "@weight:0\n", "E\n"], "mem")
    assert inst.y == [["A", "B"], ["C"], ["D", "E"]]
    assert inst.weights == [2.5, 1.0, 0.0] and inst.weighted
    path = tmp_path / "w.txt"
    with open(path, "w", encoding="utf-8") as f:
        write_sequences(f, inst.X, inst.y, inst.weights)
    text = path.read_text()
    assert text.startswith("@weight:2.5\nA\tx\n") and text.count("@weight") == 2
    again = read_file(str(path))
    assert (again.X, again.y, again.weights) == (inst.X, inst.y, inst.weights)


@pytest.mark.parametrize("line, what", [
    ("A\tx:1:2\n", "more than one unescaped colon"),
    ("A\tx:abc\n", "not a number"),
    ("A\t:1\n", "empty name"),
    ("A:1\tx\n", "bad label"),
    ("@weight:2\tx\n", "stands alone on its line"),
    ("@weight:-1\n", "finite number >= 0"),
    ("@weight:nan\n", "finite number >= 0"),
    ("@weight:x\n", "is not a number"),
    ("@foo:1\n", "unrecognized declaration"),
])
def test_crfsuite_format_errors_name_file_and_line(line, what):
    with pytest.raises(DataFormatError, match=f"data.txt:2: .*{what}"):
        parse_lines(["B\tok\n", line], "data.txt")


def test_crfsuite_format_one_weight_per_sequence():
    with pytest.raises(DataFormatError, match="data.txt:3: a second @weight in one sequence "
                                              r"\(the first on line 1\)"):
        parse_lines(["@weight:2\n", "A\n", "@weight:3\n"], "data.txt")


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        read_file(str(tmp_path / "nope.txt"))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"A\t\xff\xfe\n")
    with pytest.raises(DataFormatError, match="UTF-8"):
        read_file(str(bad))


def test_digest_sees_weights_and_labels():
    attrs, labels = Vocabulary(), Vocabulary()
    X = [[[("a", 1.0)]], [[("a", 2.0)]], [[("a", 1.0)]], [[("a", 1.0)]]]
    y = [["A"], ["A"], ["B"], ["A"]]
    d = encode(X, y, attrs, labels, grow=True, digests=True).digests
    assert d[0] != d[1] and d[0] != d[2] and d[0] == d[3]


_NAMES = st.sampled_from(["a", "b", "c", "é", "w[0]", "x:y"])
_VALUES = st.one_of(st.sampled_from(["u", "v", "é"]), st.booleans(),
                    st.integers(-2, 2), st.sampled_from([0.0, 0.5, -1.5]),
                    st.sampled_from([np.str_("u"), np.str_("w"), np.bool_(True),
                                     np.bool_(False), np.float64(0.5), np.float32(-1.5),
                                     np.int64(2), np.int32(-1)]))  # numpy's, as pandas gives
_DICT_ITEM = st.dictionaries(_NAMES, _VALUES, max_size=5)
_LIST_ITEM = st.lists(_NAMES, max_size=5)
_NUMBERS = st.one_of(st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 0.5, -1.5]),
                     st.sampled_from([np.bool_(False), np.float64(0.5), np.float32(-1.5),
                                      np.int64(2), np.int32(-1)]))
_PAIRS_ITEM = st.lists(st.one_of(_NAMES, st.tuples(_NAMES, _NUMBERS)), max_size=5)


def _both_paths(X, known: list[str]):
    """encode(X) by the corpus path and, with one item that forces it, item by item."""
    out = []
    for extra in ([], [[{"zz"}]]):  # an item that is a set: the item-by-item path
        attrs = Vocabulary(known)
        enc = encode(X + extra, None, attrs, Vocabulary(), grow=True)
        seq = enc.seq
        n = int(seq.offsets[len(X)])
        end = int(seq.attr_indptr[n])
        values = seq.attr_values[:end] if len(seq.attr_values) else seq.attr_values
        zeros = enc.zero_entries[enc.zero_entries[:, 1] < n]
        out.append((attrs.strings()[: len(attrs) - len(extra)] if extra else attrs.strings(),
                    seq.attr_indptr[: n + 1].tolist(), seq.attr_indices[:end].tolist(),
                    values.tolist(), zeros.tolist()))
    return out


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.lists(st.lists(_DICT_ITEM, min_size=1, max_size=4), min_size=1,
                          max_size=4),
                 st.lists(st.lists(_LIST_ITEM, min_size=1, max_size=4), min_size=1,
                          max_size=4),
                 st.lists(st.lists(_PAIRS_ITEM, min_size=1, max_size=4), min_size=1,
                          max_size=4)),
       st.lists(_NAMES, max_size=3, unique=True))
def test_the_corpus_path_encodes_as_item_by_item(X, known):
    """sklearn-crfsuite's flat dicts, CRFsuite's string lists and lists of names and
    (name, number) pairs (CRFsuite's data files) are encoded a list at a time; the result
    (ids in order of first occurrence, sorted unique ids per token with repeats added,
    zero weights left out and reported) is the item-by-item path's."""
    fast, slow = _both_paths(X, [f"{k}:u" for k in known])
    assert fast == slow


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(
    st.lists(st.tuples(st.integers(-1, 6), st.sampled_from([0.0, 1.0, -1.0, 2.5])),
             max_size=8),
    st.lists(st.tuples(st.integers(-1, 40), st.sampled_from([0.0, 1.0, -1.0, 0.1])),
             min_size=60, max_size=130)),  # around LONG_TOKEN: the merge sort
    min_size=1, max_size=6))
def test_token_csr_against_sorting_every_token(tokens):
    from crfsdca.data.token_csr import token_csr

    counts = np.array([len(t) for t in tokens], dtype=np.int64)
    ids = np.array([a for t in tokens for a, _ in t], dtype=np.int64)
    weights = np.array([w for t in tokens for _, w in t], dtype=np.float64)
    indptr, indices, values, zeros = token_csr(counts, ids, weights)
    want_ptr, want_ids, want_values, want_zeros = [0], [], [], []
    for t, entries in enumerate(tokens):
        summed: dict[int, float] = {}
        for a, w in entries:
            if a >= 0:
                summed[a] = summed.get(a, 0.0) + w
        for a in sorted(summed):
            if summed[a] != 0.0:
                want_ids.append(a)
                want_values.append(summed[a])
            else:
                want_zeros.append([a, t])
        want_ptr.append(len(want_ids))
    assert indptr.tolist() == want_ptr and indices.tolist() == want_ids
    assert values.tolist() == want_values and zeros.tolist() == want_zeros
    assert indices.dtype == np.int32
    # the same entries as positions among their distinct (id, weight) pairs
    pairs, which = np.unique(np.stack([ids, weights], axis=1), axis=0, return_inverse=True)
    by_pair = token_csr(counts, pairs[:, 0].astype(np.int64), pairs[:, 1],
                        which.astype(np.int32).ravel())
    for got, want in zip(by_pair, (indptr, indices, values, zeros), strict=True):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_a_bad_name_is_reported_by_position_on_the_corpus_path():
    with pytest.raises(ValueError, match=r"sequence 1, item 0: .*not valid Unicode"):
        encode([[{"a": "x"}], [{"b\udcff": "y"}]], None, Vocabulary(), Vocabulary(),
               grow=True)
    with pytest.raises(ValueError, match=r"sequence 0, item 1: .*weight inf"):
        encode([[{"a": 1.0}, {"b": float("inf")}]], None, Vocabulary(), Vocabulary(),
               grow=True)


def test_a_bad_name_leaves_the_vocabulary_as_item_by_item():
    """The corpus path gives ids as it meets names; on a name it cannot write it takes
    back the ones it gave, so that the item-by-item path's error leaves the names before
    the bad one, in order, whichever path ran first."""
    X = [[{"a": "x", "k": "v"}, {"b": "y"}], [{"c": 1.0, "b\udcff": "z", "d": "w"}]]
    for kind in (lambda item: item, lambda item: [f"{k}:{v}" for k, v in item.items()]):
        corpus = [[kind(item) for item in xseq] for xseq in X]
        fast, slow = Vocabulary(["k:v"]), Vocabulary(["k:v"])
        with pytest.raises(ValueError, match=r"sequence 1, item 0: .*not valid Unicode"):
            encode(corpus, None, fast, Vocabulary(), grow=True)
        with pytest.raises(ValueError, match=r"sequence 1, item 0: .*not valid Unicode"):
            _item_entries(corpus, slow.ids, grow=True)
        assert fast.ids == slow.ids and fast.strings() == slow.strings()
        assert fast.strings()[:3] == ["k:v", "a:x", "b:y"]


def test_errors_come_in_the_order_of_the_sequences():
    """The first bad sequence is reported, whatever its error: a bad item before a later
    sequence's missing label or emptiness; with digests (continued training) too."""
    for digests in (False, True):
        with pytest.raises(ValueError, match=r"sequence 0, item 0: .*an item must be"):
            encode([[3], []], [["A"], []], Vocabulary(), Vocabulary(), grow=True,
                   digests=digests)
        with pytest.raises(ValueError, match=r"sequence 0, item 1: "):
            encode([[{"a": "x"}, {"b": [1]}], [{"a": "y"}]], [["A", "A"], ["A", "B"]],
                   Vocabulary(), Vocabulary(), grow=True, digests=digests)
        with pytest.raises(ValueError, match=r"sequence 1 is empty"):
            encode([[{"a": "x"}], []], [["A"], []], Vocabulary(), Vocabulary(), grow=True,
                   digests=digests)
        with pytest.raises(ValueError, match=r"sequence 1: label 'C' is not in the model"):
            encode([[{"a": "x"}], [{"a": "y"}]], [["A"], ["C"]], Vocabulary(),
                   Vocabulary(["A"]), grow=False, digests=digests)
