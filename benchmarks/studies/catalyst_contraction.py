"""Catalyst's floor at small c2: is the outer loop or the inner problem the limit (issue 56)?

Question: At c2 = 0.0026 and 0.01, Dutch NER is faster with Catalyst's floor kappa n =
    0.1 and CoNLL-2000 with 0.3 (the default). Does what a run shows while it runs (the
    certified gap's contraction per round against Catalyst's outer rate 1 - sqrt(q),
    q = lambda / (lambda + kappa), or the line search's mean step) tell which kappa is
    the better one, so that a rule could choose it?
Date: 2026-11-29
Commit: 1ef18f3 (Spanish added at this commit; Dutch and CoNLL-2000 ran at d44b98b)
Answer: Not at the default. At kappa n = 0.1, Dutch's certified gap contracts faster per
    round than 1 - sqrt(q) (the outer loop is the limit: the smaller kappa wins, 35 / 21
    epochs against 54 / 26) and CoNLL-2000's and Spanish NER's slower (0.89-0.93 against
    0.59-0.78: one epoch no longer solves the round's problem; 0.3 wins, Spanish by 117 /
    94 epochs against 71 / 51). At 0.3, Dutch and CoNLL-2000 contract faster than their
    bound by the same ratio and their median steps are close (0.71-0.73 at c2 = 0.0026),
    so nothing seen at the default tells them apart; Spanish stands out there (median
    step 0.25-0.33, contraction at or behind its bound). Table: docs/benchmarks.md
    ("Small c2: which route"), from runs/catalyst_contraction.json.

For each dataset, c2 and floor (``catalyst_floor``: kappa n at least this; ``catalyst``
stays 3, so kappa = max(3 lambda, floor / n)), the library's SDCA fit with c1 = 0 to a
certified relative gap of ``--epsilon`` (3e-4, the default), one thread. Reported: the
epochs it took, its solver seconds (indicative: this machine moves +-10-20%), Catalyst's
outer rate 1 - sqrt(q), the certified relative gap's mean contraction per round over the
second half of the run (the first rounds, from the smoothed Dirac start, raise it), and
the median of the rounds' mean line-search steps over the same half. Epochs, gaps and
steps do not depend on the machine.

Data: sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch ("ner") and Spanish
("esp"), and CRFsuite's chunking features on CoNLL-2000 ("chunk"), CRFsuite's feature
set with every transition.

    cd benchmarks/studies && python catalyst_contraction.py --json runs/catalyst_contraction.json
    cd benchmarks/studies && python catalyst_contraction.py --datasets esp --add \
        --json runs/catalyst_contraction.json
    cd benchmarks/studies && python catalyst_contraction.py --datasets ner --c2 0.01 --floors 0.1
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import kept_rows, machine, markdown_table, store_run  # noqa: E402
from practitioner import load  # noqa: E402
from small_c2_routes import problem, relative_gap, run  # noqa: E402


def second_half(values: list[float]) -> list[float]:
    return values[len(values) // 2:]


def measure(prob, floor: float, epsilon: float, budget: int) -> dict:
    """One fit: its epochs, seconds, outer rate (of the kappa the solver ran with), late
    contraction and late median step."""
    rows, solver, seconds = run(prob, "sdca", budget, epsilon, catalyst_floor=floor)
    loop = solver.catalyst
    gaps, steps = [], []
    for row in rows:
        gaps.append(float(relative_gap(row)))
        steps.append(row["mean_step"])
        if gaps[-1] <= epsilon:
            break
    late = second_half(gaps)
    contraction = (late[-1] / late[0]) ** (1.0 / (len(late) - 1)) if len(late) > 1 else math.nan
    late_steps = sorted(s for s in second_half(steps) if not math.isnan(s))
    return {"epochs": len(gaps) - 1, "certified": bool(gaps[-1] <= epsilon),
            "seconds": round(seconds, 1),
            "outer_rate": round(1.0 - math.sqrt(loop.lam / loop.inner_lam), 3),
            "contraction": round(contraction, 3),
            "median_step": round(late_steps[len(late_steps) // 2], 2) if late_steps else None,
            "gaps": [float(f"{g:.3g}") for g in gaps]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c2", nargs="+", type=float, default=[0.0026, 0.01])
    ap.add_argument("--floors", nargs="+", type=float, default=[0.1, 0.3])
    ap.add_argument("--epsilon", type=float, default=3e-4)
    ap.add_argument("--budget", type=int, default=150, help="epochs at most")
    ap.add_argument("--limit", type=int, default=None, help="training sentences at most")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--add", action="store_true",
                    help="keep the stored run's rows of the datasets not measured now")
    args = ap.parse_args()

    out = {"machine": machine(), "epsilon": args.epsilon, "budget": args.budget,
           "limit": args.limit,
           "rows": kept_rows(args.json, args.add, lambda r: r["dataset"] in args.datasets)}
    for name in args.datasets:
        X, y, _, _ = load(name, args.limit)
        for c2 in args.c2:
            prob = problem(X, y, 0.0, c2)
            for floor in args.floors:
                row = {"dataset": name, "c2": c2, "floor": floor,
                       **measure(prob, floor, args.epsilon, args.budget)}
                out["rows"].append(row)
                store_run(args.json, out)
                print({k: v for k, v in row.items() if k != "gaps"}, flush=True)
    print(markdown_table(out["rows"], ["dataset", "c2", "floor", "epochs", "outer_rate",
                                       "contraction", "median_step", "seconds"]))


if __name__ == "__main__":
    main()
