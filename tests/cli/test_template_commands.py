"""learn -T and tag -T: CRF++'s and Wapiti's templates over column files, end to end."""

from __future__ import annotations

import numpy as np
import pytest

from crfsdca import CRF, templates
from crfsdca.cli import main
from crfsdca.model_file import load_model
from tests.helpers.tag_output import blocks

TEMPLATE = """\
# Unigram
U00:%x[-1,0]
U01:%x[0,0]
U02:%x[1,0]
U03:%x[0,1]
U04:%x[-1,1]/%x[0,1]

# Bigram
B
"""

TRAIN = """\
the DT B-NP
cat NN I-NP
sat VBD B-VP

a DT B-NP
dog NN I-NP
ran VBD B-VP
home NN B-NP

dogs NNS B-NP
bark VBP B-VP
"""


@pytest.fixture
def files(tmp_path):
    template = tmp_path / "template"
    template.write_text(TEMPLATE)
    train = tmp_path / "train.data"
    train.write_text(TRAIN * 3)
    test = tmp_path / "test.data"
    test.write_text(TRAIN)
    return str(template), str(train), str(test)


def test_learn_and_tag_with_a_template(files, tmp_path, capsys):
    template, train, test = files
    model = str(tmp_path / "m.model")
    assert main(["learn", "-T", template, "-c", "10", "-m", model, "-p", "epsilon=1e-6",
                 train]) == 0
    assert "converged" in capsys.readouterr().out
    m = load_model(model)
    assert m.options["c2"] == 0.05  # 1 / (2 C)
    assert m.options["all_possible_states"] and m.options["all_possible_transitions"]
    assert "U01:cat" in m.attributes and "U00:_B-1" in m.attributes
    assert main(["tag", "-T", template, "-m", model, test]) == 0
    out = capsys.readouterr().out
    assert out.split("\n\n")[0].split() == ["B-NP", "I-NP", "B-VP"]
    assert main(["tag", "-T", template, "-m", model, "-t", "-q", test]) == 0
    assert "Item accuracy: 9 / 9 (1.0000)" in capsys.readouterr().out


def test_b_lines_that_read_the_input_from_learn_to_tag_and_dump(files, tmp_path, capsys):
    _, train, test = files
    template = tmp_path / "template"
    template.write_text("U01:%x[0,0]\nB\nB01:%x[0,1]\n")
    model = str(tmp_path / "m.model")
    assert main(["learn", "-T", str(template), "-q", "-m", model, train]) == 0
    m = load_model(model)
    assert sorted(m.transition_attributes) == ["B~B01:DT", "B~B01:NN", "B~B01:NNS",
                                               "B~B01:VBD", "B~B01:VBP"]
    assert not any(a.startswith("B~") for a in m.attributes)
    capsys.readouterr()
    assert main(["tag", "-T", str(template), "-m", model, "-t", "-q", test]) == 0
    assert "Item accuracy: 9 / 9 (1.0000)" in capsys.readouterr().out
    # every option of tag, through the estimator's kernels: the same numbers
    crf = CRF(model_filename=model)
    X = templates.load_template(str(template)).items(templates.read_columns(test).X)
    assert main(["tag", "-T", str(template), "-m", model, "-n", "3", "-c", "BIO", test]) == 0
    got = blocks(capsys.readouterr().out)
    best = crf.predict_n_best(X, 3, constraints="BIO")
    assert [[labels for _, _, labels in g] for g in got] == [[y for y, _ in b] for b in best]
    np.testing.assert_allclose([p for g in got for _, p, _ in g],
                               [p for b in best for _, p in b], atol=1e-6)
    assert main(["tag", "-T", str(template), "-m", model, "-p", "-l", "--forbid", "B-NP",
                 "B-VP", test]) == 0
    out = capsys.readouterr().out.strip("\n").split("\n\n")
    given = dict(constraints=[("B-NP", "B-VP")])
    tagger = crf.tagger_
    for block, x, m, y in zip(out, X, crf.predict_marginals(X, **given),
                              crf.predict(X, **given), strict=True):
        lines = block.split("\n")
        tagger.set(x, **given)
        assert float(lines[1].split("\t")[1]) == pytest.approx(tagger.probability(y),
                                                               abs=1e-6)
        for line, row, label in zip(lines[2:], m, y, strict=True):
            fields = line.split("\t")
            assert fields[0] == label
            assert [float(f.split(":")[1]) for f in fields[1:]] == pytest.approx(
                [row[lab] for lab in crf.classes_], abs=1e-6)
    assert main(["dump", model]) == 0
    out = capsys.readouterr().out
    assert "format: crfsdca-model 2" in out and "  (2) B~B01:NN: B-NP --> I-NP: " in out
    assert main(["learn", "-T", str(template), "-q", "-m", str(tmp_path / "m.crfsuite"),
                 "--format", "crfsuite", train]) == 2
    assert "CRFsuite's model format has transitions that do not read the input" in \
        capsys.readouterr().err


