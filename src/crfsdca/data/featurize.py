"""From raw files to a :class:`~crfsdca.data.hdf5.Dataset`: read, extract attributes, index.

A dataset *spec* is one entry of ``config.yaml``'s ``datasets`` mapping::

    reader:    ocr | conll | treebank
    source:    file or directory, relative to raw_dir unless absolute
    options:   reader keyword arguments (test_fold; train/test members, columns...; pattern,
               split_by, train_range, test_range...)
    templates: list of templates, each a list of [field, offset] pairs (not for ocr)
    min_count: keep attributes occurring at least this many times in training (default 1)
    subset:    {train: k or fraction, test: k or fraction}: keep the first sequences only

Indexing rules:

- labels: the sorted label strings of the training file (read in full, before any subset):
  the model's K labels, as CRFsuite would have them; then, sorted, any label found only in
  the test file (CONLL's I-LST), so that every gold label has an id and counts as an error;
- attributes: those of the training split (after subset) occurring at least ``min_count``
  times, with ids in order of first occurrence (as CRFsuite); OCR has a fixed vocabulary,
  the 128 pixels, and ignores ``min_count``; test attributes never seen in training are
  dropped;
- within a token, attribute ids are sorted and unique.
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crfsdca import __version__
from crfsdca.data.hdf5 import Dataset
from crfsdca.data.radii import squared_radii
from crfsdca.data.readers import READERS, Corpus, Sentence, reader_columns
from crfsdca.data.sequences import Sequences, make_sequences
from crfsdca.data.templates import Extractor, check_fields, parse_templates
from crfsdca.errors import ConfigError, DataFormatError
from crfsdca.runtime import memory
from crfsdca.runtime.io import sha256_file

OCR_TEMPLATES = "pixels: one binary attribute p_<row>_<col> per pixel that is on"
SPEC_KEYS = {"reader", "source", "options", "templates", "min_count", "subset"}


@dataclass(frozen=True)
class Spec:
    """A validated dataset spec (see the module docstring)."""

    name: str
    reader: str
    source: Path
    options: dict[str, Any]
    templates: list | None
    min_count: int
    subset_train: float | int | None
    subset_test: float | int | None


def parse_spec(name: str, spec: dict[str, Any], raw_dir: str | os.PathLike | None = None) -> Spec:
    """Check a dataset spec and resolve its source path against ``raw_dir``."""
    if not isinstance(spec, dict):
        raise ConfigError(f"dataset {name!r}: expected a mapping, got {spec!r}")
    unknown = set(spec) - SPEC_KEYS
    if unknown:
        raise ConfigError(f"dataset {name!r}: unknown key(s) {sorted(unknown)}; expected "
                          f"{sorted(SPEC_KEYS)}")
    reader = spec.get("reader")
    if reader not in READERS:
        raise ConfigError(f"dataset {name!r}: reader must be one of {sorted(READERS)}, "
                          f"got {reader!r}")
    if "source" not in spec:
        raise ConfigError(f"dataset {name!r}: missing 'source'")
    source = Path(spec["source"])
    if not source.is_absolute() and raw_dir is not None:
        source = Path(raw_dir) / source
    options = dict(spec.get("options") or {})
    params = inspect.signature(READERS[reader]).parameters
    bad = [k for k in options if k not in params or k == "source"]
    if bad:
        raise ConfigError(f"dataset {name!r}: reader {reader!r} has no option(s) {bad}; "
                          f"options are {[p for p in params if p != 'source']}")
    missing = [p for p, v in params.items() if p != "source" and p not in options
               and v.default is inspect.Parameter.empty]
    if missing:
        raise ConfigError(f"dataset {name!r}: reader {reader!r} needs option(s) {missing}")
    templates = spec.get("templates")
    if reader == "ocr":
        if templates:
            raise ConfigError(f"dataset {name!r}: the ocr reader has fixed pixel attributes; "
                              "remove 'templates'")
    else:
        if not templates:
            raise ConfigError(f"dataset {name!r}: 'templates' is required for reader {reader!r}")
        try:
            check_fields(parse_templates(templates), reader_columns(reader, options))
        except ConfigError as e:
            raise ConfigError(f"dataset {name!r}: {e}") from None
    min_count = spec.get("min_count", 1)
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ConfigError(f"dataset {name!r}: min_count must be an integer >= 1, got {min_count!r}")
    subset = spec.get("subset") or {}
    for key in subset:
        if key not in ("train", "test"):
            raise ConfigError(f"dataset {name!r}: subset keys are 'train' and 'test', got {key!r}")
    for key, v in subset.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v <= 0
                              or (isinstance(v, float) and v > 1)):
            raise ConfigError(f"dataset {name!r}: subset.{key} must be a count >= 1 or a "
                              f"fraction in (0, 1], got {v!r}")
    return Spec(name, reader, source, options, templates, min_count,
                subset.get("train"), subset.get("test"))


def take_subset(sentences: list[Sentence], k: float | int | None) -> list[Sentence]:
    """The first ``k`` sentences (an int), or the first ceil(k * n) (a float fraction)."""
    if k is None:
        return sentences
    if isinstance(k, float):
        k = math.ceil(k * len(sentences))
    return sentences[: int(k)]


def _csr(n_tokens: int, tok_of_nz: np.ndarray, ids: np.ndarray, n_attr: int):
    """Token-major CSR with ids sorted and unique within each token."""
    key = np.unique(tok_of_nz * max(n_attr, 1) + ids)
    tok = key // max(n_attr, 1)
    indices = (key % max(n_attr, 1)).astype(np.int32)
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    np.cumsum(np.bincount(tok, minlength=n_tokens), out=indptr[1:])
    return indptr, indices


def _attribute_lists(sentences: list[Sentence], extractor: Extractor | None):
    for s in sentences:
        if s.attributes is not None:
            yield from s.attributes
        else:
            yield from extractor(s.fields, len(s))


def _split_arrays(sentences: list[Sentence], label_id: dict[str, int]):
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    labels = np.fromiter((label_id[y] for s in sentences for y in s.labels), dtype=np.int32,
                         count=int(offsets[-1]))
    return offsets, labels


def index_train(sentences: list[Sentence], extractor: Extractor | None, label_id: dict[str, int],
                min_count: int = 1, fixed: list[str] | None = None
                ) -> tuple[Sequences, list[str]]:
    """Index the training split: its attribute vocabulary and its arrays."""
    offsets, labels = _split_arrays(sentences, label_id)
    vocab: dict[str, int] = {a: i for i, a in enumerate(fixed)} if fixed is not None else {}
    flat: list[int] = []
    counts: list[int] = []
    if fixed is None:
        setdefault = vocab.setdefault
        for attrs in _attribute_lists(sentences, extractor):
            flat.extend([setdefault(a, len(vocab)) for a in attrs])
            counts.append(len(attrs))
    else:
        for attrs in _attribute_lists(sentences, extractor):
            try:
                flat.extend([vocab[a] for a in attrs])
            except KeyError as e:
                raise ConfigError(f"attribute {e.args[0]!r} is not in the fixed "
                                  "vocabulary") from None
            counts.append(len(attrs))
    names = list(vocab)
    ids = np.asarray(flat, dtype=np.int64)
    tok_of_nz = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    indptr, indices = _csr(len(labels), tok_of_nz, ids, len(names))
    if fixed is None and min_count > 1:
        occ = np.bincount(indices, minlength=len(names))  # tokens where each attribute occurs
        keep = occ >= min_count
        new_id = (np.cumsum(keep) - 1).astype(np.int32)
        mask = keep[indices]
        indices = new_id[indices[mask]]  # the order within a token is preserved
        indptr = np.concatenate([[0], np.cumsum(mask)])[indptr]
        names = [a for a, k in zip(names, keep, strict=True) if k]
    return make_sequences(offsets, labels, indptr, indices), names


def index_test(sentences: list[Sentence], extractor: Extractor | None, label_id: dict[str, int],
               attributes: list[str]) -> Sequences:
    """Index a test split with the training vocabulary; unseen attributes are dropped."""
    offsets, labels = _split_arrays(sentences, label_id)
    vocab = {a: i for i, a in enumerate(attributes)}
    get = vocab.get
    flat: list[int] = []
    counts: list[int] = []
    for attrs in _attribute_lists(sentences, extractor):
        known = [i for i in map(get, attrs) if i is not None]
        flat.extend(known)
        counts.append(len(known))
    tok_of_nz = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    indptr, indices = _csr(len(labels), tok_of_nz, np.asarray(flat, dtype=np.int64),
                           len(attributes))
    return make_sequences(offsets, labels, indptr, indices)


def _source_checksums(corpus: Corpus, source: Path) -> dict[str, str]:
    out = {}
    for p in corpus.sources:
        key = p.relative_to(source).as_posix() if source.is_dir() else p.name
        out[key] = sha256_file(p)
    return out


def _check_memory(name: str, sentences: list[Sentence], extractor: Extractor | None) -> None:
    """Stop before indexing a corpus whose (token, attribute) entries would not fit."""
    per_token = len(extractor.templates) if extractor is not None else 0
    entries = sum(len(s) * per_token if s.attributes is None
                  else sum(map(len, s.attributes)) for s in sentences)
    memory.check(memory.featurize_bytes(entries), f"featurizing {name!r} ({entries:,} "
                 "token attributes at most)", "featurize a subset (subset: {train: k}) or on "
                 "a machine with more memory")


def featurize(name: str, spec: dict[str, Any], raw_dir: str | os.PathLike | None = None) -> Dataset:
    """Read and featurize one dataset from its spec; the result is in memory (path None)."""
    sp = parse_spec(name, spec, raw_dir)
    corpus = READERS[sp.reader](sp.source, **sp.options)
    if corpus.test is not None and not corpus.test:
        raise DataFormatError(sp.source, f"dataset {name!r}: the test split is empty (an empty "
                                         "test file, or a test fold or range with no "
                                         "sequence); expected test sequences")
    train_labels = sorted({y for s in corpus.train for y in s.labels})
    if len(train_labels) < 2:
        raise DataFormatError(sp.source, f"dataset {name!r}: the training split has "
                                         f"{len(train_labels)} label(s) {train_labels}; a "
                                         "CRF needs 2 or more")
    test_only = sorted({y for s in corpus.test for y in s.labels} - set(train_labels)
                       if corpus.test else set())
    labels = train_labels + test_only
    label_id = {y: i for i, y in enumerate(labels)}

    train_s = take_subset(corpus.train, sp.subset_train)
    test_s = take_subset(corpus.test, sp.subset_test) if corpus.test else None
    extractor = None
    templates_attr: Any = OCR_TEMPLATES
    if sp.templates:
        templates = parse_templates(sp.templates)
        extractor = Extractor(templates)
        templates_attr = [[list(p) for p in t] for t in templates]

    _check_memory(name, train_s + (test_s or []), extractor)
    train, attributes = index_train(train_s, extractor, label_id, sp.min_count,
                                    corpus.fixed_attributes)
    test = index_test(test_s, extractor, label_id, attributes) if test_s else None
    radii = squared_radii(train, len(train_labels), len(attributes))
    attrs = {
        "package_version": __version__,
        "source_sha256": _source_checksums(corpus, sp.source),
        "templates": templates_attr,
        "config": {"name": name, **spec, "source": str(sp.source)},
    }
    return Dataset(name=name, train=train, test=test, labels=labels, attributes=attributes,
                   radii=radii, attrs=attrs, model_labels=len(train_labels))


def spec_from_config(config: dict[str, Any], name: str) -> dict[str, Any]:
    """A dataset's spec from a whole config: its ``datasets`` entry, with the top-level
    ``subset`` as default for the keys the entry does not set."""
    datasets = config.get("datasets") or {}
    if name not in datasets:
        raise ConfigError(f"no dataset {name!r} in the config (datasets: {sorted(datasets)})")
    if not isinstance(datasets[name], dict):
        raise ConfigError(f"datasets.{name}: expected a mapping (reader, source, options, "
                          f"templates...), got {datasets[name]!r}")
    spec = dict(datasets[name])
    subset = dict(config.get("subset") or {})
    subset.update({k: v for k, v in (spec.get("subset") or {}).items() if v is not None})
    if any(v is not None for v in subset.values()):
        spec["subset"] = subset
    else:
        spec.pop("subset", None)
    return spec
