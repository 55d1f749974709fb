"""The package as users get it: ``pip wheel .`` run as a user runs it (a fresh virtual
environment of a Python with nothing installed, its own pip, build isolation), the wheel
installed there without the workflow extra, outside the repository, then used as a
library and as CRFsuite's command line, once more with the package and HOME read-only,
and as other processors (numba told another processor name and features).

The wheel here ships this processor's kernels alone, no level (each level compiles every
kernel once more, four minutes on two cores, a third of ``make test``'s budget);
``make test-release`` checks the other ways to install from source
(``tests/integration/test_install_from_source.py``) and ``make wheel`` the release wheel
with every level, loaded by other processors (``tests/integration/test_release.py``)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.emulated import ROOT, processors, run, source_copy, use
from helpers.source_install import fresh_venv, pip, user_environment, wheel_kernels

from crfsdca.runtime import kernel_cache

pytestmark = pytest.mark.slow

SHIPS = kernel_cache.stamps_follow_content()
"""Whether this environment's numba builds wheels that ship kernels (numba 0.59 stamps
by file time): only the builds without isolation use it."""

LIBRARY = {"numpy", "scipy", "numba", "h5py", "scikit-learn"}
WORKFLOW = {"snakemake", "pandas", "seaborn", "pyyaml"}
V2_ONLY = "x86-64-v2 only"  # an emulated processor that runs no kernel of this machine's


DATA = "B-NP\tw=the\tcap=0\nI-NP\tw=cat\nB-VP\tw=sat\n\nB-NP\tw=a\nI-NP\tw=dog\nB-VP\tw=ran\n\n"


def _build(base, **env):
    """The wheel of this checkout as ``python -m build --wheel --no-isolation`` builds it
    (this environment's numba), from a copy of the sources."""
    source = source_copy(base / "source")
    dist = base / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist,
         source], cwd=base, env=dict(os.environ, **env))
    return next(dist.glob("crfsdca-*.whl"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``pip wheel .`` in the sources in a fresh virtual environment (its build
    requirements, the newest numba among them, from the index into pip's isolated
    environment), then ``pip install`` of that wheel there (library only): (its python, a
    folder outside the repository to work in, the wheel)."""
    base = tmp_path_factory.mktemp("wheel")
    source = source_copy(base / "source")
    python = fresh_venv(base / "venv")
    env = user_environment(CRFSDCA_LEVELS="none")
    pip(python, "wheel", "--no-deps", "--wheel-dir", base / "dist", ".", cwd=source, env=env)
    (wheel,) = (base / "dist").glob("crfsdca-*.whl")
    pip(python, "install", "--quiet", wheel, cwd=base, env=env)
    work = base / "work"  # outside the repository: nothing of the checkout is importable
    work.mkdir()
    return python, work, wheel


@pytest.fixture(scope="module")
def venv(built):
    return built[:2]


def test_pip_wheel_in_a_fresh_environment_ships_the_kernels(built):
    """What issue 54 found broken: pip's isolation reaches the build requirements through
    PYTHONPATH, which the build keeps for ``crfsdca precompile``; the wheel carries the
    kernels of this processor, for the numba that the environment installed."""
    import zipfile

    python, work, wheel = built
    assert len(wheel_kernels(wheel)) > 50
    with zipfile.ZipFile(wheel) as z:
        marker = z.read("crfsdca/kernels-shipped.txt").decode()
    fields = dict(line.partition(" ")[::2] for line in marker.splitlines())
    assert fields["levels"].split() == [], fields
    numba = run([python, "-c", "import numba; print(numba.__version__)"], cwd=work)
    assert fields["numba"] == numba.stdout.strip(), fields


def test_the_library_installs_alone_and_pip_check_is_clean(venv):
    python, work = venv
    run([python, "-m", "pip", "check"], cwd=work)
    listed = run([python, "-m", "pip", "list", "--format=freeze"], cwd=work).stdout
    names = {line.split("==")[0].lower() for line in listed.split()}
    assert LIBRARY <= names and not WORKFLOW & names, names
    assert len(names - {"pip", "setuptools", "wheel"}) <= 20, names
    where = run([python, "-c", "import crfsdca; print(crfsdca.__file__)"], cwd=work)
    assert str(ROOT) not in where.stdout


def test_fit_predict_save_load_and_the_command_line(venv):
    python, work = venv
    out = use(python, work)
    # the wheel ships the kernels, compiled on this machine when it was built
    assert out["compiled"] == [] and "Warning" not in out["stderr"], out
    (work / "train.txt").write_text(DATA)
    crfsdca = [python, "-m", "crfsdca"]
    run(crfsdca + ["learn", "-q", "-m", "cli.model", "train.txt"], cwd=work)
    tagged = run(crfsdca + ["tag", "-m", "cli.model", "train.txt"], cwd=work).stdout
    assert tagged.split() == ["B-NP", "I-NP", "B-VP", "B-NP", "I-NP", "B-VP"]
    assert "help" in run(crfsdca + ["--help"], cwd=work).stdout
    # a reproduction command without the workflow extra: one line naming the extra
    report = run(crfsdca + ["report", "markdown", "--runs", "x", "--out", "y.md"], cwd=work,
                 check=False)
    assert report.returncode == 2
    assert "pip install 'crfsdca[workflow]'" in report.stderr
    assert "Traceback" not in report.stderr


def test_the_shipped_kernels_seed_numba_cache_dir(venv, tmp_path):
    """NUMBA_CACHE_DIR elsewhere (an empty folder): the kernels the wheel ships are copied
    there, not compiled again; a second process finds them there."""
    python, work = venv
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    for algorithm in ("lbfgs", "sdca"):  # sdca's signatures name the package's own types
        for _ in range(2):
            out = use(python, work, algorithm, env)
            assert out["compiled"] == [], out
    assert list((tmp_path / "cache").rglob("*.nbi"))


@pytest.mark.skipif(platform.machine() != "x86_64", reason="not an x86-64 machine")
def test_a_processor_the_wheel_does_not_cover_compiles_after_one_line(venv, tmp_path):
    """An x86-64-v2 processor: never this machine's kernels (an illegal instruction
    there); the kernels compile (one, here), after one line that says so."""
    python, work = venv
    script = ("import numpy as np; from crfsdca.runtime import jit, level_cache; "
              "jit.dot(np.ones(3), np.ones(3)); print(dict(level_cache.loads))")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               **processors()[V2_ONLY])
    out = run([python, "-c", script], cwd=work, env=env)
    assert out.stdout.strip() == "{}", out.stdout
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "compiles kernels on first use here, once" in lines[0] \
        and "runs none of those" in lines[0], out.stderr


def test_a_wheel_built_without_the_kernels_compiles_them(tmp_path):
    """CRFSDCA_PRECOMPILE=0: no kernels in the wheel, no marker; the package compiles on
    first use as before."""
    import zipfile

    wheel = _build(tmp_path, CRFSDCA_PRECOMPILE="0")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".nbi", ".nbc", "kernels-shipped.txt"))]


def test_a_build_without_the_dependencies_stops_in_one_line(tmp_path):
    """A build environment with setuptools but not numba (a build without isolation in
    the wrong environment): the build fails with one line, never a wheel without its
    kernels."""
    import setuptools

    run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "bare"], cwd=tmp_path)
    shim = tmp_path / "shim"  # setuptools alone on the path of that environment's python
    shim.mkdir()
    site = Path(setuptools.__file__).parents[1]
    for path in [site / "setuptools", site / "pkg_resources", site / "_distutils_hack",
                 *site.glob("setuptools-*.dist-info")]:  # its commands' entry points
        if path.exists():
            (shim / path.name).symlink_to(path)
    source = source_copy(tmp_path / "source")
    out = run([tmp_path / "bare" / "bin" / "python", "-c",
               "import sys; from setuptools import build_meta; "
               "build_meta.build_wheel(sys.argv[1])", tmp_path / "dist"],
              cwd=source, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(shim)},
              check=False)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("crfsdca: the wheel's kernels need the library's dependencies") \
        and "No module named 'numba'" in last and "CRFSDCA_PRECOMPILE=0" in last, out.stderr
    # it names the interpreter and the paths it tried, the build's own PYTHONPATH kept
    assert str(tmp_path / "bare" / "bin" / "python") in last and str(shim) in last, last
    assert not list((tmp_path / "dist").glob("*.whl"))


@pytest.mark.skipif(SHIPS, reason="this numba stamps by content (test_kernel_cache "
                    "checks that the build refuses one that does not)")
def test_a_numba_that_stamps_file_times_stops_the_build_in_one_line(tmp_path):
    source = source_copy(tmp_path / "source")
    out = run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
               tmp_path / "dist", source], cwd=tmp_path, check=False,
              env={k: v for k, v in os.environ.items() if not k.startswith("CRFSDCA_")})
    assert out.returncode != 0
    lines = [line for line in (out.stdout + out.stderr).splitlines()
             if "stamps its cache by the sources' file times" in line]
    assert len(lines) == 1 and "CRFSDCA_PRECOMPILE=0" in lines[0], out.stdout + out.stderr


def _read_only_supported() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_supported(),
                    reason="needs root and unshare -m for read-only bind mounts (root "
                           "ignores mode bits)")
def test_read_only_package_and_home(venv, tmp_path):
    """Nothing writable for numba's cache: one warning naming NUMBA_CACHE_DIR, then fit,
    predict, save and load work (uncached)."""
    python, work = venv
    env_dir = python.parent.parent
    home = tmp_path / "home"
    home.mkdir()
    use(python, work, "lbfgs")  # writes use.py
    script = (f"mount --bind {env_dir} {env_dir} && mount -o remount,bind,ro {env_dir} && "
              f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && "
              f"touch {env_dir}/probe 2>/dev/null && exit 9; "
              f"{python} use.py lbfgs")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env["HOME"] = str(home)
    proc = run(["unshare", "-m", "sh", "-c", script], cwd=work, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"compiled": []' in proc.stdout, proc.stdout  # the shipped kernels, from a temp copy
    warning = [line for line in proc.stderr.splitlines() if "NUMBA_CACHE_DIR" in line]
    assert len(warning) == 1 and "Traceback" not in proc.stderr, proc.stderr
