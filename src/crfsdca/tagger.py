"""python-crfsuite's ``Tagger`` on crfsdca's decoder: labels, Viterbi labeling, sequence
probability and marginals of one item sequence at a time.

Same methods, arguments, results and exception types as ``pycrfsuite.Tagger`` (checked
against it by ``tests/model/test_tagger.py``). The model is a file, CRFsuite's binary model
([`crfsdca.formats.crfsuite_model`][crfsdca.formats.crfsuite_model]) or crfsdca's own
([`crfsdca.model_file`][crfsdca.model_file]), or an in-memory
[`Model`][crfsdca.model_file.Model] ([`Tagger.from_model`][crfsdca.tagger.Tagger.from_model]);
crfsdca's bias weights (every, first, last position) enter every score, as in training.
Items are read as ``crfsdca.data.items`` reads them (python-crfsuite's formats, plus lists
of ``(name, weight)`` pairs); attributes the model lacks are ignored, as CRFsuite does. A
``pycrfsuite.ItemSequence`` is read through its ``items()``, which keeps one of the repeats
of an attribute in an item (python-crfsuite's own tagger adds their weights).

Where python-crfsuite behaves so, so does this: a tagger with no model raises ValueError
("The tagger is not opened"), and ``info()`` RuntimeError; with no sequence set (or an
empty one) ``tag()`` gives ``[]`` and ``probability``/``marginal`` give 0.0; a label the
model lacks raises [`UnknownLabelError`][crfsdca.tagger.UnknownLabelError], a RuntimeError
(python-crfsuite's type) that is also a ValueError. Where python-crfsuite crashes (an item
that is not a list or dict: SystemError), this raises ValueError.

The state of a set sequence is kept: its unary scores once, log Z and the marginals on
first use, so that ``marginal`` for every label and position costs one forward-backward.
It is kept per thread, so that threads may share a tagger, each with its own sequence.

crfsdca's additions: the n best labelings (``tag(xseq, n_best=k)``), constrained decoding
(``constraints``, ``forced``: ``crfsdca.model.constraints``) and the pairwise marginals
(``pairwise_marginal``); a tagger pickles (its model).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import operator
import os
import tempfile
import threading
from collections.abc import Mapping
from itertools import chain, repeat
from operator import itemgetter

import numpy as np

from .data.items import _DICT, _STR, _VALUE_TYPES, add_sequence, pair_names, pair_weights
from .data.sequences import NO_VALUES, Sequences
from .data.transitions import known_split
from .model.constraints import constraint_masks, forced_of_one
from .model.decoding import (
    NO_FORCED,
    Chain,
    check_n_best,
    feasible,
    infeasible,
    make_chain,
    mask_scores,
    masked_edge_tables,
    n_best,
    n_best_buffers,
)
from .model.oracle import (
    NO_LABELS,
    edge_tables,
    entry_scores,
    make_workspace,
    strided_labeling_score,
    strided_logz,
    strided_marginals,
    strided_viterbi,
    transition_offset,
    unary_scores,
    viterbi,
)
from .model_file import Model, load_model

__all__ = ["ParsedDump", "Tagger", "UnknownLabelError"]

_NOT_OPENED = "The tagger is not opened"


class UnknownLabelError(RuntimeError, ValueError):
    """A label the model does not have (python-crfsuite raises RuntimeError)."""


class ParsedDump:
    """A model's content, as ``pycrfsuite.Tagger.info()`` gives it (``ParsedDump``).

    ``header``: {field: str}; ``labels``, ``attributes``: {name: id as str} (strings, as
    python-crfsuite parses them from CRFsuite's dump); ``transitions``: {(from, to):
    weight}; ``state_features``: {(attribute, label): weight}; and, crfsdca's own,
    ``bias``: {(label, "every" | "first" | "last"): weight} and
    ``transition_attributes``: {(transition attribute, from, to): weight} (W_B; empty
    without). Only nonzero weights are listed, at full precision (python-crfsuite's are
    rounded to 6 decimals).
    """

    def __init__(self):
        self.header: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.attributes: dict[str, str] = {}
        self.transitions: dict[tuple[str, str], float] = {}
        self.state_features: dict[tuple[str, str], float] = {}
        self.bias: dict[tuple[str, str], float] = {}
        self.transition_attributes: dict[tuple[str, str, str], float] = {}


def _load(name) -> Model:
    """Read the model file ``name``, whichever its format
    ([`load_model`][crfsdca.model_file.load_model] tells CRFsuite's binary model from
    crfsdca's own by content)."""
    path = os.fspath(name)
    with open(path, "rb"):  # FileNotFoundError / IsADirectoryError, as python-crfsuite
        pass
    return load_model(path)


def _xseq_items(xseq):
    """The items of a sequence (the list of a ``pycrfsuite.ItemSequence``), or ValueError."""
    if isinstance(xseq, (str, bytes, Mapping)):
        raise ValueError(f"expected a sequence of items, got {type(xseq).__name__}")
    items = getattr(xseq, "items", None)
    if callable(items) and not hasattr(xseq, "__iter__"):
        return items()  # pycrfsuite.ItemSequence (not iterable): {name: weight} dicts
    return xseq


_LISTS = {list, tuple}


def _list_ids(items: list, get) -> np.ndarray | None:
    """The attribute id of every entry (-1 if the model lacks it) of a sequence whose
    items are all lists of strings (CRFsuite's binary attributes), or None for any other
    sequence.

    Every entry is looked up at once, unknown ones as -1 (C-level passes: this is most of
    the time of ``tag``). An entry that is not a str is unknown too, or unhashable, so
    only the unknown entries need a second look."""
    if not set(map(type, items)) <= _LISTS:
        return None
    flat = list(chain.from_iterable(items))
    try:
        ids = np.fromiter(map(get, flat, repeat(-1)), dtype=np.int32, count=len(flat))
    except TypeError:  # an unhashable entry (a list)
        return None
    if any(type(flat[j]) is not str or "\0" in flat[j]  # a NUL: read item by item
           for j in np.flatnonzero(ids < 0).tolist()):
        return None
    return ids


def encode_sequence(xseq, attribute_ids: dict[str, int]) -> Sequences:
    """One item sequence as a one-sequence split in the ids of ``attribute_ids`` (labels
    0); unknown attributes are dropped, a repeated one adds its weights."""
    items = list(_xseq_items(xseq))
    ids = _list_ids(items, attribute_ids.get)
    if ids is not None:
        indptr = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, items), dtype=np.int64, count=len(items)),
                  out=indptr[1:])
        indptr, ids = _drop_unknown(indptr, ids, ids >= 0)
        values = NO_VALUES
    else:
        indptr, ids, values = _item_split(items, attribute_ids)
    T = len(items)
    return Sequences(np.array([0, T], dtype=np.int64), np.zeros(T, dtype=np.int32), indptr,
                     ids, values)


