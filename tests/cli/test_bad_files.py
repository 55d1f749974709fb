"""Bad input files, each a one-line error naming the file (and line or entry), exit 2, and
nothing written: configs, featurized datasets, optimum and weights files, raw text."""

from __future__ import annotations

import gzip
import zipfile

import h5py
import numpy as np
import pytest
import yaml
from helpers.paths import RAW, ROOT

from crfsdca.cli import main
from crfsdca.data.featurize import featurize
from crfsdca.data.hdf5 import FORMAT, Dataset, load_dataset, write_dataset
from crfsdca.data.radii import squared_radii
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import DataFormatError
from crfsdca.runtime.sealed import seal

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def _one_line_error(capsys, command: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith(f"crfsdca {command}: error: "), err
    assert "Traceback" not in "\n".join(err)
    return err[-1]


# ----------------------------------------------------------------------------- config.yaml

def _config_with(tmp_path, change=None, text=None):
    path = tmp_path / "config.yaml"
    if text is None:
        config = yaml.safe_load((ROOT / "config.yaml").read_text())
        change(config)
        text = yaml.safe_dump(config)
    path.write_text(text)
    return path


def _set_fold(c):
    c["datasets"]["ocr"]["options"]["test_fold"] = 42


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "absent.yaml", "absent.yaml: no such config file"),
    (lambda p: _config_with(p, text=""), "config.yaml: expected a mapping of config sections "
                                         "(raw_dir, datasets...), got nothing (an empty file)"),
    (lambda p: _config_with(p, text="datasets: [1,\n  x: 2\n"), "config.yaml:3: not valid YAML"),
    (lambda p: _config_with(p, text="- a list\n"), "expected a mapping of config sections"),
    (lambda p: _config_with(p, text="raw_dir: a\x01b\n"),  # the fuzzer's: was two lines
     "config.yaml: not valid YAML (unacceptable character #x0001: special characters are "
     "not allowed in \"<unicode string>\", position 10)"),
    (lambda p: _config_with(p, _set_fold),
     "config.yaml: datasets.ocr.options.test_fold: 42 is greater than the maximum of 9"),
    (lambda p: _config_with(p, lambda c: c.update(subsett={"train": 3})),
     "config.yaml: top level: Additional properties are not allowed ('subsett' was "
     "unexpected)"),
    (lambda p: _config_with(p, lambda c: c["datasets"].update(ocr="letter.data.gz")),
     "config.yaml: datasets.ocr: 'letter.data.gz' is not of type 'object'"),
])
def test_featurize_config_is_checked_like_the_workflows(tmp_path, capsys, make, message):
    out = tmp_path / "out" / "ocr.h5"
    assert main(["featurize", "ocr", "--config", str(make(tmp_path)), "--raw-dir", str(RAW),
                 "--output", str(out)]) == 2
    assert message in _one_line_error(capsys, "featurize")
    assert not out.parent.exists()


def test_a_non_mapping_dataset_entry_without_the_schema(tmp_path):
    from crfsdca.data.featurize import spec_from_config
    from crfsdca.errors import ConfigError

    with pytest.raises(ConfigError, match=r"datasets.ocr: expected a mapping"):
        spec_from_config({"datasets": {"ocr": ["x"]}}, "ocr")


def test_featurize_spec_with_an_empty_test_fold(tmp_path, capsys):
    """--spec bypasses the schema: the reader's data still refuses an empty test split."""
    spec = {**CONFIG["datasets"]["ocr"], "source": str(RAW / "letter.data.gz"),
            "options": {"test_fold": 42}}
    out = tmp_path / "ocr.h5"
    import json

    assert main(["featurize", "ocr", "--spec", json.dumps(spec), "--output", str(out)]) == 2
    assert "the test split is empty" in _one_line_error(capsys, "featurize")
    assert not out.exists()


# ----------------------------------------------------------------------------- raw text

def _conll_spec(tmp_path, train, test=None):
    (tmp_path / "train.txt").write_text(train)
    options = {"train": "train.txt"}
    if test is not None:
        (tmp_path / "test.txt").write_text(test)
        options["test"] = "test.txt"
    return {"reader": "conll", "source": str(tmp_path), "options": options,
            "templates": [[["w", 0]]]}


def test_an_empty_test_file_is_an_error(tmp_path):
    with pytest.raises(DataFormatError, match="the test split is empty"):
        featurize("x", _conll_spec(tmp_path, "a DT B\ncat NN I\n", ""))


def test_a_conll_dataset_without_test_file_has_no_test_split(tmp_path):
    assert featurize("x", _conll_spec(tmp_path, "a DT B\ncat NN I\n")).test is None


def test_a_single_training_label_is_an_error(tmp_path):
    with pytest.raises(DataFormatError, match=r"the training split has 1 label\(s\) \['O'\]; "
                                              "a CRF needs 2 or more"):
        featurize("x", _conll_spec(tmp_path, "a DT O\ncat NN O\n"))


