"""Does float32 storage of the dual marginals change SDCA's convergence?

Question: Does storing the marginals in float32 change SDCA's convergence?
Date: 2026-11-21
Commit: b2fc70b
Answer: Not to 1e-6 (the same epochs to each target on OCR and NER, half the memory);
    below about 1e-7 the rounding takes over and the gap is no certificate.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/float32_store.py`.

Runs SDCA-GAP (theta 0.8, Newton line search at 1e-3) with float64 and with float32
marginals on real datasets and prints the epochs each needs to reach sub-optimality
P - P* <= 1e-2, 1e-4, 1e-6 (P* from results/optimum/{dataset}.h5), and the final value.
In float32 mode the primal update uses the change actually stored, so w = w_hat(mu)
holds for the rounded marginals and the dual objective is exact for them.

    python benchmarks/studies/float32_store.py --datasets ocr ner [--epochs 40]
"""

from __future__ import annotations

import argparse
import sys

from common import ROOT, load_problem, machine, markdown_table

from crfsdca.reproduction.optimum import read_optimum
from crfsdca.solvers.monitor import Monitor
from crfsdca.solvers.sdca import SDCA
from crfsdca.training.run import train

TARGETS = (1e-2, 1e-4, 1e-6)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ocr", "ner"])
    ap.add_argument("--epochs", type=float, default=40.0)
    args = ap.parse_args(argv)
    rows = []
    for name in args.datasets:
        problem = load_problem(name)
        opt = ROOT / "results" / "optimum" / f"{name}.h5"
        if problem is None or not opt.exists():
            print(f"skip {name}: needs the dataset and {opt}", file=sys.stderr)
            continue
        p_star = read_optimum(opt).p_star
        for dtype in ("float64", "float32"):
            solver = SDCA(problem, sampler="gap", store_dtype=dtype, seed=0)
            res = train(solver, Monitor(problem, evaluate_test=False), args.epochs)
            row = {"dataset": name, "store": dtype,
                   "MiB": f"{solver.memory_bytes()['marginals_pairwise'] / 2**20:.0f}"}
            for target in TARGETS:
                hit = [r["epoch"] for r in res.rows if r["primal"] - p_star <= target]
                row[f"epochs to {target:g}"] = f"{hit[0]:g}" if hit else "—"
            final = res.rows[-1]["primal"] - p_star
            row["final P - P*"] = f"{final:.2e}" if final > 0 else f"{final:.1e} (< P*)"
            row["final gap"] = f"{res.rows[-1]['true_gap']:.2e}"
            rows.append(row)
            print(f"{name} {dtype}: final {final:.3e}", file=sys.stderr)
    print(f"Machine: {machine()}; SDCA-GAP, {args.epochs:g} epochs.\n")
    cols = ["dataset", "store", "MiB"] + [f"epochs to {t:g}" for t in TARGETS]
    print(markdown_table(rows, cols + ["final P - P*", "final gap"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
