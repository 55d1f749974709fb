"""Items with python-crfsuite's semantics (checked against pycrfsuite.ItemSequence), the
vocabularies and their encoding, and CRFsuite's data format."""

from __future__ import annotations

import pytest

from crfsdca.data.crfsuite_format import format_item, parse_lines, read_file, write_sequences
from crfsdca.data.items import Vocabulary, encode, item_attributes
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


def test_crfsuite_format_blank_lines_and_weights():
    inst = parse_lines(["\n", "A\tx:1\ty:\t\tz:0.25\r\n", "B\n", "\n", "\n", "@weight:1\n",
                        "C\tq\n"], "mem")
    assert inst.y == [["A", "B"], ["C"]]
    assert inst.X[0] == [["x", "y", ("z", 0.25)], []]


@pytest.mark.parametrize("line, what", [
    ("A\tx:1:2\n", "more than one unescaped colon"),
    ("A\tx:abc\n", "not a number"),
    ("A\t:1\n", "empty name"),
    ("A:1\tx\n", "bad label"),
    ("@weight:2\tx\n", "instance weights"),
    ("@foo:1\n", "unrecognized declaration"),
])
def test_crfsuite_format_errors_name_file_and_line(line, what):
    with pytest.raises(DataFormatError, match=f"data.txt:2: .*{what}"):
        parse_lines(["B\tok\n", line], "data.txt")


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
