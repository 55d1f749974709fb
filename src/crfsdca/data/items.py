"""Items (tokens) as python-crfsuite reads them, vocabularies, and their encoding into splits.

An item is one of (python-crfsuite's ``ItemSequence`` semantics, checked against it by the
tests):

- a dict: a str (or UTF-8 bytes) value gives the attribute ``name:value`` with weight 1;
  a bool, int or float value gives the attribute ``name`` with that weight; a nested dict,
  list or set gives ``name:`` followed by each of its attributes;
- a list, tuple or set of strings: one attribute of weight 1 per string;
- a list of ``(name, value)`` pairs (an extension: what CRFsuite's data files hold), which
  may be mixed with plain strings;
- in a dict, a numpy array of shape (d,) under ``name`` (an extension: vector attributes)
  gives the d attributes ``name[0]``, ..., ``name[d-1]`` with its values as weights; a
  corpus's arrays are encoded as a dense block (:mod:`crfsdca.data.dense`).

An attribute given twice in one item adds its weights, as CRFsuite's scores do. Labels and
attributes get ids in order of first occurrence in the training data, as CRFsuite has them;
attributes unknown to a model are ignored when tagging, as CRFsuite does.
"""

from __future__ import annotations

import gc
import hashlib
import numbers
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain, count, islice, repeat
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from .dense import array_attributes, has_arrays, take_arrays
from .sequences import Sequences, make_sequences


def _text(key, where: str, what: str = "an attribute name") -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8")
    raise ValueError(f"{where}: {what} must be a str or bytes, got "
                     f"{type(key).__name__} {key!r}")


def _weight(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)):
        return 1.0 if value else 0.0
    if isinstance(value, numbers.Real):
        return float(value)
    raise ValueError(f"attribute {name!r}: a value must be a str, bytes, bool, number, dict, "
                     f"list or set, got {type(value).__name__} {value!r}")


def item_attributes(item, prefix: str = "") -> list[tuple[str, float]]:
    """The (attribute, weight) pairs of one item, in python-crfsuite's order."""
    out: list[tuple[str, float]] = []
    if isinstance(item, Mapping):
        for key, value in item.items():
            name = prefix + _text(key, "item")
            if isinstance(value, str):
                out.append((f"{name}:{value}", 1.0))
            elif isinstance(value, bytes):
                out.append((f"{name}:{value.decode('utf-8')}", 1.0))
            elif isinstance(value, (Mapping, list, set, tuple, frozenset)):
                out.extend(item_attributes(value, name + ":"))
            elif isinstance(value, np.ndarray):
                out.extend(array_attributes(name, value))
            else:
                out.append((name, _weight(value, name)))
    elif isinstance(item, (list, tuple, set, frozenset)):
        for entry in item:
            if isinstance(entry, tuple):
                if len(entry) != 2:
                    raise ValueError(f"an attribute pair must be (name, value), got {entry!r}")
                name = prefix + _text(entry[0], "item")
                out.append((name, _weight(entry[1], name)))
            else:
                out.append((prefix + _text(entry, "item"), 1.0))
    else:
        raise ValueError(f"an item must be a dict or a list of attributes, got "
                         f"{type(item).__name__} {item!r}")
    return out


class Vocabulary:
    """Strings to ids in order of first occurrence."""

    def __init__(self, strings: Iterable[str] = ()):
        self.ids: dict[str, int] = {}
        for s in strings:
            self.ids.setdefault(s, len(self.ids))

    def __len__(self) -> int:
        return len(self.ids)

    def strings(self) -> list[str]:
        return list(self.ids)

    def add(self, s: str) -> int:
        return self.ids.setdefault(s, len(self.ids))


