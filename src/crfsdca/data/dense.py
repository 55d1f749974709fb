"""Vector attributes: an item's numpy array stored as a dense block beside the sparse ones.

An item ``{"w": "cat", "emb": v}`` with ``v`` a numpy array of shape (d,) has the d
attributes ``emb[0]``, ..., ``emb[d-1]`` with the values of ``v`` as weights: the same
features as the dict ``{"emb[0]": v[0], ...}`` (:func:`array_attributes`, which every
item reader uses). Encoded for training or prediction (:func:`take_arrays`), the arrays
of a corpus become one matrix of N rows (a token without an array has zeros there) and
one column per attribute, which the kernels read as a dense matrix rather than as d
entries per token (``docs/guide/vectors.md``).
"""

from __future__ import annotations

from itertools import chain
from typing import NamedTuple

import numpy as np

NO_DENSE = np.zeros((0, 0))
"""The dense matrix of a split without array attributes."""
NO_COLUMNS = np.zeros(0, dtype=np.int32)
"""Its attribute ids (none)."""


def column_names(name: str, d: int) -> list[str]:
    """The attribute names of the d values of an array under ``name``."""
    return [f"{name}[{j}]" for j in range(d)]


def check_array(value: np.ndarray, name: str) -> np.ndarray:
    """An item's array as float64 values, or ValueError naming ``name``: one dimension,
    real numbers (bool, integers or floats), all finite."""
    if value.ndim != 1:
        raise ValueError(f"attribute {name!r}: an array attribute must have one dimension, "
                         f"got shape {value.shape}")
    if value.dtype.kind not in "biuf":
        raise ValueError(f"attribute {name!r}: an array attribute must hold real numbers "
                         f"(bool, int or float), got dtype {value.dtype}")
    out = value.astype(np.float64, copy=False)
    if not np.all(np.isfinite(out)):
        j = int(np.flatnonzero(~np.isfinite(out))[0])
        raise ValueError(f"attribute {name!r}: value {float(out[j])!r} at [{j}]; weights "
                         "must be finite numbers")
    return out


def array_attributes(name: str, value: np.ndarray) -> list[tuple[str, float]]:
    """The (attribute, weight) pairs of an array under ``name`` (``name[j]``, value j)."""
    values = check_array(value, name)
    return list(zip(column_names(name, len(values)), values.tolist(), strict=True))


class DenseBlock(NamedTuple):
    """The arrays of a corpus: per name (in order of first occurrence) its length, and
    the N x D matrix of every token's values (columns name by name)."""

    names: list[str]
    dims: list[int]
    values: np.ndarray

    def columns(self) -> list[str]:
        """The attribute name of every column."""
        return [c for name, d in zip(self.names, self.dims, strict=True)
                for c in column_names(name, d)]


def _has_array(item) -> bool:
    """Whether an item is a dict with a numpy array value."""
    return type(item) is dict and np.ndarray in set(map(type, item.values()))


def has_arrays(X: list) -> bool:
    """Whether an item of the corpus ``X`` (lists of items) is a dict with an array value."""
    return any(map(_has_array, chain.from_iterable(X)))


def take_arrays(X: list) -> tuple[list, DenseBlock]:
    """The corpus with the array values taken out of its dict items (new dicts for the
    items that had one; the others as they are) and the arrays as a :class:`DenseBlock`.
    ValueError naming the sequence, item and attribute of an array that is not one
    dimension of finite real numbers, or whose length differs from the first one under
    its name."""
    offsets = np.cumsum([0, *map(len, X)])
    found: dict[str, tuple[list[int], list[np.ndarray]]] = {}  # name -> tokens, arrays
    out: list[list] = []
    tok = 0
    for xseq in X:
        flags = list(map(_has_array, xseq))
        if not any(flags):
            out.append(xseq)
            tok += len(xseq)
            continue
        items = list(xseq)
        for t in np.flatnonzero(flags).tolist():
            item = items[t]
            for key, value in item.items():
                if type(value) is np.ndarray:
                    entry = found.setdefault(key, ([], []))
                    entry[0].append(tok + t)
                    entry[1].append(value)
            items[t] = {k: v for k, v in item.items() if type(v) is not np.ndarray}
        out.append(items)
        tok += len(xseq)
    names, dims, blocks = [], [], []
    for key, (tokens, arrays) in found.items():
        name = _name(key, tokens[0], offsets)
        blocks.append((tokens, _stack(name, tokens, arrays, offsets)))
        names.append(name)
        dims.append(blocks[-1][1].shape[1])
    matrix = np.zeros((tok, sum(dims)))
    col = 0
    for tokens, block in blocks:
        rows = np.asarray(tokens, dtype=np.int64)  # (a list index with a slice: 30x slower)
        if len(blocks) == 1:
            matrix[rows] = block
        else:
            matrix[rows, col:col + block.shape[1]] = block
        col += block.shape[1]
    return out, DenseBlock(names, dims, matrix)


def _where(token: int, offsets: np.ndarray) -> str:
    i = int(np.searchsorted(offsets, token, side="right")) - 1
    return f"sequence {i}, item {token - int(offsets[i])}"


def _name(key, token: int, offsets: np.ndarray) -> str:
    if isinstance(key, bytes):
        return key.decode("utf-8")
    if not isinstance(key, str):
        raise ValueError(f"{_where(token, offsets)}: an attribute name must be a str or "
                         f"bytes, got {type(key).__name__} {key!r}")
    return key


def _stack(name: str, tokens: list[int], arrays: list[np.ndarray],
           offsets: np.ndarray) -> np.ndarray:
    """The arrays under ``name`` as the rows of one float64 matrix, each checked
    (:func:`check_array`; one length under a name), errors naming the first bad one."""
    d = None
    for j, a in enumerate(arrays):
        if a.ndim != 1 or a.dtype.kind not in "biuf":
            try:
                check_array(a, name)
            except ValueError as e:
                raise ValueError(f"{_where(tokens[j], offsets)}: {e}") from None
        if d is None:
            d = len(a)
        elif len(a) != d:
            raise ValueError(f"{_where(tokens[j], offsets)}: attribute {name!r} has {len(a)} "
                             f"values, {d} in {_where(tokens[0], offsets)}: every array "
                             "under one name has one length")
    block = np.array(arrays, dtype=np.float64)
    bad = ~np.isfinite(block)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        try:
            check_array(arrays[row], name)
        except ValueError as e:
            raise ValueError(f"{_where(tokens[row], offsets)}: {e}") from None
    return block