def test_a_nul_byte_names_file_and_line(tmp_path):
    with pytest.raises(DataFormatError, match=r"train.txt:2: a NUL character"):
        featurize("x", _conll_spec(tmp_path, "a DT B\nc\0at NN I\n"))


def test_a_huge_line_is_quoted_short(tmp_path):
    line = "x" * 4_000_000 + " y\n"
    with pytest.raises(DataFormatError) as e:
        featurize("x", _conll_spec(tmp_path, "a DT B\n" + line))
    message = str(e.value)
    assert len(message) < 300 and "4,000,002 characters" in message and "train.txt:2" in message


def test_a_truncated_zip_is_called_truncated(tmp_path):
    data = (RAW / "conll2000.zip").read_bytes()
    (tmp_path / "conll2000.zip").write_bytes(data[: len(data) // 2])
    spec = {**CONFIG["datasets"]["conll"], "source": str(tmp_path / "conll2000.zip")}
    with pytest.raises(DataFormatError, match="conll2000.zip: a truncated or corrupt zip "
                                              "archive"):
        featurize("conll", spec)


def test_zip_member_and_gzip_checks_still_hold(tmp_path):
    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("train.txt", "a DT B\ncat NN I\n")
    assert featurize("x", {**_conll_spec(tmp_path, "a DT B\n"), "source": str(z)}).train
    (tmp_path / "l.gz").write_bytes(gzip.compress(b"x")[:5])
    with pytest.raises(DataFormatError, match="cannot read"):
        featurize("ocr", {"reader": "ocr", "source": str(tmp_path / "l.gz")})


# ----------------------------------------------------------------------------- .h5 files

@pytest.fixture
def dataset_file(tmp_path):
    K, A = 3, 12
    train = synthetic_sequences(20, 1, 5, K, A, 3, seed=1)
    test = synthetic_sequences(5, 1, 5, K, A, 3, seed=2)
    ds = Dataset("tiny", train, test, ["A", "B", "C"], [f"a{j}" for j in range(A)],
                 squared_radii(train, K, A))
    return write_dataset(tmp_path / "tiny.h5", ds)


def _edit(path, fn, fmt=FORMAT):
    """``fn`` applied to the HDF5 file at ``path``; a file of a sealed format ``fmt`` sealed
    again (as a writer that got the fields wrong would seal them)."""
    with h5py.File(path, "a") as f:
        fn(f)
    if fmt:
        seal(path, fmt)
    return path


def _retype(name, dtype):
    def fn(f):
        data = f[name][()].astype(dtype)
        del f[name]
        f[name] = data
    return fn


def _set(name, value):
    def fn(f):
        f[name][0] = value
    return fn


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.attrs.__setitem__("config", "{not json"), "root attribute config is not JSON"),
    (lambda f: f.attrs.__setitem__("n_labels", "three"),
     "root attribute n_labels = 'three': expected an integer"),
    (lambda f: f.attrs.__setitem__("n_labels", 2.5),
     "root attribute n_labels = 2.5: expected an integer"),
    (lambda f: f.attrs.__setitem__("n_labels", 1), "a model needs 2 or more"),
    (_retype("train/labels", np.float64), "/train/labels has dtype float64; expected integers"),
    (_retype("test/attr_indices", np.float32),
     "/test/attr_indices has dtype float32; expected integers"),
    (_set("train/radii", np.nan), "/train/radii: 1 value(s) not finite and >= 0 (sequence 0"),
    (_set("train/radii", -1.0), "/train/radii: 1 value(s) not finite and >= 0"),
])
def test_a_bad_dataset_file_is_refused_by_every_command(dataset_file, tmp_path, capsys, edit,
                                                         message):
    _edit(dataset_file, edit)
    with pytest.raises(DataFormatError, match="tiny.h5: ") as e:
        load_dataset(dataset_file)
    assert message in str(e.value)
    assert main(["train", "--data", str(dataset_file), "--out", str(tmp_path / "r")]) == 2
    assert message in _one_line_error(capsys, "train")
    assert main(["table1", str(dataset_file), "--csv", str(tmp_path / "t.csv"),
                 "--md", str(tmp_path / "t.md")]) == 2
    assert message in _one_line_error(capsys, "table1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.h5"]


def _legacy(path):
    """The dataset file at ``path`` as crfsdca wrote it before files had a seal: the same
    groups and attributes, HDF5 from the first byte."""
    old = path.with_name("old.h5")
    with h5py.File(path, "r") as src, h5py.File(old, "w") as dst:
        dst.attrs.update(src.attrs)
        for name in src:
            src.copy(src[name], dst, name=name)
    return old.replace(path)


