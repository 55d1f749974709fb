"""Epochs to the default certified gap by the gap sampler's non-uniformity (issue 56).

Question: The paper's SDCA-GAP draws a share theta = 0.8 of its sequences by their stored
    gaps and the rest uniformly. The library's fit refreshes every stored gap at each
    Catalyst round's end (one epoch), so the gaps it samples by are at most an epoch
    stale. How many epochs to the default relative gap (3e-4) does the default fit take
    at theta 0.8, 0.95 and 1?
Date: 2026-12-02
Commit: 52ebd2a (every column; the library's default since is the 0.95 column)
Answer: 0.95 took at most the epochs of 0.8 in every one of the 16 cells (324.5 against
    336.5 in all, 3.6% fewer; CoNLL-2000 at c1 = 0.1, c2 = 0.01: 29.0 against 30.0; Dutch
    at c1 = 0, c2 = 0.0026: 34.9 against 36.0), 1 a little fewer still (321.8). The
    library's default since is 0.95, keeping a uniform share for fits without Catalyst's
    refresh. Table: docs/history.md ("The gap sampler's share"), from
    runs/non_uniformity.json.

Each fit is ``crfsdca.CRF(c1, c2, all_possible_transitions=True)``'s problem and solver
(pipelined SDCA in Catalyst's loop, the compact store, CRFsuite's feature set) on one
thread with ``non_uniformity`` set. Epochs are those of the first monitor row certified
at ``--epsilon``; they do not depend on the machine or its load (the seconds do:
indicative only).

Data: sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch ("ner") and CRFsuite's
chunking features on CoNLL-2000 ("chunk").

    cd benchmarks/studies && python non_uniformity.py --json runs/non_uniformity.json
    cd benchmarks/studies && python non_uniformity.py --datasets ner --c1 0.1 --c2 0.01
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from small_c2_routes import cell_arguments, certified_fit, run_cells  # noqa: E402

THETAS = (0.8, 0.95, 1.0)
"""The columns: the paper's theta, the library's default since, and gap sampling alone."""


def main() -> None:
    ap = cell_arguments(__doc__.split("\n\n")[0], [0.0026, 0.01, 0.1, 1.0], 200, "theta")
    ap.add_argument("--thetas", nargs="+", type=float, default=list(THETAS))
    args = ap.parse_args()
    run_cells(args, "theta", args.thetas, lambda prob, theta: certified_fit(
        prob, args.epsilon, args.budget, non_uniformity=theta))


if __name__ == "__main__":
    main()
