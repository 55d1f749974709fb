"""Peak memory of SDCA on a synthetic problem at the paper's POS scale.

Question: What memory does SDCA take at the paper's POS scale?
Date: 2026-11-21
Commit: 51fe203
Answer: The float32 marginal store takes 6.6 GiB and the process peaks at 7.2 GiB (the
    paper needed 13 GiB).
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/memory_pos.py`.

N = 9.15e5 tokens, K = 45, A = 1.9e5, a = 13 (Table 1's POS row). The marginal store
holds (N - n) K^2 pairwise entries: 14.3 GiB in float64 (the paper needed 13 GiB),
7.1 GiB in float32. Prints the store size and the peak resident memory (ru_maxrss) of
the process after a fraction of an epoch.

    python benchmarks/studies/memory_pos.py [--store-dtype float32] [--steps 5000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from common import load_problem, machine

from crfsdca.solvers.sdca import SDCA


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--steps", type=int, default=5000, help="SDCA steps to run")
    args = ap.parse_args(argv)
    problem = load_problem("pos-synthetic")
    t0 = time.perf_counter()
    solver = SDCA(problem, sampler="gap", store_dtype=args.store_dtype, seed=0)
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    solver.run(args.steps)
    per_step = (time.perf_counter() - t0) / args.steps
    mem = solver.memory_bytes()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    gib = 2**30
    print(f"Machine: {machine()}")
    print(f"POS-scale synthetic: n={problem.n}, N={problem.train.n_tokens}, "
          f"K={problem.n_labels}, d={problem.dim}")
    print(f"store ({args.store_dtype}): pairwise {mem['marginals_pairwise'] / gib:.2f} GiB, "
          f"unary {mem['marginals_unary'] / gib:.2f} GiB")
    print(f"peak RSS {peak / gib:.2f} GiB; setup {setup:.1f}s; {1e3 * per_step:.2f} ms/step "
          f"({per_step * problem.n:.0f} s/epoch)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
