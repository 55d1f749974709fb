"""Read and write CRFsuite's binary model file (``crf1dm``) without CRFsuite.

The reference is CRFsuite 0.12 (``lib/crf/src/crf1d_model.c``, the writer
``crf1de_save_model`` of ``crf1d_encode.c`` and ``lib/cqdb/src/cqdb.c``), on x86: every
integer is a little-endian uint32, every offset counts from the start of the file::

    header (48 bytes)  "lCRF", file size, "FOMC" (model type), version 100, num_features
                       (CRFsuite leaves it 0), num_labels L, num_attrs A, and the offsets
                       of the features, labels, attributes, label refs and attribute refs
    features (at 48)   "FEAT", chunk size, count F, then F x 20 bytes: type, src, dst
                       (uint32) and weight (float64). Type 0 is a state feature (attribute
                       src, label dst), type 1 a transition (label src followed by dst)
    labels             a CQDB chunk (``crfsdca.formats.cqdb``): label string <-> id
    attributes         a CQDB chunk: attribute string <-> id
    label refs         at a multiple of 4: "LFRF", chunk size, count (L + 2: CRFsuite's
                       writer reserves two more, left at offset 0), count x offset of a
                       list; then per label a list: n, n x id of a transition from it
    attribute refs     at a multiple of 4: "AFRF", chunk size, A, A x offset; then per
                       attribute a list: n, n x id of one of its state features

CRFsuite's tagger finds features only through the refs: a state score adds the weight
times the attribute's value for every feature its attribute lists, a transition is the
weight of the last feature its label lists with that destination. Only features of
nonzero weight are stored, and only attributes with one of them (renumbered).

CRFsuite collects its features in a tree ordered by (type, src, dst), so its files list
the state features by attribute, then label, then the transitions by source, then
destination; the attributes kept keep their order. This writer does the same, and writes
CRFsuite's own bytes for the same labels, attributes and weights.

CRFsuite has no bias features, so a model with nonzero bias weights cannot be written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import ConfigError, DataFormatError
from ..model.layout import WeightLayout
from ..runtime import memory
from ..runtime.io import atomic_path
from .cqdb import build_cqdb, read_cqdb, u32_at
from .model import Model

MAGIC, MODEL_TYPE, VERSION = b"lCRF", b"FOMC", 100
HEADER_SIZE, CHUNK_SIZE = 48, 12
FEATURES_ID, LABEL_REFS_ID, ATTR_REFS_ID = b"FEAT", b"LFRF", b"AFRF"
STATE, TRANSITION = 0, 1
FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])
"""One stored feature: 20 bytes, packed."""
_MAX_SIZE = 0xFFFFFFFF  # offsets and the file size are uint32


class Header(NamedTuple):
    """The fields of a model file's 48-byte header after the magic and the type."""

    size: int
    version: int
    num_features: int
    num_labels: int
    num_attrs: int
    off_features: int
    off_labels: int
    off_attrs: int
    off_labelrefs: int
    off_attrrefs: int


