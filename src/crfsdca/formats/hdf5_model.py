"""crfsdca's own model file and the dual state beside it, both HDF5.

The model: one HDF5 file (format ``crfsdca-model``, version 1), written atomically::

    /                  attrs: format, format_version, package_version, n_attributes (A),
                              n_labels (K), dim (d = A K + 3 K + K^2), options (JSON: c1,
                              c2, algorithm, solver options, feature set), training (JSON:
                              status, epochs, seconds, last log row)
    /vocab/labels      UTF-8 strings (K)   label id -> label
    /vocab/attributes  UTF-8 strings (A)   attribute id -> attribute
    /vocab/transition_attributes            (version 2, only in a model that has them)
                       UTF-8 strings (E)   transition attribute id -> its name
    /weights/index     int64 (nnz)         positions of the nonzero weights in the flat
    /weights/value     float64 (nnz)         vector of crfsdca.model.layout (emission A x K,
                                             bias K x 3, transition K x K, W_B E x K x K)

Only nonzero weights are stored (CRFsuite's default feature set leaves most of A x K at 0).
Both files start with a header in HDF5's user block that holds the sha256 of the rest
(:mod:`crfsdca.runtime.sealed`), checked before libhdf5 reads a byte; a file written
before files had it is read in a child process (:mod:`crfsdca.runtime.isolated`), so
that a damaged one cannot crash the reader's process.

A file of a newer format version is refused with a message naming both versions; older
versions are converted on reading (none exist yet).

The dual state (``save_dual``: continued training) goes to a second file beside the model,
``MODEL.dual`` (format ``crfsdca-dual``): the encoded training sequences and their
digests, and SDCA's dual marginals (the store of :mod:`crfsdca.model.objective`).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import __version__
from ..errors import DataFormatError, excerpt, one_line
from ..model.layout import WeightLayout
from ..runtime import memory
from ..runtime.io import atomic_path
from ..runtime.isolated import read_isolated
from ..runtime.sealed import H5PY_ERRORS, check_seal, sealed_hdf5
from .model import Model

if TYPE_CHECKING:
    import h5py

FORMAT, FORMAT_VERSION = "crfsdca-model", 2
"""Version 2 adds /vocab/transition_attributes; a model without them is written as
version 1, which every earlier reader reads."""
DUAL_FORMAT, DUAL_FORMAT_VERSION = "crfsdca-dual", 1


def _json(value) -> str:
    def plain(v):
        if isinstance(v, (np.floating, np.integer)):
            return v.item()
        raise TypeError(f"not JSON: {v!r}")

    return json.dumps(value, default=plain)


def write_hdf5_model(path: Path, model: Model) -> Path:
    """Write ``model`` to ``path`` atomically in crfsdca's HDF5 format."""
    import h5py  # lazy, as in every function here: 13 MiB that a fit without a file skips

    w = model.weights
    nz = np.flatnonzero(w)
    strdt = h5py.string_dtype("utf-8")
    with atomic_path(path) as tmp, sealed_hdf5(tmp, FORMAT) as f:
        f.attrs.update(format=FORMAT,
                       format_version=FORMAT_VERSION if model.transition_attributes else 1,
                       package_version=__version__, n_attributes=len(model.attributes),
                       n_labels=len(model.labels), dim=len(w), options=_json(model.options),
                       training=_json(model.training), checksum=model.checksum)
        vocab = f.create_group("vocab")
        vocab.create_dataset("labels", data=np.array(model.labels, dtype=object), dtype=strdt)
        vocab.create_dataset("attributes", data=np.array(model.attributes, dtype=object),
                             dtype=strdt)
        if model.transition_attributes:
            vocab.create_dataset("transition_attributes", dtype=strdt,
                                 data=np.array(model.transition_attributes, dtype=object))
        g = f.create_group("weights")
        g.create_dataset("index", data=nz.astype(np.int64), compression="gzip")
        g.create_dataset("value", data=w[nz], compression="gzip")
    return path


MAX_EXPANSION = 1100
"""The most bytes a dataset may hold per byte of its file (deflate, the one filter these
files use, packs at most 1032 to 1): a dataset that claims more is damaged or crafted, and
is refused before it is read (an HDF5 file can declare any shape, read back as fill
values)."""


