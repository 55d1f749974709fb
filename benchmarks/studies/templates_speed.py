"""CRF++'s chunking template on the whole CoNLL-2000: crfsdca's fit against Wapiti's L-BFGS,
on one thread and on the machine's cores, three alternated rounds.

Question: Issue 58's bar: with CRF++'s example/chunking/template at the same L2
    regularization (C = 4), is crfsdca's test chunk F1 within 0.2 points of Wapiti's, its
    objective no higher, and its fit at least 5x sooner than Wapiti's L-BFGS, on one thread
    and on the machine's cores (medians of 3)?
Date: 2026-11-29
Commit: f4d0712
Answer: yes. Medians of 3 alternated rounds, each fit a process of its own, alone:
    one thread, crfsdca's default fit 33.0 s and at epsilon 1e-7 46.4 s against
    Wapiti's 703.1 s (21.3x, 15.2x); two threads, 34.5 s and 48.6 s against 434.7 s
    (12.6x, 9.0x). Test chunk F1 93.83 against 93.84; objective at epsilon 1e-7
    3256.4847 against Wapiti's 3256.4956 (one thread) and 3256.5011-3256.5138 (two:
    Wapiti is not deterministic on two threads); the default fit stops at 3256.9059
    (its certified relative gap 2.9e-4). Table: docs/benchmarks.md ("CRF++ and Wapiti:
    the speed"), from benchmarks/studies/runs/templates_speed.json. Round 0's one-thread
    rows ran with this script before its --resume (the same code for them); its two-thread
    crfsdca rows were run again after a fix (the worker inherited OMP_NUM_THREADS=1).

The models are those of ``templates_vs_wapiti.py`` (same template, data, regularization:
crfsdca's c2 = 1 / (2 C), Wapiti's ``-1 0 -2 rho2`` with rho2 = 1 / C, a weight for
every (attribute, label) and (label, label) pair). Each round runs, one after the other:
crfsdca's default fit (SDCA-GAP, the certified relative gap 3e-4), crfsdca at
``epsilon=1e-7`` (a certificate tight enough to compare objectives), and Wapiti's
``train -a l-bfgs -e 1e-6 -w 0`` (its objective's relative change over 5 iterations
below 1e-6, as in ``templates_vs_wapiti.py``); first each on one thread (crfsdca
``threads=1``, Wapiti ``-t 1``), then on the machine's cores (crfsdca's default
``threads=None``, Wapiti ``-t`` the usable cores). Every run is a process of its own;
its seconds are the process's wall time (Python's start, reading the column files, the
template's expansion and the fit for crfsdca; Wapiti's whole ``train``), the test
labeling and the objectives measured after it, untimed. The objective is sum NLL + c2
||w||^2 evaluated by crfsdca's own pass, at crfsdca's weights and at Wapiti's (its dump,
mapped by attribute name).

    cd benchmarks/studies && python templates_speed.py --wapiti /path/to/wapiti \\
        --json runs/templates_speed.json
    cd benchmarks/studies && python templates_speed.py --limit 300 --rounds 1  # a check
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from common import machine
from templates_vs_wapiti import (
    CHUNKING_TEMPLATE,
    build_wapiti,
    chunk_f1,
    last_objective,
    objective,
    peer_arguments,
    predicted,
    timed,
    wapiti_weights,
    write_data,
)


def fit_worker(train: str, c2: float, threads: int, epsilon: float | None, model: str
               ) -> None:
    """One crfsdca fit in this process, its model saved: prints its log's last row.
    ``threads`` 0: the default (``threads=None``), every usable core; the
    ``OMP_NUM_THREADS=1`` that ``templates_vs_wapiti`` sets on import would cap it at one,
    so it goes first."""
    os.environ.pop("OMP_NUM_THREADS", None)
    from crfsdca import CRF, templates

    features = templates.TemplateFeatures(CHUNKING_TEMPLATE, dialect="wapiti")
    tr = templates.read_columns(train)
    X = features.fit_transform(tr.X)
    params = {} if epsilon is None else {"epsilon": epsilon}
    crf = CRF(c2=c2, all_possible_states=True, all_possible_transitions=True,
              threads=None if threads == 0 else threads, random_state=0,
              model_filename=model, **params)
    crf.fit(X, tr.y)
    last = crf.training_log_.last_iteration
    from crfsdca.runtime.threads import check_threads

    print(json.dumps({"threads_used": check_threads(crf.threads),
                      "epochs": round(last["epoch"], 2),
                      "status": crf.model_.training["status"],
                      "relative_gap": float(f"{last['relative_gap']:.3g}")}))


def run_crfsdca(train: Path, c2: float, threads: int, epsilon: float | None, work: Path
                ) -> tuple[dict, Path]:
    """A fit in a process of its own (``threads`` 0: the default, every usable core)."""
    model = work / f"crfsdca-{threads}-{epsilon}.crfsdca"
    model.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--worker", str(train), repr(c2), str(threads),
           repr(epsilon), str(model)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    row = json.loads(done.stdout.strip().split("\n")[-1])
    row.update({"tool": "crfsdca", "epsilon": epsilon or 3e-4,
                "threads": threads or len(os.sched_getaffinity(0)),
                "process_seconds": round(seconds, 2)})
    return row, model


def run_wapiti(wapiti: Path, template: Path, train: Path, test: Path, rho2: float,
               threads: int, work: Path) -> tuple[dict, Path]:
    model, log = work / f"wapiti-{threads}.model", work / f"wapiti-{threads}.log"
    model.unlink(missing_ok=True)
    seconds, status = timed([str(wapiti), "train", "-p", str(template), "-a", "l-bfgs",
                             "-1", "0", "-2", repr(rho2), "-e", "1e-6", "-w", "0",
                             "-t", str(threads), str(train), str(model)], log)
    from crfsdca import templates

    out = work / "wapiti.out"
    subprocess.run([str(wapiti), "label", "-m", str(model), str(test), str(out)],
                   check=True, capture_output=True)
    iterations = re.findall(r"\[\s*(\d+)\] obj=", log.read_text())
    return {"tool": "wapiti", "threads": threads, "process_seconds": round(seconds, 2),
            "status": status, "iterations": int(iterations[-1]) if iterations else None,
            "own_objective": last_objective(log, r"obj=([0-9.]+)"),
            "test_chunk_f1": chunk_f1(templates.read_columns(test).y, predicted(out, 4))
            }, model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    peer_arguments(ap, "crfsdca-templates-speed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--resume", action="store_true", help="keep the rows --json holds "
                    "and run the others")
    args = ap.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    C = args.cost
    c2, rho2 = 1.0 / (2.0 * C), 1.0 / C
    template = work / "template"
    template.write_text(CHUNKING_TEMPLATE)
    train, test = write_data(work, args.limit)
    wapiti, how = (args.wapiti, "given") if args.wapiti else build_wapiti(args.wapiti_src,
                                                                         work)
    if wapiti is None:
        sys.exit(f"Wapiti: {how}")
    cores = len(os.sched_getaffinity(0))
    result = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"),
              "data": "CoNLL-2000: train.txt" + (f" (first {args.limit} sentences)"
                                                 if args.limit else "") + ", test.txt",
              "template": "CRF++'s example/chunking/template (19 U lines, a bare B)",
              "regularization": {"crfpp_C": C, "crfsdca_c2": c2, "wapiti_rho2": rho2},
              "cores": cores, "rows": []}
    if args.resume and args.json and args.json.exists():
        result = json.loads(args.json.read_text())
    done = {(r["round"], r["tool"], r["threads"], r.get("epsilon")) for r in result["rows"]}

    def store(row):
        result["rows"].append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=1) + "\n")

    data: dict = {}

    def evaluation_data():
        """(X, y, X_test, y_test) as crfsdca's items, made once (the parent's, untimed)."""
        if not data:
            from crfsdca import templates

            features = templates.TemplateFeatures(CHUNKING_TEMPLATE, dialect="wapiti")
            tr, te = templates.read_columns(train), templates.read_columns(test)
            data.update(X=features.fit_transform(tr.X), y=tr.y,
                        X_test=features.transform(te.X), y_test=te.y)
        return data

    from crfsdca import CRF

    for r in range(args.rounds):
        for threads in (1, cores):
            for eps in (None, 1e-7):
                if (r, "crfsdca", threads, eps or 3e-4) in done:
                    continue
                row, model = run_crfsdca(train, c2, 1 if threads == 1 else 0, eps, work)
                crf, d = CRF(model_filename=str(model)), evaluation_data()
                row.update({"round": r,
                            "objective": round(objective(crf, d["X"], d["y"], c2), 6),
                            "test_chunk_f1": chunk_f1(d["y_test"], crf.predict(d["X_test"]))})
                store(row)
            if (r, "wapiti", threads, None) in done:
                continue
            row, wmodel = run_wapiti(wapiti, template, train, test, rho2, threads, work)
            dump = work / "wapiti.dump"
            subprocess.run([str(wapiti), "dump", "-p", "17", str(wmodel), str(dump)],
                           check=True, capture_output=True)
            crf, d = CRF(model_filename=str(work / "crfsdca-1-None.crfsdca")), evaluation_data()
            w, missing = wapiti_weights(dump, crf)  # mapped by the names of crfsdca's model
            row.update({"round": r, "objective": round(objective(crf, d["X"], d["y"], c2, w), 6),
                        "observations_crfsdca_lacks": missing})
            store(row)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        a = sys.argv[2:]
        fit_worker(a[0], float(a[1]), int(a[2]), None if a[3] == "None" else float(a[3]),
                   a[4])
    else:
        main()
