"""`crfsdca learn` against python-crfsuite's trainer on the same CRFsuite-format files.

Question: On CRFsuite's own feature set and files, how much sooner does `crfsdca.CRF`
    reach CRFsuite's final test F1 and objective?
Date: 2026-11-23
Commit: 229bb19
Answer: 7.2x (F1) and 3.1x (objective) sooner on CONLL, 22.8x and 10.4x on NER (c2 = 1;
    a 2-core Intel Xeon shared with other jobs).
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/learn_vs_crfsuite.py`.

Both read the files written by benchmarks/crfsuite_files.py, train CRFsuite's model
(state features seen in training, transitions seen in training, no bias) with the same
c2 and their default stopping rules, one after the other in this process, one thread
each, and are scored on the test file (conlleval chunk F1):

- CRFsuite: L-BFGS (python-crfsuite, what `crfsuite learn` runs), epsilon 1e-5, delta
  1e-5, period 10 (its defaults); seconds from the end of its feature generation;
- crfsdca: SDCA-GAP (the estimator's defaults: gap sampling, theta 0.8, relative duality
  gap 1e-5); solver seconds, monitoring excluded (the test F1 of every epoch is
  computed by the monitor, outside the clock).

Reported: each tool's final objective (sum NLL + c2 ||w||^2), F1, time; the time SDCA
takes to reach CRFsuite's final objective and CRFsuite's final F1; and the ratios.

    python benchmarks/crfsuite_files.py conll && python benchmarks/crfsuite_files.py ner
    python benchmarks/studies/learn_vs_crfsuite.py --datasets conll ner
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import ROOT, machine, markdown_table

from crfsdca import CRF
from crfsdca.data.crfsuite_format import read_file
from crfsdca.model.evaluation import chunk_f1, chunk_scheme
from crfsdca.reproduction.crfsuite_baseline import tracing_trainer


def f1_of(y_true, y_pred) -> float:
    labels = sorted({lab for seq in y_true for lab in seq} | {lab for s in y_pred for lab in s})
    ids = {lab: i for i, lab in enumerate(labels)}
    gold = np.array([ids[lab] for s in y_true for lab in s], dtype=np.int32)
    pred = np.array([ids[lab] for s in y_pred for lab in s], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in y_true])]).astype(np.int64)
    return chunk_f1(gold, pred, offsets, chunk_scheme(labels))[2]


def as_dicts(X):
    return [[dict((a, 1.0) if isinstance(a, str) else a for a in item) for item in x]
            for x in X]


def run_crfsuite(X, y, Xt, yt, c2: float) -> dict:
    import pycrfsuite

    rows: list[dict] = []
    t0 = time.perf_counter()
    trainer = tracing_trainer(rows)
    for x, labels in zip(as_dicts(X), y, strict=True):
        trainer.append(x, labels)
    trainer.set_params({"c1": 0.0, "c2": c2})
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "m.crfsuite")
        trainer.train(path)
        wall = time.perf_counter() - t0
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        pred = [tagger.tag(x) for x in as_dicts(Xt)]
        tagger.close()
    return {"rows": rows, "seconds": rows[-1]["seconds"], "wall": wall, "loss": rows[-1]["loss"],
            "f1": f1_of(yt, pred), "iterations": len(rows)}


def run_sdca(X, y, Xt, yt, c2: float) -> dict:
    t0 = time.perf_counter()
    crf = CRF(c2=c2).fit(X, y, Xt, yt)  # the dev set only feeds the per-epoch F1
    wall = time.perf_counter() - t0
    log = crf.training_log_
    return {"log": log, "seconds": log[-1]["seconds"], "wall": wall, "loss": log[-1]["loss"],
            "f1": f1_of(yt, crf.predict(Xt)), "epochs": log[-1]["epoch"]}


def first(log, test) -> float:
    return next((r["seconds"] for r in log if test(r)), math.nan)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["conll", "ner"])
    ap.add_argument("--files", type=Path, default=ROOT / "data" / "crfsuite")
    ap.add_argument("--c2", type=float, default=1.0)
    args = ap.parse_args(argv)
    rows = []
    for name in args.datasets:
        train, test = args.files / f"{name}.train.txt", args.files / f"{name}.test.txt"
        if not train.exists():
            print(f"skip {name}: run benchmarks/crfsuite_files.py {name}", file=sys.stderr)
            continue
        tr, te = read_file(str(train)), read_file(str(test))
        c = run_crfsuite(tr.X, tr.y, te.X, te.y, args.c2)
        s = run_sdca(tr.X, tr.y, te.X, te.y, args.c2)
        t_obj = first(s["log"], lambda r, c=c: r["loss"] <= c["loss"])
        t_f1 = first(s["log"], lambda r, c=c: r.get("dev_f1", -1) >= c["f1"])
        rows.append({
            "dataset": name, "c2": f"{args.c2:g}",
            "CRFsuite: iterations, s, loss, F1": f"{c['iterations']}, {c['seconds']:.1f}, "
                                                 f"{c['loss']:.6e}, {c['f1']:.2f}",
            "SDCA-GAP: epochs, s, loss, F1": f"{s['epochs']:g}, {s['seconds']:.1f}, "
                                             f"{s['loss']:.6e}, {s['f1']:.2f}",
            "SDCA s to CRFsuite's loss": f"{t_obj:.1f} ({c['seconds'] / t_obj:.1f}x)",
            "SDCA s to CRFsuite's F1": f"{t_f1:.1f} ({c['seconds'] / t_f1:.1f}x)",
            "whole run, wall s (CRFsuite / crfsdca)": f"{c['wall']:.1f} / {s['wall']:.1f} "
                                                      f"({c['wall'] / s['wall']:.1f}x)",
        })
        print(f"{name}: done", file=sys.stderr)
    print(f"Machine: {machine()}; each tool single-threaded, one after the other.\n")
    print(markdown_table(rows, list(rows[0]) if rows else ["dataset"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
