"""CRF++'s and Wapiti's templates over column files (crfsdca.data.column_templates) and
their public face, crfsdca.templates: the attributes, the padding tokens, every error."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from crfsdca import CRF, templates
from crfsdca.data.column_templates import (
    column_items,
    parse_columns,
    parse_template,
    read_columns,
    read_template,
)
from crfsdca.errors import DataFormatError

CHUNKING = """\
# Unigram
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]

U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-2,1]/%x[-1,1]
U16:%x[-1,1]/%x[0,1]
U17:%x[0,1]/%x[1,1]
U18:%x[1,1]/%x[2,1]

U20:%x[-2,1]/%x[-1,1]/%x[0,1]
U21:%x[-1,1]/%x[0,1]/%x[1,1]
U22:%x[0,1]/%x[1,1]/%x[2,1]

# Bigram
B
"""
"""CRF++'s example/chunking/template, verbatim."""

ROWS = [["He", "PRP"], ["reckons", "VBZ"], ["the", "DT"]]


def test_crfpp_chunking_template_and_its_padding():
    t = parse_template(CHUNKING, "template")
    assert t.dialect == "crfpp" and t.bigram and len(t.unigrams) == 19 and t.max_column == 1
    items = t.sequence_attributes(ROWS)
    assert items[0][:7] == ["U00:_B-2", "U01:_B-1", "U02:He", "U03:reckons", "U04:the",
                            "U05:_B-1/He", "U06:He/reckons"]
    assert items[0][-3:] == ["U20:_B-2/_B-1/PRP", "U21:_B-1/PRP/VBZ", "U22:PRP/VBZ/DT"]
    assert items[2][:5] == ["U00:He", "U01:reckons", "U02:the", "U03:_B+1", "U04:_B+2"]
    assert items[2][-1] == "U22:DT/_B+1/_B+2"
    assert [len(i) for i in items] == [19, 19, 19]


def test_constant_unigram_line():
    t = parse_template("U0:%x[0,0]\nU1\n")
    assert t.sequence_attributes([["a"], ["b"]]) == [["U0:a", "U1"], ["U0:b", "U1"]]
    assert not t.bigram  # the chain's transitions are there all the same (documented)


def test_wapiti_pattern_file():
    t = parse_template("*\nu:w=%x[-1,0]\nU:low=%X[0,0]  # a comment\n"
                       "u:first=%x[@1,0] last=%x[@-1,0]\nu:far=%x[-6,0]|%x[5,0]\n")
    assert t.dialect == "wapiti" and t.bigram
    items = t.sequence_attributes([["He"], ["Runs"]])
    assert items[0] == ["*", "u:w=_x-1", "u:low=he", "u:first=He last=Runs",
                        "u:far=_x-#|_x+4"]
    assert items[1][1:3] == ["u:w=He", "u:low=runs"]


def test_a_crfpp_template_read_as_wapiti_pads_as_wapiti():
    t = parse_template(CHUNKING, dialect="wapiti")
    assert t.sequence_attributes(ROWS)[0][0] == "u00:_x-2"  # Wapiti lowercases the type


@pytest.mark.parametrize("text, line, words", [
    ("", None, "empty template"),
    ("# only a comment\n\n", None, "empty template"),
    ("B\n", 1, "no U line"),
    ("U00:%x[0,0]\nX01:%x[0,0]\n", 2, "unknown template type 'X'"),
    ("U00:%y[0,0]\n", 1, "unknown macro '%y'"),
    ("U00:a%%b\n", 1, "unknown macro '%%'"),
    ("U00:%x[a,0]\n", 1, "bad macro at character 5"),
    ("U00:%x[0 ,0]\n", 1, "bad macro"),
    ("U00:%x[0,0\n", 1, "bad macro"),
    ("U00:%x[+1,0]\n", 1, "bad macro"),
    ("U00:%x0,0]\n", 1, "bad macro"),
    ("U00:%x[0,-1]\n", 1, "bad macro"),
    ("\nU00:%x[9,0]\n", 2, "row offset 9 out of CRF++'s range -8..8"),
    ("U00:%x[-9,0]\n", 1, "row offset -9"),
    ("U00:%x[0,0]\nB\nB1\n", 3, "a second B line without observations (the first on "
                                "line 2)"),
    ("u:%x[0,0]\nu:%t[0,0,\"^A\"]\n", 2, "regular-expression command %t is not supported"),
    ("u:%m[0,0,\"a\"]\n", 1, "%m is not supported"),
    ("u:%x[@0,0]\n", 1, "absolute position @0"),
    ("u:%x[0;0]\n", 1, "bad macro"),
])
def test_every_malformed_template_is_one_error_naming_its_line(tmp_path, text, line, words):
    path = tmp_path / "template"
    path.write_text(text)
    with pytest.raises(DataFormatError) as e:
        read_template(path)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert str(e.value).startswith(where) and words in str(e.value)
    assert "\n" not in str(e.value)


