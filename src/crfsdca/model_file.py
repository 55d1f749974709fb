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
``MODEL.dual``. Each file is written atomically, and the pair is too:
[`save_model_with_dual`][crfsdca.model_file.save_model_with_dual] writes the dual first
under a waiting name, so that a process killed at any instant (a checkpoint cut by the
out-of-memory killer) leaves a model and its own dual state, which
[`dual_beside`][crfsdca.model_file.dual_beside] finds.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .errors import ConfigError, DataFormatError
from .formats.crfsuite_model import is_crfsuite_model, read_crfsuite_model, write_crfsuite_model
from .formats.hdf5_model import (
    DUAL_ARRAYS,
    dual_bytes,
    dual_path,
    load_dual,
    pending_dual_path,
    read_hdf5_model,
    save_dual,
    write_hdf5_model,
)
from .formats.model import Model, weights_checksum

__all__ = ["DUAL_ARRAYS", "MODEL_FORMATS", "Model", "dual_beside", "dual_bytes", "dual_path",
           "load_dual", "load_model", "model_format", "save_dual", "save_model",
           "save_model_with_dual", "weights_checksum"]

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


def save_model_with_dual(path: str | os.PathLike, model: Model, dual: dict,
                         format: str | None = None) -> Path:
    """Write ``model`` to ``path`` and its dual state ``dual`` beside it, so that at every
    instant the files on disk are a model and its own dual state: the dual first to
    ``MODEL.dual.next``, then the model, then the dual moved to ``MODEL.dual``. A process
    killed before the model is replaced leaves the previous pair (and a stray waiting
    file); killed after it, the new model and its dual still waiting, which
    [`dual_beside`][crfsdca.model_file.dual_beside] reads."""
    path = Path(path)
    pending = pending_dual_path(path)
    save_dual(pending, dual, model)
    save_model(path, model, format)
    os.replace(pending, dual_path(path))
    return path


def dual_beside(path: str | os.PathLike, model: Model) -> dict | None:
    """The dual state of ``model``, read from the model file at ``path``: ``MODEL.dual``,
    or ``MODEL.dual.next`` where the saving of the pair was cut after the model was
    written (then moved to its name, as the save would have). None where there is none;
    a ``MODEL.dual`` of another model is refused (``load_dual``)."""
    path = Path(path)
    pending, dual = pending_dual_path(path), dual_path(path)
    if pending.exists():
        try:
            state = load_dual(pending, model)
        except DataFormatError:  # the save was cut before its model: the pair stands
            pass
        else:
            with contextlib.suppress(OSError):  # finish the save where the folder allows
                os.replace(pending, dual)
            return state
    return load_dual(dual, model) if dual.exists() else None
