"""Damaged and stale model and dual files: each refused on load with its path and what is
wrong (never an h5py or JSON internal), by the library and by ``tag``/``dump``."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest
from inputs import X, Y

from crfsdca import CRF
from crfsdca.cli import main
from crfsdca.errors import DataFormatError
from crfsdca.model_file import dual_path, load_model

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


