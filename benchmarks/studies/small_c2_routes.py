"""Oracle passes to the default certified gap at the c2 users tune, route by route (issue 56).

Question: At small c2, which certified route reaches the default relative gap (3e-4) in
    the fewest oracle passes on one thread: SDCA-GAP, SDCA-GAP with Catalyst (the
    default), L-BFGS / OWL-QN certified by ||grad P(w)||^2 / (2 lambda), or a hybrid (a
    few SDCA epochs, then L-BFGS from their weights; a few L-BFGS iterations, then SDCA
    from the marginals of their weights)?
Date: 2026-11-29
Commit: 52382d0 (the solvers as at b03d383)
Answer: SDCA-GAP with Catalyst, the default, in every cell, in seconds. L-BFGS's
    certificate divides by lambda: on Dutch it certified no c2 from 0.0026 to 0.1 within
    400 iterations (12.8 at c2 = 0.0026), on CoNLL-2000 c2 = 0.01 / 0.035 / 0.1 in 437 /
    362 / 304 passes against 54 / 37 / 29 for the default; SDCA from L-BFGS's marginals
    took 1.5-2.7x the default's passes. At c2 = 0.0026 the default takes 4.9x (Dutch) and
    3.3x (CoNLL-2000) the passes of c2 = 0.1. Table:
    docs/benchmarks.md ("Small c2: which route"), from runs/small_c2_routes.json.

Every route ends on a certificate of the original problem. SDCA's is its duality gap
P(w) - D(mu). L-BFGS's is ||g||^2 / (2 lambda), g the gradient (OWL-QN: the minimal-norm
subgradient), which bounds P(w) - P* by lambda-strong convexity; it is also exactly the
duality gap of the dual point made of w's own marginals (docs/math.md section 10), so
L-BFGS -> SDCA starts SDCA from a feasible dual point with that gap. A route's passes are
its solvers' oracle passes (a forward-backward over every sequence; a forward alone, as
in the refresh of SDCA's stored gaps, counts half) up to the first monitor row whose
certified relative gap is at most ``--epsilon``, plus one pass for the marginals handed
from L-BFGS to SDCA; the monitor's own certificate passes are not counted (each route
pays about one per row). Seconds are the solvers' (one thread, indicative: this 2-vCPU
machine moves +-10-20%).

Data: sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch ("ner") and CRFsuite's
chunking features on CoNLL-2000 ("chunk"), CRFsuite's feature set with every transition.

    cd benchmarks/studies && python small_c2_routes.py --json runs/small_c2_routes.json
    cd benchmarks/studies && python small_c2_routes.py --datasets ner --c2 0.01 --limit 3000
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import kept_rows, machine, markdown_table, store_run  # noqa: E402
from practitioner import load  # noqa: E402

ROUTES = ("sdca", "sdca-catalyst", "lbfgs", "sdca-then-lbfgs", "lbfgs-then-sdca")
"""sdca: SDCA-GAP (catalyst 0); sdca-catalyst: the library's default fit; lbfgs: L-BFGS
(OWL-QN when c1 > 0) certified by its gradient; the hybrids hand over after --handover
SDCA epochs or --lbfgs-handover L-BFGS iterations. A run that diverged certifies nothing."""


def problem(X, y, c1: float, c2: float):
    """The problem ``crfsdca.CRF(c1, c2, all_possible_transitions=True)`` solves."""
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.training.feature_set import crfsuite_feature_mask
    from crfsdca.training.learn import make_problem

    attributes, labels = Vocabulary(()), Vocabulary(())
    train, _, zero_entries = encode(X, y, attributes, labels, grow=True)
    A, K = len(attributes), len(labels)
    mask = crfsuite_feature_mask(train, A, K, False, True, 0.0, False, zero_entries)
    return make_problem(train, A, K, labels.strings(), c2, mask, c1=c1, radii=False)


def run(prob, algorithm: str, epochs: float, epsilon: float, start=None, **options):
    """One certified run of ``algorithm``: (rows, solver, seconds)."""
    from crfsdca.training.learn import solver_config
    from crfsdca.training.run import run_solver

    config = solver_config(algorithm, options)  # the estimator's: CRFsuite's defaults
    r = run_solver(prob, config, epochs=epochs, start=start, tol=epsilon, relative=True,
                   certify=True, evaluate_test=False, threads=1)
    rows = [{**row, "status": r.result.status} for row in r.result.rows]
    return rows, r.solver, r.result.solver_seconds


def relative_gap(row) -> float:
    """The row's certified relative sub-optimality: the duality gap (SDCA) or the
    gradient's certificate (L-BFGS), over the primal."""
    import math

    gap = row["true_gap"] if not math.isnan(row["true_gap"]) else row.get("certificate")
    if row["status"] == "diverged" or gap is None or math.isnan(gap) or row["primal"] <= 0:
        return math.inf  # a diverged run certifies nothing
    return gap / row["primal"]


