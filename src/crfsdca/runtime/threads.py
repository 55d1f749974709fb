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
from .signals import deferred

_POOLS: dict[int, ThreadPoolExecutor] = {}


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask and the cgroup's CPU quota (a
    container limited to 2 CPUs on a 64-core host: 2; joblib's ``cpu_count`` reads
    both)."""
    import joblib  # here: 40 ms of imports that one thread never needs

    cores = joblib.cpu_count(only_physical_cores=False)
    try:
        cores = min(cores, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        pass
    return max(int(cores), 1)


def default_threads() -> int:
    """The threads of ``threads=None``, as scikit-learn's OpenMP estimators take them: the
    usable cores, but no more than an explicit ``OMP_NUM_THREADS`` (which joblib's and
    Dask's workers set to their share of the cores, so that fits inside a parallel search
    never oversubscribe the machine). An explicit ``threads`` is not capped by it."""
    cores = usable_cores()
    omp = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return min(cores, int(omp)) if omp.isdigit() and int(omp) > 0 else cores


def check_threads(threads) -> int:
    """``threads`` as a positive int (None: :func:`default_threads`), or a ConfigError; more
    than :func:`usable_cores` is capped there with a warning (more threads than cores only
    wait for each other, and thousands cannot even be started)."""
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"threads must be a positive integer or None, got {threads!r}")
    cores = usable_cores()
    if threads > cores:
        warnings.warn(f"threads={threads} is more than the {cores} cores this process may "
                      f"use: running {cores}", RuntimeWarning, stacklevel=2)
        return cores
    return threads


def run_parallel(tasks: Sequence[Callable[[], object]]) -> list:
    """Call every task, each on its own thread (the first on the caller's); their results
    in order. An exception of a task is raised here after all have finished, and so is
    Ctrl-C or SIGTERM (:func:`~crfsdca.runtime.signals.deferred`): the tasks wait on each
    other, and a caller that left at once would leave its threads spinning on a step of
    its task that never comes, or taking the next call's tasks behind them."""
    if len(tasks) == 1:
        return [tasks[0]()]
    pool = _POOLS.get(len(tasks) - 1)
    if pool is None:
        pool = _POOLS[len(tasks) - 1] = ThreadPoolExecutor(len(tasks) - 1,
                                                           thread_name_prefix="crfsdca")
    with deferred():
        futures = [pool.submit(task) for task in tasks[1:]]
        try:
            first = tasks[0]()
        finally:
            rest = [f.exception() or f.result() for f in futures]  # wait for every thread
    for r in rest:
        if isinstance(r, BaseException):
            raise r
    return [first, *rest]
