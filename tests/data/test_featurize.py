"""Featurization (vocabularies, CSR arrays, subsets) and the HDF5 round trip."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import yaml
from helpers.paths import RAW, ROOT

from crfsdca.cli import main
from crfsdca.data.featurize import featurize, spec_from_config, take_subset
from crfsdca.data.hdf5 import FORMAT, Dataset, load_dataset, write_dataset
from crfsdca.data.radii import squared_radii
from crfsdca.data.readers import Sentence
from crfsdca.data.sequences import make_sequences
from crfsdca.data.table1 import dataset_row, table_rows, write_table1
from crfsdca.errors import ConfigError, DataFormatError
from crfsdca.runtime.sealed import seal

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())

TRAIN = """a DT B-NP
cat NN I-NP
sat VBD B-VP

a DT B-NP
dog NN I-NP
"""
TEST = """a DT B-NP
bird NN I-NP
flew VBD B-VP
. . O
"""


@pytest.fixture
def tiny_conll(tmp_path):
    (tmp_path / "train.txt").write_text(TRAIN)
    (tmp_path / "test.txt").write_text(TEST)
    return {"reader": "conll", "source": str(tmp_path),
            "options": {"train": "train.txt", "test": "test.txt"},
            "templates": [[["w", 0]], [["pos", -1], ["pos", 0]], [["w", 0]]]}


def token_attrs(ds: Dataset, split: str, t: int) -> list[str]:
    seq = getattr(ds, split)
    ids = seq.attr_indices[seq.attr_indptr[t]:seq.attr_indptr[t + 1]]
    return [ds.attributes[i] for i in ids]


def test_tiny_featurization(tiny_conll):
    ds = featurize("tiny", tiny_conll)
    # labels: the sorted training labels (the model's K), then test-only ones (O here)
    assert ds.labels == ["B-NP", "B-VP", "I-NP", "O"]
    assert ds.n_labels == 3
    # attributes in order of first occurrence in training; duplicates kept once
    assert ds.attributes == ["w[0]=a", "w[0]=cat", "pos[-1]|pos[0]=DT|NN", "w[0]=sat",
                             "pos[-1]|pos[0]=NN|VBD", "w[0]=dog"]
    assert ds.train.offsets.tolist() == [0, 3, 5]
    assert ds.train.labels.tolist() == [0, 2, 1, 0, 2]
    assert ds.train.attr_indptr.tolist() == [0, 1, 3, 5, 6, 8]
    assert ds.train.attr_indices.tolist() == [0, 1, 2, 3, 4, 0, 2, 5]  # sorted within token
    # test: unseen attributes dropped ("w[0]=bird", "pos[-1]|pos[0]=VBD|.", ...)
    assert [token_attrs(ds, "test", t) for t in range(4)] == [
        ["w[0]=a"], ["pos[-1]|pos[0]=DT|NN"], ["pos[-1]|pos[0]=NN|VBD"], []]
    assert ds.test.labels.tolist() == [0, 2, 1, 3]  # 3 = O, never predictable
    assert ds.dim == 6 * 3 + 3 * 3 + 9
    np.testing.assert_array_equal(ds.radii, squared_radii(ds.train, 3, 6))


def test_min_count_and_subsets(tiny_conll):
    ds = featurize("tiny", {**tiny_conll, "min_count": 2})
    assert ds.attributes == ["w[0]=a", "pos[-1]|pos[0]=DT|NN"]
    assert ds.train.attr_indices.tolist() == [0, 1, 0, 1]
    ds = featurize("tiny", {**tiny_conll, "subset": {"train": 1, "test": 1}})
    assert ds.train.n_sequences == 1 and ds.test.n_sequences == 1
    assert "w[0]=dog" not in ds.attributes
    assert ds.labels == ["B-NP", "B-VP", "I-NP", "O"]  # labels from the full files
    sents = [Sentence({}, ["x"])] * 10
    assert len(take_subset(sents, 0.25)) == 3 and len(take_subset(sents, 4)) == 4
    assert take_subset(sents, None) is sents


@pytest.mark.parametrize("change, message", [
    ({"reader": "csv"}, "reader must be one of"),
    ({"options": {"train": "train.txt", "tests": "x"}}, r"has no option\(s\) \['tests'\]"),
    ({"templates": []}, "'templates' is required"),
    ({"min_count": 0}, "min_count must be an integer >= 1"),
    ({"subset": {"train": 1.5}}, "subset.train must be"),
    ({"colour": 1}, r"unknown key\(s\) \['colour'\]"),
])
def test_bad_specs(tiny_conll, change, message):
    with pytest.raises(ConfigError, match=message):
        featurize("tiny", {**tiny_conll, **change})


def test_spec_from_config_merges_global_subset():
    config = {"subset": {"train": 200, "test": None},
              "datasets": {"a": {"reader": "ocr", "source": "x", "subset": {"test": 5}},
                           "b": {"reader": "ocr", "source": "x"}}}
    assert spec_from_config(config, "a")["subset"] == {"train": 200, "test": 5}
    assert spec_from_config(config, "b")["subset"] == {"train": 200, "test": None}
    with pytest.raises(ConfigError, match="no dataset 'c'"):
        spec_from_config(config, "c")


def test_conll_attributes_are_exactly_crfsuites(tmp_path):
    """The chunking example's attributes, as CRFsuite itself indexes them (first 300 sentences)."""
    import pycrfsuite  # the bench extra, which `make test` installs: fail, never skip

    from crfsdca.data.readers import read_conll
    from crfsdca.data.templates import Extractor, parse_templates

    spec = {**CONFIG["datasets"]["conll"], "subset": {"train": 300}}
    ds = featurize("conll", spec, RAW)
    corpus = read_conll(RAW / "conll2000.zip", **spec["options"])
    extract = Extractor(parse_templates(spec["templates"]))
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in corpus.train[:300]:
        trainer.append(extract(s.fields, len(s)), s.labels)
    trainer.set_params({"max_iterations": 1})
    trainer.train(str(tmp_path / "m.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    assert set(tagger.info().attributes) == set(ds.attributes)
    assert len(ds.attributes) == 29547


# ----------------------------------------------------------------------------- HDF5


def test_hdf5_round_trip(tiny_conll, tmp_path):
    ds = featurize("tiny", tiny_conll)
    path = write_dataset(tmp_path / "out" / "tiny.h5", ds)
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.h5"]  # no temporary left
    back = load_dataset(path)
    assert back.name == "tiny" and back.path == path
    assert back.labels == ds.labels and back.attributes == ds.attributes
    for split in ("train", "test"):
        for a, b in zip(getattr(ds, split), getattr(back, split), strict=True):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
    np.testing.assert_array_equal(back.radii, ds.radii)
    assert back.attrs["templates"] == [[["w", 0]], [["pos", -1], ["pos", 0]], [["w", 0]]]
    assert set(back.attrs["source_sha256"]) == {"train.txt", "test.txt"}
    assert back.attrs["config"]["options"]["test"] == "test.txt"
    assert back.attrs["n_labels"] == 3 and back.attrs["n_attributes"] == 6
    assert back.n_labels == 3 and back.labels == ds.labels
    assert back.n_attributes == 6 and back.dim == ds.dim
    with h5py.File(path) as f:
        assert f["train/offsets"].dtype == np.int64 and f["train/labels"].dtype == np.int32
        assert f["train/attr_indices"].dtype == np.int32 and f["train/radii"].dtype == np.float64
        assert json.loads(f.attrs["source_sha256"])  # stored as JSON text


def test_hdf5_unicode_and_no_test_split(tmp_path):
    seq = make_sequences([0, 2], [1, 0], [0, 1, 1], [0])
    ds = Dataset("u", seq, None, ["Ö", "é"], ["w[0]=Straße"], np.array([3.0]))
    back = load_dataset(write_dataset(tmp_path / "u.h5", ds))
    assert back.labels == ["Ö", "é"] and back.attributes == ["w[0]=Straße"] and back.test is None


def test_hdf5_writer_refuses_unsorted_token_attributes(tmp_path):
    seq = make_sequences([0, 1], [0], [0, 2], [1, 0])
    ds = Dataset("x", seq, None, ["a"], ["p", "q"], np.zeros(1))
    with pytest.raises(ValueError, match="sorted and unique"):
        write_dataset(tmp_path / "x.h5", ds)
    assert list(tmp_path.iterdir()) == []


def test_load_rejects_files_that_are_not_ours(tmp_path, tiny_conll):
    text = tmp_path / "notes.h5"
    text.write_text("hello")
    with pytest.raises(DataFormatError, match=r"notes\.h5: not a crfsdca-dataset file \(not an "
                                              r"HDF5 file\)"):
        load_dataset(text)
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(DataFormatError, match=r"other\.h5: not a crfsdca dataset file"):
        load_dataset(other)
    path = write_dataset(tmp_path / "t.h5", featurize("tiny", tiny_conll))
    with h5py.File(path, "a") as f:
        del f["train/radii"]
        del f["test/labels"]
    seal(path, FORMAT)
    with pytest.raises(DataFormatError, match=r"t\.h5: missing dataset\(s\): train/radii, "
                                              r"test/labels"):
        load_dataset(path)
    with pytest.raises(DataFormatError, match="no such file"):
        load_dataset(tmp_path / "absent.h5")


def test_load_rejects_inconsistent_arrays(tmp_path, tiny_conll):
    path = write_dataset(tmp_path / "t.h5", featurize("tiny", tiny_conll))
    with h5py.File(path, "a") as f:
        f["train/labels"][0] = 99
    seal(path, FORMAT)
    with pytest.raises(DataFormatError, match=r"/train: label id 99 out of range for K = 3"):
        load_dataset(path)


# ----------------------------------------------------------------------------- Table 1


def test_table1_numbers(tiny_conll, tmp_path):
    ds = featurize("conll", tiny_conll)
    row = dataset_row(ds)
    assert row == {"d": 36, "n": 2, "N": 5, "K": 3, "A": 6, "a": 1.6,
                   "mem_gib": round((5 - 2) * 9 * 8 / 2**30, 3)}
    rows = table_rows([ds])
    assert [r["source"] for r in rows] == ["ours", "paper"]
    assert rows[1]["A"] == 74658 and rows[1]["K"] == 22
    write_table1(rows, tmp_path / "t.csv", tmp_path / "t.md")
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == "dataset,source,d,n,N,K,A,a,mem_gib"
    md = (tmp_path / "t.md").read_text()
    assert "| CONLL | paper | 1.6e6 | 8,936 | 210,000 | 22 | 74,658 | 19 | 0.7 |" in md


def test_cli_featurize_and_table1(tmp_path, capsys):
    out = tmp_path / "ocr.h5"
    assert main(["featurize", "ocr", "--config", str(ROOT / "config.yaml"), "--raw-dir", str(RAW),
                 "--output", str(out)]) == 0
    ds = load_dataset(out)
    assert (ds.train.n_sequences, ds.n_labels, ds.n_attributes, ds.dim) == (6202, 26, 128, 4082)
    assert "n=6202" in capsys.readouterr().err
    assert main(["table1", str(out), "--csv", str(tmp_path / "t.csv"),
                 "--md", str(tmp_path / "t.md")]) == 0
    assert "ocr,ours,4082,6202,47010,26,128," in (tmp_path / "t.csv").read_text()
    code = main(["featurize", "ocr", "--spec", '{"reader": "ocr"}', "--output", str(out)])
    assert code == 2 and "missing 'source'" in capsys.readouterr().err