def sequence_digest(xseq_attrs: list[list[tuple[str, float]]], yseq: Sequence[str]) -> bytes:
    """A 16-byte digest of one labeled sequence (its attributes, weights and labels).

    Continued training recognizes the sequences it has already seen by it.
    """
    h = hashlib.blake2b(digest_size=16)
    for attrs, label in zip(xseq_attrs, yseq, strict=True):
        h.update(label.encode("utf-8") + b"\x00")
        for name, value in attrs:
            h.update(name.encode("utf-8") + b"\x01" + np.float64(value).tobytes())
        h.update(b"\x02")
    return h.digest()


class Encoded(NamedTuple):
    """A split built by :func:`encode`, the digest of each sequence (if asked for), and the
    (attribute, token) pairs given with weight 0, which the split leaves out but CRFsuite
    makes state features of (an int64 array of shape (m, 2))."""

    seq: Sequences
    digests: list[bytes]
    zero_entries: np.ndarray


def encode(X, y, attributes: Vocabulary, labels: Vocabulary, grow: bool,
           grow_labels: bool | None = None, digests: bool = False) -> Encoded:
    """Encode sequences of items (and their labels, if ``y`` is not None) as a split.

    With ``grow``, unseen attributes and labels get new ids (training); otherwise unseen
    attributes are dropped (tagging) and an unseen label is an error, unless
    ``grow_labels`` (evaluation: a label the model lacks gets an id after the model's).
    Within a token, ids are sorted and unique (weights of repeats added); entries of weight
    0 are dropped (they add nothing to any score). Array values (vector attributes) become
    the split's dense block, its columns named ``name[j]``: new ones get ids after the
    corpus's other attributes with ``grow``; otherwise unknown columns are dropped.
    """
    with _no_cyclic_gc():
        return _encode(X, y, attributes, labels, grow, grow_labels, digests)


