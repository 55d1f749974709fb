"""The published numbers cannot drift from the stored runs: README.md's table is what
``benchmarks/suite/publish.py`` writes from the newest run in ``benchmarks/results/``, and
``compare.py`` calls a slower run slower. The suite's scripts run as a user runs them."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest
from helpers.paths import ROOT

SUITE = ROOT / "benchmarks" / "suite"
README = ROOT / "README.md"


def _script(name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SUITE / name), *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT)


def test_readme_numbers_are_the_newest_stored_run():
    done = _script("publish.py", "--check")
    assert done.returncode == 0, done.stderr


def test_readme_is_a_front_door():
    assert len(README.read_text().splitlines()) <= 160


def test_readme_states_the_default_epsilon():
    from crfsdca.training.learn import DEFAULT_EPSILON

    mantissa, exponent = f"{DEFAULT_EPSILON:.0e}".split("e")
    assert f"`epsilon` ({mantissa}e{int(exponent)})" in README.read_text()


def _run(tmp_path, name: str, median: float, speedup: float | None, when: str):
    """A stored run of one benchmark, as pytest-benchmark writes it."""
    extra = {"threads": 1, "cores": 2, "sentences": 15806, "reference_median": 2.0,
             "reference": "sklearn-crfsuite", "f1": 0.76, "reference_f1": 0.758,
             "relative_gap": 2.5e-4, "epochs": 10.0}
    if speedup is not None:
        extra["speedup"] = speedup
    data = {"machine_info": {"processor": "Test CPU", "usable_cores": 2, "label": "test-2c",
                             "python_version": "3.11.7", "cpu": {}, "packages": {}},
            "commit_info": {"id": name * 40, "dirty": False}, "datetime": when,
            "benchmarks": [{"name": "test_default_fit",
                            "stats": {"median": median, "min": median, "max": median,
                                      "rounds": 5},
                            "extra_info": extra}]}
    path = tmp_path / "test-2c" / f"0001_{name * 40}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("median, speedup, status, verdict", [
    (1.3, 1.5, 1, "slower"),   # 30% slower, and slower against its reference
    (1.3, 2.0, 0, "same"),     # slower, but so was the reference: the machine
    (1.05, 1.9, 0, "same"),    # within the threshold
    (0.7, 2.8, 0, "faster"),
])
def test_compare_says_whether_a_run_is_slower(tmp_path, median, speedup, status, verdict):
    base = _run(tmp_path, "a", 1.0, 2.0, "2026-01-01T00:00:00")
    head = _run(tmp_path, "b", median, speedup, "2026-01-02T00:00:00")
    done = _script("compare.py", base, head, "--results", tmp_path)
    assert done.returncode == status, done.stdout + done.stderr
    assert f"| {verdict} |" in done.stdout


def test_publish_writes_the_figure_with_machine_commit_and_command(tmp_path):
    _run(tmp_path, "a", 9.0, 2.0, "2026-01-01T00:00:00")
    _run(tmp_path, "c", 5.0, 3.0, "2026-01-03T00:00:00")
    table = _script("publish.py", "--print", "table", "--results", tmp_path)
    assert table.returncode == 0, table.stderr
    out = table.stdout
    assert "5.00 s, F1 0.760, certified relative gap 2.5e-4, 10 epochs" in out  # the newest
    assert "| 3.00x |" in out and "15,806 sentences" in out
    assert "Test CPU, 2 cores" in out and f"commit {'c' * 7}" in out
    assert "`make bench`" in out


def _hooks():
    """``docs/hooks.py``, which reads the studies' headers for the site."""
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_study_has_a_dated_header():
    """Each script of benchmarks/studies/ says what it asked, when, on which commit, and
    what it found (Question:, Date:, Commit:, Answer: in its docstring)."""
    hooks = _hooks()
    found = hooks.studies()
    assert len(found) >= 23
    missing = []
    for path in found:
        try:
            header = hooks.study_header(path)
        except hooks.PluginError as e:
            missing.append(str(e))
            continue
        if not re.match(r"\d{4}-\d{2}-\d{2}\b", header["Date"]):
            missing.append(f"{path.name}: Date is not a date: {header['Date']!r}")
        if not (re.search(r"\b[0-9a-f]{7,40}\b", header["Commit"])
                or "adds this file" in header["Commit"]):  # a new study's own commit
            missing.append(f"{path.name}: Commit names no commit: {header['Commit']!r}")
    assert not missing, "\n".join(missing)
