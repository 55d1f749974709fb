"""A tiny counter-based random stream for numba kernels (splitmix64).

Each solver owns its state (a one-element uint64 array), so a run is
reproducible from its seed whatever else calls numba's global generator.
"""

import numpy as np
from numba import njit

from ..runtime.jit import NJIT, line_zeros

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0


def make_rng(seed: int) -> np.ndarray:
    """State of a stream seeded by ``seed`` (any non-negative integer)."""
    state = line_zeros(1, np.uint64)  # its own cache line: each thread draws from its own
    state[0] = np.uint64(seed % 2**64)
    next_u64(state)  # decorrelate small seeds
    return state


@njit(inline="always", **NJIT)
def next_u64(state):
    state[0] += _GOLDEN
    z = state[0]
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(inline="always", **NJIT)
def uniform(state):
    """A double uniform in [0, 1)."""
    return np.float64(next_u64(state) >> _S11) * _INV53


@njit(inline="always", **NJIT)
def randint(state, n):
    """An integer uniform in [0, n)."""
    return min(np.int64(uniform(state) * n), n - 1)


@njit(**NJIT)
def permutation(state, out):
    """Fill ``out`` with a uniformly random permutation of 0..len(out)-1 (Fisher-Yates)."""
    n = len(out)
    for j in range(n):
        out[j] = j
    for j in range(n - 1, 0, -1):
        k = randint(state, j + 1)
        tmp = out[j]
        out[j] = out[k]
        out[k] = tmp
