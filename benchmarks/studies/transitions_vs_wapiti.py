"""Transitions that read the input (B lines with %x) on CoNLL-2000: crfsdca against Wapiti.

Question: With CRF++'s chunking template plus two B lines that read the input
    (``B01:%x[0,1]``, ``B02:%x[-1,1]/%x[0,1]``: the transition into a token by its POS
    and by the POS bigram), at the same L2 regularization (CRF++'s C = 4), do crfsdca's
    L-BFGS and Wapiti's reach the same objective and the same test chunk F1?
Date: 2026-11-29
Commit: ea58d29
Answer: yes, the same model: on the first 1,000 training sentences (all 2,012 test
    sentences), 1,732,420 weights each (783 transition attributes); test chunk F1 90.92
    (crfsdca's SDCA) and 90.93 (its L-BFGS, Wapiti); objective 479.8792 at crfsdca's
    default stop (certified relative gap 1.7e-4), 479.8464 at epsilon 1e-6, 479.8473
    by its L-BFGS, 479.85 printed by Wapiti. One run each, alone, one thread: 5.3 s
    (default, template expansion included), 6.9 s (epsilon 1e-6), 17.2 s (L-BFGS)
    against Wapiti's 44.2 s. Table: docs/benchmarks.md ("Transitions that read the
    input"), from benchmarks/studies/runs/transitions_vs_wapiti.json.

The template is read as Wapiti's (``dialect="wapiti"``, Wapiti's padding names), the
models are the same (a weight per (attribute, label), per (label, label), and per
(transition attribute, label, label); none at the sequence's ends). Wapiti runs
``train -a l-bfgs -1 0 -2 0.25 -e 1e-7 -w 0`` (rho2 = 1 / C); crfsdca
``CRF(**templates.wapiti_parameters(0, 0.25))`` as it comes (SDCA, the certified relative
gap 3e-4), at epsilon 1e-6, and with ``algorithm="lbfgs", epsilon=1e-8``. The objective is sum
NLL + c2 ||w||^2 (c2 = 1 / (2 C)), crfsdca's evaluated by its own pass, Wapiti's as it
prints it (``obj=``, two decimals). Seconds: one run each, one thread, indicative only.

    cd benchmarks/studies && python transitions_vs_wapiti.py --limit 1000 \\
        --json runs/transitions_vs_wapiti.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path

from common import machine
from templates_vs_wapiti import (
    CHUNKING_TEMPLATE,
    build_wapiti,
    chunk_f1,
    last_objective,
    peer_arguments,
    predicted,
    timed,
    write_data,
)

TEMPLATE = CHUNKING_TEMPLATE + "B01:%x[0,1]\nB02:%x[-1,1]/%x[0,1]\n"
"""The chunking template and two B lines that read the POS column."""


def run_crfsdca(train: Path, test: Path, rho2: float, **params) -> dict:
    from crfsdca import CRF, templates
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.data.transitions import known_split
    from crfsdca.model.objective import primal

    t0 = time.perf_counter()
    features = templates.TemplateFeatures(TEMPLATE, dialect="wapiti")
    tr = templates.read_columns(train)
    X = features.fit_transform(tr.X)
    crf = CRF(threads=1, **params, **templates.wapiti_parameters(0.0, rho2))
    crf.fit(X, tr.y)
    seconds = time.perf_counter() - t0
    m = crf.model_
    A, K, E = len(m.attributes), len(m.labels), len(m.transition_attributes)
    seq = known_split(encode(X, tr.y, Vocabulary(m.attributes + m.transition_attributes),
                             Vocabulary(m.labels), grow=False).seq, A, E)
    n = len(X)
    objective = n * primal(m.weights, seq, A, K, rho2 / n)
    te = templates.read_columns(test)
    last = crf.training_log_.last_iteration
    return {"tool": "crfsdca", "parameters": params, "threads": 1,
            "seconds": round(seconds, 2), "iterations": int(last["epoch"]),
            "status": m.training["status"],
            "relative_gap": float(f"{last['relative_gap']:.3g}"),
            "objective": round(objective, 4),
            "test_chunk_f1": chunk_f1(te.y, crf.predict(features.transform(te.X))),
            "weights": len(m.weights) - 3 * K,  # the bias block: not a feature here
            "transition_attributes": E}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    peer_arguments(ap, "crfsdca-transitions-vs-wapiti")
    args = ap.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    rho2 = 1.0 / args.cost
    template = work / "template"
    template.write_text(TEMPLATE)
    train, test = write_data(work, args.limit)
    result = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"),
              "data": "CoNLL-2000: train.txt" + (f" (first {args.limit} sentences)"
                                                 if args.limit else "") + ", test.txt",
              "template": "CRF++'s example/chunking/template + B01:%x[0,1] + "
                          "B02:%x[-1,1]/%x[0,1]",
              "regularization": {"crfpp_C": args.cost, "wapiti_rho2": rho2,
                                 "crfsdca_c2": rho2 / 2},
              "rows": []}
    for params in ({}, {"epsilon": 1e-6}, {"algorithm": "lbfgs", "epsilon": 1e-8,
                                             "max_iterations": 5000}):
        result["rows"].append(run_crfsdca(train, test, rho2, **params))
        print(json.dumps(result["rows"][-1]), flush=True)
    wapiti, how = (args.wapiti, "given") if args.wapiti else build_wapiti(args.wapiti_src,
                                                                         work)
    if wapiti is None:
        result["rows"].append({"tool": "wapiti", "status": how})
    else:
        model, log = work / "wapiti.model", work / "wapiti.log"
        seconds, status = timed([str(wapiti), "train", "-p", str(template), "-a", "l-bfgs",
                                 "-1", "0", "-2", str(rho2), "-e", "1e-7", "-w", "0",
                                 "-t", "1", str(train), str(model)], log)
        out = work / "wapiti.out"
        subprocess.run([str(wapiti), "label", "-m", str(model), str(test), str(out)],
                       check=True, capture_output=True)
        from crfsdca import templates

        text = log.read_text()
        features = re.findall(r"nb features: (\d+)", text)
        result["rows"].append({
            "tool": "wapiti", "algorithm": "l-bfgs (-e 1e-7 -w 0)", "threads": 1,
            "seconds": round(seconds, 2), "status": status,
            "iterations": int(re.findall(r"\[\s*(\d+)\] obj=", text)[-1]),
            "objective": last_objective(log, r"obj=([0-9.]+)"),
            "test_chunk_f1": chunk_f1(templates.read_columns(test).y, predicted(out, 4)),
            "weights": int(features[-1]) if features else None})
        print(json.dumps(result["rows"][-1]), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
