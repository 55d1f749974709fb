"""Epochs to the default certified gap by Catalyst's floor on kappa (issue 56).

Question: The default fit's kappa is max(3 lambda, floor / n) with the floor 0.3
    (``catalyst_floor``), chosen at c2 = 0.01 with the momentum and the store of that
    day. With today's default (the compact store, the pipeline, half the momentum with
    an L1 term), which floor takes the fewest epochs at the small c2 where the floor
    decides (0.0026 and 0.01), and does one floor suit every cell?
Date: 2026-12-01
Commit: 732532c
Answer: no one floor suits every cell. The fewest epochs came at 0.05 on Dutch at c1 = 0,
    c2 = 0.0026 (27.3 against 50.7 at the default 0.3), 0.1 on Dutch at c1 = 0, c2 = 0.01
    (19.8 against 22.4), 0.2 on Dutch at c1 = 0.1, c2 = 0.0026 (27.4 against 35.1) and on
    CoNLL-2000 at c1 = 0, c2 = 0.0026 (41 against 47.7), 0.4 on CoNLL-2000 at c1 = 0.1,
    c2 = 0.01 (30 against 32), and 0.3 in the other three cells. Any other single floor loses in the
    CoNLL-2000 cells (0.2: 36 and 44 epochs with c1 = 0.1 against 32 and 40.4): the floor
    stays 0.3. Two rules that move kappa between rounds (to a mean step, to the gap's
    predicted contraction) were tried at this commit and not kept: docs/history.md
    ("Catalyst's kappa by the run"). Table: docs/benchmarks.md ("Catalyst's floor at
    small c2"), from runs/catalyst_floor.json.

Each fit is ``crfsdca.CRF(c1, c2, all_possible_transitions=True)``'s problem and solver
(SDCA in Catalyst's loop with kappa = max(3 lambda, floor / n), the compact store, the
pipeline, CRFsuite's feature set) on one thread with ``catalyst_floor`` set. Epochs are
those of the first monitor row certified at ``--epsilon``; they do not depend on the
machine or its load (the seconds do: indicative only).

Data: sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch ("ner") and CRFsuite's
chunking features on CoNLL-2000 ("chunk").

    cd benchmarks/studies && python catalyst_floor.py --json runs/catalyst_floor.json
    cd benchmarks/studies && python catalyst_floor.py --datasets ner --c1 0 --floors 0.05 0.3
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import head_commit  # noqa: E402
from small_c2_routes import cell_arguments, certified_fit, run_cells  # noqa: E402


def main() -> None:
    ap = cell_arguments(__doc__.split("\n\n")[0], [0.0026, 0.01], 150, "floor")
    ap.add_argument("--floors", nargs="+", type=float,
                    default=[0.05, 0.1, 0.2, 0.3, 0.4, 0.6])
    args = ap.parse_args()
    run_cells(args, "floor", args.floors, lambda prob, floor: {
        **certified_fit(prob, args.epsilon, args.budget, catalyst_floor=floor),
        "commit": head_commit()})


if __name__ == "__main__":
    main()
