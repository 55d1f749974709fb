"""Where a default ``crfsdca.CRF().fit`` spends its time outside the solver (issue 28, item 5).

Question: Where does a default fit spend its time outside the solver?
Date: 2026-11-26
Commit: d80c56c
Answer: 16-39% of the fit: on Dutch the encoding (0.8-1.7 s), on CoNLL-2000 2.2-3.2 s of
    set-up outside the solver and 1.2-1.8 s of encoding; issue 28's 15% not met. (Since
    2026-11-27 the parts are `training_log_.phases`, not the library's functions wrapped
    at run time.)
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/fit_parts.py`.

On the practitioner's data (sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch,
CRFsuite's chunking features on CoNLL-2000), one thread, ``all_possible_transitions``:
the whole ``fit``, and in it the parts that ``training_log_.phases`` times: the encoding
of the items (``encode``), CRFsuite's feature set (``feature_set``), the problem, the
solver's setup and the solver's own seconds; "outside" is the share of ``fit`` not in the
solver. (Until the log had its phases, this script wrapped the library's functions at
run time to time them; the columns were then ``crfsuite_feature_mask``, ``make_problem``
and ``learn``, the last the setup, the solver, its monitor and the model.) Also the
encoding of the test items alone, ``predict``'s share. Each process fits ``--repeat``
times after a warm-up fit on 50 sentences (numba's kernels loaded): the first fit pays
the process's first large allocations, as a user's does.

    cd benchmarks/studies && python fit_parts.py                    # ner and chunk, c2 = 1 and 0.1
    cd benchmarks/studies && python fit_parts.py --datasets ner --c1 0.1 --c2 0.1 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import machine, report  # noqa: E402
from practitioner import load  # noqa: E402

PARTS = ("encode", "feature_set", "problem", "setup")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", type=float, default=0.0)
    ap.add_argument("--c2", nargs="+", type=float, default=[1.0, 0.1])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=str)
    args = ap.parse_args()
    from crfsdca import CRF
    from crfsdca.data.items import Vocabulary, encode

    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = []
    for name in args.datasets:
        X, y, X_test, _ = load(name)
        CRF(max_iterations=1).fit(X[:50], y[:50])
        for c2 in args.c2:
            for rep in range(args.repeat):
                crf = CRF(c1=args.c1, c2=c2, all_possible_transitions=True)
                t0 = time.perf_counter()
                crf.fit(X, y)
                fit = time.perf_counter() - t0
                parts = crf.training_log_.phases
                solver = parts["solver"]
                vocab = Vocabulary(crf.model_.attributes)
                t0 = time.perf_counter()
                encode(X_test, None, vocab, Vocabulary(crf.model_.labels), grow=False)
                test_encode = time.perf_counter() - t0
                t0 = time.perf_counter()
                crf.predict(X_test)
                predict = time.perf_counter() - t0
                row = {"dataset": name, "c1": args.c1, "c2": c2, "fit": rep + 1,
                       "fit_s": round(fit, 2), "solver_s": round(solver, 2),
                       **{part: round(parts.get(part, 0.0), 2) for part in PARTS},
                       "outside": f"{(fit - solver) / fit:.0%}",
                       "predict_s": round(predict, 2),
                       "test_encode_s": round(test_encode, 2)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    report(rows, args.json)


if __name__ == "__main__":
    main()
