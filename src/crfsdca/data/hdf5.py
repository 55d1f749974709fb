"""The processed dataset file ``data/processed/{dataset}.h5`` and its in-memory :class:`Dataset`.

Schema (format ``crfsdca-dataset``, version 1)::

    /                       attrs: format, format_version, dataset, package_version,
                                   source_sha256 (json {file: sha256}), templates (json),
                                   config (json of the featurize options), n_labels,
                                   n_attributes
    /vocab/labels           utf-8 strings        label id -> label string: the K labels seen
                                                 in training (n_labels), then any label seen
                                                 only in the test split
    /vocab/attributes       utf-8 strings (A,)   attribute id -> attribute string
    /train/offsets          int64 (n+1)          tokens of sequence i: offsets[i]:offsets[i+1]
    /train/labels           int32 (N)            gold label id of every token
    /train/attr_indptr      int64 (N+1)          attributes of token t:
    /train/attr_indices     int32 (nnz)            attr_indices[attr_indptr[t]:attr_indptr[t+1]]
    /train/attr_values      float64 (nnz)        optional: the value of each entry (real-valued
                                                 attributes); absent means every value is 1
    /train/radii            float64 (n)          squared radius R_i of every training sequence
    /train/zero_entries     int64 (m, 2)         optional: (attribute id, token) of the entries
                                                 given with weight 0, which the split leaves
                                                 out and CRFsuite's feature set counts
                                                 (a corpus of crfsdca.Corpus); absent: none
    /test/...               the same arrays (no radii); absent if there is no test split

Within a token, attribute ids are sorted ascending and unique.
Files are written atomically (temporary file, then rename) and sealed
(:mod:`crfsdca.runtime.sealed`): a header in HDF5's user block holds the sha256 of the
rest, checked before libhdf5 reads a byte, so that a truncated, altered or half-copied
file is refused in one line. A file written before the header (HDF5 from its first byte)
is read in a child process (:mod:`crfsdca.runtime.isolated`), where a crash or a hang of
libhdf5 on a damaged file becomes one error too.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from crfsdca import __version__
from crfsdca.data.sequences import Sequences, make_sequences, validate_sequences
from crfsdca.errors import DataFormatError, one_line
from crfsdca.runtime.io import atomic_path
from crfsdca.runtime.isolated import read_isolated
from crfsdca.runtime.sealed import H5PY_ERRORS, check_seal, sealed_hdf5

FORMAT = "crfsdca-dataset"
FORMAT_VERSION = 1
SPLIT_ARRAYS = ("offsets", "labels", "attr_indptr", "attr_indices")
VALUES = "attr_values"
"""The optional array of a split (written only for real-valued attributes)."""
ZEROS = "zero_entries"
"""The training split's optional array of weight-0 entries."""
JSON_ATTRS = ("source_sha256", "templates", "config")


@dataclass(frozen=True)
class Dataset:
    """A featurized dataset: vocabularies, train and test splits, radii, provenance."""

    name: str
    train: Sequences
    test: Sequences | None
    labels: list[str]
    attributes: list[str]
    radii: np.ndarray
    attrs: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    model_labels: int | None = None
    """K: ``labels[:K]`` are the labels seen in training, the model's. Labels after them
    occur only in the test split (a model can never predict them); None: all labels."""
    zero_entries: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    """(attribute id, token) of the training entries given with weight 0."""

    @property
    def n_labels(self) -> int:
        """K, the number of labels of the model (those seen in training)."""
        return len(self.labels) if self.model_labels is None else self.model_labels

    @property
    def n_attributes(self) -> int:
        """A, the number of attributes."""
        return len(self.attributes)

    @property
    def dim(self) -> int:
        """d = A*K + 3*K + K*K, the number of weights (math.md section 1)."""
        K = self.n_labels
        return self.n_attributes * K + 3 * K + K * K


def _check_sorted_unique(seq: Sequences, where: str) -> None:
    idx = seq.attr_indices
    if len(idx) < 2:
        return
    inc = np.diff(idx.astype(np.int64)) > 0
    # a break between tokens is allowed anywhere; within a token ids must strictly increase
    token_start = np.zeros(len(idx), dtype=bool)
    starts = seq.attr_indptr[:-1][np.diff(seq.attr_indptr) > 0]
    token_start[starts] = True
    if not np.all(inc | token_start[1:]):
        raise ValueError(f"{where}: attribute ids within a token must be sorted and unique")