@contextlib.contextmanager
def _reading(path: Path, fmt: str, version: int):
    """The file at ``path`` open for reading, its format and version checked: format
    ``fmt``, version 1 to ``version``. Whatever h5py raises inside the block is a
    DataFormatError naming the file (one line)."""
    import h5py  # lazy, as in write_hdf5_model

    try:
        f = h5py.File(path, "r")
    except H5PY_ERRORS:
        raise DataFormatError(path, f"not a {fmt} file (neither HDF5 nor a CRFsuite "
                                    "model)") from None
    try:
        with f:
            _check_version(f, path, fmt, version)
            yield f
    except DataFormatError:
        raise
    except H5PY_ERRORS as e:
        raise DataFormatError(path, f"damaged {fmt} file ({one_line(e)})") from None



def _shown(value) -> str:
    """``repr`` of a value read from a file, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _check_version(f: h5py.File, path: Path, fmt: str, version: int) -> None:
    found = f.attrs.get("format")
    found = found.decode("utf-8", "replace") if isinstance(found, bytes) else found
    if not isinstance(found, str) or found != fmt:
        raise DataFormatError(path, f"not a {fmt} file (format {_shown(found)})")
    v = f.attrs.get("format_version")
    if isinstance(v, np.ndarray) and v.shape in ((), (1,)):
        v = v.reshape(())[()]
    if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
        raise DataFormatError(path, f"{fmt} file with format_version {_shown(v)}: "
                                    "not a version number")
    v = int(v)
    if v > version:
        written = f.attrs.get("package_version", "?")
        written = " ".join(written.split())[:40] if isinstance(written, str) else "?"
        raise DataFormatError(path, f"{fmt} format version {v}, written by crfsdca "
                                    f"{written}; this crfsdca "
                                    f"({__version__}) reads version {version} and older: "
                                    "upgrade crfsdca")
    if v < 1:
        raise DataFormatError(path, f"bad format_version {v}")


def _array(f: h5py.File, name: str, path: Path, ndim: int = 1) -> np.ndarray:
    """The dataset ``name`` read whole, once its shape is checked: ``ndim`` dimensions, at
    most :data:`MAX_EXPANSION` times the file's size in bytes."""
    import h5py  # lazy, as in write_hdf5_model

    obj = f.get(name)
    if obj is None:
        raise DataFormatError(path, f"incomplete file: missing {name!r}")
    if not isinstance(obj, h5py.Dataset):
        raise DataFormatError(path, f"{name}: a dataset expected, found a "
                                    f"{type(obj).__name__}")
    if obj.ndim != ndim:
        raise DataFormatError(path, f"{name}: {ndim} dimension(s) expected, got shape "
                                    f"{obj.shape}")
    nbytes = obj.size * max(obj.dtype.itemsize, 1)
    if nbytes > MAX_EXPANSION * path.stat().st_size + 2**16:
        raise DataFormatError(path, f"{name}: shape {obj.shape} of {obj.dtype} claims "
                                    f"{nbytes:,} bytes, more than a file of "
                                    f"{path.stat().st_size:,} bytes can hold")
    return obj[()]


def _attr(f: h5py.File, name: str, path: Path):
    if name not in f.attrs:
        raise DataFormatError(path, f"incomplete file: missing attribute {name!r}")
    return f.attrs[name]


def read_hdf5_model(path: str | os.PathLike) -> Model:
    """Read a model written by :func:`write_hdf5_model` (any version up to this one's).
    The file's sha256 is checked before libhdf5 reads it (a file written before files
    carried one is read in a child process, :mod:`~crfsdca.runtime.isolated`); then every
    field (types, shapes, unique labels and attributes, finite weights, the checksum of the
    weights) before the weight vector is made: a damaged file is a DataFormatError naming it and
    what is wrong."""
    path = Path(path)
    if check_seal(path, FORMAT):
        return _read_model(path)
    return read_isolated(path, f"{FORMAT} file", _read_model)


