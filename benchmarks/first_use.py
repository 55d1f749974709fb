"""First use as a new user meets it: the standard wheel installed in a fresh environment,
a first process on this machine's processor and on others.

Builds the wheel of this checkout as a release does (``python -m build``: an sdist, then
the wheel from it, each in an isolated environment; about ten minutes on two cores, or
``--wheel`` names one, such as ``make wheel``'s) and one without kernels
(``CRFSDCA_PRECOMPILE=0``); installs each in a fresh virtual environment outside the
repository (library only), sklearn-crfsuite in a third. Then times whole processes
(interpreter start, import, ``CRF().fit`` on the tutorial's features of the first
``--sentences`` CoNLL-2002 Dutch training sentences, ``predict`` on 300 test sentences,
exit), each crfsdca process with an empty ``NUMBA_CACHE_DIR`` (the shipped kernels copied
there, then loaded), alternated with sklearn-crfsuite's:

- this machine's processor;
- other processors (``NUMBA_CPU_NAME=skylake``): with this machine's features (the best
  level it runs loads), without AVX-512 (x86-64-v3), with x86-64-v2's features only
  (v2 loads, never v3);
- the wheel without kernels (everything compiles).

Each crfsdca process reports what it compiled (the run stops if a shipped-kernel row
compiled anything) and the key its kernels loaded under. The first row is the very first
process of the fresh environment (nothing in the page cache); the medians are of
``--repeat`` alternated processes.

Run alone: ``python benchmarks/first_use.py [--wheel dist/crfsdca-*.whl]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "benchmarks" / "studies"

WORK = """
import json, sys, time
t = time.perf_counter()
sys.path.insert(0, {studies!r})
from tutorial import iob_sents, sent2features, sent2labels
train = iob_sents("ned.train", limit=int(sys.argv[2]))
test = iob_sents("ned.testa", limit=300)
X = [sent2features(s) for s in train]; y = [sent2labels(s) for s in train]
Xt = [sent2features(s) for s in test]
compiled, loads = [], {{}}
if sys.argv[1] == "sklearn-crfsuite":
    from sklearn_crfsuite import CRF
else:
    from numba.core import event

    class Compiled(event.Listener):
        def on_start(self, ev): pass
        def on_end(self, ev): compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    event.register("numba:compile", Compiled())
    from crfsdca import CRF
    from crfsdca.runtime.level_cache import loads
CRF().fit(X, y).predict(Xt)
print(json.dumps({{"fit": time.perf_counter() - t, "compiled": len(compiled),
                  "loads": dict(loads)}}))
"""


def run(cmd, env=None, cwd=None) -> str:
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def environment(base: Path, name: str, *packages) -> Path:
    """A fresh virtual environment with ``packages`` (pip arguments); its python."""
    env_dir = base / name
    run([sys.executable, "-m", "venv", env_dir])
    python = env_dir / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", *packages])
    return python


def source(base: Path) -> Path:
    """What a build reads, copied from the checkout (its build/ folder left alone)."""
    dest = base / "source"
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "src", dest / "src", ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "kernels-shipped.txt"))
    return dest


def wheel(base: Path, out: Path, precompile: bool) -> Path:
    """The release build (isolated), or one without kernels from this environment."""
    if precompile:
        run([sys.executable, "-m", "build", "--outdir", out, source(base)], cwd=base)
    else:
        run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out,
             source(base)], env=dict(os.environ, CRFSDCA_PRECOMPILE="0"), cwd=base)
    return next(out.glob("crfsdca-*.whl"))


def processors() -> dict[str, dict[str, str]]:
    """Processors other than this one, as numba's environment variables name them."""
    import llvmlite.binding as ll

    from crfsdca.runtime.cpu_levels import LEVELS

    host = ll.get_host_cpu_features().flatten()
    v2 = dict(LEVELS.get(ll.get_process_triple().split("-")[0], ())).get("x86-64-v2")
    marks = [(f[0], f[1:]) for f in host.split(",") if f]

    def only(keep) -> str:
        return ",".join(("+" if m == "+" and keep(f) else "-") + f for m, f in marks)

    out = {"skylake, this machine's features": host,
           "skylake without AVX-512": only(lambda f: not f.startswith("avx512"))}
    if v2 is not None:
        out["skylake with x86-64-v2's features only"] = only(v2.__contains__)
    return {name: {"NUMBA_CPU_NAME": "skylake", "NUMBA_CPU_FEATURES": features}
            for name, features in out.items()}


def timed(python: Path, tool: str, script: Path, sentences: int, cache: Path | None,
          env=None) -> dict:
    """The whole process's seconds, and what its JSON line says."""
    env = {k: v for k, v in (env or os.environ).items() if k != "NUMBA_CACHE_DIR"}
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir()
        env["NUMBA_CACHE_DIR"] = str(cache)
    t = time.perf_counter()
    out = run([python, script, tool, sentences], env=env, cwd=script.parent)
    return dict(json.loads(out.strip().splitlines()[-1]), seconds=time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", type=Path, help="the standard wheel (default: build it)")
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(STUDIES))
    from common import machine

    print(f"machine: {machine()}; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    with tempfile.TemporaryDirectory(prefix="crfsdca-first-use-") as tmp:
        base = Path(tmp)
        script = base / "work.py"
        script.write_text(WORK.format(studies=str(STUDIES)))
        t = time.perf_counter()
        shipped = args.wheel or wheel(base / "release", base / "dist", precompile=True)
        print(f"standard wheel: {shipped.name}, {shipped.stat().st_size / 1e6:.1f} MB"
              + ("" if args.wheel else f", built in {time.perf_counter() - t:.0f} s"),
              flush=True)
        bare = wheel(base / "bare", base / "dist-bare", precompile=False)
        sk = environment(base, "venv-sklearn-crfsuite", "sklearn-crfsuite")
        ours = environment(base, "venv-crfsdca", shipped)
        compiling = environment(base, "venv-no-kernels", bare)
        rows = [("this processor", ours, {})]
        rows += [(name, ours, env) for name, env in processors().items()]
        rows += [("the wheel without kernels", compiling, {})]
        cache = base / "numba-cache"
        first = timed(ours, "crfsdca", script, args.sentences, cache)
        print(f"very first process of the environment, this processor: "
              f"{first['seconds']:.2f} s, compiled {first['compiled']}, "
              f"loads {first['loads']}", flush=True)
        for name, python, env in rows:
            a, b = [], []
            for _ in range(args.repeat if python is ours else 1):  # compiling: a minute
                out = timed(python, "crfsdca", script, args.sentences, cache,
                            dict(os.environ, **env))
                if out["compiled"] and python is ours:
                    raise RuntimeError(f"{name}: compiled {out['compiled']} kernels")
                a.append(out["seconds"])
                b.append(timed(sk, "sklearn-crfsuite", script, args.sentences, None)["seconds"])
            each = ", ".join(f"{s:.2f}" for s in a)
            print(f"{name}: crfsdca {statistics.median(a):.2f} s ({each}), compiled "
                  f"{out['compiled']}, loads {out['loads']}; sklearn-crfsuite "
                  f"{statistics.median(b):.2f} s; ratio "
                  f"{statistics.median(a) / statistics.median(b):.2f}", flush=True)


if __name__ == "__main__":
    main()
