"""Running numba kernels on several threads: the kernels release the GIL (``nogil``), so
plain Python threads run them in parallel, each on its own slice of the work.

Threads rather than numba's ``parallel=True``: a kernel keeps its signature (workspaces,
solver states, samplers are named tuples, which numba's parallel loops cannot take), the
serial code path stays the same code, and the thread count is a plain argument, not
numba's global pool size.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ..errors import ConfigError

_POOLS: dict[int, ThreadPoolExecutor] = {}


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_threads(threads) -> int:
    """``threads`` as a positive int, or a ConfigError; more than :func:`usable_cores` is
    capped there with a warning (more threads than cores only wait for each other, and
    thousands cannot even be started)."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"threads must be a positive integer, got {threads!r}")
    cores = usable_cores()
    if threads > cores:
        warnings.warn(f"threads={threads} is more than the {cores} cores this process may "
                      f"use: running {cores}", RuntimeWarning, stacklevel=2)
        return cores
    return threads


def run_parallel(tasks: Sequence[Callable[[], object]]) -> list:
    """Call every task, each on its own thread (the first on the caller's); their results
    in order. An exception of a task is raised here after all have finished."""
    if len(tasks) == 1:
        return [tasks[0]()]
    pool = _POOLS.get(len(tasks) - 1)
    if pool is None:
        pool = _POOLS[len(tasks) - 1] = ThreadPoolExecutor(len(tasks) - 1,
                                                           thread_name_prefix="crfsdca")
    futures = [pool.submit(task) for task in tasks[1:]]
    try:
        first = tasks[0]()
    finally:
        rest = [f.exception() or f.result() for f in futures]  # wait for every thread
    for r in rest:
        if isinstance(r, BaseException):
            raise r
    return [first, *rest]
