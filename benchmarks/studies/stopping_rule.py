"""Which certified tolerance should the estimator's default fit stop at? F1 against the

Question: Which certified relative gap makes a good default tolerance: where does test
    F1 stop moving?
Date: 2026-11-26
Commit: 7128201
Answer: 3e-4: the first epoch at 3e-4 is within 0.1 F1 points of the converged model in
    all 18 cells in both runs, with 10% fewer epochs than 1e-4 (323 against 358); the
    estimator's default since 9ccae4c.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/stopping_rule.py`.

relative duality gap, epoch by epoch, on the practitioner's grid.

For each cell (c1, c2) of ``practitioner.py``'s grid and each dataset, one SDCA-GAP fit
(the estimator's default algorithm) runs to a relative gap of 1e-6 (or 150 epochs) with
the test set as its dev set, so that its training log holds the relative gap and the dev
scores of every epoch. Reported: the largest tolerance at which the first epoch whose
certified relative gap is below it has a dev F1 (conlleval chunk F1) within 0.1 points of
the converged model's, in every cell; and per cell the epochs each tolerance takes.

    python benchmarks/studies/stopping_rule.py --datasets ner chunk --json stop.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import machine
from practitioner import GRID_C1, GRID_C2, load

TOLERANCES = (1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5)


def trace(data, c1: float, c2: float) -> list[dict]:
    from crfsdca import CRF

    X, y, Xt, yt = data
    crf = CRF(c1=c1, c2=c2, epsilon=1e-6, max_iterations=150, all_possible_transitions=True)
    crf.fit(X, y, X_dev=Xt, y_dev=yt)
    return list(crf.training_log_)


def first_below(rows: list[dict], tol: float) -> dict | None:
    return next((r for r in rows if r["relative_gap"] <= tol), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--limit", type=int)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    cells = []
    for name in args.datasets:
        data = load(name, args.limit)
        for c1 in GRID_C1:
            for c2 in GRID_C2:
                rows = trace(data, c1, c2)
                final = rows[-1]["dev_f1"]
                cell = {"dataset": name, "c1": c1, "c2": c2, "final_f1": final,
                        "final_gap": rows[-1]["relative_gap"], "epochs": rows[-1]["epoch"],
                        "by_tolerance": {}}
                for tol in TOLERANCES:
                    r = first_below(rows, tol)
                    cell["by_tolerance"][tol] = None if r is None else {
                        "epoch": r["epoch"], "f1": r["dev_f1"], "seconds": r["seconds"]}
                cells.append(cell)
                print(json.dumps(cell), flush=True)
                if args.json:
                    args.json.write_text(json.dumps(cells, indent=1))
    for tol in TOLERANCES:
        worst = max((abs(c["by_tolerance"][tol]["f1"] - c["final_f1"])
                     if c["by_tolerance"][tol] else float("inf")) for c in cells)
        epochs = [c["by_tolerance"][tol]["epoch"] if c["by_tolerance"][tol] else None
                  for c in cells]
        print(f"tolerance {tol:g}: worst F1 change {worst:.3f} points; epochs {epochs}")


if __name__ == "__main__":
    main()
