"""Windows over a marginal store in a file: what they cost in epochs, what they save under
a memory limit.

Question: When SDCA's marginal store lives in a file larger than the memory left beside
    the rest (the default fit's last shrink, issue 57), its random draws page the store
    in and out (CoNLL-2000 on a generator under 800 MiB ran 17 minutes without ending, 30
    s without a limit). Draws kept to windows of 64 MiB of consecutive sequences
    (``store_window``), all but a share ``window_spill`` of them: how many more epochs
    do they take where the store fits, and do they let the limited fit end?
Date: 2026-11-29
Commit: cce9df1
Answer: Windows alone do not converge (a gap of 1.4e-2 to 3.5e-3 after 100 epochs, even
    with two windows); with a share of 0.1 of the draws over all sequences (the default
    spill) they take 13 / 23 epochs on Dutch (c2 = 0.1 / 0.01) against 10.6 / 22.4 with
    no window, 18.8 / 35 on CoNLL-2000 against 14.9 / 28 (spill 0.3: about none more).
    Under an 800 MiB cgroup limit the default fit on a generator of CoNLL-2000 (a float32
    store of 430 MB in a file) ends in 163 s with the default windows, certified (relative
    gap 2.4e-4; 24 s without a limit, its float64 store in memory); without a window it
    was stopped after 600 s, still running. Table:
    docs/benchmarks.md ("Windows over a store in a file"), from runs/store_windows.json.

Part 1, epochs (``--part epochs``): ``crfsdca.CRF(c1=0, c2, all_possible_transitions=True,
store_dtype='float32')`` on one thread to the default certified gap, on Dutch NER (the
tutorial's features) and CoNLL-2000 (CRFsuite's example features), the store in memory,
with no window and with 64 MiB windows at each spill; a budget of ``--budget`` epochs.
Epochs do not depend on the machine: the windows and draws are fixed by the seed.

Part 2, a limit (``--part limit``): the default fit on a generator of CoNLL-2000's items
in a cgroup limited to ``--limit-mib`` (root; the fit then takes float32 in a file of the
temporary directory, ``memory_limit.py``'s setting), with the default windows and with
``store_window=0`` (draws over all sequences, as before the windows), each stopped after
``--timeout`` seconds, and without a limit (in memory then). Seconds: run alone.

    cd benchmarks/studies && python store_windows.py --json runs/store_windows.json
    cd benchmarks/studies && python store_windows.py --part limit --add \
        --json runs/store_windows.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import kept_rows, machine, store_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WINDOW_MIB = 64.0
SPILLS = (0.0, 0.05, 0.1, 0.3)


def epochs_rows(datasets, c2s, budget: int, keep) -> None:
    from practitioner import load

    from crfsdca import CRF

    for name in datasets:
        X, y, _, _ = load(name)
        for c2 in c2s:
            for window, spill in [(0.0, None)] + [(WINDOW_MIB, s) for s in SPILLS]:
                t0 = time.perf_counter()
                crf = CRF(c1=0.0, c2=c2, all_possible_transitions=True, threads=1,
                          store_dtype="float32", store_window=window,
                          window_spill=spill, max_iterations=budget).fit(X, y)
                last = crf.training_log_.last_iteration
                keep({"dataset": name, "c2": c2, "store_window": window,
                      "window_sequences": crf.training_log_.method.get("window_sequences", 0),
                      "window_spill": spill, "epochs": float(last["epoch"]),
                      "relative_gap": float(last["relative_gap"]),
                      "seconds": time.perf_counter() - t0})


FIT = """
from crfsdca import CRF
import time
_t0 = time.perf_counter()
fit = CRF(c1=0.1, c2=0.1, all_possible_transitions=True{extra}).fit(pairs())
"""


LIMIT_FITS = {"default windows": ("", True), "no window": (", store_window=0", True),
              "no limit": ("", False)}
"""The fits of part 2: the extra arguments of each, and whether it runs under the limit."""


def limit_rows(limit_mib: int, timeout: float, fits, keep) -> None:
    from memory_limit import COPIES, REPORT, run_limited
    from peak_memory import PAIRS

    prelude = PAIRS.format(src=str(ROOT / "src"), raw=str(ROOT / "data" / "raw"),
                           config=str(ROOT / "config.yaml"))
    for label in fits:
        extra, limited = LIMIT_FITS[label]
        code = prelude + COPIES + FIT.format(extra=extra) + REPORT
        t0 = time.perf_counter()
        rc, report = run_limited(code, ["chunk", "0", "1"], limit_mib if limited else None,
                                 timeout)
        keep({"dataset": "chunk", "limit_mib": limit_mib if limited else None, "fit": label,
              "returncode": rc,
              "wall_seconds": time.perf_counter() - t0, "report": report})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("epochs", "limit"), default="epochs")
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c2", type=float, nargs="+", default=[0.1, 0.01])
    ap.add_argument("--budget", type=int, default=100, help="epochs")
    ap.add_argument("--limit-mib", type=int, default=800)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds")
    ap.add_argument("--fits", nargs="+", choices=list(LIMIT_FITS), default=list(LIMIT_FITS),
                    help="part 2's fits")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--add", action="store_true",
                    help="keep the stored rows of the other part")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    rows = kept_rows(args.json, args.add, lambda r: r.get("part") == args.part and (
        args.part == "epochs" or r["fit"] in args.fits))

    def keep(row: dict) -> None:
        rows.append({"part": args.part, **row})
        print(json.dumps(rows[-1]), flush=True)
        store_run(args.json, {"machine": machine(), "window_mib": WINDOW_MIB, "rows": rows})

    if args.part == "epochs":
        epochs_rows(args.datasets, args.c2, args.budget, keep)
    else:
        limit_rows(args.limit_mib, args.timeout, args.fits, keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
