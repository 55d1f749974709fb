"""Damaged and stale model and dual files: each refused on load with its path and what is
wrong (never an h5py or JSON internal), by the library and by ``tag``/``dump``."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest
from fuzz.seeds import legacy_copy
from helpers.inputs import X, Y

from crfsdca import CRF
from crfsdca.cli import main
from crfsdca.errors import DataFormatError
from crfsdca.formats.hdf5_model import DUAL_FORMAT, FORMAT
from crfsdca.model_file import dual_path, load_dual, load_model
from crfsdca.runtime.sealed import seal

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
@pytest.mark.parametrize("how", ["resealed", "legacy"])
def test_a_damaged_model_file_is_refused_with_its_path(tmp_path, damage, message, how):
    """Each field's check, on a file crafted with its checksum made again, and on a file
    without one (written before files carried it, read in a child process)."""
    _, path = _fitted(tmp_path)
    _damaged(path, FORMAT, damage, how)
    with pytest.raises(DataFormatError, match=message) as e:
        load_model(path)
    assert str(path) in str(e.value)
    assert main(["tag", "-m", str(path), os.devnull]) == 2
    assert main(["dump", str(path)]) == 2


def _legacy(path):
    """The file as crfsdca wrote it before files had a header: HDF5 from its first byte,
    no checksum."""
    old = path.with_name(path.name + ".sealed")
    os.replace(path, old)
    legacy_copy(old, path)
    old.unlink()


def _damaged(path, fmt, damage, how):
    """``damage`` done to the file at ``path`` by h5py, then the header's checksum made
    again (a crafted file), or to a file without a header."""
    if how == "legacy":
        _legacy(path)
    with h5py.File(path, "r+") as f:
        damage(f)
    if how == "resealed":
        seal(path, fmt)


def test_an_edited_file_is_refused_by_its_checksum(tmp_path, capsys):
    """A file changed after it was written (here by h5py, which keeps the header) is
    refused before libhdf5 reads it; a file without a header reads as before."""
    crf, path = _fitted(tmp_path, save_dual=True)
    for edited in (path, dual_path(path)):
        with h5py.File(edited, "r+") as f:
            f.attrs["package_version"] = "0.0"
    with pytest.raises(DataFormatError, match="does not match the sha256 in its header"):
        load_model(path)
    with pytest.raises(DataFormatError, match="does not match the sha256 in its header"):
        load_dual(dual_path(path), crf._model)
    assert main(["tag", "-m", str(path), os.devnull]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "crfsdca-model file: its content does not match" in err
    _legacy(path)
    _legacy(dual_path(path))
    model = load_model(path)
    assert model.checksum == crf._model.checksum
    assert load_dual(dual_path(path), model)["n_labels"] == len(model.labels)


@pytest.mark.parametrize("version", ["one", b"\xff", np.array([1, 2]), 1.5, True])
def test_a_format_version_that_is_no_number_gets_one_line(tmp_path, capsys, version):
    """The version is read before anything else: a string, bytes, an array, a float are
    refused as the file's, by the library and by ``tag`` (one line, no traceback), with
    the file's checksum made again, or in a file without one."""
    crf, path = _fitted(tmp_path, save_dual=True)
    _damaged(path, FORMAT, lambda f: f.attrs.__setitem__("format_version", version),
             "resealed")
    _damaged(dual_path(path), DUAL_FORMAT,
             lambda f: f.attrs.__setitem__("format_version", version), "legacy")
    with pytest.raises(DataFormatError, match="format_version .*: not a version number") as e:
        load_model(path)
    assert str(e.value).startswith(f"{path}: ")
    capsys.readouterr()
    assert main(["tag", "-m", str(path), os.devnull]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"crfsdca tag: error: {path}: ") and err.count("\n") == 1, err
    with pytest.raises(DataFormatError, match="not a version number"):
        load_dual(dual_path(path), crf._model)


@pytest.mark.parametrize("where", [0, 100, 512, 1000, -1])
def test_a_flipped_byte_is_refused(tmp_path, capsys, where):
    """A byte flipped in the header or anywhere after it: one line, before libhdf5."""
    _, path = _fitted(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[where] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(DataFormatError) as e:
        load_model(path)
    assert str(e.value).startswith(f"{path}: ") and "\n" not in str(e.value)
    assert main(["dump", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


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
    _damaged(dual_path(path), DUAL_FORMAT, lambda f: f["mu_unary"].__setitem__(0, np.nan),
             "resealed")
    with pytest.raises(DataFormatError, match="dual marginals .not finite."):
        CRF().continue_from(path)


