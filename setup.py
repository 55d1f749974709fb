"""The wheel ships the library's kernels compiled (``crfsdca precompile`` run in the built
package), so that a first ``fit`` on a machine with the build machine's processor loads
them from numba's cache instead of compiling them (see ``crfsdca.runtime.kernel_cache``).

Editable installs and build environments without the library's dependencies (an isolated
``pip install .`` from the sdist) build without them; ``CRFSDCA_PRECOMPILE=0`` skips them.
Everything else is in ``pyproject.toml``.
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
             "print(crfsdca.__file__)"], cwd=lib, env=env, capture_output=True, text=True)
        if probe.returncode != 0:
            print("crfsdca: the library's dependencies are not importable here; the wheel "
                  "ships no compiled kernels", file=sys.stderr)
            return
        if not probe.stdout.strip().startswith(str(lib)):
            raise RuntimeError(f"crfsdca imports from {probe.stdout.strip()}, not {lib}")
        jobs = str(min(4, os.cpu_count() or 1))
        subprocess.run([sys.executable, "-m", "crfsdca", "precompile", "--jobs", jobs],
                       cwd=lib, env=env, check=True)
        subprocess.run([sys.executable, "-c", "from crfsdca.runtime.kernel_cache import "
                        "write_marker; write_marker()"], cwd=lib, env=env, check=True)
        for pyc in package.rglob("*.pyc"):
            pyc.unlink()


setup(cmdclass={"build_py": BuildWithKernels})
