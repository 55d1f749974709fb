"""crfsdca's prediction paths against sklearn-crfsuite's on the same data (issue 28, item 5).

Question: Are crfsdca's prediction paths as fast as sklearn-crfsuite's?
Date: 2026-11-26
Commit: 799b08d
Answer: None slower: `predict` 1.11-1.17x faster, `predict_single` 1.00-1.02x on a first
    pass and 1.46-1.64x after, `predict_marginals` 1.30-1.61x (Dutch and CoNLL-2000, c2
    = 1). The suite's `test_predict` measures them now.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/predict_paths.py`.

On the practitioner's data (sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch,
CRFsuite's chunking features on CoNLL-2000), each tool fits once (c2 = 1,
``all_possible_transitions``; sklearn-crfsuite's L-BFGS to 100 iterations, crfsdca's
default), then, alternated, over the whole test set: ``predict``, ``predict_single`` item
after item with a fresh tagger (a first pass: crfsdca meets every (key, value) pair for
the first time) and again (a second pass), and ``predict_marginals``. Medians of
``--repeat`` rounds; one thread.

    cd benchmarks/studies && python predict_paths.py                  # ner and chunk
    cd benchmarks/studies && python predict_paths.py --datasets ner --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import machine, report  # noqa: E402
from practitioner import load  # noqa: E402


def seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def paths(crf, X) -> dict:
    """Seconds of each prediction path of ``crf`` over ``X``, the first pass of
    ``predict_single`` from a fresh tagger."""
    fresh_tagger(crf)
    return {"predict": seconds(lambda: crf.predict(X)),
            "predict_single, first pass": seconds(lambda: [crf.predict_single(x) for x in X]),
            "predict_single, second pass": seconds(lambda: [crf.predict_single(x) for x in X]),
            "predict_marginals": seconds(lambda: crf.predict_marginals(X))}


def fresh_tagger(crf) -> None:
    """Drop the tagger ``crf`` keeps between calls (crfsdca's ``tagger_`` then makes a new
    one, sklearn-crfsuite's opens the model file again)."""
    if hasattr(crf, "_tagger_cache"):
        del crf._tagger_cache
    else:
        crf._tagger = None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=str)
    args = ap.parse_args()
    import sklearn_crfsuite

    from crfsdca import CRF

    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = []
    for name in args.datasets:
        X, y, X_test, _ = load(name)
        ours = CRF(c2=1.0, all_possible_transitions=True).fit(X, y)
        sk = sklearn_crfsuite.CRF(algorithm="lbfgs", c2=1.0, max_iterations=100,
                                  all_possible_transitions=True).fit(X, y)
        for crf in (ours, sk):  # kernels loaded, as a served model has them
            crf.predict_single(X_test[0])
            crf.predict_marginals(X_test[:1])

        times: dict[str, dict[str, list[float]]] = {"ours": {}, "sk": {}}
        for _ in range(args.repeat):
            for tool, crf in (("ours", ours), ("sk", sk)):
                for path, s in paths(crf, X_test).items():
                    times[tool].setdefault(path, []).append(s)
        for path in times["ours"]:
            a = statistics.median(times["ours"][path])
            b = statistics.median(times["sk"][path])
            row = {"dataset": name, "path": path, "sklearn-crfsuite s": round(b, 3),
                   "crfsdca s": round(a, 3), "sk / crfsdca": f"{b / a:.2f}x"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    report(rows, args.json)


if __name__ == "__main__":
    main()
