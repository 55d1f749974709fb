"""SIGTERM handled like Ctrl-C, and saves that no signal cuts short.

``kill``, ``timeout`` and SLURM (time limit, preemption) send SIGTERM, which by default ends
Python at once: a training run would lose everything, while Ctrl-C keeps it.
:func:`sigterm_raises` turns SIGTERM into :class:`~crfsdca.errors.Terminated` in the main
thread, so the training loop stops at its next step and keeps its rows (status
``terminated``); commands that keep nothing exit without a partial artifact (every write
is atomic). :func:`shielded` lets the saving of a run finish whatever signal comes in;
:func:`deferred` lets threads that wait on each other all finish before the signal is
raised.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from ..errors import Terminated

EXIT_SIGINT = 128 + signal.SIGINT
EXIT_SIGTERM = 128 + signal.SIGTERM


def _raise_terminated(signum, frame):
    raise Terminated(f"signal {signum}")


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Inside the block, SIGTERM raises Terminated (in the main thread; elsewhere a no-op)."""
    if not _in_main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def shielded() -> Iterator[list[int]]:
    """Inside the block, SIGINT and SIGTERM are noted in the yielded list, not raised: the
    files of a run are all written (a second Ctrl-C does not leave half a run). A signal
    whose handler Python did not install (``getsignal`` None: a host program's, in C) is
    left to it: Python could not put it back."""
    received: list[int] = []
    if not _in_main_thread():
        yield received
        return
    handlers = {s: signal.signal(s, lambda signum, frame: received.append(signum))
                for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not None}
    try:
        yield received
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside the block, SIGINT and SIGTERM wait: each one received is raised again at its
    end, to the handlers of before the block (Ctrl-C's KeyboardInterrupt, Terminated, or
    the default action). For work that a signal must not leave half done: threads that
    wait on each other (:func:`~crfsdca.runtime.threads.run_parallel`), where the caller
    leaving early would leave a thread spinning on a step that never comes."""
    received: list[int] = []
    try:
        with shielded() as received:
            yield
    finally:
        for signum in dict.fromkeys(received):
            signal.raise_signal(signum)
