"""Epochs to the default certified gap against the number of parts of partitioned SDCA.

Question: How many more epochs does partitioned SDCA (CoCoA+ with sigma' = P, issue 55)
    take with P parts than sequential SDCA, at the c2 users tune, so what P can the
    default take?
Date: 2026-11-28
Commit: 730a42c
Answer: Dutch (the tutorial's features): no P > 1 reaches the gap in 50 epochs at c2 =
    0.01, 0.1 or 1 (P = 1: 22.2, 10.6, 6.2 epochs); CoNLL-2000: P = 2 takes 1.79x, 1.53x,
    1.14x the epochs. The default keeps P = 1. Table: docs/benchmarks.md ("Partitioned
    SDCA"), from benchmarks/studies/runs/partitions.json.
Frozen: kept as it ran; the option `partitions` is gone since c504726 (mini-batch SDCA,
    `minibatch.py`, replaced partitioned SDCA): run it at 99e3dd5.

A P-part run is the same run on one core as on P (the parts are independent within a
round and their changes are added in a fixed order), so the epochs and oracle passes
counted here on one thread are those of P threads; the wall time on P cores is modelled
from them in docs/benchmarks.md. For each dataset (sklearn-crfsuite's tutorial features on
CoNLL-2002 Dutch, CRFsuite's chunking features on CoNLL-2000), c1, c2 and P,
``crfsdca.CRF`` (its defaults: SDCA-GAP, Catalyst, ``epsilon`` 3e-4) fits on one thread
with a budget of ``--budget`` epochs. Reported per fit: epochs, oracle calls over n (the
oracle-pass equivalents), solver seconds, the relative gap it ended at, its status.

    cd benchmarks/studies && python partitions.py --json runs/partitions.json
    cd benchmarks/studies && python partitions.py --datasets ner --parts 1 2 --c2 0.1 --limit 3000
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


def fit(X, y, c1: float, c2: float, parts: int, budget: int) -> dict:
    from crfsdca import CRF

    crf = CRF(c1=c1, c2=c2, partitions=parts, threads=1, max_iterations=budget,
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
    ap.add_argument("--parts", nargs="+", type=int, default=[1, 2, 4, 8, 16])
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
                for parts in args.parts:
                    row = {"dataset": name, "c1": c1, "c2": c2, "P": parts,
                           **fit(X, y, c1, c2, parts, args.budget)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    store_run(args.json, {"machine": machine(), "budget": args.budget,
                                          "limit": args.limit, "rows": rows})
    print()
    print(markdown_table(rows, ["dataset", "c1", "c2", "P", "epochs", "passes",
                                "solver_seconds", "relative_gap", "status"]))


if __name__ == "__main__":
    main()
