"""Drive a solver to a budget, record its trace, and save the run.

A run directory holds ``trace.csv`` (one row per checkpoint, columns of
:data:`~crfsdca.solvers.monitor.TRACE_COLUMNS` first), ``weights.h5`` (the
final w, usable for prediction) and ``meta.json`` (config, seed, dataset
checksum, package version, cores, status), each written atomically;
``meta.json`` is written last. An interrupted run (Ctrl-C) still saves what
it has, with status ``interrupted``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from . import __version__
from .io import atomic_path, atomic_write
from .solvers.base import Solver
from .solvers.monitor import TRACE_COLUMNS, Monitor, checkpoints

log = logging.getLogger("crfsdca.train")


@dataclass
class TrainResult:
    rows: list[dict] = field(default_factory=list)
    status: str = "budget"  # budget | converged | time_limit | interrupted
    solver_seconds: float = 0.0


class Progress:
    """One status line per checkpoint on a terminal; silent otherwise."""

    def __init__(self, stream=None, enabled: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled

    def update(self, row: dict, total_epochs: float) -> None:
        if not self.enabled:
            return
        gap = row["true_gap"] if not math.isnan(row["true_gap"]) else row["gap_estimate"]
        self.stream.write(
            f"\repoch {row['epoch']:7.2f}/{total_epochs:g}  primal {row['primal']:.10e}  "
            f"gap {gap:9.3e}  {row['seconds']:8.2f}s ")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def train(solver: Solver, monitor: Monitor, epochs: float, period: float = 1.0,
          time_limit: float | None = None, gap_tol: float | None = None,
          progress: Progress | None = None, chunk_epochs: float = 0.1) -> TrainResult:
    """Run ``solver`` for ``epochs`` epochs (iterations / steps_per_epoch), monitoring it.

    Stops early when the solver's gap estimate falls below ``gap_tol`` and one
    full-batch duality gap confirms it, or when solver time exceeds ``time_limit``.
    """
    result = TrainResult()
    progress = progress or Progress(enabled=False)
    spe = solver.steps_per_epoch
    chunk = max(int(chunk_epochs * spe), 1)
    steps_done = 0
    t_solver = 0.0
    confirm_below = gap_tol  # after a failed confirmation, wait for the estimate to halve

    def record(epoch: float) -> dict:
        row = monitor.row(solver, t_solver)
        row["epoch"] = epoch
        result.rows.append(row)
        progress.update(row, epochs)
        return row

    solver.prepare()
    try:
        record(0.0)
        for target in checkpoints(epochs, period)[1:]:
            target_steps = int(round(target * spe))
            while steps_done < target_steps:
                k = min(chunk, target_steps - steps_done)
                t0 = time.perf_counter()
                solver.run(k)
                t_solver += time.perf_counter() - t0
                steps_done += k
                if time_limit is not None and t_solver >= time_limit:
                    result.status = "time_limit"
                    break
                est = solver.gap_estimate()
                if gap_tol is not None and est is not None and est < confirm_below:
                    row = record(steps_done / spe)
                    if row["true_gap"] < gap_tol:
                        result.status = "converged"
                        break
                    confirm_below = est / 2
            if result.status != "budget":
                if result.rows[-1]["epoch"] != steps_done / spe:
                    record(steps_done / spe)
                break
            if result.rows[-1]["epoch"] != steps_done / spe:
                record(steps_done / spe)
    except KeyboardInterrupt:
        result.status = "interrupted"
        try:  # one last row for the steps done since the previous checkpoint
            if result.rows and result.rows[-1]["epoch"] != steps_done / spe:
                record(steps_done / spe)
        except KeyboardInterrupt:
            pass
    finally:
        progress.close()
    result.solver_seconds = t_solver
    return result


# ----------------------------------------------------------------------------- outputs

def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def machine_info() -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    import numba

    return {"cores": os.cpu_count(), "usable_cores": usable, "machine": platform.machine(),
            "processor": platform.processor(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__,
            "numba_threads": numba.get_num_threads()}


def write_trace(path: Path, rows: list[dict]) -> None:
    extra = sorted({k for r in rows for k in r} - set(TRACE_COLUMNS))
    columns = list(TRACE_COLUMNS) + extra
    with atomic_write(path, newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _plain(v) for k, v in r.items()})


def _plain(v):
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v


def write_weights(path: Path, w: np.ndarray, n_attributes: int, labels, meta: dict) -> None:
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.create_dataset("weights", data=w)
        f.attrs["n_attributes"] = n_attributes
        f.attrs["n_labels"] = len(labels)
        f.attrs["meta"] = json.dumps(meta)
        f.create_dataset("labels", data=np.array(list(labels), dtype=object),
                         dtype=h5py.string_dtype())


def read_weights(path: str | os.PathLike) -> tuple[np.ndarray, dict]:
    """The weight vector of a saved run and its metadata."""
    with h5py.File(path, "r") as f:
        if "weights" not in f:
            from .errors import DataFormatError

            raise DataFormatError(path, "no 'weights' dataset: not a weights file of crfsdca")
        meta = json.loads(f.attrs.get("meta", "{}"))
        meta["labels"] = [s.decode() if isinstance(s, bytes) else s for s in f["labels"][()]]
        meta["n_attributes"] = int(f.attrs["n_attributes"])
        return f["weights"][()], meta


def save_run(out_dir: Path, result: TrainResult, solver: Solver, meta: dict) -> None:
    """Write trace.csv, weights.h5 and, last, meta.json into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    p = solver.problem
    write_trace(out_dir / "trace.csv", result.rows)
    meta = {**meta, "status": result.status, "solver_seconds": result.solver_seconds,
            "solver": solver.config(), "memory_bytes": solver.memory_bytes(),
            "package_version": __version__, "machine": machine_info(),
            "final": result.rows[-1] if result.rows else None}
    labels = p.label_names or [str(k) for k in range(p.n_labels)]
    write_weights(out_dir / "weights.h5", np.asarray(solver.weights()), p.n_attributes,
                  labels, meta)
    with atomic_write(out_dir / "meta.json") as f:
        json.dump(meta, f, indent=2, default=_plain)
        f.write("\n")