def _read_model(path: Path) -> Model:
    with _reading(path, FORMAT, FORMAT_VERSION) as f:
        labels = _strings(f, "vocab/labels", path)
        attributes = _strings(f, "vocab/attributes", path)
        edges = (_strings(f, "vocab/transition_attributes", path)
                 if "vocab/transition_attributes" in f else [])
        dim = _integer(_attr(f, "dim", path), "dim", path)
        index = _array(f, "weights/index", path)
        value = _array(f, "weights/value", path)
        options = _json_attr(f, "options", path)
        training = _json_attr(f, "training", path)
        checksum = f.attrs.get("checksum")
    layout = WeightLayout(len(attributes), len(labels), len(edges))
    for names, what in ((labels, "label"), (attributes, "attribute"),
                        (edges, "transition attribute")):
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1) if len(names) < 10**4 \
                else "(one of them)"
            raise DataFormatError(path, f"the {what} {excerpt(twice)} appears twice")
    if not (np.issubdtype(index.dtype, np.integer) and np.issubdtype(value.dtype, np.floating)):
        raise DataFormatError(path, f"weights: integer positions and float values expected, "
                                    f"got {index.dtype} and {value.dtype}")
    if dim != layout.dim or len(index) != len(value) or (
            len(index) and (index.min() < 0 or index.max() >= dim)):
        raise DataFormatError(path, f"inconsistent weights: dim {dim}, A = {len(attributes)}, "
                                    f"K = {len(labels)}")
    if not np.all(np.isfinite(value)):
        raise DataFormatError(path, "a weight is not a finite number")
    memory.check(8 * dim, f"{path}: the model's {dim:,} weights ({len(attributes):,} "
                          f"attributes, {len(labels):,} labels)",
                 "a damaged file, or a model too large for this machine")
    w = np.zeros(dim)
    w[index] = value
    model = Model(labels, attributes, w, options, training, edges)
    if checksum is not None and str(checksum) != model.checksum:
        raise DataFormatError(path, "the weights or vocabularies do not match the file's "
                                    "checksum: the file is damaged")
    return model


def _strings(f, name: str, path: Path) -> list[str]:
    import h5py  # lazy, as in write_hdf5_model

    data = f.get(name)
    if isinstance(data, h5py.Dataset) and data.dtype.kind not in "OSU":
        raise DataFormatError(path, f"{name}: strings expected, got {data.dtype}")
    _array(f, name, path, ndim=1)  # the shape checked before the strings are made
    try:
        return list(data.asstr()[()])
    except UnicodeDecodeError as e:
        raise DataFormatError(path, f"{name}: a string is not UTF-8 ({e.reason})") from None


def _integer(value, name: str, path: Path) -> int:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise DataFormatError(path, f"{name}: an integer expected, got {_shown(value)}")


def _json_attr(f, name: str, path: Path) -> dict:
    try:
        value = json.loads(_attr(f, name, path))
    except (TypeError, ValueError, RecursionError):
        raise DataFormatError(path, f"{name}: not JSON") from None
    if not isinstance(value, dict):
        raise DataFormatError(path, f"{name}: a JSON object expected")
    return value


def dual_path(model_path: str | os.PathLike) -> Path:
    """Where the dual state of a model is kept: beside it, ``MODEL.dual``."""
    return Path(str(model_path) + ".dual")


def pending_dual_path(model_path: str | os.PathLike) -> Path:
    """Where a new dual state waits while its model is written, ``MODEL.dual.next``
    (:func:`crfsdca.model_file.save_model_with_dual`)."""
    return Path(str(model_path) + ".dual.next")


DUAL_ARRAYS = ("offsets", "labels", "attr_indptr", "attr_indices", "attr_values",
               "mu_unary", "mu_pair", "digests")


def dual_bytes(state: dict) -> int:
    """The bytes of a dual state's arrays (the compact store's entropy bounds included)."""
    extra = state.get("entropies")
    return sum(np.asarray(state[k]).nbytes for k in DUAL_ARRAYS) + (
        0 if extra is None else np.asarray(extra).nbytes)


def save_dual(path: str | os.PathLike, state: dict, model: Model) -> Path:
    """Write a dual state (``DUAL_ARRAYS`` plus ``n_attributes``, ``n_labels``, ``c2``) of
    ``model``, named by its checksum."""
    path = Path(path)
    with atomic_path(path) as tmp, sealed_hdf5(tmp, DUAL_FORMAT) as f:
        f.attrs.update(format=DUAL_FORMAT, format_version=DUAL_FORMAT_VERSION,
                       package_version=__version__, n_attributes=int(state["n_attributes"]),
                       n_labels=int(state["n_labels"]), c2=float(state["c2"]),
                       model_checksum=model.checksum)
        for key in DUAL_ARRAYS:
            f.create_dataset(key, data=np.asarray(state[key]))
        if state.get("entropies") is not None:  # the compact store's entropy bounds
            f.create_dataset("entropies", data=np.asarray(state["entropies"], np.float64))
    return path


