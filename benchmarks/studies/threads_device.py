"""How the default fit scales with ``threads`` on a machine of many cores.

Question: How does the tutorial's cell scale from 1 to 16 threads?
Date: 2026-11-26
Commit: 3c32d8e
Answer: The solver scales to 8 threads and no further: 1.82x on Dutch and 2.82x on
    CoNLL-2000 at 8 threads (the whole fit 1.60x at 4 threads on Dutch, 2.43x at 8 on
    CoNLL-2000); at 16 it is slower than at 8.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/threads_device.py`.

``crfsdca.CRF(c1=0.1, c2=0.1, all_possible_transitions=True, threads=t).fit(X, y)`` on the
practitioner's data (``practitioner.load``: CoNLL-2002 Dutch with sklearn-crfsuite's
tutorial features, CoNLL-2000 with CRFsuite's chunking features), one process, after a
warm-up of numba on 50 sentences of each dataset (on 1 and on 2 threads). Per fit: the
whole ``fit`` seconds, the solver's seconds (``model_.training["seconds"]``), the epochs
and the relative gap of the last row of ``training_log_``, and the speed-up of the fit
and of the solver over ``threads=1`` on the same dataset.

Fits run in the order Dutch 1, 2, 4, 8, 16, then CoNLL-2000 1, 16, 4, 2, 8; a fit is
skipped when the elapsed seconds plus the last fit's of that dataset would pass
``--budget``. The table is printed after every fit and written to ``--out`` (default
``$OUT/threads.md`` when ``OUT`` is set), so that a run stopped early keeps its rows.

    NUMBA_CACHE_DIR=/tmp/numba PYTHONUNBUFFERED=1 python benchmarks/studies/threads_device.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_CACHE_DIR", "/tmp/crfsdca-numba-cache")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

T0 = time.perf_counter()

from common import machine, markdown_table  # noqa: E402
from practitioner import load  # noqa: E402

NAMES = {"ner": "Dutch", "chunk": "CoNLL-2000"}
COLUMNS = ["dataset", "threads", "fit s", "solver s", "epochs", "relative gap",
           "fit speed-up", "solver speed-up"]


def versions() -> str:
    import llvmlite
    import numba
    import numpy
    import sklearn

    return (f"numpy {numpy.__version__}, numba {numba.__version__} ({numba.__file__}), "
            f"llvmlite {llvmlite.__version__}, scikit-learn {sklearn.__version__}")


def fit(X, y, threads: int) -> dict:
    from crfsdca import CRF

    crf = CRF(c1=0.1, c2=0.1, all_possible_transitions=True, threads=threads)
    t0 = time.perf_counter()
    crf.fit(X, y)
    seconds = time.perf_counter() - t0
    last = crf.training_log_[-1]
    return {"fit": seconds, "solver": crf.model_.training["seconds"],
            "epochs": last["epoch"], "gap": last["relative_gap"],
            "status": crf.model_.training["status"]}


def table(results: list[dict]) -> str:
    base = {r["dataset"]: r for r in results if r["threads"] == 1}
    rows = []
    for r in sorted(results, key=lambda r: (list(NAMES).index(r["key"]), r["threads"])):
        b = base.get(r["dataset"])
        rows.append({
            "dataset": r["dataset"], "threads": r["threads"], "fit s": f"{r['fit']:.2f}",
            "solver s": f"{r['solver']:.2f}", "epochs": f"{r['epochs']:g}",
            "relative gap": f"{r['gap']:.2e}",
            "fit speed-up": f"{b['fit'] / r['fit']:.2f}x" if b else "—",
            "solver speed-up": f"{b['solver'] / r['solver']:.2f}x" if b else "—",
        })
    return markdown_table(rows, COLUMNS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=400.0,
                    help="seconds from the start after which no fit is begun")
    ap.add_argument("--out", default=os.path.join(os.environ["OUT"], "threads.md")
                    if os.environ.get("OUT") else None)
    args = ap.parse_args(argv)
    plan = {"ner": (1, 2, 4, 8, 16), "chunk": (1, 16, 4, 2, 8)}
    header = (f"Machine: {machine()}; os.cpu_count() = {os.cpu_count()}; {versions()}; "
              f"NUMBA_CACHE_DIR={os.environ['NUMBA_CACHE_DIR']}")
    print(header, flush=True)

    data = {}
    for key in plan:
        t0 = time.perf_counter()
        X, y, _, _ = load(key)
        data[key] = (X, y)
        print(f"loaded {NAMES[key]}: {len(X)} sentences, "
              f"{sum(map(len, X))} tokens in {time.perf_counter() - t0:.1f} s", flush=True)
    for key, (X, y) in data.items():
        for t in (1, 2):
            t0 = time.perf_counter()
            fit(X[:50], y[:50], t)
            print(f"warm-up {NAMES[key]}, 50 sentences, threads={t}: "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)

    results = []
    for key, counts in plan.items():
        X, y = data[key]
        last = 0.0
        for t in counts:
            elapsed = time.perf_counter() - T0
            if elapsed + last > args.budget:
                print(f"skip {NAMES[key]} threads={t}: {elapsed:.0f} s elapsed, last fit "
                      f"{last:.0f} s, budget {args.budget:.0f} s", flush=True)
                continue
            r = fit(X, y, t)
            last = r["fit"]
            results.append({"key": key, "dataset": NAMES[key], "threads": t, **r})
            print(f"{NAMES[key]} threads={t}: fit {r['fit']:.2f} s, solver {r['solver']:.2f} "
                  f"s, epochs {r['epochs']:g}, relative gap {r['gap']:.2e}, {r['status']} "
                  f"(at {time.perf_counter() - T0:.0f} s)", flush=True)
            if args.out:
                Path(args.out).write_text(f"{header}\n\n{table(results)}\n")
    print()
    print(table(results))
    print(f"\ntotal {time.perf_counter() - T0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