def test_learn_with_a_wapiti_pattern_file_and_the_cut_off(files, tmp_path, capsys):
    _, train, test = files
    pattern = tmp_path / "pattern"
    pattern.write_text("u:w=%x[0,0]  # the word\nu:pos=%x[0,1]\nb\n")
    model = str(tmp_path / "m.model")
    assert main(["learn", "-T", str(pattern), "-f", "4", "-q", "-m", model, train]) == 0
    capsys.readouterr()
    assert sorted(load_model(model).attributes) == ["u:pos=DT", "u:pos=NN", "u:pos=VBD"]
    assert main(["tag", "-T", str(pattern), "-m", model, "-t", "-q", test]) == 0
    assert "Item accuracy:" in capsys.readouterr().out


@pytest.mark.parametrize("args, words", [
    (["-c", "1", "-p", "c2=1"], "-c C and -p c2 set the same thing"),
    (["-f", "2"], "-f needs -T"),
])
def test_option_conflicts(files, args, words, capsys):
    _, train, _ = files
    assert main(["learn", *args, train]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("template, data, where, words", [
    ("U00:%x[0,0]\nB01:%x[0,2]\n", TRAIN, "template:2:", "reads column 2, but "),
    ("U00:%x[0,2]\n", TRAIN, "template:1:", "reads column 2, but "),
    ("U00:%x[0,0]\n", "a b c\nd e\n", "train.data:2:", "2 columns, but line 1 has 3"),
    ("", TRAIN, "template:", "empty template"),
])
def test_errors_are_one_line_naming_the_file_and_line(tmp_path, capsys, template, data,
                                                      where, words):
    (tmp_path / "template").write_text(template)
    (tmp_path / "train.data").write_text(data)
    assert main(["learn", "-T", str(tmp_path / "template"), str(tmp_path / "train.data")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path}/{where}" in err and words in err


def test_tag_reads_a_column_file_from_standard_input(files, tmp_path, capsys, monkeypatch):
    import io

    template, train, test = files
    model = str(tmp_path / "m.model")
    assert main(["learn", "-T", template, "-q", "-m", model, train]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("the DT B-NP\ncat NN I-NP\n"))
    assert main(["tag", "-T", template, "-m", model, "-"]) == 0
    assert capsys.readouterr().out.split() == ["B-NP", "I-NP"]
    monkeypatch.setattr("sys.stdin", io.StringIO("the DT x B-NP\ncat NN I-NP\n"))
    assert main(["tag", "-T", template, "-m", model, "-"]) == 2
    assert "<stdin>:2: 3 columns, but line 1 has 4" in capsys.readouterr().err


def test_crfsuite_feature_set_on_request(files, tmp_path, capsys):
    template, train, _ = files
    model = str(tmp_path / "m.model")
    assert main(["learn", "-T", template, "-q", "-p", "feature.possible_states=0",
                 "-p", "c2=0.5", "-m", model, train]) == 0
    options = load_model(model).options
    assert not options["all_possible_states"] and options["all_possible_transitions"]
    assert options["c2"] == 0.5
