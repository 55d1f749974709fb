"""Seconds per SDCA epoch against the batch size and the threads (mini-batch SDCA).

Question: On this machine's cores, does mini-batch SDCA's epoch on B threads beat the
    sequential epoch on one, and what does a batch cost on one thread?
Date: 2026-11-29 (Dutch); 2026-12-01 (CoNLL-2000)
Commit: af87ac2 (the apply in lanes on every thread; the run before it, at d88a7d0:
    8x1 0.63 s, 8x2 0.58 s); CoNLL-2000 at d5949bb
Answer: Some, not the 1.8x of two cores: medians of 9 alternated epochs, sequential SDCA
    (B = 1) 0.458 s on one thread and 0.459 s on two (its refresh shares them); B = 8
    0.514 s on one thread and 0.383 s on two (1.34x its one thread, 1.20x B = 1), B = 16
    0.346 s on two (1.32x B = 1); B = 2 0.576 s on two (the threads meet every step).
    The epochs vary 0.31-0.51 s run to run on two threads (this VM). On CoNLL-2000 (K =
    22: the oracle outweighs the apply) B = 16 on two threads is 1.59x its one thread
    (the median of the 9 rounds' ratios, 1.08-1.83x; a run of 5 rounds before it: 1.85x
    in the medians), B = 8 1.42x (1.22-1.82x); 16x2 0.962 s against 1.318 s for B = 1 on
    one thread (1.37x). Tables: docs/benchmarks.md ("Mini-batch SDCA"), from
    runs/minibatch_wall.json and runs/minibatch_wall_chunk.json.

One process, Dutch with the tutorial's features or (``--dataset chunk``) CoNLL-2000 with
CRFsuite's (``workload.problem_of``, c2 = 0.1, c1 = 0), one SDCA solver per configuration
``BxT`` (batch size B, T threads; ``BxTp``: pipelined, ``pipeline=True``), each first run
two epochs (compiling, and leaving the first epochs), then one epoch of each in turn,
``--rounds`` times: the median seconds of an epoch and every round's.

    python benchmarks/studies/minibatch_wall.py --json runs/minibatch_wall.json
    python benchmarks/studies/minibatch_wall.py --dataset chunk --specs 1x1 8x1 8x2 16x1 16x2 \
        --rounds 9 --json runs/minibatch_wall_chunk.json
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
    ap.add_argument("--dataset", choices=("ner", "chunk"), default="ner")
    ap.add_argument("--specs", nargs="+", default=list(SPECS))
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.dataset == "ner":
        X, y = workload.items("ned.train")
    else:
        from practitioner import load

        X, y, _, _ = load(args.dataset)
    problem = workload.problem_of(X, y, args.c2)
    solvers = {}
    for spec in args.specs:
        batch, threads = (int(x) for x in spec.rstrip("p").split("x"))
        solvers[spec] = SDCA(problem, seed=0, threads=threads, batch_size=batch,
                             pipeline=spec.endswith("p"))
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
    print(f"# {machine()}; {args.dataset}, c2 = {args.c2}; {time.strftime('%Y-%m-%d %H:%M')}")
    print(markdown_table(rows, list(rows[0])))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "dataset": args.dataset,
                                         "c2": args.c2, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
