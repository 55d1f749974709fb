"""The oldest versions ``pyproject.toml`` allows, for ``make test-oldest``.

    python tests/oldest_versions.py python          # the lowest supported Python: 3.10
    python tests/oldest_versions.py requirements    # numpy==1.26.0 ... one a line

Every requirement of the library and of the extras the suite needs (``test``,
``workflow``, ``bench``) pinned to its declared floor, but those that cannot be installed
with the lowest Python or the library's floors (:data:`LEFT_OUT`); the suite leaves out
the tests that need them (:data:`THEIR_TESTS`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, which pytest needs there
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
EXTRAS = ("test", "workflow", "bench")
LEFT_OUT = {
    "snakemake": "Snakemake 8 needs Python 3.11",
    "snakemake-executor-plugin-slurm": "a Snakemake 8 plugin",
    "eli5": "eli5 0.14 needs scikit-learn 1.6; 0.13 cannot be imported with scikit-learn 1.3",
    "snakefmt": "a linter (make lint), not the suite",
    "ruff": "a linter (make lint), not the suite",
}
"""Requirements not installed with the oldest versions, and why."""
THEIR_TESTS = {
    "tests/integration/test_workflow_smoke.py": "snakemake",
    "tests/reproduction/test_workflow_config.py": "snakemake",
    "tests/integration/test_cluster.py": "snakemake",
    "tests/runtime/test_memory.py::test_workflow_job_memory_comes_from_this_module": "snakemake",
    "tests/integration/test_tutorial.py": "eli5",
    # the site's hook reads the studies' headers: mkdocs is the docs extra, not a floor
    "tests/integration/test_benchmarks.py::test_every_study_has_a_dated_header": "mkdocs",
}
"""Test files (or tests) that need a requirement left out: the one they need."""


def project() -> dict:
    with open(PYPROJECT, "rb") as f:
        return tomllib.load(f)["project"]


def lowest_python() -> str:
    """The version ``requires-python = ">=X.Y"`` names."""
    return re.fullmatch(r">=\s*(\d+\.\d+)", project()["requires-python"]).group(1)


def pinned(requirement: str) -> str | None:
    """``name[extra]>=X`` as ``name[extra]==X`` (an upper cap kept), None where left out."""
    name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
    if name.lower() in LEFT_OUT:
        return None
    floor = re.search(r">=\s*([^,;\s]+)", requirement)
    if floor is None:
        raise ValueError(f"{requirement!r} declares no floor")
    return requirement.replace(floor.group(0), f"=={floor.group(1)}", 1)


def requirements() -> list[str]:
    meta = project()
    declared = meta["dependencies"] + [r for e in EXTRAS for r in meta["optional-dependencies"][e]]
    return [p for p in (pinned(r) for r in declared) if p is not None]


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "requirements"
    if what == "python":
        print(lowest_python())
    elif what == "requirements":
        print("\n".join(requirements()))
    elif what == "ignore":
        print(" ".join(f"--{'deselect' if '::' in t else 'ignore'}={t}" for t in THEIR_TESTS))
    else:
        sys.exit(f"usage: {sys.argv[0]} python | requirements | ignore")
