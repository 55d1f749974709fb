"""What an elastic-net epoch of SDCA costs against a ridge epoch on the same data (issue 28).

Question: What does an elastic-net epoch of SDCA cost against a ridge epoch?
Date: 2026-11-26
Commit: 8f99ed6
Answer: 1.13x on Dutch and on CoNLL-2000 in seconds (1.16x and 1.13x in cycles) once the
    split pass was vectorized, against 1.49x and 1.35x on f778f0e. (Since 2026-11-27 the
    script reads `training_log_.phases` and `.counters` instead of patching
    `run_solver`.)
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/elastic_net_epoch.py`.

For each dataset (the practitioner's: sklearn-crfsuite's tutorial features on CoNLL-2002
Dutch, CRFsuite's chunking features on CoNLL-2000), ``crfsdca.CRF`` fits with c2 and
c1 = 0 (ridge) or c1 > 0 (elastic net) for ``--epochs`` epochs (no stopping rule), the two
alternated ``--repeat`` times in one process, one thread. Reported: the solver's seconds
and cycle-counter ticks (its steps only: no encoding, no monitor) per epoch, and the
ratios elastic net / ridge (medians).

    cd benchmarks/studies && python elastic_net_epoch.py --datasets ner chunk
"""

from __future__ import annotations

import argparse
import statistics

from common import machine
from practitioner import load


def solver_cost(X, y, c1: float, c2: float, epochs: int) -> tuple[float, float]:
    """(solver seconds, cycles) per epoch of one fit."""
    from crfsdca import CRF

    log = CRF(c1=c1, c2=c2, max_iterations=epochs, epsilon=0,
              all_possible_transitions=True).fit(X, y).training_log_
    cycles = sum(v for k, v in log.counters.items() if k.startswith("cycles_"))
    return log.phases["solver"] / epochs, cycles / epochs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", type=float, default=0.1)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"# {machine()}; one thread; c1 = {args.c1}, c2 = {args.c2}, "
          f"{args.epochs} epochs per fit")
    print("| dataset | ridge s / epoch | elastic net s / epoch | ratio (seconds) | "
          "ratio (cycles) |\n|---|---|---|---|---|")
    for name in args.datasets:
        X, y, _, _ = load(name)
        ridge, elastic = [], []
        for _ in range(args.repeat):
            ridge.append(solver_cost(X, y, 0.0, args.c2, args.epochs))
            elastic.append(solver_cost(X, y, args.c1, args.c2, args.epochs))
        r_s = statistics.median(r[0] for r in ridge)
        e_s = statistics.median(e[0] for e in elastic)
        ratio_s = statistics.median(e[0] / r[0] for e, r in zip(elastic, ridge, strict=True))
        ratio_c = statistics.median(e[1] / r[1] for e, r in zip(elastic, ridge, strict=True))
        print(f"| {name} | {r_s:.3f} | {e_s:.3f} | {ratio_s:.2f} | {ratio_c:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
