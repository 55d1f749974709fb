"""Installs from source as users run them, each in a fresh virtual environment of a Python
that has nothing installed (never the test environment's, whose numba and setuptools
would hide what a user's build lacks), with the pip that environment comes with: shared
by ``tests/integration/test_wheel.py`` (``pip wheel .``, in ``make test``) and
``tests/integration/test_install_from_source.py`` (the others, ``make test-release``).

Each build installs pyproject's build requirements from the package index into pip's (or
``build``'s) isolated environment and runs ``crfsdca precompile`` there, so the wheel
carries kernels for the newest numba, which the environment then installs too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from helpers.emulated import run

_UNUSABLE: set[Path] = set()


def _candidates() -> list[Path]:
    """Debian's python3 first (what a user of the distribution has), then the interpreter
    the test environment was made from (``sys.base_prefix``: pyenv's, or the one CI's
    ``.venv`` came from)."""
    base = Path(sys.base_prefix) / "bin"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return [Path("/usr/bin/python3"), base / version, base / "python3"]


def fresh_venv(dest: Path) -> Path:
    """``python3 -m venv dest`` with the first Python of :func:`_candidates` that is 3.10+
    and makes one with pip (Debian's needs python3-venv for that); its python."""
    for python in _candidates():
        if python in _UNUSABLE or not python.exists():
            continue
        made = subprocess.run([str(python), "-c", "import sys; assert sys.version_info >= "
                               "(3, 10)"], capture_output=True)
        if made.returncode == 0:
            made = subprocess.run([str(python), "-m", "venv", str(dest)], capture_output=True,
                                  text=True, env=user_environment())
        if made.returncode == 0 and (dest / "bin" / "pip").exists():
            return dest / "bin" / "python"
        _UNUSABLE.add(python)
        shutil.rmtree(dest, ignore_errors=True)
    raise AssertionError(f"no Python of {_candidates()} makes a virtual environment with pip")


def user_environment(**extra: str) -> dict[str, str]:
    """A user's shell: this process's environment less what the test environment sets
    (its virtual environment on ``PATH`` and ``VIRTUAL_ENV``, ``PYTHONPATH``, numba's and
    the package's settings), plus ``extra``."""
    ours = {str(Path(sys.prefix) / "bin"), str(Path(sys.executable).parent)}
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE")
           and not k.startswith(("NUMBA_", "CRFSDCA_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p not in ours)
    return dict(env, **extra)


def pip(python: Path, *args, cwd: Path, env: dict[str, str]):
    return run([python, "-m", "pip", *args], cwd=cwd, env=env, timeout=3600)


def git_repository(source: Path) -> str:
    """``source`` committed as a git repository of its own (the checkout's working tree,
    not its last commit): the URL ``pip install git+file://...`` takes."""
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid",
           "-c", "init.defaultBranch=main"]
    run([*git, "init", "-q"], cwd=source)
    run([*git, "add", "-A"], cwd=source)
    run([*git, "commit", "-q", "-m", "the checkout"], cwd=source)
    return f"git+file://{source}"


def kernels(names: list[str]) -> list[str]:
    """The kernel indexes among ``names`` (a wheel's or a package folder's files); raises
    unless the marker of the shipped kernels is there too."""
    assert any(n.endswith("crfsdca/kernels-shipped.txt") for n in names), names[:20]
    return [n for n in names if n.endswith(".nbi")]


def wheel_kernels(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return kernels(z.namelist())


def installed_kernels(python: Path, cwd: Path) -> list[str]:
    """The kernel indexes of the package ``python`` imports (its installed folder)."""
    out = run([python, "-c", "import crfsdca; print(crfsdca.__path__[0])"], cwd=cwd)
    package = Path(out.stdout.strip())
    return kernels([p.relative_to(package.parent).as_posix() for p in package.rglob("*")])