def _check_zero_entries(zeros: np.ndarray, A: int, N: int, error) -> None:
    """``error`` (a message) unless every row of ``zeros`` is an (attribute id, token)
    pair of the split."""
    if zeros.ndim != 2 or zeros.shape[1] != 2:
        raise error(f"zero_entries has shape {zeros.shape}, expected (m, 2)")
    if len(zeros) and not ((zeros[:, 0] >= 0).all() and (zeros[:, 0] < A).all()
                           and (zeros[:, 1] >= 0).all() and (zeros[:, 1] < N).all()):
        raise error(f"zero_entries: an attribute id outside [0, {A}) or a token outside "
                    f"[0, {N})")


def write_dataset(path: str | os.PathLike, ds: Dataset) -> Path:
    """Write ``ds`` to ``path`` atomically (schema in the module docstring)."""
    path = Path(path)
    K, A = ds.n_labels, ds.n_attributes
    splits = {"train": ds.train, "test": ds.test}
    for name, seq in splits.items():
        if seq is not None:
            validate_sequences(seq, K if name == "train" else len(ds.labels), A)
            _check_sorted_unique(seq, name)
    radii = np.ascontiguousarray(ds.radii, dtype=np.float64)
    if radii.shape != (ds.train.n_sequences,):
        raise ValueError(f"radii has shape {radii.shape}, expected ({ds.train.n_sequences},)")
    zeros = np.ascontiguousarray(ds.zero_entries, dtype=np.int64).reshape(-1, 2)
    _check_zero_entries(zeros, A, ds.train.n_tokens, ValueError)
    attrs = dict(ds.attrs)
    attrs.update(format=FORMAT, format_version=FORMAT_VERSION, dataset=ds.name,
                 n_labels=K, n_attributes=A)
    attrs.setdefault("package_version", __version__)
    for key in JSON_ATTRS:
        attrs.setdefault(key, {} if key != "templates" else [])
    strdt = h5py.string_dtype("utf-8")
    with atomic_path(path) as tmp, sealed_hdf5(tmp, FORMAT) as f:
        for key, value in attrs.items():
            f.attrs[key] = json.dumps(value) if key in JSON_ATTRS else value
        vocab = f.create_group("vocab")
        vocab.create_dataset("labels", data=np.array(ds.labels, dtype=object), dtype=strdt)
        vocab.create_dataset("attributes", data=np.array(ds.attributes, dtype=object),
                             dtype=strdt)
        for name, seq in splits.items():
            if seq is None:
                continue
            g = f.create_group(name)
            for arr_name in SPLIT_ARRAYS:
                g.create_dataset(arr_name, data=getattr(seq, arr_name))
            if not seq.binary:
                g.create_dataset(VALUES, data=seq.attr_values)
            if name == "train":
                g.create_dataset("radii", data=radii)
                if len(zeros):
                    g.create_dataset(ZEROS, data=zeros)
    return path


