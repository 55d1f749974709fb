"""Which weights are features: the model's feature set as a mask over w.

The paper's pipeline uses every weight (all (attribute, label) pairs, all transitions,
and the bias / first / last columns). CRFsuite generates only the state features
(attribute, label) and transitions seen in training, and no bias: a weight that is not a
feature stays at exactly 0. The mask (uint8, one entry per weight of
:mod:`crfsdca.model.layout`, 1 for a feature) restricts every solver to the feature set;
the objective, its dual and the duality gap are then those of the restricted model
(``math.md`` section 1).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..data.sequences import Sequences
from ..runtime.jit import NJIT, aligned_empty
from .layout import WeightLayout


def crfsuite_mask(train: Sequences, n_attributes: int, n_labels: int,
                  possible_states: bool = False, possible_transitions: bool = False,
                  bias: bool = False, zero_entries: np.ndarray | None = None) -> np.ndarray:
    """CRFsuite's feature set: state feature (a, y) iff attribute a occurs at a training
    token labeled y (with a nonzero value, or with value 0 as one of ``zero_entries``,
    (attribute, token) pairs: CRFsuite makes a feature of those too, whose weight moves
    wherever a occurs elsewhere), or every pair with ``possible_states``;
    transition (y, y') iff it occurs in training, or all with ``possible_transitions``;
    the bias block (every token, first, last) only with ``bias``; every (column, label)
    pair of a dense block (:mod:`crfsdca.data.dense`: its weights are one dense matrix)."""
    layout = WeightLayout(n_attributes, n_labels)
    mask = np.zeros(layout.dim, dtype=np.uint8)
    E = layout.emission(mask)
    if possible_states:
        E[:] = 1
    else:
        state_pairs(train, n_labels, seen=mask[: E.size])
        if zero_entries is not None and len(zero_entries):
            E[zero_entries[:, 0], train.labels[zero_entries[:, 1]]] = 1
    E[train.dense_attr] = 1
    if bias:
        layout.bias(mask)[:] = 1
    W = layout.transition(mask)
    if possible_transitions:
        W[:] = 1
    else:
        has_prev = np.ones(train.n_tokens, dtype=bool)  # token t + 1 follows t in a sequence
        has_prev[train.offsets[:-1]] = False
        edge = has_prev[1:]
        W[train.labels[:-1][edge], train.labels[1:][edge]] = 1
    return mask


_NO_FLAGS = np.zeros(0, dtype=np.uint8)
_NO_FLOATS = np.zeros(0, dtype=np.float64)


def state_pairs(train: Sequences, n_labels: int, seen: np.ndarray | None = None,
                freq: np.ndarray | None = None,
                token_weight: np.ndarray | None = None) -> None:
    """For each pair (attribute a, label y) of the split's entries of a at the tokens
    labeled y (row a K + y): ``seen`` = 1 where an entry of a nonzero value occurs, and
    ``freq`` += the values (times ``token_weight``, if given), added in entry order; either
    may be None. One pass, nothing allocated per entry (CoNLL-2002 Dutch: 2.2 million
    entries, 90 MiB of index arrays when numpy did it). IndexError for an attribute or
    label beyond the rows (the kernel does not check)."""
    seen = _NO_FLAGS if seen is None else seen
    freq = _NO_FLOATS if freq is None else freq
    rows = max(len(seen), len(freq))
    if (train.nnz and (int(train.attr_indices.max()) + 1) * n_labels > rows
            or train.n_tokens and int(train.labels.max()) >= n_labels):
        raise IndexError(f"an attribute or label of the split is beyond the {rows} rows")
    _state_pairs(train.attr_indptr, train.attr_indices, train.attr_values, train.labels,
                 _NO_FLOATS if token_weight is None else token_weight, n_labels, seen, freq)


@njit(**NJIT)
def _state_pairs(indptr, indices, values, labels, token_weight, K, seen, freq):
    real = len(values) > 0
    for t in range(len(labels)):
        y = labels[t]
        scale = token_weight[t] if len(token_weight) else 1.0
        for j in range(indptr[t], indptr[t + 1]):
            row = indices[j] * K + y
            v = values[j] if real else 1.0
            if len(seen) and v != 0.0:
                seen[row] = 1
            if len(freq):
                freq[row] += v * scale  # scale 1.0 without weights: v exactly


NO_MASK = np.zeros(0, dtype=np.uint8)
"""The feature mask as the kernels take it when every weight is a feature."""


def is_full(mask: np.ndarray | None) -> bool:
    """Whether the mask keeps every weight (or there is none)."""
    return mask is None or bool(np.all(mask))


@njit(**NJIT)
def _soft_threshold_into(v, kappa, out):
    for j in range(len(v)):
        x = v[j]
        out[j] = math.copysign(max(abs(x) - kappa, 0.0), x)


def soft_threshold(v: np.ndarray, kappa: float, out: np.ndarray | None = None) -> np.ndarray:
    """S_kappa(v) = sign(v) max(|v| - kappa, 0): the weights of the elastic net from the
    unthresholded dual image v (``math.md`` section 8), in ``out`` or a new aligned array.
    One pass without temporaries: each of numpy's would be a fresh allocation of the
    weights' size, whose first writes cost far more than the arithmetic (0.3-0.4 s on
    CoNLL-2000's 7.4 million weights, in the huge pages numpy asks for)."""
    if out is None:
        out = aligned_empty(len(v))
    _soft_threshold_into(np.ascontiguousarray(v, dtype=np.float64), float(kappa), out)
    return out


@njit(**NJIT)
def _pseudo_gradient_into(w, g, l1, out):
    for j in range(len(w)):
        x, gj = w[j], g[j]
        if x > 0:
            out[j] = gj + l1
        elif x < 0:
            out[j] = gj - l1
        elif x == 0:
            out[j] = gj + l1 if gj < -l1 else gj - l1 if gj > l1 else 0.0
        else:  # NaN, as numpy's sign gives it
            out[j] = x


def pseudo_gradient(w: np.ndarray, g: np.ndarray, l1: float,
                    out: np.ndarray | None = None) -> np.ndarray:
    """The minimum-norm subgradient of f(w) + l1 ||w||_1 given g = grad f(w) (OWL-QN's
    pseudo-gradient; Andrew and Gao, 2007): g + l1 sign(w) where w != 0, and at w = 0 the
    one-sided derivative that descends, or 0 when |g| <= l1. Its squared norm over 2 lambda
    bounds the sub-optimality of a lambda-strongly convex objective. One pass, in ``out``
    or a new array: numpy's five temporaries of the weights' size cost 0.15-1.2 s on
    CoNLL-2000's 7.4 million weights, twice an L-BFGS iteration's gradient pass."""
    if len(g) != len(w) or (out is not None and len(out) != len(w)):
        raise ValueError("pseudo_gradient: w, g and out must have one length, got "
                         f"{len(w)}, {len(g)}, {None if out is None else len(out)}")
    if out is None:
        out = aligned_empty(len(w))
    _pseudo_gradient_into(np.ascontiguousarray(w, dtype=np.float64),
                          np.ascontiguousarray(g, dtype=np.float64), float(l1), out)
    return out
