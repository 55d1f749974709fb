"""One thread against several: the full-batch gradient pass and SDCA-GAP's time to 1e-4.

Question: How much sooner do SDCA-GAP and the gradient pass finish on 2 threads than on
    1?
Date: 2026-11-24
Commit: e3fe389
Answer: SDCA-GAP reaches 1e-4 1.74x sooner on NER and 1.81-1.84x on CONLL, with the same
    epochs; the full-batch gradient pass is 1.83-1.92x faster.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/threads.py`.

Measured in one process, one configuration after the other, so that the ratios compare
runs on the same machine in the same state (the machine's cores are printed; a ratio near
1 on a loaded machine says that there was no free core, not that threads do not help).

- gradient pass: P and grad P over the training set (n forward-backwards) at random
  weights, on 1 and on ``--threads`` threads alternated 7 times: the best times, their
  ratio and the median of the 7 ratios;
- SDCA-GAP (theta 0.8, Newton line search at 1e-3) on 1 and on ``--threads`` lanes:
  solver seconds to relative sub-optimality (P - L) / |L| <= 1e-4 and to a duality gap
  of 1e-5, L being the best dual value either run reached (a lower bound on P*), and the
  final primal values (the same P* to the certificate).

    python benchmarks/studies/threads.py [--datasets conll ner] [--threads 2] [--epochs 20]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

from common import (
    featurized_problems,
    first_row,
    machine,
    markdown_table,
    random_weights,
)

from crfsdca.model.objective import SlotBuffers, primal_and_gradient
from crfsdca.solvers.monitor import Monitor
from crfsdca.solvers.sdca import SDCA
from crfsdca.training.run import train

TARGET = 1e-4
GAP_TARGET = 1e-5


def first_time(rows, value, target):
    """(solver seconds, epochs) of the first monitor row with value(row) <= target (inf if
    none)."""
    row = first_row(rows, lambda r: value(r) <= target)
    return (math.inf, math.inf) if row is None else (row["seconds"], row["epoch"])


def gradient_seconds(p, counts, repeat: int = 7) -> dict[int, list[float]]:
    """Seconds of full-batch passes of P and grad P at random weights on each thread count
    of ``counts``, alternated ``repeat`` times (after a warm-up of each), so that every
    count sees the machine in the same states."""
    w = random_weights(p)
    buffers = {k: SlotBuffers() for k in counts}  # as an L-BFGS run keeps them

    def once(k):
        t0 = time.perf_counter()
        primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam, threads=k,
                            buffers=buffers[k])
        return time.perf_counter() - t0

    for k in counts:
        once(k)
    times = {k: [] for k in counts}
    for _ in range(repeat):
        for k in counts:
            times[k].append(once(k))
    return times


def sdca_rows(p, threads: int, epochs: float, period: float) -> list[dict]:
    """The monitor rows of SDCA-GAP (theta 0.8) on ``threads`` lanes, every ``period``
    epochs (the resolution of the times to a target; monitoring is not in them)."""
    solver = SDCA(p, sampler="gap", non_uniformity=0.8, seed=0, threads=threads)
    return train(solver, Monitor(p, evaluate_test=False, threads=threads), epochs,
                 period=period).rows


def ratio(slow: float, fast: float) -> str:
    return f"{slow / fast:.2f}x" if math.isfinite(slow) and math.isfinite(fast) else "—"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["conll", "ner"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=float, default=20.0,
                    help="SDCA budget per run (0: the gradient pass alone)")
    ap.add_argument("--period", type=float, default=0.1, help="epochs between monitor rows")
    args = ap.parse_args(argv)
    counts = (1, args.threads)
    rows = []
    for name, p in featurized_problems(args.datasets):
        t_grad = gradient_seconds(p, counts)
        one, many = counts
        pairs = zip(t_grad[one], t_grad[many], strict=True)
        grad = {
            "dataset": name,
            "gradient pass 1 / N (s), best": f"{min(t_grad[one]):.3f} / {min(t_grad[many]):.3f}",
            "gradient speed-up, best / median of the pairs": (
                f"{min(t_grad[one]) / min(t_grad[many]):.2f}x / "
                f"{statistics.median(a / b for a, b in pairs):.2f}x"),
        }
        if args.epochs == 0:
            rows.append(grad)
            continue
        runs = {k: sdca_rows(p, k, args.epochs, args.period) for k in counts}
        low = max(r["dual"] for k in counts for r in runs[k])

        def suboptimality(r, low=low):
            return (r["primal"] - low) / abs(low)

        def gap(r):
            return r["primal"] - r["dual"]

        t_sub = {k: first_time(runs[k], suboptimality, TARGET) for k in counts}
        t_gap = {k: first_time(runs[k], gap, GAP_TARGET) for k in counts}
        rows.append({
            **grad,
            f"SDCA-GAP to {TARGET:g} (s)": f"{t_sub[one][0]:.2f} / {t_sub[many][0]:.2f}",
            "speed-up to 1e-4": ratio(t_sub[one][0], t_sub[many][0]),
            "epochs to 1e-4": f"{t_sub[one][1]:.1f} / {t_sub[many][1]:.1f}",
            f"to gap {GAP_TARGET:g} (s)": f"{t_gap[one][0]:.2f} / {t_gap[many][0]:.2f}",
            "speed-up to gap": ratio(t_gap[one][0], t_gap[many][0]),
            "epochs to gap": f"{t_gap[one][1]:.1f} / {t_gap[many][1]:.1f}",
            "final P 1 / N": f"{runs[one][-1]['primal']:.10f} / {runs[many][-1]['primal']:.10f}",
        })
    print(f"Machine: {machine()}; 1 thread against N = {args.threads}, one after the other "
          f"in one process; SDCA-GAP for {args.epochs:g} epochs, monitored every "
          f"{args.period:g} epoch.\n")
    print(markdown_table(rows, list(rows[0]) if rows else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
