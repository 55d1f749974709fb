"""The spin locks of parallel SDCA (``math.md`` section 9): the threads add to the shared
weights under the locks of stripes of w's rows (:func:`row_locks`), and draw from each
lane's sampler under its lock (:func:`lane_locks`). The locks themselves are
:func:`crfsdca.runtime.jit.lock` / :func:`crfsdca.runtime.jit.unlock` on int32 entries.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..runtime.jit import NJIT, lock, unlock

LOCK_SPACING = 16
"""int32 per lock: one lock per cache line, so threads do not contend for a line unless
they want the same lock."""
BIAS_LOCK = 0
TRANS_LOCK = LOCK_SPACING


def row_locks(stripes: int = 1) -> np.ndarray:
    """The locks of parallel SDCA (all free): one for the bias block, one for the
    transition block, then ``stripes`` for the attribute rows of w, stripe s holding the
    s-th of ``stripes`` contiguous ranges of attributes (:func:`stripe_lock`). A step keeps
    a stripe's lock across consecutive rows in that stripe (:func:`hold_stripe`): with 2
    stripes it takes a lock 13 times a step on NER and 24 on CONLL, where a lock per row
    (180 and 342 rows) cost 10% of a parallel step. The rows stay in their order (sorting
    them by stripe sent a step's updates across w, and the loss outweighed the locks
    saved)."""
    return np.zeros((2 + max(int(stripes), 1)) * LOCK_SPACING, dtype=np.int32)


@njit(inline="always", **NJIT)
def stripe_lock(a, n_attr, locks):
    """The lock of attribute row a (an index into ``locks``)."""
    stripes = len(locks) // LOCK_SPACING - 2
    return (2 + a * stripes // n_attr) * LOCK_SPACING


@njit(inline="always", **NJIT)
def hold_stripe(locks, held, a, n_attr):
    """Make this thread hold the lock of attribute row a's stripe, where it holds lock
    ``held`` (-1: none), released first if it is another; returns the lock held."""
    s = stripe_lock(a, n_attr, locks)
    if s != held:
        if held >= 0:
            unlock(locks, held)
        held = s
        lock(locks, held)
    return held


@njit(inline="always", **NJIT)
def release_stripe(locks, held):
    """Release the stripe lock ``held`` that :func:`hold_stripe` returned (-1: none)."""
    if held >= 0:
        unlock(locks, held)


def lane_locks(lanes: int) -> np.ndarray:
    """One lock per lane's sampler (``sdca_kernel.sdca_run_lanes``), lane t's at
    ``t * LOCK_SPACING``, each on its own cache line."""
    return np.zeros(lanes * LOCK_SPACING, dtype=np.int32)
