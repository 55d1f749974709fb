"""The CRFsuite-like commands: learn, tag, dump on CRFsuite-format files."""

from __future__ import annotations

import numpy as np
import pytest

from crfsdca.cli import main
from crfsdca.data.crfsuite_format import write_sequences
from crfsdca.model_file import load_model

TRAIN = [
    ([["w=the", "pos=DT"], ["w=cat", "pos=NN", ("len", 0.3)], ["w=sat", "pos=VBD"]],
     ["B-NP", "I-NP", "B-VP"]),
    ([["w=a", "pos=DT"], ["w=dog", "pos=NN", ("len", 0.3)], ["w=ran", "pos=VBD"],
      ["w=home", "pos=NN"]], ["B-NP", "I-NP", "B-VP", "B-NP"]),
    ([["w=dogs", "pos=NNS"], ["w=bark", "pos=VBP"]], ["B-NP", "B-VP"]),
]


def _write(path, data):
    with open(path, "w", encoding="utf-8") as f:
        write_sequences(f, [x for x, _ in data], [y for _, y in data])
    return str(path)


@pytest.fixture
def files(tmp_path):
    return _write(tmp_path / "train.txt", TRAIN * 3), _write(tmp_path / "test.txt", TRAIN)


def test_learn_tag_dump(files, tmp_path, capsys):
    train, test = files
    model = tmp_path / "m.model"
    assert main(["learn", "-m", str(model), "-p", "c2=0.1", "-p", "epsilon=1e-8", train]) == 0
    out = capsys.readouterr().out
    assert "converged" in out and "loss" in out
    m = load_model(model)
    assert m.labels == ["B-NP", "I-NP", "B-VP"] and m.options["c2"] == 0.1
    assert main(["tag", "-m", str(model), "-t", "-q", test]) == 0
    out = capsys.readouterr().out
    assert "Item accuracy: 9 / 9 (1.0000)" in out and "Instance accuracy: 3 / 3" in out
    assert "Chunk precision, recall, F1 (conlleval): (100.00, 100.00, 100.00)" in out
    assert "    B-NP: (4, 4, 4) (1.0000, 1.0000, 1.0000)" in out
    assert main(["tag", "-m", str(model), "-r", "-i", "-p", test]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("@score\t") and lines[1].startswith("@probability\t")
    ref, pred = lines[2].split("\t")
    assert ref == "B-NP" and pred.startswith("B-NP:") and 0.5 < float(pred[5:]) <= 1
    assert main(["dump", str(model)]) == 0
    out = capsys.readouterr().out
    assert "TRANSITIONS = {" in out and "  (0) w=cat --> I-NP:" in out


def test_learn_holdout_and_cross_validation(files, tmp_path, capsys):
    train, test = files
    model = tmp_path / "m.model"
    assert main(["learn", "-m", str(model), "-e", "2", "-p", "max_iterations=3",
                 "-p", "epsilon=1e-9", train, test]) == 0
    out = capsys.readouterr().out
    assert "dev accuracy" in out and "dev F1" in out
    assert main(["learn", "-g", "3", "-x", "-p", "max_iterations=2", "-q", train]) == 0
    out = capsys.readouterr().out
    assert "===== Cross validation (3/3) =====" in out and not model.with_suffix(".x").exists()


def test_learn_parameters_and_continue(files, tmp_path, capsys):
    train, _ = files
    model = tmp_path / "m.model"
    assert main(["learn", "-m", str(model), "--save-dual", "-p", "max_iterations=2", "-p",
                 "epsilon=0", "-p", "sampler=uniform", "-p", "feature.possible_states=1",
                 train]) == 0
    m = load_model(model)
    assert m.options["solver"]["sampler"] == "uniform" and m.options["all_possible_states"]
    assert (tmp_path / "m.model.dual").exists()
    more = tmp_path / "more.model"
    assert main(["learn", "-m", str(more), "--continue", str(model), "-p", "epsilon=1e-9",
                 train]) == 0
    out = capsys.readouterr().out
    assert f"{len(TRAIN) * 3} of {len(TRAIN) * 3} sequences start from their kept" in out
    m2 = load_model(more)
    assert m2.options["all_possible_states"] and m2.training["status"] == "converged"
    assert not np.array_equal(m.weights, m2.weights)
    assert main(["learn", "-m", str(model), "-p", "nope=1", train]) == 2
    assert "parameter not found: nope" in capsys.readouterr().err
    assert main(["learn", "-m", str(model), "-a", "oeg", "-p", "c1=1", train]) == 2
    assert "does not handle an L1 term (c1 > 0)" in capsys.readouterr().err


def test_malformed_input_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("B-NP\tw=the\nI-NP\tw=cat:x\n\n", encoding="utf-8")
    model = tmp_path / "m.model"
    assert main(["learn", "-m", str(model), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: attribute 'w=cat:x': weight 'x' is not a number" in err
    assert list(tmp_path.iterdir()) == [bad]  # nothing half-written
    assert main(["tag", "-m", str(model), str(bad)]) == 2
    assert "no such file" in capsys.readouterr().err


def test_tag_reads_standard_input(files, tmp_path, capsys, monkeypatch):
    import io

    train, test = files
    model = tmp_path / "m.model"
    assert main(["learn", "-q", "-m", str(model), train]) == 0
    capsys.readouterr()
    with open(test, encoding="utf-8") as f:
        monkeypatch.setattr("sys.stdin", io.StringIO(f.read()))
    assert main(["tag", "-m", str(model), "-"]) == 0
    out = capsys.readouterr().out
    assert out.split("\n\n")[0].splitlines() == ["B-NP", "I-NP", "B-VP"]


@pytest.mark.parametrize("command", ["learn", "tag"])
def test_standard_input_that_is_not_utf8_is_reported(files, tmp_path, capsys, monkeypatch,
                                                       command):
    """Bytes that are not UTF-8 on standard input: the file's error, exit status 2 (a
    text stream would have read them as surrogate escapes, and the encoder failed on a
    label with a traceback)."""
    import io

    train, _ = files
    model = tmp_path / "m.model"
    if command == "tag":
        assert main(["learn", "-q", "-m", str(model), train]) == 0
    capsys.readouterr()
    stdin = io.TextIOWrapper(io.BytesIO(b"B-NP\tw=a\n\xff\xfe\tw=b\n\n"),
                             errors="surrogateescape")
    monkeypatch.setattr("sys.stdin", stdin)
    assert main([command, "-m", str(model), "-"]) == 2
    assert "<stdin>: not UTF-8 text (invalid start byte at byte 9)" in capsys.readouterr().err


def test_model_file_versions(tmp_path):
    import h5py

    from crfsdca.errors import DataFormatError
    from crfsdca.model_file import Model, save_model
    from crfsdca.runtime.sealed import seal

    path = save_model(tmp_path / "m.model", Model(["A", "B"], ["x"], np.arange(12.0) - 3,
                                                  {"c2": 1.0}, {}))
    m = load_model(path)
    np.testing.assert_array_equal(m.weights, np.arange(12.0) - 3)
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = 3
        f.attrs["package_version"] = "9.0"
    seal(path, "crfsdca-model")  # its header, as the newer version's writer makes it
    with pytest.raises(DataFormatError, match="format version 3, written by crfsdca 9.0; "
                                              "this crfsdca .* reads version 2"):
        load_model(path)
    (tmp_path / "crfsuite.model").write_bytes(b"lCRF....")  # CRFsuite's magic, truncated
    with pytest.raises(DataFormatError, match="crfsuite.model"):
        load_model(tmp_path / "crfsuite.model")
    (tmp_path / "text.model").write_bytes(b"not a model")
    with pytest.raises(DataFormatError, match="neither HDF5 nor a CRFsuite model"):
        load_model(tmp_path / "text.model")


def test_learn_through_a_corpus_is_learn_on_the_files(files, tmp_path, capsys):
    """``learn --corpus DIR FILE`` encodes the file into a corpus there and trains on it;
    ``learn --corpus DIR`` trains on that corpus later: both the model of ``learn FILE``,
    to the bit; ``--save-dual`` and ``--continue`` go on from a corpus fit with every dual
    block reused. What a corpus cannot do yet is refused in one line."""
    train, _ = files
    models = [tmp_path / f"m{k}.model" for k in range(4)]
    corpus = tmp_path / "corpus"
    assert main(["learn", "-q", "-m", str(models[0]), "-p", "c2=0.1", train]) == 0
    assert main(["learn", "-q", "--corpus", str(corpus), "-m", str(models[1]),
                 "-p", "c2=0.1", train]) == 0
    assert "Read 9 instances, 27 items from 1 file(s)" in capsys.readouterr().out
    assert main(["learn", "-q", "--corpus", str(corpus), "-m", str(models[2]),
                 "-p", "c2=0.1"]) == 0
    assert "Read 9 instances, 27 items from the corpus in" in capsys.readouterr().out
    assert main(["learn", "-q", "--corpus", str(corpus), "-m", str(models[3]), "--save-dual",
                 "-p", "c2=0.1", "-p", "max_iterations=1"]) == 0
    assert main(["learn", "--corpus", str(corpus), "-m", str(models[3]),
                 "--continue", str(models[3])]) == 0
    assert "continuing: 9 of 9 sequences start from their kept dual blocks" \
        in capsys.readouterr().out
    first = load_model(models[0])
    for path in models[1:3]:
        m = load_model(path)
        assert m.attributes == first.attributes and m.labels == first.labels
        np.testing.assert_array_equal(m.weights, first.weights)
    weighted = tmp_path / "weighted.txt"
    weighted.write_text("@weight:2\nB-NP\tw=the\nI-NP\tw=cat\n\n", encoding="utf-8")
    for argv, message in [
            (["--corpus", str(corpus), "-x", train], "does not combine with -x"),
            (["--corpus", str(tmp_path / "none")], "no such folder"),
            (["--corpus", str(tmp_path / "w"), str(weighted)], "does not keep yet")]:
        assert main(["learn", "-q", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "w" / "corpus.h5").exists()
