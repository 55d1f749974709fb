"""Training sequences from an iterable read once: encoded a chunk at a time as they arrive.

``CRF.fit`` takes a list of sequences (read as a whole by :func:`~.items.encode`) or any
other iterable, a generator included: the sequences are then drawn ``CHUNK_TOKENS``
tokens at a time, each chunk encoded into flat arrays and its items dropped, so that the
items are never all held as Python objects (python-crfsuite #37, #64; sklearn-crfsuite
#4). Attribute and label ids are given in order of first occurrence, chunk after chunk,
as one encoding of the whole list gives them: the encoded split, and so the model, is
the same to the last bit (vector attributes aside: a chunk's new columns get ids after
the attributes seen so far, not after the whole corpus's).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from itertools import zip_longest

import numpy as np

from .items import Encoded, Vocabulary, encode
from .sequences import join

CHUNK_TOKENS = 50_000
"""Tokens encoded at a time: large enough that each chunk's encoding runs at the speed of
a whole list's, small enough that a chunk's items and temporaries are a few MB."""

_MISSING = object()


def is_stream(X, y) -> bool:
    """Whether ``fit(X, y)`` reads its sequences as a stream: ``y`` None (``X`` yields
    (xseq, yseq) pairs) or ``X`` or ``y`` no sequence with a length (a generator, an
    iterator, a reader of a file)."""
    return y is None or not (_sized(X) and _sized(y))


def _sized(a) -> bool:
    return isinstance(a, (Sequence, np.ndarray)) and not isinstance(a, (str, bytes))


def labeled_pairs(X, y) -> Iterator[tuple]:
    """(xseq, yseq) of every sequence: ``X``'s pairs when ``y`` is None, else X and y
    side by side (ValueError when one runs out before the other)."""
    if isinstance(X, (str, bytes, Mapping)) or X is None:
        raise ValueError(f"X must be an iterable of sequences, got {type(X).__name__}")
    if y is None:
        for i, pair in enumerate(X):
            if isinstance(pair, (str, bytes, Mapping)) or not _pair(pair):
                raise ValueError(f"sequence {i}: with y None, X must yield (xseq, yseq) "
                                 f"pairs, got {type(pair).__name__}")
            if isinstance(pair[0], (str, bytes, Mapping)):  # a sequence of two items
                raise ValueError(f"sequence {i}: with y None, X must yield (xseq, yseq) "
                                 f"pairs, but its first element is a "
                                 f"{type(pair[0]).__name__}, an item: pass the labels as y")
            yield pair
        return
    if isinstance(y, (str, bytes, Mapping)):
        raise ValueError(f"y must be an iterable of label sequences, got {type(y).__name__}")
    n = 0
    for xseq, yseq in zip_longest(X, y, fillvalue=_MISSING):
        if xseq is _MISSING or yseq is _MISSING:
            more = "y" if xseq is _MISSING else "X"
            raise ValueError(f"X and y differ in length: {more} has more than {n} sequences")
        yield xseq, yseq
        n += 1


def nonempty_pairs(pairs: Iterable[tuple], skipped: list[int]) -> Iterator[tuple]:
    """(position, xseq, yseq) of ``pairs`` but those of sequences without items (CRFsuite
    leaves them out of training), whose positions go into ``skipped``; an empty one with
    labels is an error. A sequence given as an iterator comes out as a list."""
    for i, (xseq, yseq) in enumerate(pairs):
        xseq, yseq = _read(xseq), _read(yseq)
        if len(xseq) == 0 if type(xseq) is list else isinstance(xseq, Sized) and len(xseq) == 0:
            if isinstance(yseq, Sized) and len(yseq):
                raise ValueError(f"sequence {i} has 0 items but {len(yseq)} labels")
            skipped.append(i)
            continue
        yield i, xseq, yseq


def _read(seq):
    """A sequence given as an iterator (a generator of items or labels) read into a list,
    so that it can be checked and still be encoded (or fitted once per fold); anything
    else as it is (a list at once: the checks of abstract classes cost a tenth of a second
    on CoNLL-2002 Dutch's 15,806 sequences)."""
    if type(seq) is list:
        return seq
    return list(seq) if isinstance(seq, Iterable) and not isinstance(seq, Sized) else seq


def _pair(pair) -> bool:
    try:
        return len(pair) == 2
    except TypeError:
        return False


def encode_stream(pairs: Iterable[tuple], attributes: Vocabulary, labels: Vocabulary,
                  digests: bool = False, chunk_tokens: int | None = None,
                  skipped: list[int] | None = None) -> Encoded:
    """:func:`~.items.encode` (``grow=True``) of the (xseq, yseq) ``pairs``, a chunk of
    about ``chunk_tokens`` (default :data:`CHUNK_TOKENS`) tokens at a time; errors name a
    sequence by its position in the whole stream. With ``skipped``, sequences without
    items are left out (:func:`nonempty_pairs`) and their positions go there; without
    it, each is an error."""
    chunk_tokens = CHUNK_TOKENS if chunk_tokens is None else chunk_tokens
    parts, digest_list, zeros = [], [], []
    n_tokens = 0
    chunk_x: list = []
    chunk_y: list = []
    at: list[int] = []  # the chunk's sequences' positions in the stream
    size = 0
    numbered = (nonempty_pairs(pairs, skipped) if skipped is not None
                else ((i, x, t) for i, (x, t) in enumerate(pairs)))
    for i, xseq, yseq in numbered:
        if not isinstance(xseq, list) and not isinstance(xseq, (str, bytes, Mapping)):
            xseq = list(xseq)
        chunk_x.append(xseq)
        chunk_y.append(yseq)
        at.append(i)
        size += len(xseq) if isinstance(xseq, list) else 1
        if size >= chunk_tokens:
            n_tokens = _encode_chunk(chunk_x, chunk_y, at, n_tokens, attributes, labels,
                                     digests, parts, digest_list, zeros)
            chunk_x, chunk_y, at, size = [], [], [], 0
    if chunk_x:
        _encode_chunk(chunk_x, chunk_y, at, n_tokens, attributes, labels, digests, parts,
                      digest_list, zeros)
    if not parts:
        raise ValueError("no training sequences")
    both = _dense_and_sparse(parts)
    if both is not None:
        name = attributes.strings()[both]
        raise ValueError(f"attribute {name!r} is both a value of an array attribute and an "
                         "attribute of its own: rename one of them")
    return Encoded(join(parts), digest_list,
                   np.concatenate(zeros) if zeros else np.zeros((0, 2), dtype=np.int64))


def _encode_chunk(X: list, y: list, at: list[int], n_tokens: int, attributes, labels,
                  digests: bool, parts: list, digest_list: list, zeros: list) -> int:
    """Encode one chunk onto the lists; the tokens so far after it."""
    with renumbered(at):  # "sequence i" of the chunk is sequence at[i] of the stream
        enc = encode(X, y, attributes, labels, grow=True, digests=digests)
    X.clear()  # the chunk's items go: the caller's references are its last
    parts.append(enc.seq)
    digest_list.extend(enc.digests)
    if len(enc.zero_entries):
        zeros.append(enc.zero_entries + [0, n_tokens])
    return n_tokens + enc.seq.n_tokens


_LEADING_INDEX = re.compile(r"^sequence (\d+)")
"""How :func:`~.items.encode`'s errors name a sequence: first, by its index in the list."""


@contextlib.contextmanager
def renumbered(at: list[int] | None):
    """A ValueError raised inside that names "sequence i" (of the sequences encoded)
    raised again naming sequence ``at[i]``, its position in the user's data (None: the
    same)."""
    try:
        yield
    except ValueError as e:
        named = _LEADING_INDEX.match(str(e))
        if at is None or not named or at[int(named[1])] == int(named[1]):
            raise
        raise ValueError(_LEADING_INDEX.sub(f"sequence {at[int(named[1])]}", str(e),
                                            count=1)) from None


def _dense_and_sparse(parts: list) -> int | None:
    """An attribute id that one chunk has as a column of the dense block and another as a
    sparse entry (each chunk's encoding checks itself), or None."""
    columns = {c for p in parts for c in p.dense_attr.tolist()}
    if not columns:
        return None
    wanted = np.array(sorted(columns), dtype=np.int64)
    for p in parts:
        hit = np.isin(p.attr_indices, wanted)
        if hit.any():
            return int(p.attr_indices[np.argmax(hit)])
    return None


__all__ = ["CHUNK_TOKENS", "encode_stream", "is_stream", "labeled_pairs"]
