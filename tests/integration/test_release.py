"""The release wheel: what ``python -m build`` makes (an sdist, then the wheel from it, each
in an isolated environment with pyproject's build requirements), installed in fresh
environments and used first on this processor and on others (numba told another
processor name and features): every kernel of the first fit, predict and marginals loads,
nothing compiles.

``make wheel`` builds dist/ and runs this file on that wheel (``CRFSDCA_WHEEL``); run
alone (``pytest -m release tests/integration/test_release.py``) it builds the wheel itself, several
minutes on two cores (every kernel compiled for this processor and for each level).
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.emulated import fresh_environment, host_features, processors, run, source_copy, use

from crfsdca.runtime import cpu_levels, kernel_cache

pytestmark = pytest.mark.release


def _triple() -> str:
    import llvmlite.binding as ll

    return ll.get_process_triple()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    given = os.environ.get("CRFSDCA_WHEEL")
    if given:
        return Path(given)
    base = tmp_path_factory.mktemp("release")
    run([sys.executable, "-m", "build", "--outdir", base / "dist",
         source_copy(base / "source")], cwd=base, timeout=3600)
    return next((base / "dist").glob("crfsdca-*.whl"))


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    return fresh_environment(tmp_path_factory.mktemp("venv"), wheel)


def test_the_wheel_ships_every_kernel_for_every_level(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
    marker = tmp_path / "crfsdca" / "kernels-shipped.txt"
    fields = dict(line.partition(" ")[::2] for line in marker.read_text().splitlines())
    levels = fields["levels"].split()
    assert levels == list(cpu_levels.levels(_triple())), fields
    assert kernel_cache.missing_levels(levels, str(tmp_path / "crfsdca")) == []
    assert len(list(tmp_path.rglob("*.nbi"))) > 50


EXPECTED = {"this processor": None, "skylake, this machine's features": None,
            "no AVX-512": "x86-64-v3", "x86-64-v2 only": "x86-64-v2"}
"""The level each processor loads (None: the host's own kernels, or this machine's best
level for a Skylake with its features)."""


@pytest.mark.parametrize("name", list(EXPECTED))
def test_a_first_use_compiles_nothing(venv, name, tmp_path):
    import llvmlite.binding as ll

    python, work = venv
    emulated = processors().get(name, {})
    runs = cpu_levels.runnable(_triple(), emulated.get("NUMBA_CPU_FEATURES", host_features()))
    expected = EXPECTED[name] or (runs[0] if emulated else ll.get_host_cpu_name())
    if expected not in runs + (ll.get_host_cpu_name(),):
        pytest.skip(f"this processor does not run {expected}")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), **emulated)
    out = use(python, work, "sdca", env)
    assert out["compiled"] == [] and "Warning" not in out["stderr"], out
    assert set(out["loads"]) == {expected}, out["loads"]


def test_the_package_folder_is_the_cache_where_it_can_be_written(venv):
    """No NUMBA_CACHE_DIR: numba loads from the package's own __pycache__ folders."""
    import llvmlite.binding as ll

    python, work = venv
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    out = use(python, work, "lbfgs", env)
    assert out["compiled"] == [] and set(out["loads"]) == {ll.get_host_cpu_name()}, out
