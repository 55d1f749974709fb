"""What the end of a Catalyst round costs, timed in one process (issue 28).

A round of the default fit ends with two certificates (``SDCA._end_round``): x_k's by a
primal pass (``_primal_gap``: the scores, the forward pass, the gold labeling) and the
moved w's by a refresh of every stored gap (``_refreshed_gap``: the same, plus
E_mu[score] over the whole marginal store, which leaves the sampler the new round's
gaps). Both give P(w) - D(mu) exactly; this times each, and their parts, alternated on
the solver of a default fit stopped after a few epochs (the practitioner's data:
the tutorial's features on CoNLL-2002 Dutch, CRFsuite's chunking features on
CoNLL-2000; one thread). Medians of ``--repeat`` calls.

    cd benchmarks && python round_end.py --datasets ner chunk --c1 0.5 --c2 0.01
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import fitted_run, machine, markdown_table  # noqa: E402
from practitioner import load  # noqa: E402


def solver_of_a_fit(name: str, c1: float, c2: float, epochs: int):
    """The SDCA solver of ``crfsdca.CRF(c1, c2).fit`` after ``epochs`` epochs."""
    from crfsdca import CRF

    X, y, _, _ = load(name)
    return fitted_run(lambda: CRF(c1=c1, c2=c2, all_possible_transitions=True,
                                  max_iterations=epochs).fit(X, y)).solver


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", type=float, default=0.5)
    ap.add_argument("--c2", type=float, default=0.01)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    from crfsdca.model.objective import primal

    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = []
    for name in args.datasets:
        s = solver_of_a_fit(name, args.c1, args.c2, args.epochs)
        p = s.problem
        parts = {
            "x_k: primal pass + dual": s._primal_gap,
            "moved w: refresh + O(d) rest": s._refreshed_gap,
            "primal pass alone": lambda s=s, p=p: primal(
                s.state.w, p.train, p.n_attributes, p.n_labels, p.lam, p.l1, s.threads),
            "refresh alone": s.refresh_gaps,
        }
        seconds = {part: [] for part in parts}
        for _ in range(args.repeat + 1):  # the first round of calls is a warm-up
            for part, fn in parts.items():
                t0 = time.perf_counter()
                fn()
                seconds[part].append(time.perf_counter() - t0)
        row = {"dataset": name, "weights": f"{len(s.state.w):,}"}
        row.update({f"{part} s": f"{statistics.median(v[1:]):.4f}"
                    for part, v in seconds.items()})
        rows.append(row)
        print(row, flush=True)
    print(markdown_table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
