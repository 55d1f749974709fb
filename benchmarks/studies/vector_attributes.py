"""A 300-dimensional vector per token as an array attribute against 300 dict entries (issue 48).

Question: How much faster is a fit on CoNLL-2002 Dutch when every token carries a
    300-dimensional vector as a numpy array (the dense block) than with the same values
    written as 300 dict entries per token?
Date: 2026-11-27
Commit: (the commit that adds this file)
Answer: see docs/guide/vectors.md and the report of issue 48 (the numbers of the run
    that goes with that commit).

Data: CoNLL-2002 Dutch training set (sklearn-crfsuite's tutorial features,
``crfsdca.data.tutorial``) plus a vector per word. No embedding file is vendored, so the
vectors are pseudo-random, one per distinct lower-cased word (seeded by a hash of the
word), with values uniform in [0, 0.1): non-negative, so that CRFsuite's feature set
keeps every (column, label) pair of the dict entries too and the two encodings define
the same problem (the dense block makes every pair a feature; CRFsuite's feature set
drops the pairs whose values sum to a negative number). Each fit runs in a fresh
process, one thread, ``crfsdca.CRF()`` with its defaults (SDCA, c2 = 1, relative gap
3e-4); the items are built before the clock starts. Reported per fit: seconds of
``fit`` (wall), of its encoding and of the solver (``training_log_.phases``), epochs,
the final loss and relative gap, and the process's peak resident memory.

    cd benchmarks/studies && python vector_attributes.py            # both, full Dutch
    cd benchmarks/studies && python vector_attributes.py --limit 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import ROOT, machine, markdown_table  # noqa: E402

DIM = 300


def vector(word: str, dim: int = DIM):
    """The word's pseudo-random vector (the same in every process)."""
    import numpy as np

    seed = int.from_bytes(hashlib.blake2b(word.lower().encode("utf-8"),
                                          digest_size=8).digest(), "little")
    return np.random.default_rng(seed).uniform(0.0, 0.1, dim)


def items(limit: int | None, form: str):
    """(X, y) of Dutch's training sentences with the vector as an array (``form`` "array")
    or as ``emb[j]`` dict entries ("dict"); the dict entries of a word are built once and
    shared by its tokens (their float objects too)."""
    from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels

    sents = iob_sents("ned.train", ROOT / "data" / "raw" / "conll2002.zip", limit=limit)
    cache: dict = {}

    def extra(word: str):
        key = word.lower()
        if key not in cache:
            v = vector(key)
            cache[key] = ({"emb": v} if form == "array"
                          else {f"emb[{j}]": x for j, x in enumerate(v.tolist())})
        return cache[key]

    X = [[{**f, **extra(w)} for f, (w, _, _) in zip(sent2features(s), s, strict=True)]
         for s in sents]
    return X, [sent2labels(s) for s in sents]


def child(form: str, limit: int | None) -> None:
    from crfsdca import CRF

    X, y = items(limit, form)
    t0 = time.perf_counter()
    crf = CRF().fit(X, y)
    fit = time.perf_counter() - t0
    log = crf.training_log_
    last = log.last_iteration
    print(json.dumps({
        "fit": fit, "encode": log.phases["encode"], "solver": log.phases["solver"],
        "epochs": last["epoch"], "loss": float(last["loss"]),
        "relative_gap": float(last["relative_gap"]),
        "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))


def run(form: str, limit: int | None) -> dict:
    args = [sys.executable, __file__, "--child", form]
    if limit is not None:
        args += ["--limit", str(limit)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{form}: exit status {out.returncode}\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, help="the first sentences only")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--forms", nargs="+", default=["array", "dict"],
                    choices=["array", "dict"])
    ap.add_argument("--child", choices=["array", "dict"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.limit)
        return
    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    run(args.forms[0], 50)  # a first process compiles what the kernels' cache lacks
    fits = {form: [] for form in args.forms}
    for _ in range(args.repeat):
        for form in args.forms:
            fits[form].append(run(form, args.limit))
            print(form, json.dumps(fits[form][-1]), flush=True)
    rows = []
    for form, runs in fits.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append({"form": form, "fit s": f"{med['fit']:.1f}",
                     "encode s": f"{med['encode']:.1f}", "solver s": f"{med['solver']:.1f}",
                     "epochs": f"{med['epochs']:.2f}", "loss": f"{med['loss']:.6f}",
                     "relative gap": f"{med['relative_gap']:.2e}",
                     "peak GiB": f"{med['peak_gib']:.2f}"})
    print(markdown_table(rows, list(rows[0])))
    if len(fits) == 2:
        ratio = (statistics.median(r["fit"] for r in fits["dict"])
                 / statistics.median(r["fit"] for r in fits["array"]))
        print(f"fit with dict entries / fit with arrays: {ratio:.2f}x")


if __name__ == "__main__":
    main()
