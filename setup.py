"""The wheel ships the library's kernels compiled (``crfsdca precompile`` run in the built
package): for the build machine's processor, and for the standard microarchitecture
levels of its architecture (x86-64-v2, -v3, -v4; aarch64's generic), so that a first
``fit`` loads them from numba's cache on other processors too (see
``crfsdca.runtime.kernel_cache`` and ``crfsdca.runtime.level_cache``).

The standard build (``python -m build``, ``pip wheel .``, an sdist or ``git+`` install)
has the library's dependencies among its build requirements (``pyproject.toml``); a build
where they cannot be imported stops with one line (which python, which paths it tried).
``CRFSDCA_PRECOMPILE=0`` builds a
wheel without kernels, ``CRFSDCA_LEVELS`` names the levels (default ``all``, or ``none``).
Editable installs compile on first use. Everything else is in ``pyproject.toml``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PROBE = """
import json, sys
print(json.dumps(sys.path), flush=True)
import numba, numpy, scipy, h5py, sklearn, crfsdca
from crfsdca.runtime.kernel_cache import stamps_follow_content
print(crfsdca.__file__, stamps_follow_content(), numba.__version__)
"""
"""The probe of the build environment: its ``sys.path`` (a JSON line), then where crfsdca
imports from, whether numba stamps its cache by content, and numba's version."""


def _build_environment(lib: Path) -> dict[str, str]:
    """The environment of the probe and of ``crfsdca precompile``: this build's own, with
    the built package first on ``PYTHONPATH`` and numba's settings dropped.

    The build's own paths stay: pip's build isolation reaches the build requirements
    through ``PYTHONPATH`` (a folder whose ``sitecustomize.py`` adds the isolated
    environment's site-packages and drops the interpreter's), and ``PYTHONNOUSERSITE``
    (pip sets it; a parent run with ``-s`` passes it on here), so a child that lost them
    would not find numba. ``python -m build`` and pip's ``venv-isolation`` use a real
    virtual environment (``sys.executable`` is its python) with ``PYTHONPATH`` empty."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(lib), *inherited])
    if sys.flags.no_user_site:
        env["PYTHONNOUSERSITE"] = "1"
    return env


def _unimportable(probe: subprocess.CompletedProcess, env: dict[str, str]) -> str:
    """The one line of a build whose python cannot import the library's dependencies:
    what failed, which interpreter, which ``sys.path`` and ``PYTHONPATH`` it tried."""
    error = (probe.stderr.strip().splitlines() or ["?"])[-1]
    try:
        tried = json.loads(probe.stdout.splitlines()[0])
    except (IndexError, ValueError):
        tried = "?"
    return (f"crfsdca: the wheel's kernels need the library's dependencies in the build "
            f"environment ({error}): {sys.executable} could not import them from sys.path "
            f"{tried} (PYTHONPATH={env['PYTHONPATH']}, PYTHONNOUSERSITE="
            f"{env.get('PYTHONNOUSERSITE', '')}); install them into that python, or build "
            f"with isolation (pip's and python -m build's default: they are build "
            f"requirements), or set CRFSDCA_PRECOMPILE=0 for a wheel without kernels")


class BuildWithKernels(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        lib = Path(self.build_lib).resolve()
        package = lib / "crfsdca"
        for stale in [*package.rglob("*.nbi"), *package.rglob("*.nbc"),
                      *package.glob("kernels-shipped.txt")]:
            stale.unlink()  # an earlier build's: only this build's kernels ship
        if os.environ.get("CRFSDCA_PRECOMPILE") == "0":
            return
        env = _build_environment(lib)
        probe = subprocess.run([sys.executable, "-c", PROBE], cwd=lib, env=env,
                               capture_output=True, text=True)
        if probe.returncode != 0:
            sys.exit(_unimportable(probe, env))
        where, by_content, numba = probe.stdout.splitlines()[-1].split()
        if not where.startswith(str(lib)):
            raise RuntimeError(f"crfsdca imports from {where}, not {lib}")
        if by_content != "True":
            sys.exit(f"crfsdca: numba {numba} stamps its cache by the sources' file times, "
                     f"which an install sets anew, so the wheel's kernels would never load: "
                     f"build with isolation (the newest numba) or a newer numba, or set "
                     f"CRFSDCA_PRECOMPILE=0 for a wheel without kernels")
        jobs = str(min(4, os.cpu_count() or 1))
        levels = os.environ.get("CRFSDCA_LEVELS", "all").replace(",", " ").split()
        levels = [] if levels == ["none"] else levels
        subprocess.run([sys.executable, "-m", "crfsdca", "precompile", "--jobs", jobs,
                        *(f"--level={level}" for level in levels)],
                       cwd=lib, env=env, check=True)
        subprocess.run([sys.executable, "-c", "import sys; from crfsdca.runtime.kernel_cache "
                        "import write_marker; write_marker(sys.argv[1:])", *levels],
                       cwd=lib, env=env, check=True)
        for pyc in package.rglob("*.pyc"):
            pyc.unlink()


setup(cmdclass={"build_py": BuildWithKernels})
