"""The default ``crfsdca.CRF().fit`` of two versions of the code, in alternated processes.

Question: Is the default fit faster after a change, in alternated processes of two
    versions?
Date: 2026-11-26
Commit: 57e9967
Answer: Round ends certified by a primal pass (3bba9c6) against 6048070: the same epochs
    and losses; solver medians 19.85 -> 19.35 s (CoNLL-2000, c1 = 0.1, c2 = 1) and 8.96
    -> 8.69 s (Dutch, the tutorial's cell), 2.5-3% less; at c2 = 0.01 the machine's
    drift (95-113 s) hid the 4% expected. The suite's `make bench-compare` now answers
    such questions for its figures.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/ab_fit.py`.

A change to the solver moves a fit by a few percent, and a single fit on a shared
machine wanders by 10-30%: only fits of both versions taken in turn, each in a fresh
process, compare. Each version is a git revision (its ``src/`` exported to a temporary
folder) or the working tree; the data and its loading are this checkout's
(``practitioner.load``: the tutorial's features on CoNLL-2002 Dutch, CRFsuite's chunking
features on CoNLL-2000). Every process fits once on 50 sentences (numba's kernels
loaded; a first process per version compiles them), then once timed, one thread, with
``all_possible_transitions``. Reported per cell and version: epochs, solver and fit
seconds of each repeat, and their medians.

    cd benchmarks/studies && python ab_fit.py --before HEAD~1 --cells ner:0.1:0.1 chunk:0.1:1
    python ab_fit.py --before 6048070 --after HEAD --repeat 5 --cells ner:0:1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from common import ROOT, machine, markdown_table

WORKING_TREE = "working-tree"


def export(rev: str, into: Path) -> Path:
    """The ``src/`` folder of ``rev`` (the checkout's own for the working tree)."""
    if rev == WORKING_TREE:
        return ROOT / "src"
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"],
                             capture_output=True, check=True).stdout
    folder = into / subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev],
                                   capture_output=True, text=True, check=True).stdout.strip()
    folder.mkdir()
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(folder, filter="data")
    return folder / "src"


def child(cell: str, warm_up_only: bool) -> None:
    """One process's fit of ``cell`` (dataset:c1:c2), printed as one JSON line."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from practitioner import load

    from crfsdca import CRF

    name, c1, c2 = cell.split(":")
    X, y, _, _ = load(name)
    CRF(c1=float(c1), c2=float(c2), max_iterations=2,
        all_possible_transitions=True).fit(X[:50], y[:50])
    if warm_up_only:
        return
    crf = CRF(c1=float(c1), c2=float(c2), all_possible_transitions=True)
    t0 = time.perf_counter()
    crf.fit(X, y)
    fit = time.perf_counter() - t0
    last = crf.training_log_.iterations[-1]
    print(json.dumps({"fit": fit, "solver": crf.model_.training["seconds"],
                      "epochs": last["epoch"], "loss": float(last["loss"]),
                      "relative_gap": float(last["relative_gap"])}))


def run(src: Path, cell: str, warm_up_only: bool = False) -> dict | None:
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    args = [sys.executable, __file__, "--child", cell] + (["--warm-up"] if warm_up_only
                                                          else [])
    out = subprocess.run(args, env=env, capture_output=True, text=True,
                         cwd=Path(__file__).parent)
    if out.returncode:
        raise RuntimeError(f"{src}, {cell}: exit status {out.returncode}\n{out.stderr}")
    return None if warm_up_only else json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="a git revision (required)")
    ap.add_argument("--after", default=WORKING_TREE,
                    help=f"a git revision or {WORKING_TREE!r} (the default)")
    ap.add_argument("--cells", nargs="+", default=["ner:0.1:0.1"],
                    help="dataset:c1:c2 (dataset: ner or chunk)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--warm-up", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.warm_up)
        return
    if args.before is None:
        ap.error("--before is required")
    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        versions = {rev: export(rev, Path(tmp)) for rev in (args.before, args.after)}
        for cell in args.cells:
            for src in versions.values():
                run(src, cell, warm_up_only=True)
            fits = {rev: [] for rev in versions}
            for _ in range(args.repeat):
                for rev, src in versions.items():
                    fits[rev].append(run(src, cell))
                    print(f"{cell} {rev} {json.dumps(fits[rev][-1])}", flush=True)
            for rev, runs in fits.items():
                rows.append({
                    "cell": cell, "version": rev,
                    "epochs": " ".join(f"{f['epochs']:.1f}" for f in runs),
                    "solver s": ", ".join(f"{f['solver']:.2f}" for f in runs),
                    "median solver s": f"{statistics.median(f['solver'] for f in runs):.2f}",
                    "fit s": ", ".join(f"{f['fit']:.2f}" for f in runs),
                    "median fit s": f"{statistics.median(f['fit'] for f in runs):.2f}"})
    print(markdown_table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
