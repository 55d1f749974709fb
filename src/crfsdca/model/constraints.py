"""Decoding constraints as masks over the labels, and forced labels, checked against a
model's label names.

A constraint removes labelings and changes nothing else: decoding under it gives the
model's distribution restricted to the labelings it allows and renormalized (Viterbi,
the n best, the probabilities and the marginals all of that one distribution). Three
kinds, which combine:

- a scheme, ``"BIO"`` (IOB2), ``"BIOES"`` or ``"IOB1"``, read from the label names
  (``O`` and ``PREFIX-TYPE``, :func:`~crfsdca.model.evaluation.chunk_label`): which
  label may follow which, which may begin and which may end a sequence (the rules of
  :data:`SCHEMES`);
- forbidden transitions, ``(label_from, label_to)`` pairs (in a collection, beside
  schemes if any);
- forced labels, per sequence a mapping ``{position: label}``.

Every check raises :class:`~crfsdca.errors.ConfigError` (a ValueError) naming what is
wrong, before anything is decoded.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from ..errors import ConfigError
from .evaluation import chunk_label


class Masks(NamedTuple):
    """What a constraint allows, per label id: ``allowed[k, l]`` (k followed by l),
    ``first[k]`` (k begins a sequence), ``last[k]`` (k ends one)."""

    allowed: np.ndarray
    first: np.ndarray
    last: np.ndarray


class Forced(NamedTuple):
    """Forced labels of n sequences, CSR: sequence i forces ``labels[j]`` at
    ``positions[j]`` for j in ``indptr[i]:indptr[i + 1]``."""

    indptr: np.ndarray
    positions: np.ndarray
    labels: np.ndarray


# A scheme's rules on (prefix, type) pairs: prefixes it knows besides O, the prefixes
# that may begin and end a sequence, and whether b may follow a.
def _bio(a, b):
    return b[0] != "I" or (a[0] in "BI" and a[1] == b[1])


def _iob1(a, b):
    return b[0] != "B" or (a[0] in "BI" and a[1] == b[1])


def _bioes(a, b):
    if a[0] in "BI":
        return b[0] in "IE" and a[1] == b[1]
    return b[0] in "OBS"


class _Scheme(NamedTuple):
    prefixes: str
    begin: str
    end: str
    follows: object


SCHEMES = {
    "BIO": _Scheme("BI", "OB", "OBI", _bio),
    "BIOES": _Scheme("BIES", "OBS", "OES", _bioes),
    "IOB1": _Scheme("BI", "OI", "OBI", _iob1),
}
"""The presets. BIO (IOB2): I-X only after B-X or I-X, never first. BIOES: after B-X or
I-X only I-X or E-X; after O, E-X or S-X only O, B-Y or S-Y; a sequence begins with O,
B or S and ends with O, E or S. IOB1: B-X (which separates two chunks of type X) only
after B-X or I-X, never first."""

_KINDS = ", ".join(SCHEMES)


def scheme_masks(scheme: str, labels: list[str]) -> Masks:
    """The masks of a preset over ``labels``, or ConfigError naming the labels that are
    neither ``O`` nor one of its ``PREFIX-TYPE`` names."""
    rules = SCHEMES.get(scheme)
    if rules is None:
        raise ConfigError(f"unknown constraint scheme {_show(scheme)}; choose one of "
                          f"{_KINDS} or give forbidden (label_from, label_to) pairs")
    parts = [chunk_label(lab) if isinstance(lab, str) else None for lab in labels]
    bad = [lab for lab, p in zip(labels, parts, strict=True)
           if p is None or (p[0] != "O" and p[0] not in rules.prefixes)]
    if bad:
        names = ", ".join(map(repr, bad[:5])) + (f" and {len(bad) - 5} more"
                                                 if len(bad) > 5 else "")
        prefixes = "-, ".join(rules.prefixes) + "-"
        raise ConfigError(f"constraints {scheme!r} need labels O or {prefixes}TYPE; the "
                          f"model's labels {names} are not")
    allowed = np.array([[rules.follows(a, b) for b in parts] for a in parts], dtype=bool)
    first = np.array([p[0] in rules.begin for p in parts], dtype=bool)
    last = np.array([p[0] in rules.end for p in parts], dtype=bool)
    return Masks(allowed.reshape(len(labels), len(labels)), first, last)


def _forbid(allowed: np.ndarray, pair, ids: dict[str, int]) -> None:
    """Forbid the transition ``pair`` (label_from, label_to) in ``allowed``."""
    if not hasattr(pair, "__len__") or len(pair) != 2:
        raise ConfigError(f"a forbidden transition is a pair (label_from, label_to), got "
                          f"{_show(pair)}")
    for lab in pair:
        if not isinstance(lab, str) or lab not in ids:
            raise ConfigError(f"forbidden transition {_show(tuple(pair))}: "
                              f"{_show(lab)} is not one of the model's labels")
    allowed[ids[pair[0]], ids[pair[1]]] = False


def constraint_masks(constraints, labels: list[str]) -> Masks | None:
    """The masks of ``constraints`` over ``labels``, None for None: a scheme's name, or a
    collection of schemes' names and forbidden (label_from, label_to) pairs, all of which
    hold. Masks that forbid every transition are refused (no sequence of two items would
    have a labeling)."""
    if constraints is None:
        return None
    if isinstance(constraints, str):
        constraints = [constraints]
    elif isinstance(constraints, (bytes, Mapping)) or not hasattr(constraints, "__iter__"):
        raise ConfigError(f"constraints must be None, a scheme ({_KINDS}) or a collection of "
                          f"schemes and forbidden (label_from, label_to) pairs, got "
                          f"{type(constraints).__name__}")
    K = len(labels)
    ids = {lab: k for k, lab in enumerate(labels)}
    allowed = np.ones((K, K), dtype=bool)
    first, last = np.ones(K, dtype=bool), np.ones(K, dtype=bool)
    for c in constraints:
        if isinstance(c, str):
            masks = scheme_masks(c, labels)
            allowed &= masks.allowed
            first &= masks.first
            last &= masks.last
        else:
            _forbid(allowed, c, ids)
    if K and not allowed.any():
        raise ConfigError("the constraints forbid every transition")
    return Masks(allowed, first, last)


def forced_labels(forced, lengths, labels: list[str]) -> Forced:
    """The forced labels of sequences of ``lengths`` items, from ``forced``: one entry per
    sequence, None or a mapping {position: label} (position from 0). ConfigError names the
    sequence and what is wrong: a count of entries other than the sequences', a position
    out of range, a label the model lacks."""
    n = len(lengths)
    if isinstance(forced, (str, bytes, Mapping)) or not hasattr(forced, "__len__"):
        raise ConfigError(f"forced must be a list with a mapping {{position: label}} (or None) "
                          f"per sequence, got {type(forced).__name__}")
    if len(forced) != n:
        raise ConfigError(f"forced has {len(forced)} entries for {n} sequences")
    ids = {lab: k for k, lab in enumerate(labels)}
    indptr = np.zeros(n + 1, dtype=np.int64)
    positions: list[int] = []
    labs: list[int] = []
    for i, (entry, T) in enumerate(zip(forced, lengths, strict=True)):
        _add_forced(entry, int(T), ids, f"forced[{i}]", positions, labs)
        indptr[i + 1] = len(positions)
    return Forced(indptr, np.array(positions, dtype=np.int64), np.array(labs, dtype=np.int32))


def forced_of_one(entry, T: int, label_ids: Mapping[str, int]) -> Forced:
    """The forced labels of one sequence of T items, from None or a mapping
    {position: label} (``label_ids``: the model's label -> id): :func:`forced_labels` of
    one sequence, its errors naming ``forced``."""
    positions: list[int] = []
    labs: list[int] = []
    _add_forced(entry, T, label_ids, "forced", positions, labs)
    return Forced(np.array([0, len(positions)], dtype=np.int64),
                  np.array(positions, dtype=np.int64), np.array(labs, dtype=np.int32))


def _add_forced(entry, T: int, ids: Mapping[str, int], where: str, positions: list[int],
                labs: list[int]) -> None:
    if entry is None:
        return
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a mapping {{position: label}} or None, got "
                          f"{type(entry).__name__}")
    for pos, lab in entry.items():
        if isinstance(pos, bool):
            raise ConfigError(f"{where}: a position is an integer, got {pos!r}")
        try:
            t = operator.index(pos)
        except TypeError:
            raise ConfigError(f"{where}: a position is an integer, got "
                              f"{_show(pos)}") from None
        if not 0 <= t < T:
            raise ConfigError(f"{where}: position {t} is out of range of a sequence of {T} "
                              "items")
        k = ids.get(lab) if isinstance(lab, str) else None
        if k is None:
            raise ConfigError(f"{where}: label {_show(lab)} at position {t} is not one "
                              "of the model's labels")
        positions.append(t)
        labs.append(k)


def _show(value, limit: int = 80) -> str:
    """``repr`` of a value given by the caller, cut to about ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"
