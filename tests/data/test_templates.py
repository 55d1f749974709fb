"""CRFsuite-style templates on hand-made sentences, and against CRFsuite's own algorithm."""

from __future__ import annotations

import pytest
import yaml
from helpers.paths import ROOT
from hypothesis import given
from hypothesis import strategies as st

from crfsdca.data.templates import Extractor, parse_templates, template_name
from crfsdca.errors import ConfigError

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
CHUNKING = parse_templates(CONFIG["datasets"]["conll"]["templates"])

SENTENCE = {"w": ["He", "reckons", "the", "deficit"], "pos": ["PRP", "VBZ", "DT", "NN"]}


def crfsuite_apply_templates(fields, n, templates):
    """CRFsuite's example/crfutils.py apply_templates, transcribed (the reference)."""
    X = [{"F": []} for _ in range(n)]
    for template in templates:
        name = "|".join(["%s[%d]" % (f, o) for f, o in template])  # noqa: UP031 (as CRFsuite)
        for t in range(n):
            values = []
            for field, offset in template:
                p = t + offset
                if p not in range(n):
                    values = []
                    break
                values.append(fields[field][p])
            if values:
                X[t]["F"].append("%s=%s" % (name, "|".join(values)))  # noqa: UP031
    return [x["F"] for x in X]


def test_chunking_templates_are_crfsuites_19():
    assert len(CHUNKING) == 19
    names = [template_name(t) for t in CHUNKING]
    assert names[:7] == ["w[-2]", "w[-1]", "w[0]", "w[1]", "w[2]", "w[-1]|w[0]", "w[0]|w[1]"]
    assert names[-3:] == ["pos[-2]|pos[-1]|pos[0]", "pos[-1]|pos[0]|pos[1]",
                          "pos[0]|pos[1]|pos[2]"]


def test_chunking_templates_on_hand_made_sentence():
    attrs = Extractor(CHUNKING)(SENTENCE, 4)
    assert attrs[0] == [
        "w[0]=He", "w[1]=reckons", "w[2]=the", "w[0]|w[1]=He|reckons",
        "pos[0]=PRP", "pos[1]=VBZ", "pos[2]=DT", "pos[0]|pos[1]=PRP|VBZ",
        "pos[1]|pos[2]=VBZ|DT", "pos[0]|pos[1]|pos[2]=PRP|VBZ|DT",
    ]
    assert attrs[3] == [
        "w[-2]=reckons", "w[-1]=the", "w[0]=deficit", "w[-1]|w[0]=the|deficit",
        "pos[-2]=VBZ", "pos[-1]=DT", "pos[0]=NN", "pos[-2]|pos[-1]=VBZ|DT",
        "pos[-1]|pos[0]=DT|NN", "pos[-2]|pos[-1]|pos[0]=VBZ|DT|NN",
    ]
    assert [len(a) for a in attrs] == [10, 15, 15, 10]  # no padding words are invented
    assert attrs == crfsuite_apply_templates(SENTENCE, 4, CHUNKING)


def test_derived_fields():
    fields = {"w": ["Mr.", "1,200", "state-of-the-art", "NATO", "x"]}
    templates = parse_templates([[["lower", 0]], [["shape", 0]], [["pre3", 0]], [["suf2", 0]],
                                 [["digit", 0]], [["hyphen", 0]], [["title", 0]],
                                 [["upper", 0]], [["shape", -1], ["shape", 0]]])
    attrs = Extractor(templates)(fields, 5)
    assert attrs[0] == ["lower[0]=mr.", "shape[0]=Xx.", "pre3[0]=Mr.", "suf2[0]=r.",
                        "title[0]=1"]
    assert attrs[1] == ["lower[0]=1,200", "shape[0]=d,d", "pre3[0]=1,2", "suf2[0]=00",
                        "digit[0]=1", "shape[-1]|shape[0]=Xx.|d,d"]
    assert "hyphen[0]=1" in attrs[2] and "shape[0]=x-x-x-x" in attrs[2]
    assert "upper[0]=1" in attrs[3] and "title[0]=1" in attrs[3]
    assert attrs[4][:4] == ["lower[0]=x", "shape[0]=x", "pre3[0]=x", "suf2[0]=x"]
    assert not any(a.startswith(("digit", "hyphen", "title", "upper")) for a in attrs[4])


def test_unknown_field_is_a_clear_error():
    with pytest.raises(ConfigError, match="'chunk' is neither a column"):
        Extractor(parse_templates([[["chunk", 0]]]))(SENTENCE, 4)


@pytest.mark.parametrize("bad", [
    "w[0]", [[]], [[["w"]]], [[["w", "0"]]], [[["w", 0.5]]], [[["w", True]]], [[["1w", 0]]],
])
def test_parse_templates_rejects(bad):
    with pytest.raises(ConfigError):
        parse_templates(bad)


words = st.lists(st.text(alphabet="abAB1-.", min_size=1, max_size=4), min_size=1, max_size=7)
templates = st.lists(
    st.lists(st.tuples(st.sampled_from(["w", "pos"]), st.integers(-3, 3)), min_size=1,
             max_size=3).map(tuple),
    min_size=1, max_size=6)


@given(words, templates)
def test_extractor_equals_crfsuite_algorithm(ws, tmpls):
    fields = {"w": ws, "pos": [w.upper() for w in ws]}
    assert Extractor(tmpls)(fields, len(ws)) == crfsuite_apply_templates(fields, len(ws), tmpls)


@given(st.integers(1, 12), st.integers(-4, 4))
def test_single_template_count(n, offset):
    fields = {"w": [str(i) for i in range(n)]}
    attrs = Extractor([(("w", offset),)])(fields, n)
    assert sum(map(len, attrs)) == max(0, n - abs(offset))
