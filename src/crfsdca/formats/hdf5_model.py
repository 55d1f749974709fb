"""crfsdca's own model file and the dual state beside it, both HDF5.

The model: one HDF5 file (format ``crfsdca-model``, version 1), written atomically::

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
from pathlib import Path

import h5py
import numpy as np

from .. import __version__
from ..errors import DataFormatError
from ..model.layout import WeightLayout
from ..runtime.io import atomic_path
from .model import Model

FORMAT, FORMAT_VERSION = "crfsdca-model", 1
DUAL_FORMAT, DUAL_FORMAT_VERSION = "crfsdca-dual", 1


def _json(value) -> str:
    def plain(v):
        if isinstance(v, (np.floating, np.integer)):
            return v.item()
        raise TypeError(f"not JSON: {v!r}")

    return json.dumps(value, default=plain)


def write_hdf5_model(path: Path, model: Model) -> Path:
    """Write ``model`` to ``path`` atomically in crfsdca's HDF5 format."""
    w = model.weights
    nz = np.flatnonzero(w)
    strdt = h5py.string_dtype("utf-8")
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs.update(format=FORMAT, format_version=FORMAT_VERSION,
                       package_version=__version__, n_attributes=len(model.attributes),
                       n_labels=len(model.labels), dim=len(w), options=_json(model.options),
                       training=_json(model.training), checksum=model.checksum)
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
        raise DataFormatError(path, f"not a {fmt} file (neither HDF5 nor a CRFsuite "
                                    "model)") from None
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


def read_hdf5_model(path: Path) -> Model:
    """Read a model written by :func:`write_hdf5_model` (any version up to this one's).
    Every field is checked (types, shapes, unique labels and attributes, finite weights,
    the checksum of files that have one): a damaged file is a DataFormatError naming it
    and what is wrong."""
    with _open(path, FORMAT, FORMAT_VERSION) as f:
        try:
            labels = _strings(f, "vocab/labels", path)
            attributes = _strings(f, "vocab/attributes", path)
            dim = _integer(f.attrs["dim"], "dim", path)
            index = f["weights/index"][()]
            value = f["weights/value"][()]
            options = _json_attr(f, "options", path)
            training = _json_attr(f, "training", path)
            checksum = f.attrs.get("checksum")
        except KeyError as e:
            raise DataFormatError(path, f"incomplete model file: missing {e}") from None
        except OSError as e:  # h5py: a damaged dataset or attribute
            raise DataFormatError(path, f"damaged model file ({e})") from None
    layout = WeightLayout(len(attributes), len(labels))
    for names, what in ((labels, "label"), (attributes, "attribute")):
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1) if len(names) < 10**4 \
                else "(one of them)"
            raise DataFormatError(path, f"the {what} {twice!r} appears twice")
    if not (np.issubdtype(index.dtype, np.integer) and np.issubdtype(value.dtype, np.floating)
            and index.ndim == value.ndim == 1):
        raise DataFormatError(path, f"weights: integer positions and float values expected, "
                                    f"got {index.dtype} and {value.dtype}")
    if dim != layout.dim or len(index) != len(value) or (
            len(index) and (index.min() < 0 or index.max() >= dim)):
        raise DataFormatError(path, f"inconsistent weights: dim {dim}, A = {len(attributes)}, "
                                    f"K = {len(labels)}")
    if not np.all(np.isfinite(value)):
        raise DataFormatError(path, "a weight is not a finite number")
    w = np.zeros(dim)
    w[index] = value
    model = Model(labels, attributes, w, options, training)
    if checksum is not None and str(checksum) != model.checksum:
        raise DataFormatError(path, "the weights or vocabularies do not match the file's "
                                    "checksum: the file is damaged")
    return model


def _strings(f, name: str, path: Path) -> list[str]:
    data = f[name]
    if data.dtype.kind not in "OSU":
        raise DataFormatError(path, f"{name}: strings expected, got {data.dtype}")
    return list(data.asstr()[()])


def _integer(value, name: str, path: Path) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DataFormatError(path, f"{name}: an integer expected, got {value!r}") from None