def test_a_star_line_is_wapiti_s_alone():
    with pytest.raises(DataFormatError, match=r"^<template>:2: .*unknown template type '\*' "
                                              r"\(a line starts with U or B\)"):
        parse_template("U00:%x[0,0]\n*\n", dialect="crfpp")


def test_no_template_file(tmp_path):
    with pytest.raises(DataFormatError, match="no such template file"):
        read_template(tmp_path / "missing")
    with pytest.raises(DataFormatError, match="not a template file"):
        read_template(tmp_path)


def test_column_out_of_range_names_the_template_line_and_the_data(tmp_path):
    t = parse_template("U0:%x[0,0]\nU1:%x[0,2]/%x[0,1]\nB\n", "tmpl")
    data = parse_columns("a A x\nb B y\n\n", "train.data")
    with pytest.raises(DataFormatError) as e:
        column_items(t, data, "train.data")
    assert str(e.value) == ("tmpl:2: 'U1:%x[0,2]/%x[0,1]' reads column 2, but "
                            "train.data:1 has 2 columns before the label")
    with pytest.raises(DataFormatError, match=r"^tmpl:2: .* but token 1 of sequence 1 has "
                                              r"2 columns"):
        t.items([[["a", "b", "c"]], [["a", "b", "c"], ["a", "b"]]])


def test_column_files(tmp_path):
    text = "\n\nHe PRP B-NP\r\nreckons\tVBZ  B-VP\n \n\n\nthe DT B-NP\n   \n"
    data = parse_columns(text, "f")
    assert data.X == [[["He", "PRP"], ["reckons", "VBZ"]], [["the", "DT"]]]
    assert data.y == [["B-NP", "B-VP"], ["B-NP"]] and data.lines == [3, 8]
    unlabeled = parse_columns("a b\n\nc d\n", "f", labeled=False)
    assert unlabeled.X == [[["a", "b"]], [["c", "d"]]] and unlabeled.y is None
    path = tmp_path / "train.data"
    path.write_text(text)
    assert read_columns(path) == data
    assert parse_columns("", "f") == ([], [], [])


@pytest.mark.parametrize("text, line, words", [
    ("a b c\nd e c\n\nf g\n", 4, "2 columns, but line 1 has 3"),
    ("a b c\nd e f g\n", 2, "4 columns, but line 1 has 3"),
    ("\nlabel\n", 2, "1 column: a labeled column file"),
])
def test_inconsistent_columns_are_one_error_naming_the_line(text, line, words):
    with pytest.raises(DataFormatError) as e:
        parse_columns(text, "train.data")
    assert str(e.value).startswith(f"train.data:{line}: ") and words in str(e.value)


def test_read_columns_missing_file(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        read_columns(tmp_path / "nope")


def _reference(template_lines, rows, dialect):
    """What CRF++'s feature.cpp (or Wapiti's pattern.c) generates, token by token."""
    T = len(rows)

    def read(t, off, col):
        i = t + off
        if 0 <= i < T:
            return rows[i][col]
        if dialect == "crfpp":
            return f"_B-{-i}" if i < 0 else f"_B+{i - T + 1}"
        k = -i if i < 0 else i - T + 1
        return ("_x-" if i < 0 else "_x+") + (str(k) if k <= 4 else "#")

    if dialect == "wapiti":  # Wapiti lowercases the line's type
        template_lines = [(name.lower(), macros) for name, macros in template_lines]
    return [[name + "".join(f"/{read(t, o, c)}" for o, c in macros)
             for name, macros in template_lines] for t in range(T)]


_macro = st.tuples(st.integers(-8, 8), st.integers(0, 2))
_line = st.lists(_macro, max_size=3)
_word = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
                min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_line, min_size=1, max_size=5),
       rows=st.lists(st.lists(_word, min_size=3, max_size=3), max_size=12),
       dialect=st.sampled_from(["crfpp", "wapiti"]))
def test_attributes_match_a_token_by_token_reference(lines, rows, dialect):
    named = [(f"U{j:02d}:", macros) for j, macros in enumerate(lines)]
    text = "\n".join(name + "".join(f"/%x[{o},{c}]" for o, c in macros)
                     for name, macros in named) + "\nB\n"
    t = parse_template(text, dialect=dialect)
    assert t.items([rows]) == [_reference(named, rows, dialect)]


