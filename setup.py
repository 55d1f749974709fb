"""The wheel ships the library's kernels compiled (``crfsdca precompile`` run in the built
package): for the build machine's processor, and for the standard microarchitecture
levels of its architecture (x86-64-v2, -v3, -v4; aarch64's generic), so that a first
``fit`` loads them from numba's cache on other processors too (see
``crfsdca.runtime.kernel_cache`` and ``crfsdca.runtime.level_cache``).

The standard build (``python -m build``, ``pip wheel .``, an sdist or ``git+`` install)
has the library's dependencies among its build requirements (``pyproject.toml``); a build
where they cannot be imported stops with one line. ``CRFSDCA_PRECOMPILE=0`` builds a
wheel without kernels, ``CRFSDCA_LEVELS`` names the levels (default ``all``, or ``none``).
Editable installs compile on first use. Everything else is in ``pyproject.toml``.
"""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


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
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("NUMBA_") and k != "PYTHONPATH"}
        env.update(PYTHONPATH=str(lib), PYTHONNOUSERSITE="1")
        probe = subprocess.run(
            [sys.executable, "-c", "import numba, numpy, scipy, h5py, sklearn, crfsdca; "
             "from crfsdca.runtime.kernel_cache import stamps_follow_content as s; "
             "print(crfsdca.__file__, s(), numba.__version__)"],
            cwd=lib, env=env, capture_output=True, text=True)
        if probe.returncode != 0:
            error = (probe.stderr.strip().splitlines() or ["?"])[-1]
            sys.exit(f"crfsdca: the wheel's kernels need the library's dependencies in the "
                     f"build environment ({error}): build with isolation (the default, "
                     f"which installs them) or install them, or set CRFSDCA_PRECOMPILE=0 "
                     f"for a wheel without kernels")
        where, by_content, numba = probe.stdout.split()
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
