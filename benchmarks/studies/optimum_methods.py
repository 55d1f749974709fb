"""The optimum stage's two methods: the package's L-BFGS against scipy's L-BFGS-B.

Question: Is our L-BFGS a faster way to the reference optima than scipy's L-BFGS-B?
Date: 2026-11-23
Commit: 184fafc
Answer: Yes: 2.19x on NER (143 s against 314 s, the two P* within 2.6e-14), 1.08x on
    OCR; the optimum stage runs ours.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/optimum_methods.py`.

Both compute the reference optimum P* to the stage's target (gap bound <= 1e-13 |P|;
scipy's rounds then polished by ours), with the stage's settings (memory 50) and its
full-batch passes on ``--threads`` threads, one method after the other in one process.
Prints seconds, iterations, evaluations and seconds per evaluation of each, their
ratio, and how far apart the two P* are against their certificates (they must agree
within the sum of the gap bounds). ``--methods lbfgs`` times ours alone (scipy's takes
15-25 minutes on CONLL and POS).

    python benchmarks/studies/optimum_methods.py [--datasets ocr ner] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys

from common import featurized_problems, machine, markdown_table

from crfsdca.reproduction.optimum import METHODS, compute_optimum


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ocr", "ner"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--maxcor", type=int, default=50)
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = ap.parse_args(argv)
    # the workflow's jobs pin BLAS to one thread: its idle threads would spin on the cores
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        print("note: OPENBLAS_NUM_THREADS is not 1 (the workflow sets it)", file=sys.stderr)
    rows = []
    for name, p in featurized_problems(args.datasets):
        found = {}
        for method in args.methods:
            r = compute_optimum(p, maxcor=args.maxcor, threads=args.threads, method=method,
                                log=lambda line, tag=f"{name} {method}": print(
                                    f"{tag}: {line}", file=sys.stderr))
            found[method] = r
            rows.append({"dataset": name, "method": method, "seconds": f"{r.seconds:.1f}",
                         "iterations": r.iterations, "evaluations": r.evaluations,
                         "s / evaluation": f"{r.seconds / r.evaluations:.3f}",
                         "P*": f"{r.p_star:.15e}", "relative bound": f"{r.relative_bound:.1e}",
                         "scipy s / ours": ""})
        if len(found) == 2:
            ours, theirs = found["lbfgs"], found["scipy"]
            rows[-2]["scipy s / ours"] = f"{theirs.seconds / ours.seconds:.2f}x"
            apart = abs(ours.p_star - theirs.p_star)
            print(f"{name}: |P*(lbfgs) - P*(scipy)| = {apart:.2e}, sum of gap bounds "
                  f"{ours.gap_bound + theirs.gap_bound:.2e}", file=sys.stderr)
    print(f"machine: {machine()}; threads {args.threads}, memory {args.maxcor}\n")
    print(markdown_table(rows, list(rows[0]) if rows else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