def is_crfsuite_model(path: str | os.PathLike) -> bool:
    """True when the file at ``path`` starts with CRFsuite's magic ``lCRF`` (loaders
    dispatch on content, not on the file name)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


# ---------------------------------------------------------------------------------------
# Writing


def _check_writable(model: Model) -> None:
    """ConfigError for what CRFsuite's format cannot hold: bias weights, non-finite
    weights, NUL in a string (CQDB keys are C strings), a string given twice."""
    layout, w = model.layout, model.weights
    if model.transition_attributes:
        raise ConfigError(
            f"CRFsuite's model format has transitions that do not read the input, and this "
            f"model has {len(model.transition_attributes)} transition attributes (B templates "
            "with %x): save it in crfsdca's format (model_format='hdf5')")
    bias = layout.bias(w)
    if np.any(bias != 0):
        raise ConfigError(
            f"CRFsuite's model format has no bias features, and {np.count_nonzero(bias)} "
            "bias/first/last weights of this model are nonzero: train with bias=False "
            "(feature.bias false) to write a CRFsuite model")
    if not np.all(np.isfinite(w)):
        raise ConfigError("a CRFsuite model needs finite weights; this model has "
                          f"{np.count_nonzero(~np.isfinite(w))} NaN or infinite ones")
    for what, strings in (("label", model.labels), ("attribute", model.attributes)):
        if len(set(strings)) != len(strings):
            raise ConfigError(f"two {what}s of the model have the same name; CRFsuite maps "
                              f"each {what} name to one id")
        if "\0" in "".join(strings):
            raise ConfigError(f"a {what} name contains NUL, which CRFsuite's strings cannot "
                              "hold")


def _refs_chunk(chunk_id: bytes, start: int, counts: np.ndarray, fids: np.ndarray,
                reserved: int = 0) -> bytes:
    """A refs chunk at file offset ``start`` (a multiple of 4): entry e lists
    ``counts[e]`` feature ids, the next ones of ``fids``; ``reserved`` more entries have
    offset 0 (CRFsuite's label refs reserve two)."""
    n = len(counts)
    num = n + reserved
    counts = counts.astype(np.int64)
    heads = np.arange(n, dtype=np.int64) + np.cumsum(counts) - counts  # each list's count
    body = np.empty(n + len(fids), dtype="<u4")
    is_head = np.zeros(len(body), dtype=bool)
    is_head[heads] = True
    body[heads] = counts
    body[~is_head] = fids
    lists_at = start + CHUNK_SIZE + 4 * num
    offsets = np.zeros(num, dtype="<u4")
    offsets[:n] = lists_at + 4 * heads
    size = CHUNK_SIZE + 4 * num + body.nbytes
    head = chunk_id + np.array([size, num], dtype="<u4").tobytes()
    return head + offsets.tobytes() + body.tobytes()


class _Features(NamedTuple):
    """The features to store, and what the refs chunks need to list them."""

    table: np.ndarray  # FEATURE records: state features, then transitions
    active: np.ndarray  # the attributes kept (those with a nonzero state weight)
    per_attr: np.ndarray  # state features of each kept attribute (contiguous in table)
    per_label: np.ndarray  # transitions from each label (contiguous, after the states)


def _features(E: np.ndarray, W: np.ndarray) -> _Features:
    """The nonzero weights of E (A x K) and W (K x K) as CRFsuite features: state features
    by attribute, then label (the kept attributes renumbered in their order), then
    transitions by source, then destination."""
    A, K = E.shape
    state = np.flatnonzero(E.ravel())
    attr, state_label = np.divmod(state, K)
    trans = np.flatnonzero(W.ravel())
    src, dst = np.divmod(trans, K)
    per_attr = np.bincount(attr, minlength=A)
    active = np.flatnonzero(per_attr)
    table = np.empty(len(state) + len(trans), dtype=FEATURE)
    table["type"] = np.repeat([STATE, TRANSITION], [len(state), len(trans)])
    table["src"] = np.concatenate(((np.cumsum(per_attr > 0) - 1)[attr], src))
    table["dst"] = np.concatenate((state_label, dst))
    table["weight"] = np.concatenate((E.ravel()[state], W.ravel()[trans]))
    return _Features(table, active, per_attr[active], np.bincount(src, minlength=K))


def _encode(model: Model) -> list[bytes]:
    """The chunks of ``model``'s CRFsuite file, in file order, the header first."""
    _check_writable(model)
    layout, w = model.layout, model.weights
    K = layout.n_labels
    feats = _features(layout.emission(w), layout.transition(w))
    table, n_state = feats.table, int(feats.per_attr.sum())
    n_feat = len(table)
    chunks = [b"", FEATURES_ID + np.array([CHUNK_SIZE + table.nbytes, n_feat],
                                          dtype="<u4").tobytes(), table.tobytes()]
    off_features = HEADER_SIZE
    off_labels = off_features + CHUNK_SIZE + table.nbytes
    chunks.append(build_cqdb(model.labels))
    off_attrs = off_labels + len(chunks[-1])
    chunks.append(build_cqdb([model.attributes[a] for a in feats.active.tolist()]))
    end = off_attrs + len(chunks[-1])
    chunks.append(bytes(-end % 4))
    off_labelrefs = end + len(chunks[-1])
    chunks.append(_refs_chunk(LABEL_REFS_ID, off_labelrefs, feats.per_label,
                              np.arange(n_state, n_feat), reserved=2))
    off_attrrefs = off_labelrefs + len(chunks[-1])
    chunks.append(_refs_chunk(ATTR_REFS_ID, off_attrrefs, feats.per_attr,
                              np.arange(n_state)))
    size = off_attrrefs + len(chunks[-1])
    if size > _MAX_SIZE:
        raise ConfigError(f"the CRFsuite model would take {size:,} bytes; its format's "
                          "32-bit offsets address at most 4 GiB")
    fields = [VERSION, 0, K, len(feats.active),  # num_features: 0, as CRFsuite leaves it
              off_features, off_labels, off_attrs, off_labelrefs, off_attrrefs]
    chunks[0] = (MAGIC + np.array([size], dtype="<u4").tobytes() + MODEL_TYPE
                 + np.array(fields, dtype="<u4").tobytes())
    return chunks


def write_crfsuite_model(path: str | os.PathLike, model: Model) -> Path:
    """Write ``model`` to ``path`` (atomically) as CRFsuite 0.12 writes a model: its
    nonzero state and transition weights, all its labels and the attributes with a
    nonzero state weight. ConfigError for a model with bias weights (CRFsuite has none)."""
    path = Path(path)
    chunks = _encode(model)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
    return path


# ---------------------------------------------------------------------------------------
# Reading


def _read_header(buf: np.ndarray, path: Path) -> Header:
    """The header, checked: magic, type, version, the size against the file's."""
    if len(buf) <= HEADER_SIZE:
        raise DataFormatError(path, f"truncated CRFsuite model: {len(buf)} bytes, not even "
                                    f"its {HEADER_SIZE}-byte header and a chunk")
    magic, kind = bytes(buf[:4]), bytes(buf[8:12])
    if magic != MAGIC:
        raise DataFormatError(path, f"not a CRFsuite model: it starts with {magic!r}, "
                                    f"expected {MAGIC!r}")
    if kind != MODEL_TYPE:
        raise DataFormatError(path, f"CRFsuite model type {kind!r}; this reader knows "
                                    f"{MODEL_TYPE!r} (first-order linear-chain CRF)")
    fields = u32_at(buf, [4, *range(12, HEADER_SIZE, 4)]).tolist()
    header = Header(*fields)
    if header.version != VERSION:
        raise DataFormatError(path, f"CRFsuite model version {header.version}; this reader "
                                    f"knows version {VERSION} (CRFsuite 0.12)")
    if header.size != len(buf):
        state = "truncated" if header.size > len(buf) else "damaged"
        raise DataFormatError(path, f"{state} CRFsuite model: its header says "
                                    f"{header.size} bytes, the file has {len(buf)}")
    return header


def _chunk(buf: np.ndarray, offset: int, chunk_id: bytes, path: Path, what: str):
    """(size, count) of the chunk ``chunk_id`` at ``offset``, checked to lie in the file."""
    if offset < HEADER_SIZE or offset + CHUNK_SIZE > len(buf):
        raise DataFormatError(path, f"{what}: chunk offset {offset} is outside the file "
                                    f"({len(buf)} bytes)")
    found = bytes(buf[offset:offset + 4])
    if found != chunk_id:
        raise DataFormatError(path, f"{what}: expected chunk {chunk_id!r} at offset "
                                    f"{offset}, found {found!r}")
    size, count = u32_at(buf, [offset + 4, offset + 8]).tolist()
    if size < CHUNK_SIZE or offset + size > len(buf):
        raise DataFormatError(path, f"{what}: chunk size {size} at offset {offset} runs "
                                    f"past the end of the file ({len(buf)} bytes)")
    return size, count


def _read_features(buf: np.ndarray, header: Header, path: Path) -> np.ndarray:
    """The feature records, checked: types, ids in range, finite weights."""
    at = header.off_features
    size, n = _chunk(buf, at, FEATURES_ID, path, "features")
    if size != CHUNK_SIZE + FEATURE.itemsize * n:
        raise DataFormatError(path, f"features: chunk of {size} bytes for {n} features "
                                    f"(expected {CHUNK_SIZE + FEATURE.itemsize * n})")
    if header.num_features not in (0, n):
        raise DataFormatError(path, f"the header counts {header.num_features} features, "
                                    f"the features chunk {n}")
    feats = np.frombuffer(buf, dtype=FEATURE, count=n, offset=at + CHUNK_SIZE)
    kind, src, dst = (feats[k].astype(np.int64) for k in ("type", "src", "dst"))
    L, A = header.num_labels, header.num_attrs
    src_max = np.where(kind == STATE, A, L)
    bad = np.flatnonzero(((kind != STATE) & (kind != TRANSITION)) | (src >= src_max)
                         | (dst >= L) | ~np.isfinite(feats["weight"]))
    if len(bad):
        f = feats[bad[0]]
        raise DataFormatError(path, f"feature {bad[0]}: type {f['type']}, src {f['src']}, "
                                    f"dst {f['dst']}, weight {f['weight']} (expected type 0 "
                                    f"or 1, ids under A = {A} / L = {L}, a finite weight)")
    return feats


def _read_refs(buf: np.ndarray, offset: int, chunk_id: bytes, entries: int, n_features: int,
               path: Path, what: str):
    """(entry, feature id) of every reference in the refs chunk at ``offset``, checked:
    its first ``entries`` lists lie inside the chunk and name existing features."""
    size, num = _chunk(buf, offset, chunk_id, path, what)
    lists_at = offset + CHUNK_SIZE + 4 * num
    end = offset + size
    if num < entries or lists_at > end:
        raise DataFormatError(path, f"{what}: the chunk has {num} entries in {size} bytes, "
                                    f"expected {entries}")
    starts = u32_at(buf, offset + CHUNK_SIZE + 4 * np.arange(entries))
    outside = np.flatnonzero((starts < lists_at) | (starts + 4 > end))
    if len(outside):
        raise DataFormatError(path, f"{what}: entry {outside[0]} points to offset "
                                    f"{starts[outside[0]]}, outside the chunk")
    counts = u32_at(buf, starts)
    over = np.flatnonzero(starts + 4 + 4 * counts > end)
    if len(over):
        raise DataFormatError(path, f"{what}: the list of entry {over[0]} ({counts[over[0]]} "
                                    "features) runs past the chunk's end")
    total = int(counts.sum())
    if total > n_features:  # each feature is listed once: lists that share words list more
        raise DataFormatError(path, f"{what}: the lists name {total:,} features, there are "
                                    f"{n_features}")
    first = np.cumsum(counts) - counts
    within = np.arange(total, dtype=np.int64) - np.repeat(first, counts)
    fids = u32_at(buf, np.repeat(starts + 4, counts) + 4 * within)
    owner = np.repeat(np.arange(entries, dtype=np.int64), counts)
    if total and fids.max() >= n_features:
        i = int(np.argmax(fids))
        raise DataFormatError(path, f"{what}: entry {owner[i]} lists feature {fids[i]}, "
                                    f"there are {n_features}")
    return owner, fids


def _check_refs(feats: np.ndarray, owner: np.ndarray, fids: np.ndarray, kind: int,
                path: Path, what: str) -> None:
    """Each feature of type ``kind`` is listed once, by its source: what CRFsuite's tagger
    sees through the refs is what the features chunk says."""
    wrong = np.flatnonzero((feats["type"][fids] != kind) | (feats["src"][fids] != owner))
    if len(wrong):
        i = wrong[0]
        raise DataFormatError(path, f"{what}: entry {owner[i]} lists feature {fids[i]} "
                                    f"(type {feats['type'][fids[i]]}, src "
                                    f"{feats['src'][fids[i]]}), not one of its own")
    listed = np.bincount(fids, minlength=len(feats))
    unlisted = np.flatnonzero(listed != (feats["type"] == kind))
    if len(unlisted):
        f = unlisted[0]
        raise DataFormatError(path, f"{what}: feature {f} is listed {listed[f]} times "
                                    f"(type {feats['type'][f]})")


def _weights(feats: np.ndarray, A: int, L: int, path: Path) -> np.ndarray:
    """The flat weight vector (bias 0) of the features: state weights of an (attribute,
    label) pair add up, as CRFsuite's tagger adds them; a transition must be unique."""
    kind = feats["type"]
    src, dst = feats["src"].astype(np.int64), feats["dst"].astype(np.int64)
    weight = feats["weight"]
    s, t = kind == STATE, kind == TRANSITION
    emission = np.bincount(src[s] * L + dst[s], weights=weight[s], minlength=A * L)
    pairs = src[t] * L + dst[t]
    unique = np.unique(pairs)
    if len(unique) != len(pairs):
        dup = int(unique[np.flatnonzero(np.bincount(pairs)[unique] > 1)[0]])
        raise DataFormatError(path, f"two transition features from label {dup // L} to "
                                    f"label {dup % L}")
    transition = np.zeros(L * L)
    transition[pairs] = weight[t]
    return np.concatenate((emission, np.zeros(3 * L), transition))


def _read_bytes(path: Path) -> np.ndarray:
    """The file's bytes; DataFormatError if it cannot be read."""
    try:
        return np.frombuffer(path.read_bytes(), dtype=np.uint8)
    except FileNotFoundError:
        raise DataFormatError(path, "no such file; expected a CRFsuite model") from None
    except OSError as e:
        raise DataFormatError(path, f"cannot read the CRFsuite model ({e.strerror or e})") \
            from None


def read_crfsuite_model(path: str | os.PathLike) -> Model:
    """Read a CRFsuite model file (written by CRFsuite or
    [`write_crfsuite_model`][crfsdca.formats.crfsuite_model.write_crfsuite_model]):
    labels and attributes in CRFsuite's id order, its weights, bias weights 0.

    Everything read is checked (sizes, offsets, ids, the refs against the features,
    finite weights): a damaged or truncated file raises DataFormatError naming it.
    """
    path = Path(path)
    buf = _read_bytes(path)
    header = _read_header(buf, path)
    feats = _read_features(buf, header, path)
    A, L = header.num_attrs, header.num_labels
    labels = read_cqdb(buf, header.off_labels, path, "labels", L)
    attributes = read_cqdb(buf, header.off_attrs, path, "attributes", A)
    for offset, chunk_id, entries, kind, what in (
            (header.off_labelrefs, LABEL_REFS_ID, L, TRANSITION, "label refs"),
            (header.off_attrrefs, ATTR_REFS_ID, A, STATE, "attribute refs")):
        owner, fids = _read_refs(buf, offset, chunk_id, entries, len(feats), path, what)
        _check_refs(feats, owner, fids, kind, path, what)
    for what, strings in (("label", labels), ("attribute", attributes)):
        if len(set(strings)) != len(strings):
            raise DataFormatError(path, f"two {what}s have the same name")
    dim = WeightLayout(A, L).dim
    memory.check(16 * dim, f"{path}: the model's {dim:,} weights ({A:,} attributes, {L:,} "
                           "labels)", "a damaged file, or a model too large for this machine")
    weights = _weights(feats, A, L, path)
    return Model(labels, attributes, weights, {"format": "crfsuite",
                                               "crfsuite_version": header.version}, {})
