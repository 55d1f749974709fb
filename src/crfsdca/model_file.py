"""Model files: what ``CRF.fit`` and ``crfsdca learn`` write and ``CRF``, ``tag`` and
``dump`` read, in either format.

- crfsdca's HDF5 model (``crfsdca.formats.hdf5_model``): the weights, the bias
  weights, the options and the training summary;
- CRFsuite's binary model
  ([`crfsdca.formats.crfsuite_model`][crfsdca.formats.crfsuite_model]), for CRFsuite's
  tagger and its bindings in other languages: [`save_model`][crfsdca.model_file.save_model]
  writes it for a name ending in ``.crfsuite`` (or ``format="crfsuite"``). It cannot hold
  the bias weights, the options or the training summary.

[`load_model`][crfsdca.model_file.load_model] reads either, told apart by content. The
dual state (``save_dual``: continued training) goes to a second file beside the model,
``MODEL.dual``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError
from .formats.crfsuite_model import is_crfsuite_model, read_crfsuite_model, write_crfsuite_model
from .formats.hdf5_model import (
    DUAL_ARRAYS,
    dual_bytes,
    dual_path,
    load_dual,
    read_hdf5_model,
    save_dual,
    write_hdf5_model,
)
from .formats.model import Model, weights_checksum

__all__ = ["DUAL_ARRAYS", "MODEL_FORMATS", "Model", "dual_bytes", "dual_path", "load_dual",
           "load_model", "model_format", "save_dual", "save_model", "weights_checksum"]

MODEL_FORMATS = ("hdf5", "crfsuite")
"""The model file formats: crfsdca's HDF5 file, CRFsuite's binary model."""


def model_format(path: str | os.PathLike, format: str | None = None) -> str:
    """The format a model is written in: ``format``, else CRFsuite's for a name ending in
    ``.crfsuite``, else HDF5."""
    if format is None:
        return "crfsuite" if str(path).endswith(".crfsuite") else "hdf5"
    if format not in MODEL_FORMATS:
        raise ConfigError(f"unknown model format {format!r}; choose one of "
                          f"{', '.join(MODEL_FORMATS)}")
    return format


def save_model(path: str | os.PathLike, model: Model, format: str | None = None) -> Path:
    """Write ``model`` to ``path`` atomically, in
    [`model_format`][crfsdca.model_file.model_format]'s format."""
    path = Path(path)
    if model_format(path, format) == "crfsuite":
        return write_crfsuite_model(path, model)
    return write_hdf5_model(path, model)


def load_model(path: str | os.PathLike) -> Model:
    """Read a model file of either format (told apart by content), checked field by field:
    a damaged file is a DataFormatError naming it and what is wrong."""
    path = Path(path)
    if is_crfsuite_model(path):
        return read_crfsuite_model(path)
    return read_hdf5_model(path)