class PairIds:
    """The dict items' (key, value) pairs met so far, each with its attribute id (-1 if
    the model lacks it) and weight: sklearn-crfsuite's features repeat most pairs from
    sentence to sentence, and a pair met before is looked up without making its name.
    Emptied when it would hold more than ``limit`` pairs (some 200 bytes each). Not for
    several threads at once: a tagger keeps one per thread."""

    limit = 1 << 18

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.rows: dict = {}  # (key, value) -> its row of attr and weight
        self.attr = np.empty(1024, dtype=np.int32)
        self.weight = np.empty(1024)

    def extend(self, pairs: list[tuple], attr: list[int], weight: list[float]) -> None:
        """Add pairs not met before, with their attribute ids and weights."""
        first, m = len(self.rows), len(pairs)
        if first + m > len(self.attr):
            size = max(2 * len(self.attr), first + m)
            self.attr = np.concatenate([self.attr[:first], np.empty(size - first, np.int32)])
            self.weight = np.concatenate([self.weight[:first], np.empty(size - first)])
        self.attr[first:first + m] = attr
        self.weight[first:first + m] = weight
        self.rows.update(zip(pairs, range(first, first + m), strict=True))


def _pair_rows(items: list, ids: dict[str, int], pairs: PairIds) -> np.ndarray | None:
    """The rows in ``pairs`` of the (key, value) entries of a sequence whose items are all
    flat dicts with str keys and str or number values (sklearn-crfsuite's features), the
    pairs not met before added; None for any other sequence (which
    ``encode_sequence`` then reads, and reports a bad item of)."""
    if not (set(map(type, items)) <= _DICT
            and set(map(type, chain.from_iterable(map(dict.values, items)))) <= _VALUE_TYPES):
        return None  # every value's type: one equal to a pair met before (1 == 1 + 0j) too
    n = sum(map(len, items))
    try:
        rows = _rows(items, pairs, n)
    except TypeError:  # an unhashable value
        return None
    if not n or rows.min() >= 0:
        return rows
    if len(pairs.rows) + n > pairs.limit:
        pairs.clear()
        rows[:] = -1
    flat = list(chain.from_iterable(map(dict.items, items)))
    missing = np.flatnonzero(rows < 0).tolist()
    new = list(dict.fromkeys(map(flat.__getitem__, missing)))
    keys = list(map(itemgetter(0), new))
    values = list(map(itemgetter(1), new))
    if not set(map(type, keys)) <= _STR:
        return None
    weights = pair_weights(values)  # OverflowError, as item by item
    if not all(map(math.isfinite, weights)):  # item by item, which reports it
        return None
    names = pair_names(keys, values)
    if "\0" in "".join(names):  # a name ends at its NUL: the item-by-item path reads it so
        return None
    pairs.extend(new, list(map(ids.get, names, repeat(-1))), weights)
    rows[missing] = list(map(pairs.rows.__getitem__, map(flat.__getitem__, missing)))
    return rows


