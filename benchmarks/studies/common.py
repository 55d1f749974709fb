"""Shared helpers of the benchmark scripts: machine facts, datasets, timing."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from crfsdca.data.synthetic import pos_scale
from crfsdca.solvers.base import Problem

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ("ocr", "conll", "ner", "pos")


def head_commit() -> str:
    """The checkout's commit (short hash) that a study's rows ran on, with "+changes" when
    the package's sources differ from it."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()

    changed = git("status", "--porcelain", "--", "src")
    return git("rev-parse", "--short", "HEAD") + ("+changes" if changed else "")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    return f"{cpu}, {os.cpu_count()} cores ({affinity} usable), Python {platform.python_version()}"


def load_problem(name: str, processed: Path | None = None) -> Problem | None:
    """The training problem of a featurized dataset, the POS-scale synthetic set, or None."""
    if name == "pos-synthetic":
        seq = pos_scale()
        return Problem(seq, 190_000, 45, 1.0 / seq.n_sequences)
    from crfsdca.data.hdf5 import load_dataset

    path = (processed or ROOT / "data" / "processed") / f"{name}.h5"
    if not path.exists():
        return None
    return Problem.from_dataset(load_dataset(path))


def featurized_problems(names):
    """(name, problem) for each dataset that is featurized; says which are skipped."""
    for name in names:
        problem = load_problem(name)
        if problem is None:
            print(f"skip {name}: not featurized", file=sys.stderr)
            continue
        yield name, problem


def random_weights(problem: Problem, scale: float = 0.1, seed: int = 0) -> np.ndarray:
    """Weights of a realistic magnitude (trained CRFs have |w| of order 0.1-1)."""
    return np.random.default_rng(seed).normal(scale=scale, size=problem.dim)


def first_row(rows, reached):
    """The first of ``rows`` for which ``reached(row)`` holds (a solver's first point at a
    target), or None."""
    return next((r for r in rows if reached(r)), None)


def first_below(points, p_star, target):
    """The first of the (seconds, P, ...) ``points`` at relative sub-optimality
    (P - P*) / |P*| <= target, or None."""
    return first_row(points, lambda pt: (pt[1] - p_star) / abs(p_star) <= target)


def best_time(fn, repeat: int = 3) -> float:
    """Best wall-clock seconds of ``repeat`` calls (after one warm-up call)."""
    fn()
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def kept_rows(path: Path | None, add: bool, measured_again) -> list[dict]:
    """With ``add``, the rows of the run stored at ``path`` that this run does not measure
    again (``measured_again``: a row -> bool); otherwise none."""
    if not (add and path and path.exists()):
        return []
    return [r for r in json.loads(path.read_text())["rows"] if not measured_again(r)]


def kept_note(path: Path | None, add: bool) -> dict:
    """With ``add``, the stored run's note at ``path`` as ``{"note": ...}`` (what the rows
    that :func:`kept_rows` keeps measured), so that a run adding rows does not drop it;
    otherwise, or without a note, {}."""
    if not (add and path and path.exists()):
        return {}
    note = json.loads(path.read_text()).get("note")
    return {} if note is None else {"note": note}


def store_run(path: Path | None, run: dict) -> None:
    """Write ``run`` (its settings and its rows so far) to ``path``, if given: a study calls
    it after every row, so that a long run stopped keeps what it measured."""
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run, indent=1) + "\n")


def report(rows: list[dict], json_path: str | None = None) -> None:
    """Write ``rows`` to ``json_path`` (if given) and print them as a markdown table."""
    if json_path:
        with open(json_path, "w") as f:
            json.dump(rows, f, indent=1)
    print()
    print(markdown_table(rows, list(rows[0])))


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in columns) + " |")
    return "\n".join(lines)
