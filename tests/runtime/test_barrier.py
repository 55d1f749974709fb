"""The spin-then-sleep barrier of nogil numba threads (``runtime/barrier.py``): every write
before a barrier is seen by every thread after it, round after round, with fewer threads
than cores and with more (where the waiting threads sleep on the futex)."""

import numpy as np
import pytest
from numba import njit

from crfsdca.runtime.barrier import atomic_add, atomic_load, make_barrier, wait
from crfsdca.runtime.threads import run_parallel


@njit(nogil=True)
def _rounds(thread, threads, rounds, barrier, slots, sums):
    """Each round: every thread writes its slot, meets the others, sums every slot (which
    must hold this round's values), meets them again."""
    total = 0
    for r in range(rounds):
        slots[thread] = r * 1000 + thread
        wait(barrier, threads)
        for t in range(threads):
            total += slots[t]
        wait(barrier, threads)
    sums[thread] = total


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_every_write_before_the_barrier_is_seen_after_it(threads):
    rounds = 3000
    barrier, slots = make_barrier(), np.zeros(threads, dtype=np.int64)
    sums = np.zeros(threads, dtype=np.int64)
    run_parallel([(lambda t=t: _rounds(t, threads, rounds, barrier, slots, sums))
                  for t in range(threads)])
    expected = sum(r * 1000 * threads + threads * (threads - 1) // 2 for r in range(rounds))
    assert sums.tolist() == [expected] * threads
    assert barrier[0] == 0 and barrier[2] == 0  # no arrival and no sleeper left behind


@njit(nogil=True)
def _count(counter, n):
    for _ in range(n):
        atomic_add(counter, 0, 1)
    return atomic_load(counter, 0)


def test_atomic_adds_are_never_lost():
    counter = np.zeros(1, dtype=np.int64)
    run_parallel([lambda: _count(counter, 200_000) for _ in range(3)])
    assert counter[0] == 600_000
