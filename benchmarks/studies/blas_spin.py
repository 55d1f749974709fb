"""Why the solvers take inner products without BLAS: two SDCA lanes after a BLAS call.

Question: Does OpenBLAS's spinning after numpy's `w @ w` between chunks slow two SDCA
    lanes?
Date: 2026-11-23
Commit: a9f6f29
Answer: Yes: two lanes against one 1.80x with nothing between the chunks, 1.17x with
    numpy's `w @ w` between them, 1.77x with `jit.dot`; every long inner product now
    goes through `jit.dot`.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/blas_spin.py`.

Runs SDCA-GAP in chunks of 0.1 epoch, as a monitored run does, on 1 and on 2 lanes, and
between two chunks computes ||w||^2 in one of three ways: not at all, with numpy's
``w @ w`` (OpenBLAS's ``ddot``, on all cores, whose threads then spin for a while), or
with :func:`crfsdca.runtime.jit.dot` (this thread only). Prints the solver's seconds per epoch
(the chunks alone, not the products) and the 2-lane speed-up. With numpy's product the
second lane finds its core taken by a spinning BLAS thread.

    python benchmarks/studies/blas_spin.py [--datasets ner] [--epochs 3]
"""

from __future__ import annotations

import argparse
import sys
import time

from common import featurized_problems, machine, markdown_table

from crfsdca.runtime.jit import dot
from crfsdca.solvers.sdca import SDCA

BETWEEN = {
    "nothing": lambda w: None,
    "numpy w @ w (BLAS)": lambda w: w @ w,
    "jit.dot(w, w)": lambda w: dot(w, w),
}


def seconds_per_epoch(p, threads: int, between, epochs: float) -> float:
    """Solver seconds per epoch, run in chunks of 0.1 epoch with ``between`` after each."""
    s = SDCA(p, sampler="gap", non_uniformity=0.8, seed=0, threads=threads)
    s.prepare()
    s.run(p.n)  # past the first epoch's start-up
    chunk = max(p.n // 10, 1)
    chunks = int(round(epochs * 10))
    total = 0.0
    for _ in range(chunks):
        t0 = time.perf_counter()
        s.run(chunk)
        total += time.perf_counter() - t0
        between(s.weights())
    return total / (chunks * chunk / p.n)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ner"])
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=2, help="alternations of 1 and 2 lanes")
    args = ap.parse_args(argv)
    rows = []
    for name, p in featurized_problems(args.datasets):
        for label, between in BETWEEN.items():
            one, two = [], []
            for _ in range(args.repeat):
                one.append(seconds_per_epoch(p, 1, between, args.epochs))
                two.append(seconds_per_epoch(p, 2, between, args.epochs))
            rows.append({"dataset": name, "between chunks": label,
                         "1 lane (s/epoch)": " ".join(f"{x:.3f}" for x in one),
                         "2 lanes (s/epoch)": " ".join(f"{x:.3f}" for x in two),
                         "speed-up (best of each)": f"{min(one) / min(two):.2f}x"})
            print(f"{name}: {label} done", file=sys.stderr)
    print(f"Machine: {machine()}; SDCA-GAP in chunks of 0.1 epoch, {args.epochs:g} epochs "
          f"per measurement, 1 and 2 lanes alternated {args.repeat} times.\n")
    print(markdown_table(rows, list(rows[0]) if rows else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
