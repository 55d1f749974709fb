"""Epochs to the default certified gap with Catalyst's kappa moved by the run (issue 56).

Question: Does moving kappa by the share of the inner problem's gap in each probed
    round's certificate (``catalyst_tune``, :mod:`crfsdca.solvers.catalyst_kappa`) take
    fewer epochs than the fixed kappa = max(3 lambda, 0.3 / n), in every cell of the
    practitioner's grid, on the two datasets its band was read on and on a third?
Date: 2026-12-01
Commit: df59bc8
Answer: yes over the grid, not in every cell: 623 epochs against 682 over 24 cells, fewer
    in 11 (Dutch at c2 = 0.0026: 39.0 against 50.7 at c1 = 0; Spanish at c2 = 0.1: 20
    against 29), as many in 12, more in one (Spanish at c1 = 0, c2 = 0.0026: 79.8
    against 71.5). Issue 56's CoNLL-2000 cell at c1 = 0.1, c2 = 0.01 keeps its 32. Table:
    docs/benchmarks.md ("Catalyst's kappa by the run"), from runs/catalyst_tune.json.

Each fit is ``crfsdca.CRF(c1, c2, all_possible_transitions=True)``'s problem and solver
(SDCA in Catalyst's loop, the compact store, the pipeline, CRFsuite's feature set) on
one thread with ``catalyst_tune`` off and on. Epochs are those of the first monitor row
certified at ``--epsilon``; they do not depend on the machine or its load (the seconds
do: indicative only; the probes' primal passes are in them). ``kappa_n``: where the run
ended.

Data: sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch ("ner") and Spanish
("esp"), CRFsuite's chunking features on CoNLL-2000 ("chunk"). The band (0.1-0.7) was
read on Dutch and CoNLL-2000 at c2 = 0.0026 and 0.01; Spanish was not looked at before.

    cd benchmarks/studies && python catalyst_tune.py --json runs/catalyst_tune.json
    cd benchmarks/studies && python catalyst_tune.py --datasets esp --c2 0.01 --limit 2000
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import head_commit  # noqa: E402
from small_c2_routes import cell_arguments, certified_fit, run_cells  # noqa: E402


def main() -> None:
    ap = cell_arguments(__doc__.split("\n\n")[0], [0.0026, 0.01, 0.1, 1.0], 150, "tune")
    ap.set_defaults(datasets=["ner", "chunk", "esp"])
    ap.add_argument("--tune", nargs="+", choices=("off", "on"), default=["off", "on"])
    args = ap.parse_args()
    run_cells(args, "tune", [t == "on" for t in args.tune], lambda prob, tune: {
        **certified_fit(prob, args.epsilon, args.budget, catalyst_tune=tune),
        "commit": head_commit()})


if __name__ == "__main__":
    main()
