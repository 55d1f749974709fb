"""Which sequence SDCA visits next: the sampling schemes of the paper (Sections 5
and 6.3; ``math.md`` section 6).

With probability 1 - theta a draw is uniform; with probability theta it follows
the scheme: importance (L_i = lambda + R_i/n), gap (stored g_i), gap x
importance (g_i L_i) or max (argmax g_i). Also the fixed orders of the original
SDCA paper: a fresh random permutation each epoch ("perm") and cyclic. Draws
and gap updates cost O(log n) through a sum tree (a max tree for "max").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..runtime.jit import NJIT, line_zeros
from .registry import SAMPLERS
from .rng import permutation, randint, uniform
from .trees import (
    make_max_tree,
    make_sum_tree,
    max_tree_update,
    sum_tree_draw,
    sum_tree_update,
)

SCHEMES = tuple(SAMPLERS)
"""Sampler names; a sampler's code in the kernels is its position here."""
UNIFORM, IMPORTANCE, GAP, GAP_IMPORTANCE, MAX, PERM, CYCLIC = (
    SCHEMES.index(name) for name in ("uniform", "importance", "gap", "gap-importance", "max",
                                     "perm", "cyclic"))
TREE_SCHEMES = (IMPORTANCE, GAP, GAP_IMPORTANCE)
"""Schemes that draw from a sum tree of weights (its root holds their total)."""
INITIAL_GAP = 100.0
"""Stored gaps start here so that every sequence is visited early (Algorithm 2; Section 6.3,
footnote 5; ``math.md`` section 6.2)."""
MAX_STORED_GAP = 1e300


class SamplerState(NamedTuple):
    scheme: int
    theta: float
    gaps: np.ndarray  # stored gap estimate g_i of every sequence
    lipschitz: np.ndarray  # L_i = lambda + R_i / n
    tree: np.ndarray  # sum tree of the scheme's weights
    max_tree: np.ndarray
    max_arg: np.ndarray
    order: np.ndarray  # current permutation (perm)
    cursor: np.ndarray  # int64[1]: position in the epoch (perm, cyclic)


def make_sampler(scheme: str, theta: float, n: int, lipschitz: np.ndarray | None = None,
                 initial_gap: float = INITIAL_GAP) -> SamplerState:
    """Sampler state for n sequences; ``lipschitz`` is needed by the importance schemes."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown sampler {scheme!r}; choose one of {', '.join(SCHEMES)}")
    if not 0.0 <= theta <= 1.0:
        raise ValueError(f"non-uniformity must be in [0, 1], got {theta}")
    code = SCHEMES.index(scheme)
    if lipschitz is None:
        if code in (IMPORTANCE, GAP_IMPORTANCE):
            raise ValueError(f"sampler {scheme!r} needs the radii R_i of the dataset")
        lipschitz = np.ones(n)
    lipschitz = np.ascontiguousarray(lipschitz, dtype=np.float64)
    gaps = np.full(n, float(initial_gap))
    weights = {IMPORTANCE: lipschitz, GAP: gaps, GAP_IMPORTANCE: gaps * lipschitz}.get(
        code, np.zeros(n))
    max_tree, max_arg = make_max_tree(gaps if code == MAX else np.zeros(1))
    cursor = line_zeros(1, np.int64)  # its own cache line: written on every draw
    cursor[0] = n if code == PERM else 0
    return SamplerState(code, float(theta), gaps, lipschitz, make_sum_tree(weights), max_tree,
                        max_arg, np.arange(n, dtype=np.int64), cursor)


@njit(**NJIT)
def draw(s, rng):
    """The next sequence to visit."""
    n = len(s.gaps)
    code = s.scheme
    if code == CYCLIC:
        i = s.cursor[0] % n
        s.cursor[0] += 1
        return i
    if code == PERM:
        if s.cursor[0] >= n:
            permutation(rng, s.order)
            s.cursor[0] = 0
        i = s.order[s.cursor[0]]
        s.cursor[0] += 1
        return i
    if code == UNIFORM or uniform(rng) >= s.theta:
        return randint(rng, n)
    if code == MAX:
        return s.max_arg[1]
    if s.tree[1] <= 0.0:
        return randint(rng, n)
    return sum_tree_draw(s.tree, uniform(rng))


@njit(**NJIT)
def record_gap(s, i, gap):
    """Store the fresh gap of sequence i and update the scheme's weights."""
    g = min(max(gap, 0.0), MAX_STORED_GAP)
    s.gaps[i] = g
    code = s.scheme
    if code == GAP:
        sum_tree_update(s.tree, i, g)
    elif code == GAP_IMPORTANCE:
        sum_tree_update(s.tree, i, g * s.lipschitz[i])
    elif code == MAX:
        max_tree_update(s.max_tree, s.max_arg, i, g)


def probabilities(s: SamplerState) -> np.ndarray:
    """Exact probability of drawing each sequence next (for tests; not for perm/cyclic)."""
    n = len(s.gaps)
    uni = np.full(n, 1.0 / n)
    if s.scheme == UNIFORM:
        return uni
    if s.scheme in (PERM, CYCLIC):
        raise ValueError("fixed orders have no per-draw probabilities")
    if s.scheme == MAX:
        scheme = np.zeros(n)
        scheme[int(np.argmax(s.gaps))] = 1.0
    else:
        weights = s.tree[len(s.tree) // 2:][:n]
        scheme = weights / weights.sum() if weights.sum() > 0 else uni
    return (1.0 - s.theta) * uni + s.theta * scheme
