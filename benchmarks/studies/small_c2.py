"""Epochs to a certified relative gap as c2 falls: SDCA with and without Catalyst (issue 28).

Question: At a small c2, how many epochs does SDCA take in Catalyst's loop, and with
    which kappa?
Date: 2026-11-26
Commit: 68bff67
Answer: Epochs at c2 = 0.01 over c2 = 1: Dutch 8.6 (the paper's SDCA) -> 3.4 (kappa =
    max(3 lambda, 0.3 / n), the default), CoNLL-2000 more than 18 -> 3.3; issue 28's 2
    not met. At c2 = 0.01 every cell is flat for kappa n from 0.2 to 0.6: the floor 0.3.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/small_c2.py`.

For each dataset (the practitioner's: sklearn-crfsuite's tutorial features on CoNLL-2002
Dutch, CRFsuite's chunking features on CoNLL-2000), each c1 and c2 and each ``catalyst``
ratio kappa / lambda (0: the paper's SDCA; kappa n at least ``--floor``, the option
``catalyst_floor``, the library's default unless given), ``crfsdca.CRF`` fits with ``epsilon`` (the
certified relative duality gap it stops at, 1e-4 by default) and a budget of
``--budget`` epochs, one thread. Reported per fit: the epochs it took, its
solver seconds, its whole ``fit`` seconds, and the relative gap it ended at; then, per
dataset and ratio, the epochs at the smallest c2 over those at the largest (the issue's
target: at most 2).

    cd benchmarks/studies && python small_c2.py                          # ner and chunk, 0 and 3
    cd benchmarks/studies && python small_c2.py --datasets ner --ratios 0 2 3 4 6 9 --c2 0.01 0.1
    cd benchmarks/studies && python small_c2.py --c1 0.1 0.5 --c2 0.01 --ratios 3 15 30 --floor 0
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import machine, markdown_table  # noqa: E402
from practitioner import load  # noqa: E402


def fit(X, y, c1: float, c2: float, ratio: float, epsilon: float, budget: int,
        floor: float | None = None) -> dict:
    from crfsdca import CRF

    crf = CRF(c1=c1, c2=c2, catalyst=ratio, catalyst_floor=floor, epsilon=epsilon,
              max_iterations=budget, all_possible_transitions=True)
    t0 = time.perf_counter()
    crf.fit(X, y)
    seconds = time.perf_counter() - t0
    last = crf.training_log_.last_iteration
    return {"epochs": round(last["epoch"], 2), "fit_seconds": round(seconds, 2),
            "solver_seconds": round(crf.model_.training["seconds"], 2),
            "relative_gap": float(f"{last['relative_gap']:.3g}"),
            "status": crf.model_.training["status"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", nargs="+", type=float, default=[0.0])
    ap.add_argument("--c2", nargs="+", type=float, default=[0.01, 0.1, 1.0])
    ap.add_argument("--ratios", nargs="+", type=float, default=[0.0, 3.0])
    ap.add_argument("--floor", type=float, help="catalyst_floor (default: the library's)")
    ap.add_argument("--epsilon", type=float, default=1e-4)
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--limit", type=int, help="the first LIMIT training sequences")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"# {machine()}; one thread; epsilon {args.epsilon:g}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = []
    for name in args.datasets:
        X, y, _, _ = load(name, args.limit)
        for c1 in args.c1:
            for c2 in args.c2:
                for ratio in args.ratios:
                    row = {"dataset": name, "c1": c1, "c2": c2, "catalyst": ratio,
                           **fit(X, y, c1, c2, ratio, args.epsilon, args.budget,
                                 args.floor)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if args.json:
                        args.json.write_text(json.dumps(rows, indent=1))
    print()
    print(markdown_table(rows, ["dataset", "c1", "c2", "catalyst", "epochs", "fit_seconds",
                                "solver_seconds", "relative_gap", "status"]))
    print()
    lo, hi = min(args.c2), max(args.c2)
    for name in args.datasets:
        for c1 in args.c1:
            for ratio in args.ratios:
                by_c2 = {r["c2"]: r for r in rows if (r["dataset"], r["c1"], r["catalyst"])
                         == (name, c1, ratio)}
                if lo in by_c2 and hi in by_c2 and lo != hi:
                    print(f"{name} c1={c1:g} catalyst={ratio:g}: epochs at c2={lo:g} / at "
                          f"c2={hi:g} = {by_c2[lo]['epochs'] / by_c2[hi]['epochs']:.2f}")


if __name__ == "__main__":
    main()
