"""How a run ended: its status in ``meta.json``, whether it is a result, the exit status.

Pure Python, so that the workflow reads it too (it lists run directories that did not
finish). The run directory itself is :mod:`crfsdca.reproduction.rundir`.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from ..errors import Terminated
from ..runtime.signals import EXIT_SIGINT, EXIT_SIGTERM

FINISHED = ("budget", "converged", "time_limit", "stalled")
"""Statuses of a run that reached its end: the epoch budget, the gap tolerance (or the
solver's own convergence test), the time limit, a solver that can make no more progress
(L-BFGS whose line search fails from steepest descent). Only these are results (the report
refuses the others)."""

STOPPED = {"interrupted": EXIT_SIGINT, "terminated": EXIT_SIGTERM, "diverged": 3}
"""Statuses of a run that stopped short (Ctrl-C, SIGTERM, a non-finite primal or dual),
with the exit status of the command that saved it."""


SIGNALLED = ("interrupted", "terminated")
"""Statuses of a run that a signal stopped (Ctrl-C, SIGTERM): :func:`raise_stop` raises it
again."""


def raise_stop(status: str) -> None:
    """Raise again what stopped a run of ``status``: KeyboardInterrupt (Ctrl-C) or
    Terminated (SIGTERM), nothing for another status. The training loop catches them to
    keep its rows; its caller, once it has kept the weights, raises them here, so that a
    loop of fits (cross-validation, a path of c2, a search) ends instead of going on to
    the next fit."""
    if status == "interrupted":
        raise KeyboardInterrupt
    if status == "terminated":
        raise Terminated(f"signal {int(signal.SIGTERM)}")


def exit_status(status: str) -> int:
    """The exit status of a command whose run ended with ``status`` (0: finished)."""
    return STOPPED.get(status, 0)


def read_status(run_dir: str | os.PathLike, name: str = "meta.json") -> str | None:
    """The status in ``run_dir/meta.json`` (or ``name``: a stopped run's
    ``meta.stopped.json``); None without a readable one."""
    try:
        meta = json.loads((Path(run_dir) / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta.get("status") if isinstance(meta, dict) else None
