"""Signals and threads that wait on each other (``runtime/signals.py``, ``run_parallel``):
a Ctrl-C or SIGTERM that arrives while a parallel call runs is raised when every one of
its threads has finished, never while one of them still waits for the caller."""

import os
import signal
import threading
import time

import pytest

from crfsdca.errors import Terminated
from crfsdca.runtime.signals import deferred, sigterm_raises
from crfsdca.runtime.threads import run_parallel


def _call_with_signal(signum, seen):
    """run_parallel of two tasks that wait on each other, as the pipeline's threads do:
    the caller's sends ``signum`` to this process, then lets the other one go on and
    waits for its end. ``seen`` gets what the other task saw and when it ended."""
    sent, done = threading.Event(), threading.Event()

    def caller():
        os.kill(os.getpid(), signum)
        sent.set()  # a caller cut short here would leave the other task waiting
        done.wait(10)

    def other():
        seen["sent"] = sent.wait(10)
        done.set()
        seen["ended"] = time.monotonic()

    run_parallel([caller, other])


@pytest.mark.parametrize("signum, raised", [(signal.SIGINT, KeyboardInterrupt),
                                            (signal.SIGTERM, Terminated)])
def test_a_signal_during_a_parallel_call_is_raised_after_every_thread_ends(signum, raised):
    assert threading.current_thread() is threading.main_thread()
    seen = {}
    with sigterm_raises(), pytest.raises(raised):
        _call_with_signal(signum, seen)
    raised_at = time.monotonic()
    assert seen["sent"]  # the caller went on after the signal
    assert seen["ended"] <= raised_at  # and the signal came once both had ended


def test_deferred_raises_each_signal_once_at_its_end_and_keeps_the_handlers():
    before = signal.getsignal(signal.SIGINT)
    order = []
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
            order.append("body finished")
    assert order == ["body finished"]
    assert signal.getsignal(signal.SIGINT) is before
    with deferred():  # nothing received: nothing raised
        order.append("quiet")
    assert order == ["body finished", "quiet"]


def test_a_handler_python_did_not_install_is_left_alone(monkeypatch):
    """A host program's C handler reads as None and could not be put back: untouched."""
    real = signal.getsignal
    monkeypatch.setattr(signal, "getsignal",
                        lambda s: None if s == signal.SIGTERM else real(s))
    calls = []
    monkeypatch.setattr(signal, "signal", lambda s, h, real=signal.signal: (
        calls.append(s), real(s, h))[1])
    with deferred():
        pass
    assert signal.SIGTERM not in calls and calls.count(signal.SIGINT) == 2
