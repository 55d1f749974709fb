"""Epochs to the default certified gap by Catalyst's momentum (issue 56).

Question: Catalyst's momentum (1 - sqrt q) / (1 + sqrt q) takes q = lambda / (lambda +
    kappa), lambda being the strong convexity every problem has. Where the losses add
    curvature (an L1 term confining the weights to a support) that momentum overshoots.
    How many epochs to the default relative gap (3e-4) does the default fit take with
    lambda's momentum, half of it, none (the proximal point method), and the momentum of
    the curvature each round estimates along its step (the default since this study)?
Date: 2026-11-30
Commit: the working tree after 435d142 (the estimate added; its commit follows)
Answer: the estimate is never more than one epoch behind lambda's momentum (Dutch at c2
    = 1: 7.0 against 6.6 and 6.8 against 6.4) and gains where the L1 term confines the
    weights: Dutch at c1 = 0.1 from 44.0 to 32.3 epochs (c2 = 0.0026) and 23.5 to 20.5
    (c2 = 0.01), CoNLL-2000 at c1 = 0.1, c2 = 0.0026 from 95.9 to 77.0. No fixed share
    is as good everywhere: none at all takes CoNLL-2000 at c1 = 0.1, c2 = 0.01 to 29.8
    epochs (44.0 with lambda's, 44.9 with the estimate, whose quotient stays at lambda
    there) but c1 = 0 at c2 = 0.0026 to 118 (48.0). Table: docs/history.md ("Catalyst's
    momentum from the curvature"), from runs/catalyst_momentum.json.

Each fit is ``crfsdca.CRF(c1, c2, all_possible_transitions=True)``'s problem and solver
(SDCA in Catalyst's loop, the compact store, CRFsuite's feature set) on one thread with
``catalyst_momentum`` set: ``estimate`` is None (the default), ``lambda`` 1.0 (the
default before), ``half`` 0.5 and ``none`` 0.0. Epochs are those of the first monitor
row certified at ``--epsilon``; they do not depend on the machine or its load (the
seconds do: indicative only). The estimate's mu_k / lambda, round by round, is kept for
the ``estimate`` runs.

Data: sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch ("ner") and CRFsuite's
chunking features on CoNLL-2000 ("chunk").

    cd benchmarks/studies && python catalyst_momentum.py --json runs/catalyst_momentum.json
    cd benchmarks/studies && python catalyst_momentum.py --datasets ner --c1 0.1 --c2 0.01
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import kept_rows, machine, store_run  # noqa: E402
from practitioner import load  # noqa: E402
from small_c2_routes import first_certified, problem, relative_gap  # noqa: E402

SHARES = {"estimate": None, "lambda": 1.0, "half": 0.5, "none": 0.0}
"""The momentum of each column: ``catalyst_momentum``'s value."""


def fit(prob, share, epsilon: float, budget: int) -> dict:
    """One default fit with ``catalyst_momentum=share``: its epochs, seconds and, for the
    estimate, mu_k / lambda after every round."""
    from crfsdca.solvers import catalyst
    from crfsdca.training.learn import solver_config
    from crfsdca.training.run import run_solver

    seen = []
    step = catalyst.CatalystLoop.next_round

    def next_round(loop, v, w):  # records the estimate each round ends with
        step(loop, v, w)
        seen.append(round(loop.curvature / loop.lam, 3))

    catalyst.CatalystLoop.next_round = next_round
    try:
        config = solver_config("sdca", {"catalyst_momentum": share})
        r = run_solver(prob, config, epochs=budget, tol=epsilon, relative=True,
                       certify=True, evaluate_test=False, threads=1)
    finally:
        catalyst.CatalystLoop.next_round = step
    rows = [{**row, "status": r.result.status} for row in r.result.rows]
    end = first_certified(rows, epsilon)
    return {"epochs": round(end["epoch"], 2), "seconds": round(r.result.solver_seconds, 2),
            "relative_gap": float(f"{relative_gap(end):.3g}"),
            "certified": bool(relative_gap(end) <= epsilon),
            "objective": float(f"{end['primal']:.10g}"),
            **({"curvature": seen} if share is None else {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", nargs="+", type=float, default=[0.0, 0.1])
    ap.add_argument("--c2", nargs="+", type=float, default=[0.0026, 0.01, 0.1, 1.0])
    ap.add_argument("--momenta", nargs="+", choices=SHARES, default=list(SHARES))
    ap.add_argument("--epsilon", type=float, default=3e-4)
    ap.add_argument("--budget", type=int, default=200, help="epochs at most")
    ap.add_argument("--limit", type=int, help="the first LIMIT training sequences")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--add", action="store_true",
                    help="keep the rows of --json for the cells not run now")
    args = ap.parse_args()
    print(f"# {machine()}; one thread; epsilon {args.epsilon}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = kept_rows(args.json, args.add, lambda r: (
        r["dataset"] in args.datasets and r["c1"] in args.c1 and r["c2"] in args.c2
        and r["momentum"] in args.momenta))
    for name in args.datasets:
        X, y, _, _ = load(name, args.limit)
        for c2 in args.c2:
            for c1 in args.c1:
                prob = problem(X, y, c1, c2)
                for m in args.momenta:
                    row = {"dataset": name, "c1": c1, "c2": c2, "momentum": m,
                           **fit(prob, SHARES[m], args.epsilon, args.budget)}
                    rows.append(row)
                    print(json.dumps({k: v for k, v in row.items() if k != "curvature"}),
                          flush=True)
                    store_run(args.json, {"machine": machine(), "epsilon": args.epsilon,
                                          "budget": args.budget, "limit": args.limit,
                                          "rows": rows})


if __name__ == "__main__":
    main()