@contextmanager
def _no_cyclic_gc():
    """Pause Python's cyclic garbage collector: encoding creates millions of objects
    (names, key-value pairs) and no cycle, and each full collection would walk every
    item of the corpus (a quarter of encoding's time, measured on CoNLL-2002 Dutch).
    The pause is the process's (gc has no other kind): other threads run without cyclic
    collection meanwhile, and gc is enabled again at the end if it was at the start."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _encode(X, y, attributes, labels, grow, grow_labels, digests) -> Encoded:
    X = list(X)
    if y is not None:
        y = list(y)
        if len(X) != len(y):
            raise ValueError(f"X has {len(X)} sequences but y has {len(y)}")
    lengths, label_ids, label_seqs = [], [], []
    grow_labels = grow if grow_labels is None else grow_labels
    for i, xseq in enumerate(X):
        try:
            if isinstance(xseq, (str, bytes, Mapping)):
                raise ValueError(f"sequence {i}: expected a list of items, got "
                                 f"{type(xseq).__name__}")
            if type(xseq) is not list:
                X[i] = xseq = list(xseq)
            if not xseq:
                raise ValueError(f"sequence {i} is empty")
            if y is not None:
                yseq = y[i]
                if type(yseq) is not list or not set(map(type, yseq)) <= _STR:
                    yseq = [_text(lab, f"sequence {i}", "a label") for lab in yseq]
                if len(yseq) != len(xseq):
                    raise ValueError(f"sequence {i} has {len(xseq)} items but {len(yseq)} "
                                     "labels")
                label_ids.extend(_label_ids(yseq, labels, grow_labels, i))
                label_seqs.append(yseq)
        except ValueError:  # a bad item of an earlier sequence is reported first
            _item_entries(X[:i], dict(attributes.ids), grow)
            raise
        lengths.append(len(xseq))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
    n_tokens = int(offsets[-1])
    lab = (np.asarray(label_ids, dtype=np.int32) if y is not None
           else np.zeros(n_tokens, dtype=np.int32))
    entries = _corpus_entries(X, attributes.ids, grow)
    block = None
    if entries is None and has_arrays(X):  # (an array is unhashable: the fast path declines)
        X, block = take_arrays(X)  # the items without their arrays
        entries = _corpus_entries(X, attributes.ids, grow)
    if entries is None:  # items of other kinds, or a name the item-by-item path reports
        entries = _item_entries(X, attributes.ids, grow)
    attr_ids, weights, counts, which = entries
    bad = ~np.isfinite(weights) & (attr_ids >= 0)
    if bad.any():
        first = int(np.flatnonzero(bad if which is None else bad[which])[0])
        j = first if which is None else int(which[first])
        _refuse_weight(first, np.repeat(np.arange(n_tokens, dtype=np.int64), counts),
                       offsets, attr_ids[j], weights[j], attributes.ids)
    from .token_csr import token_csr  # numba: not for a reader of labels (crfsdca tag)

    indptr, indices, values, zeros = token_csr(counts, attr_ids, weights, which)
    dense, columns = (None, None) if block is None else _dense_columns(
        block, attributes.ids, grow, indices)
    digest_list = [] if not digests else [  # every item is known good by now
        sequence_digest([item_attributes(item) for item in xseq],
                        label_seqs[i] if y is not None else [""] * len(xseq))
        for i, xseq in enumerate(X)]
    if block is not None and digests:  # the arrays, taken out of X, count too
        digest_list = [_with_rows(d, block.values[offsets[i]:offsets[i + 1]])
                       for i, d in enumerate(digest_list)]
    return Encoded(make_sequences(offsets, lab, indptr, indices, values, None, dense,
                                  columns), digest_list, zeros)


def _dense_columns(block, ids: dict[str, int], grow: bool, indices: np.ndarray):
    """(matrix, attribute ids) of the dense block's columns: with ``grow``, new names get
    the next ids; otherwise the columns the vocabulary lacks are dropped. ValueError for
    a column whose name is also a sparse attribute of the corpus."""
    names = block.columns()
    found = np.array(_look_up(names, ids, grow), dtype=np.int64)
    keep = found >= 0
    sparse = np.zeros(len(ids), dtype=bool)
    sparse[indices] = True
    both = np.flatnonzero(keep & sparse[np.maximum(found, 0)])
    if len(both):
        name = names[int(both[0])]
        raise ValueError(f"attribute {name!r} is both a value of an array attribute and an "
                         "attribute of its own: rename one of them")
    if not keep.any():
        return None, None
    return (block.values if keep.all() else block.values[:, keep]), found[keep]


def _with_rows(digest: bytes, rows: np.ndarray) -> bytes:
    """A sequence's digest extended by its rows of the dense block."""
    return hashlib.blake2b(digest + rows.tobytes(), digest_size=16).digest()


def _item_entries(X: list, ids: dict[str, int], grow: bool):
    """:func:`_corpus_entries` item by item, for any items; a bad item raises ValueError
    naming its sequence and position."""
    attr_ids, weights, counts = [], [], []
    for i, xseq in enumerate(X):
        add_sequence(xseq, ids, grow, attr_ids, weights, counts, where=f"sequence {i}, ")
    return (np.asarray(attr_ids, dtype=np.int64), np.asarray(weights, dtype=np.float64),
            np.asarray(counts, dtype=np.int64), None)


def _label_ids(yseq: list[str], labels: Vocabulary, grow: bool, i: int) -> list[int]:
    """The ids of sequence i's labels; with ``grow``, an unseen label gets the next id."""
    known = list(map(labels.ids.get, yseq, repeat(-1)))
    if -1 not in known:  # the common case, looked up at once
        return known
    out = []
    for t, lab in enumerate(c_strings(yseq)):
        k = labels.ids.get(lab)
        if k is None:
            if not grow:
                raise ValueError(f"sequence {i}: label {lab!r} is not in the model")
            try:
                k = _new_name(lab, labels.ids, "label")
            except ValueError as e:
                raise ValueError(f"sequence {i}, item {t}: {e}") from None
        out.append(k)
    return out


