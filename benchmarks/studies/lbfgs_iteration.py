"""What one L-BFGS / OWL-QN iteration costs: ``crfsdca.CRF(algorithm='lbfgs')`` against

Question: What does one iteration of our L-BFGS / OWL-QN cost against CRFsuite's, on
    CRFsuite's feature set?
Date: 2026-11-26
Commit: dd5dd0b
Answer: 0.163 s against 0.247 s on Dutch (1.60x), 0.445 s against 0.651 s on CoNLL-2000
    (1.47x), c1 = 0.1, c2 = 0.01. (Since 2026-11-27 the script reads `training_log_`
    instead of patching `run_solver`.)
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/lbfgs_iteration.py`.

sklearn-crfsuite's (CRFsuite's) on the practitioner's data (issue 28).

Both fit ``--iterations`` iterations with the tutorial's arguments, alternated
``--repeat`` times in one process, one thread. Reported (medians): solver seconds per
iteration (ours: the training log's solver clock; CRFsuite's: the sum of its iterations'
own times), line-search evaluations per iteration, and the ratio.

    cd benchmarks/studies && python lbfgs_iteration.py --datasets ner chunk --c1 0.1 --c2 0.01
"""

from __future__ import annotations

import argparse
import statistics

from common import machine
from practitioner import load


def ours(X, y, c1: float, c2: float, iterations: int) -> tuple[float, float]:
    """(solver seconds, evaluations) per iteration of our L-BFGS."""
    from crfsdca import CRF

    log = CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=iterations,
              all_possible_transitions=True).fit(X, y).training_log_
    steps = max(log.counters["updates"], 1)  # none if it stopped at its start
    return log.phases["solver"] / steps, log.counters["ls_evals"] / steps


def theirs(X, y, c1: float, c2: float, iterations: int) -> tuple[float, float]:
    """(seconds, evaluations) per iteration of CRFsuite's, from its own log."""
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=iterations,
                               all_possible_transitions=True)
    crf.fit(X, y)
    its = crf.training_log_.iterations
    return (sum(it["time"] for it in its) / len(its),
            sum(it["linesearch_trials"] for it in its) / len(its))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", type=float, default=0.1)
    ap.add_argument("--c2", type=float, default=0.01)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"# {machine()}; one thread; c1 = {args.c1}, c2 = {args.c2}, "
          f"{args.iterations} iterations per fit")
    print("| dataset | ours s / iteration | evaluations | CRFsuite s / iteration | "
          "evaluations | CRFsuite / ours |\n|---|---|---|---|---|---|")
    for name in args.datasets:
        X, y, _, _ = load(name)
        a, b = [], []
        for _ in range(args.repeat):
            a.append(ours(X, y, args.c1, args.c2, args.iterations))
            b.append(theirs(X, y, args.c1, args.c2, args.iterations))
        ratio = statistics.median(t[0] / o[0] for o, t in zip(a, b, strict=True))
        print(f"| {name} | {statistics.median(r[0] for r in a):.3f} | "
              f"{statistics.median(r[1] for r in a):.2f} | "
              f"{statistics.median(r[0] for r in b):.3f} | "
              f"{statistics.median(r[1] for r in b):.2f} | {ratio:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
