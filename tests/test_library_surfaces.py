"""Bad input on every surface of the library, as users try it: the estimator, ``crfsdca
learn / tag / dump``, and the model and dual files. Each case checks the message a user
can act on (one line on the command line, an exception of a standard kind from Python) and
that nothing is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from crfsdca import CRF
from crfsdca.cli import main
from crfsdca.errors import ConfigError, DataFormatError, DivergedError, OutputError
from crfsdca.model_file import dual_path, load_model

X = [[{"w": "the"}, {"w": "cat", "cap": False}], [{"w": "a"}, {"w": "dog", "len": 0.6}]] * 8
Y = [["D", "N"], ["D", "N"]] * 8
DATA = "D\tw=the\nN\tw=cat\n\nD\tw=a\nN\tw=dog\n\n" * 8


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(DATA, encoding="utf-8")
    return path


# ------------------------------------------------------------------------- the estimator

@pytest.mark.parametrize("params, kind, message", [
    ({"c2": -1}, ValueError, "c2 must be a finite number >= 0"),
    ({"c2": float("nan")}, ValueError, "c2 must be a finite number >= 0"),
    ({"c1": -1}, ValueError, "c1 must be non-negative"),
    ({"c2": 0}, ConfigError, "sdca needs an L2 term"),
    ({"algorithm": "oeg", "c1": 0.5}, ConfigError, "oeg does not handle an L1 term"),
    ({"algorithm": "nope"}, ConfigError, "unknown algorithm 'nope'"),
    ({"threads": 0}, ConfigError, "threads must be a positive integer"),
    ({"epsilon": -1}, ConfigError, "epsilon must be >= 0"),
    ({"max_iterations": 0}, ConfigError, "max_iterations must be positive"),
    ({"num_memories": 3}, ConfigError, "num_memories is a parameter of lbfgs"),
    ({"algorithm": "lbfgs", "linesearch": "Fast"}, ConfigError, "linesearch: expected one of"),
    ({"algorithm": "lbfgs", "num_memories": 0}, ConfigError, "num_memories: expected a value"),
    ({"trainer_cls": object}, ConfigError, "trainer_cls"),
    ({"model_format": "xml", "model_filename": "m"}, ConfigError, "unknown model format"),
    ({"save_dual": True}, ConfigError, "save_dual writes the dual state beside the model"),
])
def test_estimator_parameters(params, kind, message):
    with pytest.raises(kind, match=message):
        CRF(**params).fit(X, Y)


@pytest.mark.parametrize("X_bad, message", [
    ([[{"w": float("nan")}]], r"sequence 0, item 0: attribute 'w' has weight nan"),
    ([[{"w": 1.0}, {"v": float("inf")}]], r"sequence 0, item 1: attribute 'v' has weight inf"),
    ([[{"a\x00b": 1.0}]], "sequence 0, item 0: attribute 'a\\\\x00b' contains a NUL"),
    ([[{"w": "x\udcff"}]], "is not valid Unicode"),
    ([[{"w": None}]], "a value must be a str"),
    ([[["ok", 3]]], "an attribute name must be a str"),
    ([[]], "sequence 0 is empty"),
    (["not a list of items"], "expected a list of items"),
])
def test_estimator_data(X_bad, message):
    y = [["L"] * max(len(x), 1) if isinstance(x, list) else ["L"] for x in X_bad]
    with pytest.raises(ValueError, match=message):
        CRF().fit(X_bad, y)


def test_labels_with_a_nul_are_refused():
    with pytest.raises(ValueError, match="sequence 1, item 0: label 'N\\\\x00' contains a NUL"):
        CRF().fit(X[:2], [["D", "N"], ["N\x00", "N"]])


@pytest.mark.parametrize("where", ["under_file", "directory", "unwritable"])
def test_output_paths_are_checked_before_training(tmp_path, where, unwritable_dir,
                                                  monkeypatch):
    target = {"under_file": tmp_path / "file.txt" / "m.model", "directory": tmp_path,
              "unwritable": unwritable_dir / "m.model"}[where]
    (tmp_path / "file.txt").write_text("x")
    calls = []
    import crfsdca.learner

    monkeypatch.setattr(crfsdca.learner, "learn", lambda *a, **k: calls.append(1))
    with pytest.raises(OutputError):
        CRF(model_filename=str(target)).fit(X, Y)
    assert not calls  # refused before any training


def test_divergence_raises_and_writes_nothing(tmp_path):
    model = tmp_path / "m.model"
    X_big = [[{"w": 1e300}, {"v": -1e300}]] * 4
    with pytest.raises(DivergedError, match="diverged .*scale them to about 1"):
        CRF(model_filename=str(model)).fit(X_big, [["A", "B"]] * 4)
    assert not model.exists() and not list(tmp_path.iterdir())


def test_threads_above_the_cores_are_capped_with_a_warning():
    with pytest.warns(RuntimeWarning, match="threads=1000 is more than the"):
        crf = CRF(threads=1000, max_iterations=3, epsilon=0).fit(X, Y)
    assert crf.predict(X[:1]) == Y[:1]


# ------------------------------------------------------------------------ model and dual

def _fitted(tmp_path, **kwargs):
    path = tmp_path / "m.model"
    crf = CRF(model_filename=str(path), **kwargs).fit(X, Y)
    return crf, path


@pytest.mark.parametrize("damage, message", [
    (lambda f: f.attrs.__setitem__("options", "{not json"), "options: not JSON"),
    (lambda f: (f["vocab"].__delitem__("labels"),
                f["vocab"].create_dataset("labels", data=np.arange(2))), "strings expected"),
    (lambda f: f.attrs.__setitem__("dim", "many"), "dim: an integer expected"),
    (lambda f: f["weights/value"].__setitem__(0, np.nan), "not a finite number"),
    (lambda f: f["weights/value"].__setitem__(0, 7.0), "checksum"),
    (lambda f: (f["vocab"].__delitem__("labels"),
                f["vocab"].create_dataset("labels", data=np.array(["D", "D"], dtype=object),
                                          dtype=h5py.string_dtype())), "appears twice"),
    (lambda f: f["weights"].__delitem__("index"), "missing"),
])
def test_a_damaged_model_file_is_refused_with_its_path(tmp_path, damage, message):
    _, path = _fitted(tmp_path)
    with h5py.File(path, "r+") as f:
        damage(f)
    with pytest.raises(DataFormatError, match=message) as e:
        load_model(path)
    assert str(path) in str(e.value)
    assert main(["tag", "-m", str(path), os.devnull]) == 2
    assert main(["dump", str(path)]) == 2


def test_a_flipped_byte_is_refused(tmp_path, capsys):
    _, path = _fitted(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    try:
        load_model(path)
    except DataFormatError as e:
        assert str(path) in str(e)
    # (a byte of padding may be flipped harmlessly; then the file still loads)
    assert main(["dump", str(path)]) in (0, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_a_stale_dual_file_is_refused(tmp_path):
    crf, path = _fitted(tmp_path, save_dual=True, warm_start=True)
    stale = dual_path(path).read_bytes()
    CRF(model_filename=str(path), c2=0.5).fit(X, Y)  # a new model, no dual written
    dual_path(path).write_bytes(stale)
    with pytest.raises(DataFormatError, match="belongs to another model"):
        CRF().continue_from(path)
    with pytest.raises(DataFormatError, match="belongs to another model"):
        CRF(model_filename=str(path), warm_start=True).partial_fit(X, Y)


def test_a_dual_file_with_nan_marginals_is_refused(tmp_path):
    _, path = _fitted(tmp_path, save_dual=True)
    with h5py.File(dual_path(path), "r+") as f:
        f["mu_unary"][0] = np.nan
    with pytest.raises(DataFormatError, match="dual marginals .not finite."):
        CRF().continue_from(path)


# ------------------------------------------------------------------------ learn/tag/dump

@pytest.mark.parametrize("args, message", [
    (["-p", "c2=-1"], "c2 must be a finite number >= 0"),
    (["-p", "c2=nan"], "c2 must be a finite number >= 0"),
    (["-p", "c1=-1"], "c1 must be non-negative"),
    (["-p", "c2=0"], "sdca needs an L2 term"),
    (["-a", "oeg", "-p", "c1=1"], "oeg does not handle an L1 term"),
    (["-p", "nope=1"], "parameter not found: nope"),
    (["-p", "threads=x"], "threads: expected int"),
])
def test_learn_parameters_give_one_line(data_file, tmp_path, capsys, args, message):
    model = tmp_path / "m.model"
    assert main(["learn", "-q", "-m", str(model), *args, str(data_file)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not model.exists()


@pytest.mark.parametrize("line, message", [
    ("D\tw:nan\n", "weight 'nan' is not a finite number"),
    ("D\tw:inf\n", "weight 'inf' is not a finite number"),
    ("D\tw:1e400\n", "weight '1e400' is not a finite number"),
    ("D\tw\x00x\n", "contains a NUL character"),
    ("D\x00\tw\n", "label 'D\\x00' contains a NUL character"),
])
def test_learn_data_errors_name_file_and_line(tmp_path, capsys, line, message):
    bad = tmp_path / "bad.txt"
    bad.write_text("D\tw=a\n" + line + "\n", encoding="utf-8")
    assert main(["learn", "-q", "-m", str(tmp_path / "m.model"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:" in err and message in err and "Traceback" not in err


def test_learn_output_path_is_checked_before_training(data_file, tmp_path, capsys):
    assert main(["learn", "-q", "-m", str(tmp_path), str(data_file)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_dump_into_a_closed_pipe_ends_quietly(data_file, tmp_path):
    model = tmp_path / "m.model"
    assert main(["learn", "-q", "-m", str(model), str(data_file)]) == 0
    proc = subprocess.run(f"{sys.executable} -m crfsdca dump {model} | head -1", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("FILEHEADER") and proc.stderr == "", proc.stderr


def test_learn_terminated_keeps_a_complete_model_and_exits_143(tmp_path):
    """SIGTERM during learn: the model reached, complete, status terminated, exit 143 (as
    the train command)."""
    rng = np.random.default_rng(0)
    lines = []
    for _ in range(3000):
        for _ in range(8):
            lines.append(f"{'ABCD'[rng.integers(4)]}\tw={rng.integers(5000)}\t"
                         f"v={rng.integers(5000)}")
        lines.append("")
    data = tmp_path / "big.txt"
    data.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.model"
    proc = subprocess.Popen([sys.executable, "-m", "crfsdca", "learn", "-m", str(model),
                             "-p", "epsilon=0", "-p", "max_iterations=100000", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    seen = ""
    while "epoch" not in seen:
        line = proc.stdout.readline()
        assert line and time.monotonic() < deadline, proc.stderr.read()
        seen += line
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, out + err
    m = load_model(model)
    assert m.training["status"] == "terminated"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries
    json.dumps(m.options)