def _corpus_entries(X: list[list], ids: dict[str, int], grow: bool):
    """(attribute ids, weights, entries per item, which) of a whole corpus whose items are all
    flat dicts with str keys and str or number values (sklearn-crfsuite's features) or all
    lists of names and (name, number) pairs (CRFsuite's attribute lists, its data files):
    the common inputs, encoded a list at a time rather than an item at a time. None,
    adding no name, for any other corpus or one with a name that the item-by-item path
    must report.

    Dict items are read as their (key, value) pairs, and names and weights are made once
    per distinct pair (a corpus repeats most of them: CoNLL-2002 Dutch's tutorial features
    are 3.7 million pairs, 82,000 distinct): the ids and weights are the distinct pairs',
    ``which`` (int32 below 2^31 entries) the pair of each entry. A value equal to one met
    before under the same key (1, 1.0 and True) is encoded as that one: the same name and
    weight; every value's type is checked, so that one the item-by-item path refuses
    (1 + 0j) is refused whatever it equals. Lists give each entry's own id and weight (``which``
    None)."""
    items = list(chain.from_iterable(X))
    kinds = set(map(type, items))
    if not (kinds <= _DICT or kinds <= _LIST):
        return None
    counts = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    n = int(counts.sum())
    if kinds <= _DICT:
        pairs = _numbering()  # (key, value) -> its position among the distinct pairs
        try:
            which = np.fromiter(map(pairs.__getitem__, chain.from_iterable(map(dict.items, items))),
                                count=n, dtype=np.int32 if n < 2**31 else np.int64)  # a pair < n
        except TypeError:  # an unhashable value: the item-by-item path reports it
            return None
        keys = list(map(itemgetter(0), pairs))
        values = list(map(itemgetter(1), pairs))
        if not (set(map(type, keys)) <= _STR and set(map(
                type, chain.from_iterable(map(dict.values, items)))) <= _VALUE_TYPES):
            return None  # every value's type: one equal to a pair met before (1 == 1 + 0j) too
        names = pair_names(keys, values)
        weights = np.array(pair_weights(values), dtype=np.float64)
    else:
        names = list(chain.from_iterable(items))
        which = None
        entry_kinds = set(map(type, names))
        if entry_kinds <= _STR:
            weights = np.ones(n)
        else:  # names and (name, number) pairs, as CRFsuite's data files give them
            split = _names_and_weights(names, entry_kinds)
            if split is None:
                return None
            names, weights = split
    found = _name_ids(names, ids, grow)
    if found is None:
        return None
    return found, weights, counts, which


def _names_and_weights(entries: list, kinds: set):
    """(names, weights) of list items' entries that are names (weight 1) and (name,
    number) pairs, read as :func:`item_attributes` reads them; None for any other entry,
    which the item-by-item path takes or reports."""
    if not kinds <= _STR | {tuple}:
        return None
    pairs = [e for e in entries if type(e) is tuple]
    if (set(map(len, pairs)) - {2} or not set(map(type, map(itemgetter(0), pairs))) <= _STR
            or not set(map(type, map(itemgetter(1), pairs))) <= _NUMBER_TYPES):
        return None
    names = [e if type(e) is str else e[0] for e in entries]
    try:
        weights = np.fromiter((1.0 if type(e) is str else float(e[1]) for e in entries),
                              dtype=np.float64, count=len(entries))
    except OverflowError:  # an int beyond float: the item-by-item path reports it
        return None
    return names, weights


def pair_names(keys: list[str], values: list) -> list[str]:
    """The attribute name of each flat-dict entry (key, value), as :func:`item_attributes`
    reads it: ``key:value`` for a str value, else ``key`` (whose weight the value is)."""
    return [f"{key}:{value}" if isinstance(value, str) else key
            for key, value in zip(keys, values, strict=True)]


