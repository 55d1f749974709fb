"""First use as a new user meets it: install size, the first process's fit, a warm one.

Builds the wheel of this checkout twice (with the kernels it ships, and with
``CRFSDCA_PRECOMPILE=0``, the package compiling on first use), installs each in a fresh
virtual environment outside the repository (library only), and sklearn-crfsuite in a
third; then times whole processes (interpreter start, import, ``fit``, ``predict``) on
sklearn-crfsuite's tutorial features of the first ``--sentences`` Dutch training sentences
of CoNLL-2002, ``predict`` on 300 test sentences:

- crfsdca's first process after the install, default ``CRF()`` and the tutorial's call
  (``algorithm='lbfgs', c1=0.1, c2=0.1, max_iterations=100,
  all_possible_transitions=True``), each in its own fresh environment;
- the same with ``NUMBA_CPU_NAME=generic`` (a processor other than the build machine's:
  the shipped kernels do not load, numba compiles);
- warm processes, crfsdca and sklearn-crfsuite alternated, ``--repeat`` of each, on
  ``--sentences`` and on each of ``--more`` sentence counts; the median, and crfsdca's
  ratio to sklearn-crfsuite's.

Run alone: ``python benchmarks/first_use.py`` (about 8 minutes on two cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORK = """
import sys, time
sys.path.insert(0, {benchmarks!r})
from tutorial import iob_sents, sent2features, sent2labels
train = iob_sents("ned.train", limit=int(sys.argv[3]))
test = iob_sents("ned.testa", limit=300)
X = [sent2features(s) for s in train]; y = [sent2labels(s) for s in train]
Xt = [sent2features(s) for s in test]
t = time.perf_counter()
if sys.argv[1] == "sklearn-crfsuite":
    from sklearn_crfsuite import CRF
else:
    from crfsdca import CRF
call = dict(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
            all_possible_transitions=True) if sys.argv[2] == "tutorial" else {{}}
crf = CRF(**call).fit(X, y)
crf.predict(Xt)
print(f"{{time.perf_counter() - t:.3f}}")
"""


def run(cmd, env=None, cwd=None) -> str:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def environment(base: Path, name: str, *packages: str) -> Path:
    """A fresh virtual environment with ``packages`` (pip arguments); its python."""
    env_dir = base / name
    run([sys.executable, "-m", "venv", str(env_dir)])
    python = env_dir / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", *packages])
    return python


def installed(python: Path) -> tuple[int, float]:
    """Packages (pip, setuptools, wheel left out) and MB of the environment."""
    listed = run([str(python), "-m", "pip", "list", "--format=freeze"]).split()
    names = {line.split("==")[0].lower() for line in listed} - {"pip", "setuptools", "wheel"}
    env_dir = python.parent.parent
    size = sum(f.stat().st_size for f in env_dir.rglob("*") if f.is_file())
    return len(names), size / 1e6


def wheel(out: Path, precompile: bool) -> Path:
    env = dict(os.environ, CRFSDCA_PRECOMPILE="1" if precompile else "0")
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
         str(ROOT)], env=env, cwd=out.parent)
    return next(out.glob("crfsdca-*.whl"))


def timed(python: Path, tool: str, call: str, script: Path, sentences: int,
          env=None) -> float:
    """Seconds of the whole process (start to exit)."""
    t = time.perf_counter()
    run([str(python), str(script), tool, call, str(sentences)], env=env, cwd=script.parent)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--more", type=int, nargs="*", default=[3000],
                    help="sentence counts of more warm comparisons")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))
    from common import machine

    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="crfsdca-first-use-") as tmp:
        base = Path(tmp)
        script = base / "work.py"
        script.write_text(WORK.format(benchmarks=str(ROOT / "benchmarks" / "studies")))
        t = time.perf_counter()
        shipped = wheel(base / "shipped", precompile=True)
        print(f"wheel with its kernels built in {time.perf_counter() - t:.0f} s, "
              f"{shipped.stat().st_size / 1e6:.1f} MB")
        bare = wheel(base / "bare", precompile=False)
        print(f"wheel without them: {bare.stat().st_size / 1e6:.1f} MB")
        sk = environment(base, "venv-sklearn-crfsuite", "sklearn-crfsuite")
        rows = [("sklearn-crfsuite", *installed(sk))]
        first = {}
        for label, whl, call, env in [
                ("shipped kernels, CRF()", shipped, "default", None),
                ("shipped kernels, tutorial call", shipped, "tutorial", None),
                ("another processor, CRF()", shipped, "default",
                 dict(os.environ, NUMBA_CPU_NAME="generic")),
                ("no shipped kernels, CRF()", bare, "default", None),
                ("no shipped kernels, tutorial call", bare, "tutorial", None)]:
            python = environment(base, f"venv-{len(first)}", str(whl))
            if not rows[1:]:
                rows.append(("crfsdca (library only)", *installed(python)))
            first[label] = timed(python, "crfsdca", call, script, args.sentences, env)
            print(f"first process, {label}: {first[label]:.1f} s", flush=True)
            if label == "shipped kernels, tutorial call":
                warm_python = python
        for name, packages, mb in rows:
            print(f"{name}: {packages} packages, {mb:.0f} MB")
        for sentences in [args.sentences, *args.more]:
            for call in ("default", "tutorial"):
                ours, theirs = [], []
                for _ in range(args.repeat):
                    ours.append(timed(warm_python, "crfsdca", call, script, sentences))
                    theirs.append(timed(sk, "sklearn-crfsuite", call, script, sentences))
                a, b = statistics.median(ours), statistics.median(theirs)
                print(f"warm process, {sentences} sentences, {call} call: crfsdca {a:.2f} s, "
                      f"sklearn-crfsuite {b:.2f} s (medians of {args.repeat}), "
                      f"ratio {a / b:.2f}", flush=True)


if __name__ == "__main__":
    main()
