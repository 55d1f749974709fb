"""Constraints from label names (BIO, BIOES, IOB1) against the schemes' chunk grammars,
over every labeling of short sequences; each bad input's one error; ``crfsdca tag``'s
options -n, -c, --forbid and --force against the estimator, and nothing printed on an
error."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crfsdca import CRF
from crfsdca.cli import main
from crfsdca.data.crfsuite_format import write_sequences
from crfsdca.model.constraints import SCHEMES, Masks, constraint_masks
from crfsdca.model.layout import WeightLayout
from crfsdca.model_file import Model, save_model
from crfsdca.tagger import Tagger
from tests.helpers.tag_output import blocks

# ------------------------------------------------------------------ the schemes' grammars


def bio_valid(tags):
    """BIO (IOB2): an I-X continues a chunk of X begun by B-X."""
    return all(not lab.startswith("I-")
               or (t > 0 and tags[t - 1] in ("B-" + lab[2:], "I-" + lab[2:]))
               for t, lab in enumerate(tags))


def iob1_valid(tags):
    """IOB1: a B-X only right after a chunk of X (it separates two such chunks)."""
    return all(not lab.startswith("B-")
               or (t > 0 and tags[t - 1] in ("B-" + lab[2:], "I-" + lab[2:]))
               for t, lab in enumerate(tags))


def bioes_valid(tags):
    """BIOES as an automaton: outside, O and S-X stay outside, B-X enters a chunk of X;
    inside X, I-X stays, E-X leaves; a sequence ends outside."""
    inside = None
    for lab in tags:
        prefix, kind = lab[0], lab[2:]
        if inside is None:
            if prefix in "IE":
                return False
            if prefix == "B":
                inside = kind
        elif prefix == "I" and kind == inside:
            continue
        elif prefix == "E" and kind == inside:
            inside = None
        else:
            return False
    return inside is None


GRAMMARS = {"BIO": (bio_valid, ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]),
            "IOB1": (iob1_valid, ["O", "I-PER", "B-PER", "I-LOC", "B-LOC"]),
            "BIOES": (bioes_valid, ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "E-LOC",
                                    "S-LOC"])}


def masks_allow(masks: Masks, y) -> bool:
    return bool(masks.first[y[0]] and masks.last[y[-1]]
                and all(masks.allowed[a, b] for a, b in itertools.pairwise(y)))


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_scheme_masks_are_the_grammar(scheme):
    valid, labels = GRAMMARS[scheme]
    masks = constraint_masks(scheme, labels)
    for T in range(1, 5):
        for y in itertools.product(range(len(labels)), repeat=T):
            assert masks_allow(masks, y) == valid([labels[k] for k in y]), [labels[k]
                                                                              for k in y]


def test_schemes_and_pairs_combine():
    labels = GRAMMARS["BIO"][1]
    both = constraint_masks(["BIO", ("B-PER", "B-PER")], labels)
    bio = constraint_masks("BIO", labels)
    expected = bio.allowed.copy()
    expected[1, 1] = False
    assert (both.allowed == expected).all() and (both.first == bio.first).all()
    pairs = constraint_masks({("O", "I-PER"), ("I-LOC", "O")}, labels)
    assert pairs.allowed.sum() == 23 and not pairs.allowed[0, 2] and not pairs.allowed[4, 0]
    assert pairs.first.all() and pairs.last.all()


# ------------------------------------------------------------------ bad input

LABELS = ["O", "B-X", "I-X"]


@pytest.fixture(scope="module")
def crf(tmp_path_factory):
    rng = np.random.default_rng(1)
    model = Model(LABELS, ["a", "b"], rng.normal(size=WeightLayout(2, 3).dim))
    path = tmp_path_factory.mktemp("m") / "m.model"
    save_model(path, model)
    return CRF(model_filename=str(path))


X = [[["a"], ["b"]], [["b"]]]
BAD = [
    (dict(constraints="BIOX"), "unknown constraint scheme 'BIOX'"),
    (dict(constraints="BIOES"), None),  # fits: B, I and O are BIOES prefixes
    (dict(constraints=[("O", "I-Y")]), r"forbidden transition \('O', 'I-Y'\): 'I-Y' is not"),
    (dict(constraints=[("O",)]), r"a forbidden transition is a pair"),
    (dict(constraints={"O": "I-X"}), "constraints must be None, a scheme"),
    (dict(constraints=[(a, b) for a in LABELS for b in LABELS]), "forbid every transition"),
    (dict(forced=[{0: "B-Y"}, None]), r"forced\[0\]: label 'B-Y' at position 0 is not one"),
    (dict(forced=[None, {1: "O"}]), r"forced\[1\]: position 1 is out of range of a sequence "
                                    "of 1 items"),
    (dict(forced=[None, {-1: "O"}]), r"forced\[1\]: position -1 is out of range"),
    (dict(forced=[None, {"0": "O"}]), r"forced\[1\]: a position is an integer, got '0'"),
    (dict(forced=[None, {True: "O"}]), r"forced\[1\]: a position is an integer"),
    (dict(forced=[None]), "forced has 1 entries for 2 sequences"),
    (dict(forced={0: "O"}), "forced must be a list"),
    (dict(forced=[{0: "I-X"}, None], constraints="BIO"), "sequence 0: no labeling satisfies"),
]


@pytest.mark.parametrize("given, message", BAD)
def test_bad_input_is_one_error_naming_it(crf, given, message):
    calls = [lambda: crf.predict(X, **given), lambda: crf.predict_n_best(X, 2, **given),
             lambda: crf.predict_marginals(X, **given),
             lambda: crf.predict_marginals(X, pairwise=True, **given)]
    for call in calls:
        if message is None:
            call()
            continue
        with pytest.raises(ValueError, match=message):
            call()


def test_bad_labels_for_a_scheme(tmp_path):
    model = Model(["NN", "VB", "O", "E-X"], ["a"], np.zeros(WeightLayout(1, 4).dim))
    tagger = Tagger.from_model(model)
    with pytest.raises(ValueError, match=r"constraints 'BIO' need labels O or B-, I-TYPE; "
                                         r"the model's labels 'NN', 'VB', 'E-X' are not"):
        tagger.tag([["a"]], constraints="BIO")
    with pytest.raises(ValueError, match=r"'BIOES' need labels O or B-, I-, E-, S-TYPE; "
                                         r"the model's labels 'NN', 'VB' are not"):
        tagger.tag([["a"]], constraints="BIOES")


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "2", None])
def test_n_best_must_be_a_positive_integer(crf, k):
    with pytest.raises(ValueError, match="n_best must be an integer >= 1"):
        crf.predict_n_best(X, k)
    if k is not None:
        with pytest.raises(ValueError, match="n_best must be an integer >= 1"):
            crf.tagger_.tag(X[0], n_best=k)


def test_a_failed_set_keeps_the_sequence_set_before(crf):
    tagger = crf.tagger_
    tagger.set(X[0], constraints="BIO")
    before = tagger.tag(n_best=3)
    for given in [dict(constraints="BIOX"), dict(forced={5: "O"}),
                  dict(forced={0: "I-X"}, constraints="BIO")]:
        with pytest.raises(ValueError):
            tagger.set(X[1], **given)
        assert tagger.tag(n_best=3) == before
    with pytest.raises(ValueError, match="constraints and forced labels come with a sequence"):
        tagger.tag(constraints="BIO")


# ------------------------------------------------------------------ crfsdca tag

TRAIN = [([["w=the"], ["w=cat"], ["w=sat"]], ["B-NP", "I-NP", "B-VP"]),
         ([["w=a"], ["w=dog"], ["w=ran"], ["w=home"]], ["B-NP", "I-NP", "B-VP", "B-NP"]),
         ([["w=dogs"], ["w=bark"]], ["B-NP", "B-VP"]),
         ([["w=cat"], ["w=home"]], ["I-NP", "I-VP"])]


@pytest.fixture(scope="module")
def tagged(tmp_path_factory):
    """A model trained on TRAIN (I-VP included, so that BIO has work to do), its test
    file and the estimator on it."""
    root = tmp_path_factory.mktemp("tag")
    train, test = root / "train.txt", root / "test.txt"
    with open(train, "w") as f:
        write_sequences(f, [x for x, _ in TRAIN] * 2, [y for _, y in TRAIN] * 2)
    X = [[["w=cat"], ["w=home"], ["w=sat"]], [["w=home"]], [["w=the"], ["w=dog"]]]
    y = [["B-NP", "_", "B-VP"], ["_"], ["I-NP", "B-NP"]]
    with open(test, "w") as f:
        write_sequences(f, X, y)
    model = root / "m.model"
    assert main(["learn", "-q", "-m", str(model), "-p", "c2=0.01", str(train)]) == 0
    return str(model), str(test), X, y, CRF(model_filename=str(model))


def test_tag_n_best_prints_the_estimator_s_n_best(tagged, capsys):
    model, test, X, _, crf = tagged
    for extra, given in [([], {}), (["-c", "BIO"], dict(constraints="BIO")),
                         (["--forbid", "B-NP", "B-VP", "--forbid", "I-VP", "I-NP"],
                          dict(constraints=[("B-NP", "B-VP"), ("I-VP", "I-NP")]))]:
        assert main(["tag", "-m", model, "-n", "4", *extra, test]) == 0
        got = blocks(capsys.readouterr().out)
        best = crf.predict_n_best(X, 4, **given)
        assert len(got) == len(best)
        for printed, expected in zip(got, best, strict=True):
            assert [r for r, _, _ in printed] == list(range(len(expected)))
            assert [labels for _, _, labels in printed] == [labels for labels, _ in expected]
            np.testing.assert_allclose([p for _, p, _ in printed], [p for _, p in expected],
                                       atol=1e-6)
        assert main(["tag", "-m", model, *extra, test]) == 0
        plain = [s.split("\n") for s in capsys.readouterr().out.strip("\n").split("\n\n")]
        assert plain == crf.predict(X, **given)


def test_tag_marginals_and_probability_under_constraints(tagged, capsys):
    model, test, X, _, crf = tagged
    assert main(["tag", "-m", model, "-c", "BIO", "-p", "-l", test]) == 0
    out = capsys.readouterr().out.strip("\n").split("\n\n")
    marginals = crf.predict_marginals(X, constraints="BIO")
    pred = crf.predict(X, constraints="BIO")
    tagger = crf.tagger_
    for block, x, m, y in zip(out, X, marginals, pred, strict=True):
        lines = block.split("\n")
        tagger.set(x, constraints="BIO")
        assert float(lines[1].split("\t")[1]) == pytest.approx(tagger.probability(y), abs=1e-6)
        for line, row in zip(lines[2:], m, strict=True):
            fields = dict(f.split(":") for f in line.split("\t")[1:])
            assert {k: float(v) for k, v in fields.items()} == pytest.approx(row, abs=1e-6)


def test_tag_force(tagged, capsys):
    model, test, X, y, crf = tagged
    forced = [{t: lab for t, lab in enumerate(labels) if lab != "_"} for labels in y]
    assert main(["tag", "-m", model, "--force", "-n", "2", test]) == 0
    got = blocks(capsys.readouterr().out)
    best = crf.predict_n_best(X, 2, forced=forced)
    assert [[labels for _, _, labels in b] for b in got] == [[lab for lab, _ in b]
                                                            for b in best]
    for printed, fixed in zip(got, forced, strict=True):
        assert all(labels[t] == lab for _, _, labels in printed for t, lab in fixed.items())


@pytest.mark.parametrize("argv, message", [
    (["-n", "0"], "argument -n/--n-best: expected a value in [1, inf)"),
    (["-c", "BIOX"], "unknown constraint scheme 'BIOX'"),
    (["-c", "BIOES", "--forbid", "B-NP", "I-XX"], "'I-XX' is not one of the model's labels"),
    (["--force", "--free-label", "B-NP"], "the free mark 'B-NP' is one of the model's labels"),
    (["--force", "--free-label", "?"], "item 1 of sequence 0 has the label '_', which the "
                                       "model lacks"),
    (["-c", "BIO", "--force"], "sequence 2: no labeling satisfies"),
])
def test_tag_bad_options_print_one_error_and_no_label(tagged, capsys, argv, message):
    model, test, *_ = tagged
    assert main(["tag", "-m", model, *argv, test]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert message in err and len(err.strip().splitlines()) <= 5  # argparse adds its usage


@pytest.mark.parametrize("flag", ["-H", "--help"])
def test_tag_help_lists_the_options(flag, capsys):
    assert main(["tag", flag]) == 0
    out = capsys.readouterr().out
    for option in ("--n-best K", "--constraints SCHEME", "--forbid FROM TO", "--force",
                   "--free-label MARK"):
        assert option in out
    assert all(name in out for name in SCHEMES)
