"""Where a default ``crfsdca.CRF().fit`` spends its time outside the solver (issue 28, item 5).

On the practitioner's data (sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch,
CRFsuite's chunking features on CoNLL-2000), one thread, ``all_possible_transitions``:
the whole ``fit``, and in it the encoding of the items (``encode``), CRFsuite's feature
set, the problem, the learner (``learn``: the solver, its monitor and the model) and
the solver's own seconds; "outside" is the share of ``fit`` not in the solver. Also the
encoding of the test items alone, ``predict``'s share. Each process fits ``--repeat``
times after a warm-up fit on 50 sentences (numba's kernels loaded): the first fit pays
the process's first large allocations, as a user's does.

    cd benchmarks && python fit_parts.py                    # ner and chunk, c2 = 1 and 0.1
    cd benchmarks && python fit_parts.py --datasets ner --c1 0.1 --c2 0.1 --repeat 3
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import machine, report  # noqa: E402
from practitioner import load  # noqa: E402

PARTS = ("encode", "crfsuite_feature_mask", "make_problem", "learn")


def instrument(seconds: dict) -> None:
    """Wrap the steps of ``fit`` so that each adds its seconds to ``seconds``."""
    import crfsdca.estimator as estimator
    import crfsdca.training.feature_set as feature_set
    import crfsdca.training.learn as learner

    for module, name in ((estimator, "encode"), (feature_set, "crfsuite_feature_mask"),
                         (learner, "make_problem"), (learner, "learn")):
        inner = getattr(module, name)

        @functools.wraps(inner)
        def timed(*args, _inner=inner, _name=name, **kwargs):
            t0 = time.perf_counter()
            try:
                return _inner(*args, **kwargs)
            finally:
                seconds[_name] = seconds.get(_name, 0.0) + time.perf_counter() - t0

        setattr(module, name, timed)


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
    seconds: dict[str, float] = {}
    instrument(seconds)
    rows = []
    for name in args.datasets:
        X, y, X_test, _ = load(name)
        CRF(max_iterations=1).fit(X[:50], y[:50])
        for c2 in args.c2:
            for rep in range(args.repeat):
                seconds.clear()
                crf = CRF(c1=args.c1, c2=c2, all_possible_transitions=True)
                t0 = time.perf_counter()
                crf.fit(X, y)
                fit = time.perf_counter() - t0
                parts = dict(seconds)  # predict below encodes too
                solver = crf.model_.training["seconds"]
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
