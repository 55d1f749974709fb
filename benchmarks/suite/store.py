"""The stored results of the suite: one pytest-benchmark JSON per run, under
``benchmarks/results/<machine>/<Python>/NNNN_<commit>_<time>[_uncommitted-changes].json``
(``make bench``). Read here for the README's block, the site's current numbers and the
comparison of two runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"


@dataclass(frozen=True)
class Run:
    """One stored run: where it is, what ran it, and its benchmarks by name."""

    path: Path
    data: dict

    @property
    def machine(self) -> dict:
        return self.data["machine_info"]

    @property
    def commit(self) -> dict:
        return self.data["commit_info"]

    @property
    def when(self) -> str:
        return self.data["datetime"]

    @property
    def benchmarks(self) -> dict[str, dict]:
        return {b["name"]: b for b in self.data["benchmarks"]}

    def describe(self) -> str:
        """Machine, commit and date in one line."""
        m, c = self.machine, self.commit
        dirty = " with uncommitted changes" if c.get("dirty") else ""
        load = m.get("load_average")
        return (f"{m.get('processor') or m['cpu'].get('brand_raw')}, "
                f"{m.get('usable_cores', m['cpu'].get('count'))} cores"
                f"{f' (load {load:g} at the start)' if load is not None else ''}, "
                f"Python {m['python_version']}; commit {c['id'][:7]}{dirty}; "
                f"{self.when[:16].replace('T', ' ')} UTC")


def load(path: str | Path) -> Run:
    path = Path(path)
    return Run(path, json.loads(path.read_text()))


def runs(root: Path = RESULTS) -> list[Run]:
    """Every stored run, oldest first (by the time it ran)."""
    return sorted((load(p) for p in root.rglob("*.json")), key=lambda r: r.when)


def newest(root: Path = RESULTS, machine: str | None = None) -> Run | None:
    """The last run stored (on ``machine``, a folder name, if given), or None."""
    found = [r for r in runs(root) if machine is None or r.machine.get("label") == machine]
    return found[-1] if found else None


def find(spec: str, root: Path = RESULTS) -> Run:
    """A run named by its file, or the newest of a commit (a prefix of its id)."""
    if Path(spec).is_file():
        return load(spec)
    found = [r for r in runs(root) if r.commit["id"].startswith(spec)]
    if not found:
        raise SystemExit(f"no stored run of {spec!r} under {root}")
    return found[-1]