def first_certified(rows, epsilon: float) -> dict:
    """The first row certified at ``epsilon``, else the last."""
    for row in rows:
        if relative_gap(row) <= epsilon:
            return row
    return rows[-1]


def certified_fit(prob, epsilon: float, budget: int, **options) -> dict:
    """One default fit (SDCA with the estimator's options and ``options``) to ``epsilon``:
    the epochs of its first certified row (else its last), its solver seconds, that
    row's relative gap and objective, whether it is certified, and Catalyst's kappa n
    where the run ended (None without Catalyst)."""
    rows, solver, seconds = run(prob, "sdca", budget, epsilon, **options)
    end = first_certified(rows, epsilon)
    loop = solver.catalyst
    return {"epochs": round(end["epoch"], 2), "seconds": round(seconds, 2),
            "relative_gap": float(f"{relative_gap(end):.3g}"),
            "certified": bool(relative_gap(end) <= epsilon),
            "objective": float(f"{end['primal']:.10g}"),
            "kappa_n": None if loop is None else float(f"{loop.kappa * prob.n:.4g}")}


def cell_arguments(description: str, c2s: list[float], budget: int,
                   column: str) -> argparse.ArgumentParser:
    """The options of a study over (dataset, c1, c2) cells that fits each cell once per
    value of one setting (``catalyst_floor.py``, ``catalyst_momentum.py``,
    ``catalyst_tune.py``): the study adds that setting's own option."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", nargs="+", type=float, default=[0.0, 0.1])
    ap.add_argument("--c2", nargs="+", type=float, default=c2s)
    ap.add_argument("--epsilon", type=float, default=3e-4)
    ap.add_argument("--budget", type=int, default=budget, help="epochs at most")
    ap.add_argument("--limit", type=int, help="the first LIMIT training sequences")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--add", action="store_true",
                    help=f"keep the rows of --json for the cells and {column}s not run now")
    return ap


def run_cells(args, column: str, values: list, fit) -> None:
    """For each dataset, c2, c1 and value of the setting ``column``, the row {dataset, c1,
    c2, column: value, **fit(problem, value)}, printed and stored (``--json``) after
    each, so that a run stopped keeps what it measured (``args``: :func:`cell_arguments`'s)."""
    print(f"# {machine()}; one thread; epsilon {args.epsilon}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = kept_rows(args.json, args.add, lambda r: (
        r["dataset"] in args.datasets and r["c1"] in args.c1 and r["c2"] in args.c2
        and r[column] in values))
    for name in args.datasets:
        X, y, _, _ = load(name, args.limit)
        for c2 in args.c2:
            for c1 in args.c1:
                prob = problem(X, y, c1, c2)
                for value in values:
                    row = {"dataset": name, "c1": c1, "c2": c2, column: value,
                           **fit(prob, value)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    store_run(args.json, {"machine": machine(), "epsilon": args.epsilon,
                                          "budget": args.budget, "limit": args.limit,
                                          "rows": rows})


def marginals_of(prob, w):
    """The dual point of w's own marginals nu_i(w), in SDCA's store layout."""
    import numpy as np

    from crfsdca.model.oracle import sequence_marginals

    seq, K = prob.train, prob.n_labels
    unary, pair = [], []
    for i in range(seq.n_sequences):
        _, u, p = sequence_marginals(w, prob.n_attributes, K, seq, i)
        unary.append(u.ravel())
        pair.append(p.ravel())
    return np.concatenate(unary), np.concatenate(pair)


def route(prob, name: str, epsilon: float, budget: int, lbfgs_budget: int,
          handover: int, lbfgs_handover: int) -> dict:
    from crfsdca.solvers.registry import DualStart

    if name in ("sdca", "sdca-catalyst"):
        rows, _, sec = run(prob, "sdca", budget, epsilon,
                           **({"catalyst": 0.0} if name == "sdca" else {}))
        parts = [(rows, sec, 0.0)]
    elif name == "lbfgs":
        rows, _, sec = run(prob, "lbfgs", lbfgs_budget, epsilon, lbfgs_epsilon=0.0,
                           lbfgs_delta=0.0)
        parts = [(rows, sec, 0.0)]
    elif name == "sdca-then-lbfgs":
        rows1, s1, sec1 = run(prob, "sdca", handover, epsilon)
        first = [(rows1, sec1, 0.0)]
        if relative_gap(first_certified(rows1, epsilon)) <= epsilon:
            parts = first
        else:
            rows2, _, sec2 = run(prob, "lbfgs", lbfgs_budget, epsilon, start=s1.weights(),
                                 lbfgs_epsilon=0.0, lbfgs_delta=0.0)
            parts = first + [(rows2, sec2, 0.0)]
    else:  # lbfgs-then-sdca
        rows1, s1, sec1 = run(prob, "lbfgs", lbfgs_handover, epsilon, lbfgs_epsilon=0.0,
                              lbfgs_delta=0.0)
        first = [(rows1, sec1, 0.0)]
        if relative_gap(first_certified(rows1, epsilon)) <= epsilon:
            parts = first
        else:
            t0 = time.perf_counter()
            w = s1.weights()
            start = DualStart(marginals_of(prob, w), w)
            hand = time.perf_counter() - t0
            rows2, _, sec2 = run(prob, "sdca", budget, epsilon, start=start)
            parts = first + [(rows2, sec2 + hand, 1.0)]
    passes, steps, seconds = 0.0, 0.0, 0.0
    for k, (rows, sec, extra) in enumerate(parts):
        last = k == len(parts) - 1
        row = first_certified(rows, epsilon) if last else rows[-1]
        passes += (row["oracle_fb"] + 0.5 * row["oracle_fwd"]) / prob.n + extra
        steps += row["update_epochs"]
        # the solver's seconds up to that row, from the row's own clock where it has one
        seconds += row.get("seconds", sec) if last else sec
    end = first_certified(parts[-1][0], epsilon)
    return {"passes": round(passes, 1), "updates": round(steps, 1), "seconds": round(seconds, 2),
            "relative_gap": float(f"{relative_gap(end):.3g}"),
            "certified": bool(relative_gap(end) <= epsilon), "status": end["status"],
            "objective": float(f"{end['primal']:.10g}") if "primal" in end else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", nargs="+", type=float, default=[0.0])
    ap.add_argument("--c2", nargs="+", type=float, default=[0.0026, 0.01, 0.035, 0.1])
    ap.add_argument("--routes", nargs="+", choices=ROUTES, default=list(ROUTES))
    ap.add_argument("--epsilon", type=float, default=3e-4)
    ap.add_argument("--budget", type=int, default=150, help="SDCA's epochs")
    ap.add_argument("--lbfgs-budget", type=int, default=400, help="L-BFGS's iterations")
    ap.add_argument("--handover", type=int, default=5, help="SDCA's epochs before L-BFGS")
    ap.add_argument("--lbfgs-handover", type=int, default=20,
                    help="L-BFGS's iterations before SDCA")
    ap.add_argument("--limit", type=int, help="the first LIMIT training sequences")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--add", action="store_true",
                    help="keep the rows of --json for the cells and routes not run now")
    args = ap.parse_args()
    print(f"# {machine()}; one thread; epsilon {args.epsilon}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = kept_rows(args.json, args.add, lambda r: (
        r["dataset"] in args.datasets and r["c1"] in args.c1 and r["c2"] in args.c2
        and r["route"] in args.routes))
    for name in args.datasets:
        X, y, _, _ = load(name, args.limit)
        for c1 in args.c1:
            for c2 in args.c2:
                prob = problem(X, y, c1, c2)
                for r in args.routes:
                    row = {"dataset": name, "c1": c1, "c2": c2, "route": r,
                           **route(prob, r, args.epsilon, args.budget, args.lbfgs_budget,
                                   args.handover, args.lbfgs_handover)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    store_run(args.json, {
                        "machine": machine(), "epsilon": args.epsilon,
                        "budget": args.budget, "lbfgs_budget": args.lbfgs_budget,
                        "handover": args.handover, "lbfgs_handover": args.lbfgs_handover,
                        "limit": args.limit, "rows": rows})
    print()
    print(markdown_table(rows, ["dataset", "c1", "c2", "route", "passes", "updates", "seconds",
                                "relative_gap", "certified"]))


if __name__ == "__main__":
    main()
