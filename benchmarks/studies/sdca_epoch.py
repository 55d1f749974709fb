"""Seconds per SDCA epoch on each dataset, and its ratio to one bare oracle pass.

Question: What does an SDCA epoch cost, in bare oracle passes and against a plain-numpy
    SDCA?
Date: 2026-11-21
Commit: 930926f
Answer: 5.3-6.8 bare passes an epoch (OCR 0.33 s, CONLL 1.31 s, NER 0.45 s, POS 1.72 s),
    19x faster than the plain-numpy SDCA on OCR and 163-321x on the larger datasets;
    later changes brought it to 3.9-4.9 passes. The suite's `test_sdca_epoch` measures
    it now.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/sdca_epoch.py`.

The ratio is the overhead of SDCA over pure inference: gap, line search, sparse
primal update and the marginal store's memory traffic. Also reports the mean
number of line-search evaluations, the share of step time spent in the line
search, and (``--numpy``) the seconds per epoch of a plain-numpy SDCA in the
style of the paper's implementation, timed on a few hundred steps.

    python benchmarks/studies/sdca_epoch.py [--datasets ...] [--epochs 3] [--numpy]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy_reference
from common import DATASETS, best_time, featurized_problems, machine, markdown_table

from crfsdca.model.objective import oracle_pass
from crfsdca.solvers.sdca import SDCA


def numpy_seconds_per_epoch(problem, steps: int) -> float:
    s = SDCA(problem, sampler="gap", seed=0)  # borrow the initialization
    ref = numpy_reference.NumpySDCA(problem.train, problem.n_attributes, problem.n_labels,
                                    problem.lam, *s.marginals, s.weights(), seed=0)
    ref.run(10)
    t0 = time.perf_counter()
    ref.run(steps)
    return (time.perf_counter() - t0) / steps * problem.n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs (after one warm-up)")
    ap.add_argument("--sampler", default="gap")
    ap.add_argument("--store-dtype", default="float64")
    ap.add_argument("--numpy", action="store_true", help="also time the plain-numpy SDCA")
    ap.add_argument("--numpy-steps", type=int, default=500)
    args = ap.parse_args(argv)
    rows = []
    for name, problem in featurized_problems(args.datasets):
        s = SDCA(problem, sampler=args.sampler, store_dtype=args.store_dtype, seed=0)
        s.run(problem.n)  # warm-up epoch: compile, leave the initial regime
        s.diagnostics()
        t0 = time.perf_counter()
        s.run(args.epochs * problem.n)
        epoch = (time.perf_counter() - t0) / args.epochs
        diag = s.diagnostics()
        w = s.weights().copy()
        args_pass = (w, problem.train, problem.n_attributes, problem.n_labels)
        t_pass = best_time(lambda: oracle_pass(*args_pass))  # noqa: B023
        row = {"dataset": name, "n": problem.n, "seconds/epoch": f"{epoch:.3f}",
               "oracle pass (s)": f"{t_pass:.3f}", "epoch / pass": f"{epoch / t_pass:.2f}",
               "ls evals/step": f"{diag['ls_iters']:.2f}",
               "ls time share": f"{100 * diag['ls_time_share']:.0f}%",
               "profile": " / ".join(f"{100 * diag['share_' + k]:.0f}"
                                     for k in ("oracle", "gap", "direction", "line_search",
                                               "update"))}
        if args.numpy:
            t_np = numpy_seconds_per_epoch(problem, args.numpy_steps)
            row["numpy s/epoch"] = f"{t_np:.1f}"
            row["speed-up vs numpy"] = f"{t_np / epoch:.0f}x"
        rows.append(row)
        print(f"{name}: {epoch:.3f}s/epoch, pass {t_pass:.3f}s", file=sys.stderr)
    cols = ["dataset", "n", "seconds/epoch", "oracle pass (s)", "epoch / pass",
            "ls evals/step", "ls time share", "profile"]
    if args.numpy:
        cols += ["numpy s/epoch", "speed-up vs numpy"]
    print(f"Machine: {machine()}; one thread. SDCA sampler {args.sampler}, theta 0.8, "
          f"Newton line search at 1e-3, {args.store_dtype} marginals; mean of "
          f"{args.epochs} epochs after one warm-up epoch.\n")
    print(markdown_table(rows, cols))
    print("\nprofile: % of step time in oracle / gap pass / primal direction / line search / "
          "update (cycle counters inside the kernel)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