def pair_weights(values: list) -> list[float]:
    """The weight of each flat-dict entry's value (:func:`pair_names`): 1 for a str, else
    ``float(value)`` (OverflowError for an int beyond float)."""
    return [1.0 if isinstance(value, str) else float(value) for value in values]


def _name_ids(names: list[str], ids: dict[str, int], grow: bool) -> np.ndarray | None:
    """The ids of ``names`` (-1 for an unknown name unless ``grow``, which gives each new
    name the next id in order); None, adding none, if a new name could not be written to
    a model file (the item-by-item path reports it).

    The names are looked up as they are, and only those the lookup did not find (or
    added) are searched for a NUL, the rare name that must be read as its C string
    (:func:`c_strings`): ``ids`` holds C strings alone, so a name found there has none.
    Joining every name to search them all took 0.23 s of CoNLL-2000's 3.8 million."""
    if not grow:
        found = np.fromiter(map(ids.get, names, repeat(-1, len(names))), dtype=np.int64,
                            count=len(names))
        missing = np.flatnonzero(found < 0)
        if len(missing) and "\0" in "".join(names[j] for j in missing):
            found[missing] = [ids.get(name, -1) for name in c_strings([names[j]
                                                                      for j in missing])]
        return found
    before = len(ids)  # a new name gets len(ids) just before it is added
    found = np.fromiter(map(ids.setdefault, names, map(len, repeat(ids, len(names)))),
                        dtype=np.int64, count=len(names))
    fresh = list(islice(ids, before, None))
    text = "".join(fresh)
    if "\0" in text or not _utf8(text):
        for name in fresh:  # as they were
            del ids[name]
        if "\0" not in text:
            return None
        return _name_ids(c_strings(names), ids, grow)  # found and added as C strings
    return found


def _numbering() -> defaultdict:
    """An empty dict in which looking up a new key gives it the next id (0, 1, ...): a
    corpus's millions of (key, value) pairs numbered by ``__getitem__`` alone, a fifth
    sooner than by ``setdefault`` and the dict's length (CoNLL-2002 Dutch's tutorial
    features: 0.51-0.61 s against 0.65-0.70)."""
    return defaultdict(count().__next__)


def c_strings(names: list[str]) -> list[str]:
    """``names`` as CRFsuite keeps them: C strings, each ending at its first NUL
    (python-crfsuite hands ``"a\\0b"`` to CRFsuite, which reads ``"a"``: such names are
    one attribute, or one label, there and here)."""
    if "\0" not in "".join(names):
        return names
    return [name.partition("\0")[0] for name in names]


def _utf8(text: str) -> bool:
    """Whether UTF-8 can encode ``text`` (not if it holds a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_VALUE_TYPES = {str, float, int, bool, np.str_, np.float64, np.float32, np.int64, np.int32,
                np.bool_}
"""The attribute values the fast paths take (numpy's too: features built with numpy or
pandas); each is read as :func:`item_attributes` reads it: a str (``np.str_``) names
``key:value`` of weight 1, a number is the weight of ``key``."""
_STR = {str}
_NUMBER_TYPES = _VALUE_TYPES - {str, np.str_}
"""The weights a (name, weight) pair of a list item may have on the fast path."""
_DICT = {dict}
_LIST = {list}


def _new_name(name: str, ids: dict[str, int], what: str = "attribute") -> int:
    """Give ``name`` (a C string: :func:`c_strings`) the next id, once checked: a name
    that UTF-8 cannot encode (a lone surrogate) could not be written to a model file."""
    if not _utf8(name):
        raise ValueError(f"{what} {name!r} is not valid Unicode (UTF-8 cannot encode it)")
    a = ids[name] = len(ids)
    return a


def _names_values(item) -> tuple[list[str], list[float]]:
    """The attribute names of one item and their weights. The common items, flat dicts
    with str keys and str or number values, and lists of strings, take a path without
    :func:`item_attributes`'s checks (most of the time of encoding sklearn-crfsuite's
    features); anything else takes :func:`item_attributes`."""
    kind = type(item)
    if kind is dict:
        if set(map(type, item.values())) <= _VALUE_TYPES and set(map(type, item)) <= _STR:
            values = list(item.values())
            return pair_names(list(item), values), pair_weights(values)
    elif kind is list and set(map(type, item)) <= _STR:
        return item, [1.0] * len(item)
    pairs = item_attributes(item)
    return [name for name, _ in pairs], [w for _, w in pairs]


def add_sequence(xseq: list, ids: dict[str, int], grow: bool, attr_ids: list, weights: list,
                 counts: list, where: str | None = None) -> None:
    """Append the attribute ids and weights of a sequence's items (new attributes get the
    next ids with ``grow``, else the id -1, which the caller leaves out) and the count of
    each item's. A bad item raises ValueError, its message prefixed by ``where`` and the
    item's position unless ``where`` is None."""
    if _add_flat_dicts(xseq, ids, grow, attr_ids, weights, counts):
        return
    for t, item in enumerate(xseq):
        before = len(attr_ids)
        try:
            names, values = _names_values(item)
            attr_ids.extend(_look_up(names, ids, grow))
        except ValueError as e:
            if where is None:
                raise
            raise ValueError(f"{where}item {t}: {e}") from None
        weights.extend(values)
        counts.append(len(attr_ids) - before)


