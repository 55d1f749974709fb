"""Seconds per SDCA epoch against the batch size and the threads (mini-batch SDCA).

Question: On this machine's cores, does mini-batch SDCA's epoch on B threads beat the
    sequential epoch on one, and what does a batch cost on one thread?
Date: 2026-11-29
Commit: af87ac2 (the apply in lanes on every thread; the run before it, at d88a7d0:
    8x1 0.63 s, 8x2 0.58 s)
Answer: Some, not the 1.8x of two cores: medians of 9 alternated epochs, sequential SDCA
    (B = 1) 0.458 s on one thread and 0.459 s on two (its refresh shares them); B = 8
    0.514 s on one thread and 0.383 s on two (1.34x its one thread, 1.20x B = 1), B = 16
    0.346 s on two (1.32x B = 1); B = 2 0.576 s on two (the threads meet every step).
    The epochs vary 0.31-0.51 s run to run on two threads (this VM). Table:
    docs/benchmarks.md ("Mini-batch SDCA").

One process, Dutch with the tutorial's features (``workload.problem_of``, c2 = 0.1, c1 =
0), one SDCA solver per configuration ``BxT`` (batch size B, T threads), each first run
two epochs (compiling, and leaving the first epochs), then one epoch of each in turn,
``--rounds`` times: the median seconds of an epoch and every round's.

    python benchmarks/studies/minibatch_wall.py --json runs/minibatch_wall.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from common import ROOT, machine, markdown_table

sys.path.insert(0, str(ROOT / "benchmarks" / "suite"))

SPECS = ("1x1", "8x1", "1x2", "2x2", "4x2", "8x2")


def main() -> None:
    import workload

    from crfsdca.solvers.sdca import SDCA

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specs", nargs="+", default=list(SPECS))
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    X, y = workload.items("ned.train")
    problem = workload.problem_of(X, y, args.c2)
    solvers = {}
    for spec in args.specs:
        batch, threads = (int(x) for x in spec.split("x"))
        solvers[spec] = SDCA(problem, seed=0, threads=threads, batch_size=batch)
        solvers[spec].run(2 * problem.n)
    runs = {spec: [] for spec in args.specs}
    for _ in range(args.rounds):
        for spec, solver in solvers.items():
            t0 = time.perf_counter()
            solver.run(problem.n)
            runs[spec].append(round(time.perf_counter() - t0, 4))
    one = statistics.median(runs[args.specs[0]])
    rows = [{"B x threads": spec, "median s": round(statistics.median(r), 3),
             f"vs {args.specs[0]}": round(one / statistics.median(r), 2), "rounds": r}
            for spec, r in runs.items()]
    print(f"# {machine()}; Dutch, c2 = {args.c2}; {time.strftime('%Y-%m-%d %H:%M')}")
    print(markdown_table(rows, list(rows[0])))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "c2": args.c2,
                                         "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