def load_dual(path: str | os.PathLike, model: Model) -> dict:
    """The dual state at ``path``, checked: it belongs to ``model`` (a stale one, left by
    an earlier fit, is refused), its arrays have consistent shapes and finite marginals."""
    path = Path(path)
    if check_seal(path, DUAL_FORMAT):
        state, owner = _read_dual(path)
    else:
        state, owner = read_isolated(path, f"{DUAL_FORMAT} file", _read_dual)
    if owner is None or str(owner) != model.checksum:
        raise DataFormatError(path, "this dual state belongs to another model (an earlier "
                                    "fit wrote it): delete it, or train again with "
                                    "save_dual to continue from this model")
    _check_dual(path, state, model)
    return state


def _read_dual(path: Path) -> tuple[dict, str | None]:
    """The arrays and sizes of a dual state file, and the checksum of its model."""
    with _reading(path, DUAL_FORMAT, DUAL_FORMAT_VERSION) as f:
        state = {k: _array(f, k, path, ndim=2 if k == "digests" else 1) for k in DUAL_ARRAYS}
        state["entropies"] = _array(f, "entropies", path) if "entropies" in f else None
        state.update(n_attributes=_integer(_attr(f, "n_attributes", path), "n_attributes",
                                           path),
                     n_labels=_integer(_attr(f, "n_labels", path), "n_labels", path),
                     c2=float(_attr(f, "c2", path)))
        owner = f.attrs.get("model_checksum")
    return state, None if owner is None else str(owner)


_DUAL_KINDS = {"offsets": "iu", "labels": "iu", "attr_indptr": "iu", "attr_indices": "iu",
               "attr_values": "fiu", "mu_unary": "f", "mu_pair": "f", "digests": "u"}
"""The numpy kinds each array of a dual state may have (integers, unsigned, floats)."""


def _check_dual(path: Path, state: dict, model: Model) -> None:
    """Types, shapes and values of a dual state's arrays (see
    :mod:`crfsdca.training.warm_start`), against the model it continues: every index the
    kernels will follow is in range."""
    wrong = [k for k, kinds in _DUAL_KINDS.items() if state[k].dtype.kind not in kinds]
    if wrong:
        raise DataFormatError(path, f"damaged dual state: bad types of {', '.join(wrong)}")
    off, labels = state["offsets"].astype(np.int64), state["labels"].astype(np.int64)
    indptr = state["attr_indptr"].astype(np.int64)
    indices = state["attr_indices"].astype(np.int64)
    K, A = state["n_labels"], state["n_attributes"]
    n, N = len(off) - 1, len(labels)
    problems = []
    if (K, A) != (len(model.labels), len(model.attributes)):
        problems.append(f"sizes (K = {K}, A = {A}; the model's {len(model.labels)}, "
                        f"{len(model.attributes)})")
    elif n < 1 or off[0] != 0 or off[-1] != N or np.any(np.diff(off) < 1):
        problems.append("sequence offsets")
    elif len(indptr) != N + 1 or indptr[0] != 0 or indptr[-1] != len(indices) \
            or np.any(np.diff(indptr) < 0):
        problems.append("attribute index pointers")
    else:
        if N and (labels.min() < 0 or labels.max() >= K):
            problems.append("labels")
        if len(indices) and (indices.min() < 0 or indices.max() >= A):
            problems.append("attribute ids")
        values = state["attr_values"]
        if len(values) not in (0, len(indices)) or not np.all(np.isfinite(values)):
            problems.append("attribute values")
        h = state.get("entropies")
        pairs = (N - n) if h is None else n  # every edge's tables, or a sum per sequence
        if len(state["mu_unary"]) != N * K or len(state["mu_pair"]) != pairs * K * K \
                or (h is not None and h.shape != (n,)):
            problems.append("dual marginals' sizes")
        elif not (np.all(np.isfinite(state["mu_unary"]))
                  and np.all(np.isfinite(state["mu_pair"]))):
            problems.append("dual marginals (not finite)")
        elif h is not None and not (h.dtype.kind == "f" and np.all(np.isfinite(h))
                                    and np.all(h >= 0)):
            problems.append("entropy bounds")
        if state["digests"].shape != (n, 16):
            problems.append("sequence digests")
    if problems:
        raise DataFormatError(path, f"damaged dual state: bad {', '.join(problems)}")
