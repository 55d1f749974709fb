"""Epochs to the default certified gap against the batch size of mini-batch SDCA.

Question: How many more epochs does mini-batch SDCA (issue 55: B steps computed against
    the same weights, applied in draw order where each still raises the dual) take with
    batches of B than sequential SDCA, at the c2 users tune, so what B can the default
    take?
Date: 2026-11-28
Commit: 336a650
Answer: Few more epochs up to B = 8, more beyond. Dutch (the tutorial's features), c2 =
    0.01 / 0.1 / 1: B = 8 takes 1.07x / 1.13x / 1.06x the epochs of B = 1 (22.2, 10.6,
    6.2), B = 16 1.16x / 1.42x / 1.13x, B = 32 1.40x / 1.98x / 1.39x; CoNLL-2000 (27.3,
    15, 8.7 at B = 1): B = 8 1.01x / 1.00x / 1.01x, B = 16 1.02x / 1.07x / 1.03x, B = 32
    1.06x / 1.20x / 1.13x. But on this 2-vCPU machine B = 8 on two threads is no faster than
    B = 1 on one (docs/benchmarks.md), so the default stays 1. Table:
    docs/benchmarks.md ("Mini-batch SDCA"), from benchmarks/studies/runs/minibatch.json.

A run with batches of B is the same run on one thread as on B (each step of a batch is
computed from the batch's weights alone, and the steps are applied in draw order), so
the epochs and oracle passes counted here on one thread are those of B threads; the
wall time on B cores is modelled from them in docs/benchmarks.md. For each dataset
(sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch, CRFsuite's chunking features
on CoNLL-2000), c1, c2 and B,
``crfsdca.CRF`` (its defaults: SDCA-GAP, Catalyst, ``epsilon`` 3e-4) fits on one thread
with a budget of ``--budget`` epochs. Reported per fit: epochs, oracle calls over n (the
oracle-pass equivalents), solver seconds, the relative gap it ended at, its status.

    cd benchmarks/studies && python minibatch.py --json runs/minibatch.json
    cd benchmarks/studies && python minibatch.py --datasets ner --batch-sizes 1 2 --c2 0.1 \
        --limit 3000
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import machine, markdown_table, store_run  # noqa: E402
from practitioner import load  # noqa: E402


def fit(X, y, c1: float, c2: float, batch_size: int, budget: int) -> dict:
    from crfsdca import CRF

    crf = CRF(c1=c1, c2=c2, batch_size=batch_size, threads=1, max_iterations=budget,
              all_possible_transitions=True)
    crf.fit(X, y)
    log = crf.training_log_
    last, training = log.last_iteration, crf.model_.training
    passes = (log.counters.get("oracle_fb", 0) + 0.5 * log.counters.get("oracle_fwd", 0))
    return {"epochs": round(last["epoch"], 2), "passes": round(passes / len(X), 2),
            "solver_seconds": round(training["seconds"], 2),
            "relative_gap": float(f"{last['relative_gap']:.3g}"),
            "status": training["status"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", nargs="+", type=float, default=[0.0])
    ap.add_argument("--c2", nargs="+", type=float, default=[0.01, 0.1, 1.0])
    ap.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--budget", type=int, default=50)
    ap.add_argument("--limit", type=int, help="the first LIMIT training sequences")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"# {machine()}; one thread; budget {args.budget} epochs; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = []
    for name in args.datasets:
        X, y, _, _ = load(name, args.limit)
        for c1 in args.c1:
            for c2 in args.c2:
                for size in args.batch_sizes:
                    row = {"dataset": name, "c1": c1, "c2": c2, "B": size,
                           **fit(X, y, c1, c2, size, args.budget)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    store_run(args.json, {"machine": machine(), "budget": args.budget,
                                          "limit": args.limit, "rows": rows})
    print()
    print(markdown_table(rows, ["dataset", "c1", "c2", "B", "epochs", "passes",
                                "solver_seconds", "relative_gap", "status"]))


if __name__ == "__main__":
    main()
