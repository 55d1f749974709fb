"""The run directory: what a training run leaves behind, and how it is read back.

A run directory holds ``trace.csv`` (one row per checkpoint, columns of
:data:`~crfsdca.solvers.monitor.TRACE_COLUMNS` first), ``weights.h5`` (the final w,
usable for prediction) and ``meta.json`` (config, seed, dataset checksum, package
version, cores, status), each written atomically; ``meta.json`` is written last (and an
older one is removed first), so a directory without it holds no run, and one whose status
is not in :data:`crfsdca.training.status.FINISHED` holds a run that stopped short (kept to be
looked at, never taken for a result). :func:`set_aside_unfinished` moves such a run's files
aside (``trace.csv`` to ``trace.stopped.csv``...), so that none of its outputs is there for
Snakemake to take as done; the next save of the directory removes them.
"""

from __future__ import annotations

import csv
import json
import os
import platform
from pathlib import Path

import h5py
import numba
import numpy as np

from .. import __version__
from ..errors import DataFormatError
from ..runtime.io import atomic_path, atomic_write, read_hdf5
from ..solvers.monitor import TRACE_COLUMNS
from ..training.status import FINISHED, read_status

RUN_FILES = ("trace.csv", "weights.h5", "meta.json")
"""The files of a run directory, ``meta.json`` last: the order they are written in (the
outputs of the workflow's ``train`` and ``crfsuite`` rules)."""


def stopped_name(name: str) -> str:
    """Where a stopped run's file is kept: ``trace.csv`` -> ``trace.stopped.csv``."""
    stem, dot, ext = name.rpartition(".")
    return f"{stem}.stopped.{ext}" if dot else f"{name}.stopped"


def set_aside_unfinished(run_dir: str | os.PathLike) -> str | None:
    """Move the files of a run that stopped short (its ``meta.json`` status not in
    :data:`~crfsdca.training.status.FINISHED`) to their :func:`stopped_name`, and return
    that status; None, moving nothing, for a finished run or a directory without a
    readable ``meta.json``. ``meta.json`` goes last: a move cut short leaves it, and the
    next call moves the rest."""
    status = read_status(run_dir)
    if status is None or status in FINISHED:
        return None
    for name in RUN_FILES:
        old = Path(run_dir) / name
        if old.exists():
            os.replace(old, old.with_name(stopped_name(name)))
    return status


def machine_info() -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
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
    with read_hdf5(path, "a run's weights.h5") as f:
        if "weights" not in f:
            raise DataFormatError(path, "no 'weights' dataset: not a weights file of crfsdca")
        meta = json.loads(f.attrs.get("meta", "{}"))
        meta["labels"] = [s.decode() if isinstance(s, bytes) else s for s in f["labels"][()]]
        meta["n_attributes"] = int(f.attrs["n_attributes"])
        return f["weights"][()], meta


def save_run(out_dir: Path, result, solver, meta: dict) -> None:
    """Write trace.csv, weights.h5 and, last, meta.json into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in ("meta.json", *map(stopped_name, RUN_FILES)):  # no older run beside the new
        (out_dir / old).unlink(missing_ok=True)
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
