"""The model file: what ``CRF.fit``, ``crfsdca learn`` write and ``CRF``, ``tag``, ``dump`` read.

One HDF5 file (format ``crfsdca-model``, version 1), written atomically::

    /                  attrs: format, format_version, package_version, n_attributes (A),
                              n_labels (K), dim (d = A K + 3 K + K^2), options (JSON: c1,
                              c2, algorithm, solver options, feature set), training (JSON:
                              status, epochs, seconds, last log row)
    /vocab/labels      UTF-8 strings (K)   label id -> label
    /vocab/attributes  UTF-8 strings (A)   attribute id -> attribute
    /weights/index     int64 (nnz)         positions of the nonzero weights in the flat
    /weights/value     float64 (nnz)         vector of crfsdca.model.layout (emission A x K,
                                             bias K x 3, transition K x K)

Only nonzero weights are stored (CRFsuite's default feature set leaves most of A x K at 0).
A file of a newer format version is refused with a message naming both versions; older
versions are converted on reading (none exist yet).

The dual state (``save_dual``: continued training) goes to a second file beside the model,
``MODEL.dual`` (format ``crfsdca-dual``): the encoded training sequences and their
digests, and SDCA's dual marginals (the store of :mod:`crfsdca.model.objective`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from . import __version__
from .errors import DataFormatError
from .io import atomic_path
from .model.layout import WeightLayout

FORMAT, FORMAT_VERSION = "crfsdca-model", 1
DUAL_FORMAT, DUAL_FORMAT_VERSION = "crfsdca-dual", 1


@dataclass
class Model:
    """A trained CRF: vocabularies, the flat weight vector, the options it was trained with."""

    labels: list[str]
    attributes: list[str]
    weights: np.ndarray
    options: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)

    @property
    def layout(self) -> WeightLayout:
        return WeightLayout(len(self.attributes), len(self.labels))

    def __post_init__(self):
        self.weights = self.layout.check(self.weights)


def _json(value) -> str:
    def plain(v):
        if isinstance(v, (np.floating, np.integer)):
            return v.item()
        raise TypeError(f"not JSON: {v!r}")

    return json.dumps(value, default=plain)


def save_model(path: str | os.PathLike, model: Model) -> Path:
    """Write ``model`` to ``path`` atomically."""
    path = Path(path)
    w = model.weights
    nz = np.flatnonzero(w)
    strdt = h5py.string_dtype("utf-8")
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs.update(format=FORMAT, format_version=FORMAT_VERSION,
                       package_version=__version__, n_attributes=len(model.attributes),
                       n_labels=len(model.labels), dim=len(w), options=_json(model.options),
                       training=_json(model.training))
        vocab = f.create_group("vocab")
        vocab.create_dataset("labels", data=np.array(model.labels, dtype=object), dtype=strdt)
        vocab.create_dataset("attributes", data=np.array(model.attributes, dtype=object),
                             dtype=strdt)
        g = f.create_group("weights")
        g.create_dataset("index", data=nz.astype(np.int64), compression="gzip")
        g.create_dataset("value", data=w[nz], compression="gzip")
    return path


def _open(path: Path, fmt: str, version: int) -> h5py.File:
    if not path.is_file():
        raise DataFormatError(path, "no such file")
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise DataFormatError(path, f"not a {fmt} file (not HDF5; a CRFsuite model file? "
                                    "crfsdca reads only its own models)") from None
    found = f.attrs.get("format")
    found = found.decode() if isinstance(found, bytes) else found
    if found != fmt:
        f.close()
        raise DataFormatError(path, f"not a {fmt} file (format {found!r})")
    v = int(f.attrs.get("format_version", -1))
    if v > version:
        written = f.attrs.get("package_version", "?")
        f.close()
        raise DataFormatError(path, f"{fmt} format version {v}, written by crfsdca "
                                    f"{written}; this crfsdca ({__version__}) reads version "
                                    f"{version} and older: upgrade crfsdca")
    if v < 1:
        f.close()
        raise DataFormatError(path, f"bad format_version {v}")
    return f


def load_model(path: str | os.PathLike) -> Model:
    """Read a model file written by :func:`save_model` (any version up to this one's)."""
    path = Path(path)
    with _open(path, FORMAT, FORMAT_VERSION) as f:
        try:
            labels = list(f["vocab/labels"].asstr()[()])
            attributes = list(f["vocab/attributes"].asstr()[()])
            dim = int(f.attrs["dim"])
            index = f["weights/index"][()]
            value = f["weights/value"][()]
            options = json.loads(f.attrs["options"])
            training = json.loads(f.attrs["training"])
        except KeyError as e:
            raise DataFormatError(path, f"incomplete model file: missing {e}") from None
    layout = WeightLayout(len(attributes), len(labels))
    if dim != layout.dim or len(index) != len(value) or (
            len(index) and (index.min() < 0 or index.max() >= dim)):
        raise DataFormatError(path, f"inconsistent weights: dim {dim}, A = {len(attributes)}, "
                                    f"K = {len(labels)}")
    w = np.zeros(dim)
    w[index] = value
    return Model(labels, attributes, w, options, training)


def dual_path(model_path: str | os.PathLike) -> Path:
    """Where the dual state of a model is kept: beside it, ``MODEL.dual``."""
    return Path(str(model_path) + ".dual")


DUAL_ARRAYS = ("offsets", "labels", "attr_indptr", "attr_indices", "attr_values",
               "mu_unary", "mu_pair", "digests")


def dual_bytes(state: dict) -> int:
    return sum(np.asarray(state[k]).nbytes for k in DUAL_ARRAYS)


def save_dual(path: str | os.PathLike, state: dict) -> Path:
    """Write a dual state (``DUAL_ARRAYS`` plus ``n_attributes``, ``n_labels``, ``c2``)."""
    path = Path(path)
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs.update(format=DUAL_FORMAT, format_version=DUAL_FORMAT_VERSION,
                       package_version=__version__, n_attributes=int(state["n_attributes"]),
                       n_labels=int(state["n_labels"]), c2=float(state["c2"]))
        for key in DUAL_ARRAYS:
            f.create_dataset(key, data=np.asarray(state[key]))
    return path


def load_dual(path: str | os.PathLike) -> dict:
    path = Path(path)
    with _open(path, DUAL_FORMAT, DUAL_FORMAT_VERSION) as f:
        try:
            state = {k: f[k][()] for k in DUAL_ARRAYS}
            state.update(n_attributes=int(f.attrs["n_attributes"]),
                         n_labels=int(f.attrs["n_labels"]), c2=float(f.attrs["c2"]))
        except KeyError as e:
            raise DataFormatError(path, f"incomplete dual state file: missing {e}") from None
    return state