def _json_attr(f, name: str, path: Path) -> dict:
    try:
        value = json.loads(f.attrs[name])
    except (TypeError, ValueError):
        raise DataFormatError(path, f"{name}: not JSON") from None
    if not isinstance(value, dict):
        raise DataFormatError(path, f"{name}: a JSON object expected")
    return value


def dual_path(model_path: str | os.PathLike) -> Path:
    """Where the dual state of a model is kept: beside it, ``MODEL.dual``."""
    return Path(str(model_path) + ".dual")


DUAL_ARRAYS = ("offsets", "labels", "attr_indptr", "attr_indices", "attr_values",
               "mu_unary", "mu_pair", "digests")


def dual_bytes(state: dict) -> int:
    return sum(np.asarray(state[k]).nbytes for k in DUAL_ARRAYS)


def save_dual(path: str | os.PathLike, state: dict, model: Model) -> Path:
    """Write a dual state (``DUAL_ARRAYS`` plus ``n_attributes``, ``n_labels``, ``c2``) of
    ``model``, named by its checksum."""
    path = Path(path)
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs.update(format=DUAL_FORMAT, format_version=DUAL_FORMAT_VERSION,
                       package_version=__version__, n_attributes=int(state["n_attributes"]),
                       n_labels=int(state["n_labels"]), c2=float(state["c2"]),
                       model_checksum=model.checksum)
        for key in DUAL_ARRAYS:
            f.create_dataset(key, data=np.asarray(state[key]))
    return path


def load_dual(path: str | os.PathLike, model: Model) -> dict:
    """The dual state at ``path``, checked: it belongs to ``model`` (a stale one, left by
    an earlier fit, is refused), its arrays have consistent shapes and finite marginals."""
    path = Path(path)
    with _open(path, DUAL_FORMAT, DUAL_FORMAT_VERSION) as f:
        try:
            state = {k: f[k][()] for k in DUAL_ARRAYS}
            state.update(n_attributes=_integer(f.attrs["n_attributes"], "n_attributes", path),
                         n_labels=_integer(f.attrs["n_labels"], "n_labels", path),
                         c2=float(f.attrs["c2"]))
            owner = f.attrs.get("model_checksum")
        except KeyError as e:
            raise DataFormatError(path, f"incomplete dual state file: missing {e}") from None
        except (OSError, TypeError, ValueError) as e:
            raise DataFormatError(path, f"damaged dual state file ({e})") from None
    if owner is None or str(owner) != model.checksum:
        raise DataFormatError(path, "this dual state belongs to another model (an earlier "
                                    "fit wrote it): delete it, or train again with "
                                    "save_dual to continue from this model")
    _check_dual(path, state)
    return state


def _check_dual(path: Path, state: dict) -> None:
    """Shapes and values of a dual state's arrays (see :mod:`crfsdca.training.warm_start`)."""
    off, labels = np.asarray(state["offsets"]), np.asarray(state["labels"])
    indptr, indices = np.asarray(state["attr_indptr"]), np.asarray(state["attr_indices"])
    K, A = state["n_labels"], state["n_attributes"]
    n, N = len(off) - 1, len(labels)
    problems = []
    if n < 1 or off[0] != 0 or off[-1] != N or np.any(np.diff(off) < 1):
        problems.append("sequence offsets")
    if len(indptr) != N + 1 or indptr[0] != 0 or indptr[-1] != len(indices) \
            or np.any(np.diff(indptr) < 0):
        problems.append("attribute index pointers")
    if N and (labels.min() < 0 or labels.max() >= K):
        problems.append("labels")
    if len(indices) and (indices.min() < 0 or indices.max() >= A):
        problems.append("attribute ids")
    if len(state["mu_unary"]) != N * K or len(state["mu_pair"]) != (N - n) * K * K:
        problems.append("dual marginals' sizes")
    elif not (np.all(np.isfinite(state["mu_unary"])) and np.all(np.isfinite(state["mu_pair"]))):
        problems.append("dual marginals (not finite)")
    if np.asarray(state["digests"]).shape != (n, 16):
        problems.append("sequence digests")
    if problems:
        raise DataFormatError(path, f"damaged dual state: bad {', '.join(problems)}")
