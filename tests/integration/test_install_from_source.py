"""Every way users install from source, as they run it: a fresh virtual environment of a
Python with nothing installed (``helpers.source_install``), its own pip, the checkout's
sources, then a first fit that compiles nothing (the kernels the build shipped load).

``pip wheel .`` is ``tests/integration/test_wheel.py``'s build (``make test``); these four
more are ``make test-release``'s (the ``release`` marker). Each builds the host's kernels
only (``CRFSDCA_LEVELS=none``: every way reaches the same ``setup.py``, and
``test_release.py`` checks the levels); a build takes a few minutes on two cores, most of
it ``crfsdca precompile``, the rest pip installing the build requirements from the index.
"""

from __future__ import annotations

import time

import pytest
from helpers.emulated import run, source_copy, use
from helpers.source_install import (
    fresh_venv,
    git_repository,
    installed_kernels,
    pip,
    user_environment,
    wheel_kernels,
)

pytestmark = pytest.mark.release

ENV = {"CRFSDCA_LEVELS": "none"}


def _pip_install_dot(python, source, base, env):
    pip(python, "install", ".", cwd=source, env=env)


def _pip_install_git(python, source, base, env):
    pip(python, "install", git_repository(source), cwd=base, env=env)


def _python_m_build_sdist_then_pip(python, source, base, env):
    pip(python, "install", "--quiet", "build", cwd=base, env=env)
    run([python, "-m", "build", "--sdist", "--outdir", base / "dist", source], cwd=base,
        env=env, timeout=3600)
    (sdist,) = (base / "dist").glob("crfsdca-*.tar.gz")
    pip(python, "install", sdist, cwd=base, env=env)


def _python_m_build(python, source, base, env):
    """The sdist, then the wheel from it (what ``make wheel`` does, here from a fresh
    environment); the wheel installed by pip."""
    pip(python, "install", "--quiet", "build", cwd=base, env=env)
    run([python, "-m", "build", "--outdir", base / "dist", source], cwd=base, env=env,
        timeout=3600)
    (wheel,) = (base / "dist").glob("crfsdca-*.whl")
    assert len(wheel_kernels(wheel)) > 50
    pip(python, "install", wheel, cwd=base, env=env)
    return wheel


WAYS = {
    "pip install .": _pip_install_dot,
    "pip install git+file://<clone>": _pip_install_git,
    "python -m build --sdist, then pip install the sdist": _python_m_build_sdist_then_pip,
    "python -m build, then pip install the wheel": _python_m_build,
}


@pytest.mark.parametrize("way", list(WAYS))
def test_an_install_from_source_ships_kernels_that_load(way, tmp_path):
    source = source_copy(tmp_path / "source")
    python = fresh_venv(tmp_path / "venv")
    env = user_environment(**ENV)
    start = time.perf_counter()
    WAYS[way](python, source, tmp_path, env)
    seconds = time.perf_counter() - start
    work = tmp_path / "work"  # outside the sources: the installed package imports
    work.mkdir()
    assert len(installed_kernels(python, work)) > 50
    out = use(python, work, "sdca", user_environment())
    assert out["compiled"] == [] and "Warning" not in out["stderr"], out
    assert "Traceback" not in out["stderr"]
    print(f"{way}: {seconds:.0f} s to install, first fit {out['seconds']:.1f} s")