def test_a_truncated_dataset_file(dataset_file, capsys, tmp_path):
    data = dataset_file.read_bytes()
    dataset_file.write_bytes(data[: len(data) // 2])
    assert main(["train", "--data", str(dataset_file), "--out", str(tmp_path / "r")]) == 2
    assert ("tiny.h5: damaged crfsdca-dataset file: its content does not match the sha256 in "
            "its header") in _one_line_error(capsys, "train")
    dataset_file.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # one bit of the last byte
    with pytest.raises(DataFormatError, match="does not match the sha256"):
        load_dataset(dataset_file)


def test_a_dataset_file_without_a_seal_is_read_in_a_child(dataset_file, capsys, tmp_path):
    """A file written before datasets were sealed reads as it did (in a child process,
    where libhdf5's crash on a damaged one would be an error); cut short, it is refused."""
    sealed = load_dataset(dataset_file)
    old = load_dataset(_legacy(dataset_file))
    assert old.path == dataset_file and old.labels == sealed.labels
    for name in ("train", "test"):
        a, b = getattr(old, name), getattr(sealed, name)
        assert all(np.array_equal(getattr(a, f), getattr(b, f))
                   for f in ("offsets", "labels", "attr_indptr", "attr_indices"))
    with h5py.File(dataset_file, "a") as f:
        f["train/radii"][0] = -1.0
    with pytest.raises(DataFormatError, match=r"tiny\.h5: /train/radii: 1 value\(s\) not"):
        load_dataset(dataset_file)
    data = dataset_file.read_bytes()
    dataset_file.write_bytes(data[: len(data) // 2])
    assert main(["train", "--data", str(dataset_file), "--out", str(tmp_path / "r")]) == 2
    assert "tiny.h5: not an HDF5 file, or a truncated one" in _one_line_error(capsys, "train")


@pytest.mark.parametrize("content, message", [
    (b"not hdf5 at all\n", "not an HDF5 file, or a truncated one"),
    (None, "not an HDF5 file, or a truncated one"),  # the first half of a real file
])
def test_bad_optimum_and_init_files(dataset_file, tmp_path, capsys, content, message):
    from crfsdca.reproduction.optimum import Optimum, write_optimum

    bad = tmp_path / "bad.h5"
    if content is None:
        write_optimum(bad, Optimum(w_star=np.zeros(10_000), p_star=1.0, grad_norm=0.0,
                                   grad_max=0.0, gap_bound=0.0, iterations=1, evaluations=1,
                                   seconds=0.0, lam=0.1, dataset="tiny"))
        content = bad.read_bytes()[:50_000]
    bad.write_bytes(content)
    assert main(["optimum", "--data", str(dataset_file), "--out", str(tmp_path / "o.h5"),
                 "--init", str(bad)]) == 2
    assert f"bad.h5: {message}" in _one_line_error(capsys, "optimum")
    (tmp_path / "runs").mkdir()
    assert main(["report", "table", "optimum", "--runs", str(tmp_path / "runs"), "--optimum",
                 str(bad), "--csv", str(tmp_path / "t.csv")]) == 2
    assert f"bad.h5: {message}" in _one_line_error(capsys, "report")
    assert not (tmp_path / "o.h5").exists() and not (tmp_path / "t.csv").exists()


def test_an_init_file_of_another_kind(dataset_file, tmp_path, capsys):
    assert main(["optimum", "--data", str(dataset_file), "--out", str(tmp_path / "o.h5"),
                 "--init", str(dataset_file)]) == 2
    assert "neither an optimum file nor a run's weights.h5" in _one_line_error(capsys,
                                                                                "optimum")


def test_an_optimum_file_missing_an_attribute(dataset_file, tmp_path):
    from crfsdca.reproduction.optimum import Optimum, read_optimum, write_optimum

    path = tmp_path / "o.h5"
    write_optimum(path, Optimum(w_star=np.zeros(3), p_star=1.0, grad_norm=0.0, grad_max=0.0,
                                gap_bound=0.0, iterations=1, evaluations=1, seconds=0.0,
                                lam=0.1, dataset="tiny"))
    _edit(path, lambda f: f.attrs.__delitem__("p_star"), fmt=None)
    with pytest.raises(DataFormatError, match="o.h5: a missing entry .*'p_star'"):
        read_optimum(path)


# ----------------------------------------------------------------------------- download

def test_a_download_accepted_by_content_only_says_so(http_dir, tmp_path, capsys):
    served, url = http_dir
    rows = "".join(f"{i}\ta\tx\n" for i in range(10))
    (served / "letter.data.gz").write_bytes(gzip.compress(rows.encode()))
    out = tmp_path / "letter.data.gz"
    assert main(["download", "--url", f"{url}/letter.data.gz", "--sha256", "0" * 64,
                 "--rows", "10", "--columns", "3", "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "(verified by content)" in err
    assert "warning: " in err and "accepted on the content check alone" in err
    assert "over plain http (unauthenticated)" in err and "pin this sha256" in err