def _decode(value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _integer_attr(path: Path, attrs: dict, key: str, default: int) -> int:
    value = attrs.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise DataFormatError(path, f"root attribute {key} = {value!r}: expected an integer")
    return int(value)


def _read_array(path: Path, group, name: str, kind: str) -> np.ndarray:
    """``group[name]`` checked to hold numbers of ``kind`` (``"int"`` or ``"float"``): float
    labels or ids would be truncated without a word by the int casts that follow."""
    data = group[name]
    ok = data.dtype.kind in ("iu" if kind == "int" else "iuf")
    if not ok:
        raise DataFormatError(path, f"{data.name} has dtype {data.dtype}; expected "
                                    f"{'integers' if kind == 'int' else 'numbers'}")
    return data[()]


def load_dataset(path: str | os.PathLike) -> Dataset:
    """Read a file written by :func:`write_dataset`; clear errors for anything else (its
    seal checked first; a file without one read in a child process)."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "no such file")
    if check_seal(path, FORMAT, "not an HDF5 file"):
        return _load_file(path)
    return read_isolated(path, f"{FORMAT} file", _load_file)


def _load_file(path: Path) -> Dataset:
    """The dataset at ``path``, read by libhdf5 (its seal checked before, or in a child)."""
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise DataFormatError(path, f"not an HDF5 file, or a truncated one ({e})") from None
    try:
        return _load(path, f)
    except DataFormatError:
        raise
    except OSError as e:  # the header was readable, an array is not (a truncated file)
        raise DataFormatError(path, f"cannot read ({one_line(e)}); truncated? featurize "
                                    "again") from None
    except H5PY_ERRORS as e:  # a damaged heap, an object of another kind
        raise DataFormatError(path, f"damaged {FORMAT} file ({one_line(e)})") from None



def _load(path: Path, f: h5py.File) -> Dataset:
    with f:
        fmt = _decode(f.attrs.get("format"))
        if fmt != FORMAT:
            raise DataFormatError(path, f"not a crfsdca dataset file (root attribute 'format' "
                                        f"is {fmt!r}, expected {FORMAT!r})")
        version = _decode(f.attrs.get("format_version"))
        if version != FORMAT_VERSION:
            raise DataFormatError(path, f"format_version {version}, this package reads "
                                        f"{FORMAT_VERSION}; featurize again")
        required = ["vocab/labels", "vocab/attributes", "train/radii",
                    *(f"train/{a}" for a in SPLIT_ARRAYS)]
        if "test" in f:
            required += [f"test/{a}" for a in SPLIT_ARRAYS]
        missing = [r for r in required if r not in f]
        if missing:
            raise DataFormatError(path, f"missing dataset(s): {', '.join(missing)}")
        attrs = {}
        for key, value in f.attrs.items():
            value = _decode(value)
            if key in JSON_ATTRS:
                try:
                    value = json.loads(value)
                except (TypeError, ValueError) as e:
                    raise DataFormatError(path, f"root attribute {key} is not JSON "
                                                f"({e})") from None
            attrs[key] = value
        labels = list(f["vocab/labels"].asstr()[()])
        attributes = list(f["vocab/attributes"].asstr()[()])
        n_model = _integer_attr(path, attrs, "n_labels", len(labels))
        if not 2 <= n_model <= len(labels):
            raise DataFormatError(path, f"root attribute n_labels = {n_model} does not fit "
                                        f"the {len(labels)} label strings (a model needs 2 "
                                        "or more)")
        splits = {}
        for name in ("train", "test"):
            if name not in f:
                splits[name] = None
                continue
            try:
                values = (_read_array(path, f[name], VALUES, "float") if VALUES in f[name]
                          else None)
                seq = make_sequences(*(_read_array(path, f[name], a, "int")
                                       for a in SPLIT_ARRAYS), values)
                validate_sequences(seq, n_model if name == "train" else len(labels),
                                   len(attributes))
            except ValueError as e:
                raise DataFormatError(path, f"/{name}: {e}") from None
            splits[name] = seq
        radii = np.asarray(_read_array(path, f, "train/radii", "float"), dtype=np.float64)
        zeros = (np.asarray(_read_array(path, f["train"], ZEROS, "int"), dtype=np.int64)
                 if ZEROS in f["train"] else np.zeros((0, 2), np.int64))
    if radii.shape != (splits["train"].n_sequences,):
        raise DataFormatError(path, f"/train/radii has shape {radii.shape}, expected "
                                    f"({splits['train'].n_sequences},)")
    _check_zero_entries(zeros, len(attributes), splits["train"].n_tokens,
                        lambda msg: DataFormatError(path, f"/train/{msg}"))
    bad = ~(np.isfinite(radii) & (radii >= 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise DataFormatError(path, f"/train/radii: {int(bad.sum())} value(s) not finite and "
                                    f">= 0 (sequence {i}: {radii[i]}); featurize again")
    return Dataset(name=str(attrs.get("dataset", path.stem)), train=splits["train"],
                   test=splits["test"], labels=labels, attributes=attributes, radii=radii,
                   attrs=attrs, path=path, model_labels=n_model, zero_entries=zeros)
