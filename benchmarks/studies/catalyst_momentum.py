"""Epochs to the default certified gap by Catalyst's momentum (issue 56).

Question: Catalyst's momentum (1 - sqrt q) / (1 + sqrt q) takes q = lambda / (lambda +
    kappa), lambda being the strong convexity every problem has. How many epochs to the
    default relative gap (3e-4) does the default fit take with lambda's momentum, half
    of it, none (the proximal point method), and the momentum of the curvature each
    round estimates along its step (``estimate``, at commit 93f8878 only)?
Date: 2026-11-30
Commit: 93f8878 (every column; the library's default since is the ``lambda`` column at
    c1 = 0 and the ``half`` column at c1 > 0, the same fits)
Answer: with c1 = 0.1, half of lambda's momentum takes at most lambda's epochs in seven
    cells of eight (Dutch at c2 = 1: 7.1 against 6.5) and saves most at small c2:
    CoNLL-2000 40.4 / 32.0 epochs at c2 = 0.0026 / 0.01 against 96.0 / 44.0, Dutch 35.1 /
    19.4 against 43.7 / 23.0; no momentum at all is better on CoNLL-2000 at c2 = 0.01 and
    0.1 (29.8, 19.0 against 32.0, 20.0) and worse elsewhere (55.0 and 53.5 at c2 =
    0.0026). With c1 = 0 lambda's momentum is the best or within 2 epochs of it in every
    cell, half of it up to 2.1x its epochs (105.3 against 50.7 on Dutch at c2 = 0.0026).
    The estimate gained on Dutch with c1 = 0.1 (32.1 / 20.0) but stayed at lambda on
    CoNLL-2000 (76.9 / 44.0). Hence the default since: all of the momentum without L1,
    half with it. Table: docs/history.md ("Catalyst's momentum with an L1 term"), from
    runs/catalyst_momentum.json.

Each fit is ``crfsdca.CRF(c1, c2, all_possible_transitions=True)``'s problem and solver
(SDCA in Catalyst's loop, the compact store, CRFsuite's feature set) on one thread with
``catalyst_momentum`` set: ``lambda`` 1.0 (the default before), ``half`` 0.5 and
``none`` 0.0. The stored run's ``estimate`` rows ran at commit 93f8878, where None was
the estimate: mu_k = <g_k - g_{k-1}, x_k - x_{k-1}> / ||x_k - x_{k-1}||^2, g_k = kappa
(y_{k-1} - x_k), at least lambda, with its mu_k / lambda round by round. Epochs are
those of the first monitor row certified at ``--epsilon``; they do not depend on the
machine or its load (the seconds do: indicative only).

Data: sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch ("ner") and CRFsuite's
chunking features on CoNLL-2000 ("chunk").

    cd benchmarks/studies && python catalyst_momentum.py --json runs/catalyst_momentum.json
    cd benchmarks/studies && python catalyst_momentum.py --datasets ner --c1 0.1 --c2 0.01
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from small_c2_routes import cell_arguments, certified_fit, run_cells  # noqa: E402

SHARES = {"lambda": 1.0, "half": 0.5, "none": 0.0}
"""The momentum of each column: ``catalyst_momentum``'s value."""


def main() -> None:
    ap = cell_arguments(__doc__.split("\n\n")[0], [0.0026, 0.01, 0.1, 1.0], 200,
                        "momentum")
    ap.add_argument("--momenta", nargs="+", choices=SHARES, default=list(SHARES))
    args = ap.parse_args()
    run_cells(args, "momentum", args.momenta, lambda prob, m: certified_fit(
        prob, args.epsilon, args.budget, catalyst_momentum=SHARES[m]))


if __name__ == "__main__":
    main()