@settings(max_examples=200, deadline=None)
@given(X=st.lists(st.lists(st.lists(st.text("ab \t\r\n", max_size=3).map(
    lambda w: "".join(w.split()) or "x"), min_size=2, max_size=2), min_size=1, max_size=4),
    max_size=5))
def test_column_files_read_back_what_was_written(X):
    text = "\n\n".join("\n".join(" ".join(row) + "\tL" for row in rows) for rows in X)
    data = parse_columns(text, "f")
    assert data.X == X and data.y == [["L"] * len(rows) for rows in X]


# crfsdca.templates: the public face


def test_load_template_from_text_path_or_template(tmp_path):
    path = tmp_path / "template"
    path.write_text(CHUNKING)
    from_file = templates.load_template(str(path))
    assert from_file.path == str(path)
    assert templates.load_template(path).unigrams == from_file.unigrams
    assert templates.load_template(CHUNKING).unigrams == from_file.unigrams
    assert templates.load_template(from_file) is from_file
    assert templates.load_template("U0:%x[0,0]").path == "<template>"
    with pytest.raises(DataFormatError, match="no U line"):
        templates.load_template("B")
    with pytest.raises(DataFormatError, match="no such template file"):
        templates.load_template(str(tmp_path / "missing"))


def test_parameter_mappings():
    assert templates.crfpp_parameters(4.0) == {"c1": 0.0, "c2": 0.125,
                                               "all_possible_states": True,
                                               "all_possible_transitions": True,
                                               "transition_prefix": "B~"}
    assert templates.crfpp_parameters(0.5, l1=True)["c1"] == 2.0
    assert templates.wapiti_parameters(0.0, 0.25)["c2"] == 0.125
    assert templates.wapiti_parameters()["c1"] == 0.5
    with pytest.raises(ValueError):
        templates.crfpp_parameters(0)


TRAIN_X = [[["the", "DT"], ["cat", "NN"], ["sat", "VBD"]],
           [["a", "DT"], ["dog", "NN"], ["ran", "VBD"], ["home", "NN"]],
           [["dogs", "NNS"], ["bark", "VBP"]]] * 3
TRAIN_Y = [["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "B-VP", "B-NP"], ["B-NP", "B-VP"]] * 3


def test_transformer_in_a_pipeline_with_crf():
    pipe = Pipeline([("features", templates.TemplateFeatures(CHUNKING)),
                     ("crf", CRF(**templates.crfpp_parameters(10.0), random_state=0))])
    pipe.fit(TRAIN_X, TRAIN_Y)
    assert pipe.predict(TRAIN_X[:3]) == TRAIN_Y[:3]
    crf = pipe.named_steps["crf"]
    assert "U02:cat" in crf.attributes_ and "U00:_B-2" in crf.attributes_
    assert pickle.loads(pickle.dumps(pipe)).predict(TRAIN_X[:1]) == TRAIN_Y[:1]
    copy = clone(pipe)
    assert copy.get_params()["features__template"] == CHUNKING


def test_transformer_min_freq_is_crfpp_cut_off():
    f = templates.TemplateFeatures("U0:%x[0,0]\nU1:%x[0,1]\nB\n", min_freq=4)
    items = f.fit_transform(TRAIN_X)
    assert f.vocabulary_ == {"U1:DT", "U1:NN", "U1:VBD"}  # each word 3 times, NN 9 times
    assert items[2] == [[], []] and items[0][0] == ["U1:DT"]
    assert f.transform([[["dogs", "NN"]]]) == [[["U1:NN"]]]
    assert templates.TemplateFeatures("U0:%x[0,0]").fit(TRAIN_X).vocabulary_ is None


def test_transformer_errors():
    with pytest.raises(ValueError, match="needs a template"):
        templates.TemplateFeatures().fit(TRAIN_X)
    with pytest.raises(ValueError, match="min_freq"):
        templates.TemplateFeatures("U0:%x[0,0]", min_freq=0).fit(TRAIN_X)
    with pytest.raises(Exception, match="not fitted"):
        templates.TemplateFeatures("U0:%x[0,0]").transform(TRAIN_X)
    with pytest.raises(DataFormatError, match=r"^<template>:1: .*reads column 5"):
        templates.TemplateFeatures("U0:%x[0,5]").fit(TRAIN_X)
    single = templates.TemplateFeatures("U0:%x[0,0]").fit_transform([["a", "b"]])
    assert single == [[["U0:a"], ["U0:b"]]]  # a row that is a str is one column


def test_package_exposes_templates():
    import crfsdca

    assert crfsdca.templates is templates
