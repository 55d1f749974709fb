"""Which sequence SDCA visits next: the sampling schemes of the paper (Sections 5
and 6.3; ``math.md`` section 6).

With probability 1 - theta a draw is uniform; with probability theta it follows
the scheme: importance (L_i = lambda + R_i/n), gap (stored g_i), gap x
importance (g_i L_i) or max (argmax g_i). Also the fixed orders of the original
SDCA paper: a fresh random permutation each epoch ("perm") and cyclic. Draws
and gap updates cost O(log n) through a sum tree (a max tree for "max").

With a window of B sequences (a power of two), draws stay among B consecutive
sequences, by the same scheme restricted to them, for B draws; then the next B: an
epoch still makes as many draws as there are sequences, and a store of marginals in a
file is read in order, a window at a time, rather than at random (``math.md`` section 6.4).
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
    subtree_draw,
    sum_tree_update,
    tree_size,
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
    window: np.ndarray  # int64[3]: window size B (0: none), the window, its draws left
    spill: float  # with a window, the share of draws made over all sequences


def make_sampler(scheme: str, theta: float, n: int, lipschitz: np.ndarray | None = None,
                 initial_gap: float = INITIAL_GAP, window: int = 0,
                 spill: float = 0.0) -> SamplerState:
    """Sampler state for n sequences; ``lipschitz`` is needed by the importance schemes;
    ``window``: draws stay among this many consecutive sequences at a time (a power of
    two; 0, or n or more: none)."""
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
    window = int(window)
    if window < 0 or (window & (window - 1)):
        raise ValueError(f"a sampling window is a power of two, got {window}")
    windows = line_zeros(3, np.int64)
    windows[0] = window if 0 < window < n else 0
    windows[1] = -1  # the first draw moves to window 0
    return SamplerState(code, float(theta), gaps, lipschitz, make_sum_tree(weights), max_tree,
                        max_arg, np.arange(n, dtype=np.int64), cursor, windows, float(spill))


@njit(**NJIT)
def draw(s, rng):
    """The next sequence to visit."""
    if s.window[0] > 0:
        return _window_draw(s, rng)
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
    return _random_draw(s, rng, 0, n, len(s.tree) // 2)


@njit(**NJIT)
def _random_draw(s, rng, first, m, span):
    """A draw of the random schemes among sequences first, ..., first + m - 1: the leaves
    of the trees' subtrees of ``span`` leaves there (all n: the trees' size)."""
    code = s.scheme
    if code == UNIFORM or uniform(rng) >= s.theta:
        return first + randint(rng, m)
    if code == MAX:
        return s.max_arg[(len(s.max_tree) // 2 + first) // span]
    node = (len(s.tree) // 2 + first) // span
    if s.tree[node] <= 0.0:
        return first + randint(rng, m)
    return subtree_draw(s.tree, node, uniform(rng))


@njit(**NJIT)
def _window_draw(s, rng):
    """The next sequence of the current window of B (``s.window[0]``), which gets B draws
    (a last, shorter one fewer): the scheme restricted to it (the subtree of its B
    leaves; its own permutation for perm), but for a share ``s.spill`` of the random
    schemes' draws, made over all n."""
    n = len(s.gaps)
    size = s.window[0]
    if s.window[2] <= 0:  # the window's draws are done: the next one
        s.window[1] = (s.window[1] + 1) % ((n + size - 1) // size)
        first = s.window[1] * size
        s.window[2] = min(first + size, n) - first
        s.cursor[0] = 0
        if s.scheme == PERM:
            permutation(rng, s.order[first:first + s.window[2]])
    first = s.window[1] * size
    m = min(first + size, n) - first
    s.window[2] -= 1
    code = s.scheme
    if code == CYCLIC or code == PERM:
        k = s.cursor[0]
        s.cursor[0] += 1
        return first + k if code == CYCLIC else first + s.order[first + k]
    if s.spill > 0.0 and uniform(rng) < s.spill:
        return _random_draw(s, rng, 0, n, len(s.tree) // 2)
    return _random_draw(s, rng, first, m, size)


def window_size(n: int, per_sequence: float, budget: float) -> int:
    """The window for n sequences of ``per_sequence`` bytes of store each on average: the
    largest power of two of them within ``budget`` bytes (at least 1); 0 (none) when all n
    fit or the budget is 0."""
    if budget <= 0 or per_sequence * n <= budget:
        return 0
    return max(tree_size(int(budget // max(per_sequence, 1.0)) + 1) // 2, 1)


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