def _rows(items: list, pairs: PairIds, n: int) -> np.ndarray:
    """The row of every pair of ``items`` in ``pairs`` (-1 for a pair not met before):
    one C-level pass over the items' own (key, value) tuples."""
    return np.fromiter(map(pairs.rows.get, chain.from_iterable(map(dict.items, items)),
                           repeat(-1)), dtype=np.int64, count=n)


def _item_split(items: list, ids: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, attribute ids, weights) of a sequence of any items, by the encoder of
    training (``crfsdca.data.items.add_sequence``; unknown attributes left out)."""
    indices, values, counts = [], [], []
    add_sequence(items, ids, False, indices, values, counts)
    indptr = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(np.array(counts, dtype=np.int64), out=indptr[1:])
    indices = np.array(indices, dtype=np.int32)
    known = indices >= 0  # the model's attributes
    indptr, indices = _drop_unknown(indptr, indices, known)
    return indptr, indices, _weights(np.array(values, dtype=np.float64)[known])


def _drop_unknown(indptr: np.ndarray, ids: np.ndarray, known: np.ndarray):
    """(indptr, ids) of a split without the entries that are not ``known``."""
    if known.all():
        return indptr, ids
    kept = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(known, out=kept[1:])
    return kept[indptr], ids[known]


def _weights(values: list[float]) -> np.ndarray:
    """The weights array of a split: NO_VALUES if all are 1; ValueError if one is not finite."""
    vals = np.array(values, dtype=np.float64)
    if np.all(vals == 1.0):
        return NO_VALUES
    if not np.all(np.isfinite(vals)):
        raise ValueError("attribute values must be finite numbers")
    return vals


class _Decoder:
    """A model made ready to decode: vocabularies as dicts, the model's chain and those of
    the constraints asked for. Read-only once made (the cache of chains aside, whose
    entries are only added), so that threads share it. A model with transition
    attributes (``E`` > 0) knows them by name after its attributes (ids A to A + E - 1)."""

    def __init__(self, model: Model):
        self.model = model
        self.w = model.weights
        self.labels = list(model.labels)
        self.A, self.K = len(model.attributes), len(model.labels)
        self.E = len(model.transition_attributes)
        self.label_ids = {lab: k for k, lab in enumerate(self.labels)}
        self.attribute_ids = {a: i for i, a in
                              enumerate(model.attributes + model.transition_attributes)}
        self.plain = make_chain(self.w, self.A, self.K, None)
        self.chains: dict = {}

    def chain(self, constraints) -> Chain:
        """The chain under ``constraints`` (None, a scheme, forbidden pairs), made once."""
        if constraints is None:
            return self.plain
        try:
            key = constraints if isinstance(constraints, str) else frozenset(
                c if isinstance(c, str) else tuple(c) for c in constraints)
            found = self.chains.get(key)
        except TypeError:  # unhashable or not pairs: made, and its error raised, below
            key = found = None
        if found is None:
            found = make_chain(self.w, self.A, self.K,
                               constraint_masks(constraints, self.labels))
            if key is not None:
                self.chains[key] = found
        return found

    def entries(self, items: list, pairs: PairIds) -> tuple[np.ndarray, np.ndarray] | None:
        """(attribute ids, weights) of every entry of a sequence of the common items, lists
        of strings or flat dicts (``entry_scores``'s input), or None for others and for
        every sequence of a model with transition attributes."""
        if self.E:
            return None
        ids = _list_ids(items, self.attribute_ids.get)
        if ids is not None:
            return ids, NO_VALUES
        rows = _pair_rows(items, self.attribute_ids, pairs)
        if rows is not None:
            return pairs.attr[rows], pairs.weight[rows]
        return None

    def label_id(self, label) -> int:
        """The id of a label (str, or UTF-8 bytes as python-crfsuite takes them)."""
        k = self.label_ids.get(label)
        if k is not None:
            return k
        if isinstance(label, bytes):
            return self.label_id(label.decode("utf-8"))
        if not isinstance(label, str):
            raise TypeError(f"a label must be a str, got {type(label).__name__}")
        raise UnknownLabelError(f"Failed to convert into label identifier: {label}")


class _Sequence:
    """One thread's side of a tagger: its workspace and cache of item pairs, and the
    sequence it set (its masked unary scores, its chain, log Z and the marginals once
    computed; with transition attributes, its edges' masked tables ``G``, their
    exponentials ``etrans`` and their max ``gmax``)."""

    def __init__(self, decoder: _Decoder):
        self.decoder = decoder
        self.pairs = PairIds()
        self.ws = None
        self.buffers = None
        self.G = self.etrans = None
        self.gmax = 0.0
        self.reserve(8)
        self.clear()

    def transitions(self) -> tuple:
        """(tw, ow, stride, trans, tmax) of the set sequence's transitions, as the
        oracle's ``strided_*`` functions take them."""
        if self.decoder.E:
            return self.G, 0, self.decoder.K ** 2, self.etrans, self.gmax
        c = self.chain
        return c.tw, transition_offset(c.tA, self.decoder.K), 0, c.trans, c.tmax

    def n_best_buffers(self, k: int) -> tuple:
        """``n_best``'s buffers for k labelings of the workspace's length, kept."""
        size = len(self.ws.scale)
        if self.buffers is None or self.buffers[0] != (k, size):
            self.buffers = ((k, size), n_best_buffers(size, self.decoder.K, k))
        return self.buffers[1]

    def clear(self) -> None:
        self.T = 0
        self.chain = self.decoder.plain
        self.logz: float | None = None
        self.unary: list[list[float]] | None = None
        self.pair: np.ndarray | None = None

    def reserve(self, T: int) -> None:
        """Make the workspace hold a sequence of T tokens (grown by doubling)."""
        if self.ws is not None and len(self.ws.scale) >= T:
            return
        size = max(T, 2 * len(self.ws.scale) if self.ws is not None else 2)
        self.ws = make_workspace(size, self.decoder.K)
        if self.decoder.E:
            self.G, self.etrans = (edge_tables(size, self.decoder.K) for _ in range(2))

    def log_z(self) -> float:
        if self.logz is None:
            tw, ow, stride, trans, tmax = self.transitions()
            self.logz = float(strided_logz(self.ws._replace(trans=trans), self.T,
                                           self.decoder.K, tmax, tw, ow, stride))
        return self.logz

    def marginals(self) -> list[list[float]]:
        """The unary marginals of the set sequence ([t][k], floats), computed once with
        the pairwise ones."""
        if self.unary is None:
            T, K = self.T, self.decoder.K
            tw, ow, stride, trans, tmax = self.transitions()
            ws = self.ws._replace(trans=trans)
            self.logz = float(strided_marginals(ws, T, K, tw, ow, tmax, 0.0, NO_LABELS, 0,
                                                False, stride)[0])
            self.unary = ws.unary[:T * K].reshape(T, K).tolist()
            self.pair = ws.pair[:(T - 1) * K * K].reshape(T - 1, K, K).copy()
        return self.unary


class Tagger:
    """Predicts label sequences with a model: python-crfsuite's ``Tagger``.

    ``open(name)`` a model file (or ``open_inmemory(data)``, or ``Tagger.from_model``),
    then ``tag(xseq)``; ``set(xseq)`` keeps a sequence for ``tag()``, ``probability``,
    ``marginal`` and ``pairwise_marginal``. ``open`` returns ``contextlib.closing(tagger)``
    as python-crfsuite's does; the tagger is also a context manager itself.

    crfsdca's additions: ``tag(xseq, n_best=k)`` gives the k best labelings with their
    probabilities; ``set`` and ``tag`` take ``constraints`` and ``forced`` labels, under
    which every result is that of the constrained distribution
    (``crfsdca.model.constraints``). Several threads may use one tagger at once: the
    set sequence is per thread (each thread sees the one it set). A tagger pickles with
    its model (not the set sequences). Opening or closing a model while other threads
    tag is not supported.
    """

    def __init__(self):
        self._d: _Decoder | None = None
        self._local = threading.local()

    @classmethod
    def from_model(cls, model: Model) -> Tagger:
        """A tagger of an in-memory model (``CRF.model_``)."""
        tagger = cls()
        tagger._d = _Decoder(model)
        return tagger

    def __getstate__(self):
        return {"model": None if self._d is None else self._d.model}

    def __setstate__(self, state) -> None:
        self.__init__()
        if state["model"] is not None:
            self._d = _Decoder(state["model"])

    def _decoder(self) -> _Decoder:
        if self._d is None:
            raise ValueError(_NOT_OPENED)
        return self._d

    def _sequence(self) -> _Sequence:
        """This thread's side of the tagger, made anew for a model opened since."""
        d = self._decoder()
        s = getattr(self._local, "seq", None)
        if s is None or s.decoder is not d:
            s = self._local.seq = _Sequence(d)
        return s

    # ------------------------------------------------------------------ the model
    def open(self, name):
        """Load the model file ``name``; returns ``contextlib.closing(self)``.

        A file that is no model raises ValueError, a missing one FileNotFoundError; the
        model open before (if any) stays open then.
        """
        self._d = _Decoder(_load(name))
        return contextlib.closing(self)

    def open_inmemory(self, value: bytes):
        """Load a model from the bytes of a model file; returns ``contextlib.closing(self)``."""
        if not isinstance(value, bytes):
            raise TypeError(f"expected bytes, got {type(value).__name__}")
        fd, name = tempfile.mkstemp(suffix=".model")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(value)
            return self.open(name)
        finally:
            os.unlink(name)

    def close(self) -> None:
        """Close the model (a closed tagger may open another)."""
        self._d = None

    def __enter__(self) -> Tagger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def labels(self) -> list[str]:
        """The model's labels, in id order."""
        return list(self._decoder().labels)

    def info(self) -> ParsedDump:
        """The model's labels, attributes and nonzero weights
        ([`ParsedDump`][crfsdca.tagger.ParsedDump])."""
        if self._d is None:
            raise RuntimeError("Tagger is closed")
        return _parsed_dump(self._d.model)

    # ------------------------------------------------------------------ one sequence
    def set(self, xseq, constraints=None, forced=None) -> None:
        """Keep the item sequence ``xseq`` for ``tag()``, ``probability``, ``marginal`` and
        ``pairwise_marginal``, under ``constraints`` (None, ``"BIO"``, ``"BIOES"``,
        ``"IOB1"`` or forbidden (label_from, label_to) pairs) and ``forced`` labels
        ({position: label}). A bad sequence or constraint, or one that no labeling
        satisfies, raises ValueError and keeps the sequence set before."""
        self._set(xseq, constraints, forced)

    def _set(self, xseq, constraints, forced) -> _Sequence:
        s = self._sequence()
        d = s.decoder
        items = list(_xseq_items(xseq))
        T = len(items)
        entries = d.entries(items, s.pairs)  # a bad item raises here
        seq = None if entries is not None else known_split(
            encode_sequence(items, d.attribute_ids), d.A, d.E)
        chain, fixed = d.plain, NO_FORCED
        if constraints is not None or forced is not None:
            chain = d.chain(constraints)
            fixed = NO_FORCED if forced is None else forced_of_one(forced, T, d.label_ids)
            if not feasible(T, d.K, chain.tw, chain.tA, chain.first, chain.last,
                            fixed.positions, fixed.labels, 0, len(fixed.labels)):
                raise infeasible("the sequence")
        s.reserve(T)
        ws = s.ws
        if entries is not None:
            entry_scores(d.w, d.A, d.K, np.fromiter(map(len, items), np.int64, T), *entries,
                         ws.scores)
        elif T:
            unary_scores(d.w, d.A, d.K, seq, 0, ws.scores)
        if T and (chain is not d.plain or len(fixed.labels)):
            mask_scores(ws.scores, T, d.K, chain.first, chain.last, fixed.positions,
                        fixed.labels, 0, len(fixed.labels))
        if T and d.E:
            s.gmax = masked_edge_tables(d.w, d.A, d.K, seq, 0, chain.pairs, s.G, s.etrans)
        s.clear()
        s.T = T
        s.chain = chain
        return s

    def tag(self, xseq=None, n_best=None, constraints=None, forced=None) -> list:
        """The most likely labels (Viterbi) of ``xseq``, or of the sequence set last.

        ``n_best=k``: instead, the k best labelings, best first, as (labels, probability)
        pairs (fewer if fewer are allowed; none for an empty sequence). ``constraints``
        and ``forced`` as ``set`` takes them, with ``xseq``."""
        if xseq is not None:
            s = self._set(xseq, constraints, forced)
        elif constraints is not None or forced is not None:
            raise ValueError("constraints and forced labels come with a sequence: "
                             "tag(xseq, ...) or set(xseq, ...)")
        else:
            s = self._sequence()
        many = None if n_best is None else check_n_best(n_best)
        T = s.T
        if not T:
            return []
        if many is not None:
            return self._n_best(s, many)
        d, ws, c = s.decoder, s.ws, s.chain
        if d.E:
            strided_viterbi(ws.scores, T, d.K, s.G, 0, d.K ** 2, ws.emit, ws.back, ws.path)
        else:
            viterbi(ws.scores, T, d.K, c.tw, c.tA, ws.emit, ws.back, ws.path)
        names = d.labels
        return [names[k] for k in ws.path[:T].tolist()]

    def _n_best(self, s: _Sequence, k: int) -> list[tuple[list[str], float]]:
        T, K, names = s.T, s.decoder.K, s.decoder.labels
        tw, ow, stride, _, _ = s.transitions()
        bufs = s.n_best_buffers(k)
        found = n_best(s.ws.scores, T, K, tw, ow, stride, k, *bufs)
        paths, scores = bufs[-2][:found * T].reshape(found, T).tolist(), bufs[-1]
        logz = s.log_z()
        return [([names[y] for y in path], math.exp(scores[r] - logz))
                for r, path in enumerate(paths)]

    def probability(self, yseq) -> float:
        """P(yseq | x) of the labels ``yseq`` for the sequence set last (0.0 if none)."""
        s = self._sequence()
        d = s.decoder
        T = s.T
        if not T:
            return 0.0
        yseq = list(yseq)
        if len(yseq) != T:
            raise ValueError(f"The numbers of items and labels differ: |x| = {T}, "
                             f"|y| = {len(yseq)}")
        y = np.array([d.label_id(lab) for lab in yseq], dtype=np.int32)
        tw, ow, stride, _, _ = s.transitions()
        score = strided_labeling_score(s.ws.scores, T, d.K, tw, ow, stride, y, 0)
        return math.exp(score - s.log_z())

    def marginal(self, y, pos) -> float:
        """p(y_pos = y | x) for the sequence set last (0.0 if none)."""
        s = self._sequence()
        T = s.T
        if not T:
            return 0.0
        t = pos if type(pos) is int else _position(pos)
        if not 0 <= t < T:
            raise ValueError(f"The position {t} is out of range of {T}")
        k = s.decoder.label_ids.get(y)
        if k is None:
            k = s.decoder.label_id(y)  # bytes, or UnknownLabelError
        rows = s.unary if s.unary is not None else s.marginals()
        return rows[t][k]

    def pairwise_marginal(self, y_from, y_to, pos) -> float:
        """p(y_pos = y_from, y_pos+1 = y_to | x) for the sequence set last (0.0 if none);
        ``pos`` from 0 to the sequence's length - 2."""
        s = self._sequence()
        T = s.T
        if not T:
            return 0.0
        t = pos if type(pos) is int else _position(pos)
        if not 0 <= t < T - 1:
            raise ValueError(f"The position {t} is out of range of the {T - 1} transitions "
                             f"of {T} items")
        a, b = s.decoder.label_id(y_from), s.decoder.label_id(y_to)
        if s.unary is None:
            s.marginals()
        return float(s.pair[t, a, b])


def _position(pos) -> int:
    """A position as python-crfsuite takes it: an integer, or a number cut to one."""
    return int(pos) if isinstance(pos, numbers.Real) else operator.index(pos)


def _parsed_dump(model: Model) -> ParsedDump:
    """The [`ParsedDump`][crfsdca.tagger.ParsedDump] of a model (the fields of ``crfsdca dump``)."""
    out = ParsedDump()
    w, layout = model.weights, model.layout
    E, B, W = layout.emission(w), layout.bias(w), layout.transition(w)
    labels, attributes = model.labels, model.attributes
    out.header = {"format": str(model.options.get("format", "crfsdca-model")),
                  "num_features": str(int(np.count_nonzero(w))),
                  "num_labels": str(len(labels)), "num_attrs": str(len(attributes))}
    out.labels = {lab: str(k) for k, lab in enumerate(labels)}
    out.attributes = {a: str(i) for i, a in enumerate(attributes)}
    for k, j in zip(*np.nonzero(W), strict=True):
        out.transitions[labels[k], labels[j]] = float(W[k, j])
    for a, k in zip(*np.nonzero(E), strict=True):
        out.state_features[attributes[a], labels[k]] = float(E[a, k])
    for k, c in zip(*np.nonzero(B), strict=True):
        out.bias[labels[k], ("every", "first", "last")[c]] = float(B[k, c])
    WB, names = layout.edges(w), model.transition_attributes
    for e, k, j in zip(*np.nonzero(WB), strict=True):
        out.transition_attributes[names[e], labels[k], labels[j]] = float(WB[e, k, j])
    return out
