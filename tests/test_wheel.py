"""The package as users get it: the wheel built from this checkout, installed without the
workflow extra into a fresh virtual environment outside the repository, then used as a
library and as CRFsuite's command line, once more with the package and HOME read-only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow

LIBRARY = {"numpy", "scipy", "numba", "h5py", "scikit-learn"}
WORKFLOW = {"snakemake", "pandas", "seaborn", "pyyaml"}

USE = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    from numba.core import event

    class Compiled(event.Listener):  # the package's kernels compiled in this process
        modules = []
        def on_start(self, ev): pass
        def on_end(self, ev): self.modules.append(ev.data["dispatcher"].py_func.__module__)

    event.register("numba:compile", Compiled())
    from crfsdca import CRF
    X = [[{"w": w, "cap": w[0].isupper(), "len": len(w) / 5}
          for w in s.split()] for s in ["The cat sat", "A Dog ran", "the dog sat"] * 20]
    y = [["D", "N", "V"]] * 60
    algorithm = sys.argv[1]
    crf = CRF(algorithm=algorithm, c1=0.05, c2=0.1, model_filename="m.model").fit(X, y)
    assert crf.predict(X[:3]) == y[:3], crf.predict(X[:3])
    again = CRF(model_filename="m.model")
    assert again.predict(X[:3]) == y[:3]
    p = again.predict_marginals_single(X[0])
    assert abs(sum(p[0].values()) - 1) < 1e-9
    ours = [m for m in Compiled.modules if m.startswith("crfsdca")]
    print(f"ok {crf.training_log_[-1]['epoch']} epochs, {time.perf_counter() - t0:.1f}s, "
          f"compiled {len(ours)}: {sorted(set(ours))}")
""")

DATA = "B-NP\tw=the\tcap=0\nI-NP\tw=cat\nB-VP\tw=sat\n\nB-NP\tw=a\nI-NP\tw=dog\nB-VP\tw=ran\n\n"


def _run(cmd, cwd, env=None, check=True, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtual environment with the wheel of this checkout (library only)."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist),
          str(ROOT)], cwd=base)
    wheel = next(dist.glob("crfsdca-*.whl"))
    env_dir = base / "venv"
    _run([sys.executable, "-m", "venv", str(env_dir)], cwd=base)
    python = env_dir / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], cwd=base)
    work = base / "work"  # outside the repository: nothing of the checkout is importable
    work.mkdir()
    return python, work


def test_the_library_installs_alone_and_pip_check_is_clean(venv):
    python, work = venv
    _run([str(python), "-m", "pip", "check"], cwd=work)
    listed = _run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=work).stdout
    names = {line.split("==")[0].lower() for line in listed.split()}
    assert LIBRARY <= names and not WORKFLOW & names, names
    assert len(names - {"pip", "setuptools", "wheel"}) <= 20, names
    where = _run([str(python), "-c", "import crfsdca; print(crfsdca.__file__)"], cwd=work)
    assert str(ROOT) not in where.stdout


def test_fit_predict_save_load_and_the_command_line(venv):
    python, work = venv
    (work / "use.py").write_text(USE)
    out = _run([str(python), "use.py", "sdca"], cwd=work)
    assert out.stdout.startswith("ok"), out.stdout + out.stderr
    # the wheel ships the kernels, compiled on this machine when it was built
    assert "compiled 0:" in out.stdout, out.stdout
    (work / "train.txt").write_text(DATA)
    crfsdca = [str(python), "-m", "crfsdca"]
    _run(crfsdca + ["learn", "-q", "-m", "cli.model", "train.txt"], cwd=work)
    tagged = _run(crfsdca + ["tag", "-m", "cli.model", "train.txt"], cwd=work).stdout
    assert tagged.split() == ["B-NP", "I-NP", "B-VP", "B-NP", "I-NP", "B-VP"]
    assert "help" in _run(crfsdca + ["--help"], cwd=work).stdout
    # a reproduction command without the workflow extra: one line naming the extra
    report = _run(crfsdca + ["report", "markdown", "--runs", "x", "--out", "y.md"], cwd=work,
                  check=False)
    assert report.returncode == 2
    assert "pip install 'crfsdca[workflow]'" in report.stderr
    assert "Traceback" not in report.stderr


def test_the_shipped_kernels_seed_numba_cache_dir(venv, tmp_path):
    """NUMBA_CACHE_DIR elsewhere (an empty folder): the kernels the wheel ships are copied
    there, not compiled again; a second process finds them there."""
    python, work = venv
    (work / "use.py").write_text(USE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):
        out = _run([str(python), "use.py", "lbfgs"], cwd=work, env=env)
        assert "compiled 0:" in out.stdout, out.stdout + out.stderr
    assert list((tmp_path / "cache").rglob("*.nbi"))


def test_a_wheel_built_without_the_kernels_compiles_them(tmp_path):
    """CRFSDCA_PRECOMPILE=0 (or a build environment without numba): no kernels in the
    wheel, no marker; the package compiles on first use as before."""
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist),
          str(ROOT)], cwd=tmp_path, env=dict(os.environ, CRFSDCA_PRECOMPILE="0"))
    import zipfile

    names = zipfile.ZipFile(next(dist.glob("crfsdca-*.whl"))).namelist()
    assert not [n for n in names if n.endswith((".nbi", ".nbc", "kernels-shipped.txt"))]


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
    (work / "use.py").write_text(USE)
    script = (f"mount --bind {env_dir} {env_dir} && mount -o remount,bind,ro {env_dir} && "
              f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && "
              f"touch {env_dir}/probe 2>/dev/null && exit 9; "
              f"{python} use.py lbfgs")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env["HOME"] = str(home)
    proc = _run(["unshare", "-m", "sh", "-c", script], cwd=work, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok")
    assert "compiled 0:" in proc.stdout, proc.stdout  # the shipped kernels, from a temp copy
    warning = [line for line in proc.stderr.splitlines() if "NUMBA_CACHE_DIR" in line]
    assert len(warning) == 1 and "Traceback" not in proc.stderr, proc.stderr
