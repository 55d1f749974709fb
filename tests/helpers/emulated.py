"""Other processors as numba sees them, and a first use of the package that says what it
compiled and what it loaded: shared by the wheel's tests.

numba takes the processor's name and LLVM feature string from ``NUMBA_CPU_NAME`` and
``NUMBA_CPU_FEATURES`` where they are set, for its cache keys and for what it compiles;
a kernel loaded from the cache runs as compiled. So a process with another name and a
feature string this machine's processor covers runs as that other processor would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers.paths import ROOT

V2_FEATURES = frozenset("64bit cmov cx8 fxsr mmx sse sse2 cx16 sahf popcnt sse3 ssse3 sse4.1 "
                        "sse4.2 crc32".split())
"""An x86-64-v2 processor's features (Nehalem's), in LLVM's names."""


def host_features() -> str:
    import llvmlite.binding as ll

    return ll.get_host_cpu_features().flatten()


def only(features: str, keep) -> str:
    """``features`` (``+a,-b,...``) with every feature for which ``keep(name)`` is false
    turned off."""
    return ",".join(("+" if f[0] == "+" and keep(f[1:]) else "-") + f[1:]
                    for f in features.split(",") if f)


def processors() -> dict[str, dict[str, str]]:
    """Processors other than this one (environment variables of a process): a Skylake
    with this machine's features, one without AVX-512 (x86-64-v3 at most) and one with
    x86-64-v2's features only."""
    host = host_features()
    return {
        "skylake, this machine's features": {"NUMBA_CPU_NAME": "skylake",
                                             "NUMBA_CPU_FEATURES": host},
        "no AVX-512": {"NUMBA_CPU_NAME": "skylake",
                       "NUMBA_CPU_FEATURES": only(host, lambda f: not f.startswith("avx512"))},
        "x86-64-v2 only": {"NUMBA_CPU_NAME": "skylake",
                           "NUMBA_CPU_FEATURES": only(host, V2_FEATURES.__contains__)},
    }


USE = """
import json, sys, time
t0 = time.perf_counter()
from numba.core import event

class Compiled(event.Listener):  # the package's kernels compiled in this process
    modules = []
    def on_start(self, ev): pass
    def on_end(self, ev): self.modules.append(ev.data["dispatcher"].py_func.__module__)

event.register("numba:compile", Compiled())
from crfsdca import CRF
from crfsdca.runtime import level_cache
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
print(json.dumps({"epochs": crf.training_log_[-1]["epoch"],
                  "seconds": time.perf_counter() - t0, "compiled": sorted(ours),
                  "loads": dict(level_cache.loads)}))
"""
"""A first fit (``sys.argv[1]``'s algorithm), save, load, predict and marginals, printed
as one JSON line: the package's kernels compiled (their modules) and the loads by key."""


def run(cmd, cwd, env=None, check=True, timeout=1800):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def use(python: Path, work: Path, algorithm: str = "sdca", env=None) -> dict:
    """:data:`USE` run by ``python`` in ``work``: its JSON line, and ``stderr`` added."""
    (work / "use.py").write_text(USE)
    out = run([python, "use.py", algorithm], cwd=work, env=env)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), stderr=out.stderr)


def fresh_environment(base: Path, wheel: Path) -> tuple[Path, Path]:
    """A virtual environment with ``wheel`` (library only) and a folder outside the
    repository to work in: (its python, the folder)."""
    env_dir = base / "venv"
    run([sys.executable, "-m", "venv", env_dir], cwd=base)
    python = env_dir / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", wheel], cwd=base)
    work = base / "work"  # outside the repository: nothing of the checkout is importable
    work.mkdir()
    return python, work


def source_copy(dest: Path) -> Path:
    """What a build of the package reads, copied from the checkout to ``dest`` (a build
    there leaves the checkout's build/ folder alone)."""
    import shutil

    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "src", dest / "src", ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "kernels-shipped.txt"))
    return dest