def _add_flat_dicts(xseq: list, ids: dict[str, int], grow: bool, attr_ids: list,
                    weights: list, counts: list) -> bool:
    """:func:`add_sequence` at once when the items are all flat dicts with str keys and
    str or number values (sklearn-crfsuite's features): one pass per list instead of a
    few calls per item. Returns False, adding nothing, for any other sequence, or one
    with a name that the item-by-item path must report."""
    if not set(map(type, xseq)) <= _DICT:
        return False
    if not (set(map(type, chain.from_iterable(map(dict.values, xseq)))) <= _VALUE_TYPES
            and set(map(type, chain.from_iterable(xseq))) <= _STR):
        return False
    values = list(chain.from_iterable(map(dict.values, xseq)))
    try:
        found = _look_up(pair_names(list(chain.from_iterable(xseq)), values), ids, grow)
    except ValueError:  # the names before it have their ids, as item by item
        return False
    attr_ids.extend(found)
    weights.extend(pair_weights(values))
    counts.extend(map(len, xseq))
    return True


def _look_up(names: list[str], ids: dict[str, int], grow: bool) -> list[int]:
    """The ids of ``names``, looked up at once; a name not in ``ids`` gets the next id
    with ``grow`` (in order, so that a repeat gets the id of its first occurrence), else
    -1."""
    found = list(map(ids.get, names, repeat(-1, len(names))))
    if -1 in found and (grow or "\0" in "".join(names)):
        for j, a in enumerate(found):
            if a == -1:  # looked up again: a repeat may have added it
                name = c_strings([names[j]])[0]
                a = ids.get(name)
                found[j] = a if a is not None else _new_name(name, ids) if grow else -1
    return found


def _refuse_weight(j: int, tok_ids, offsets, attr_id: int, weight: float, ids) -> None:
    """ValueError naming the sequence, item and attribute of the non-finite entry j (of
    attribute ``attr_id`` and weight ``weight``)."""
    tok = int(tok_ids[j])
    i = int(np.searchsorted(offsets, tok, side="right")) - 1
    name = next(n for n, a in ids.items() if a == attr_id)
    raise ValueError(f"sequence {i}, item {tok - int(offsets[i])}: attribute {name!r} has "
                     f"weight {float(weight)!r}; weights must be finite numbers")


def split_values(seq: Sequences) -> np.ndarray:
    """The weight of every stored attribute entry of a split (ones for binary splits)."""
    return np.ones(len(seq.attr_indices)) if seq.binary else seq.attr_values
