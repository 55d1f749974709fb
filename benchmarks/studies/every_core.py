"""The default fit on every core against sklearn-crfsuite's tutorial call (issue 55).

Question: How much sooner than sklearn-crfsuite's tutorial call is `crfsdca.CRF`'s
    default fit on this machine's cores and on one, with pipelined SDCA (the default) and
    with sequential SDCA (`pipeline=False`, the default before)?
Date: 2026-11-30, rows again until 2026-12-02 (each row since 2026-12-02 records its day
    and the package's commit; the runs' notes name the others')
Commit: per row: the CoNLL-2000 rows of runs/every_core.json at d8017ab, its Dutch rows at
    03f3fc4 (c1 = 0) and 573a390 (c1 = 0.1); runs/every_core_small_c2.json's rows at
    01f097e
Answer: 2 cores, medians of 3 alternated fits, at (c1, c2) = (0, 0.1) / (0, 1) / (0.1, 0.1)
    / (0.1, 1): the default fit 4.85x / 7.91x / 4.37x / 6.41x sklearn-crfsuite's tutorial
    call on CoNLL-2000 and 5.09x / 8.17x / 4.87x / 7.31x on Dutch (one thread 3.44-6.00x
    and 3.62-6.00x); the tutorial's `lbfgs` call 3.05x / 2.95x / 3.15x / 2.90x and 3.43x /
    3.01x / 3.07x / 3.35x (on CoNLL-2000 2.41-3.08x in the three runs before: it straddles
    3x with the machine's noise). At c2 = 0.01 (c1 = 0 / 0.1), at 01f097e: Dutch 3.31x /
    3.20x on both cores, 2.60x / 2.39x on one; CoNLL-2000 3.28x / 3.13x on both, 2.44x /
    2.01x on one (at 1c0154a: Dutch 3.14x / 3.11x and 2.29x / 2.51x, CoNLL-2000 3.49x /
    2.85x and 2.27x / 2.16x; these cells straddle their marks with the noise).
    The default fit's objective is lower than sklearn-crfsuite's in every cell. Earlier
    runs, and what changed between them: docs/history.md. Tables: docs/benchmarks.md ("The
    default fit on every core", "Pipelined SDCA"), from runs/every_core.json and
    runs/every_core_small_c2.json.

Data: CoNLL-2002 Dutch NER with the tutorial's features and CoNLL-2000 chunking with
CRFsuite's example features (``practitioner.load``). Cells: c1 in {0, 0.1} x c2 in
{0.1, 1}. In each cell, one process, the tools alternated round after round:

- ``sk-100``: sklearn-crfsuite's tutorial call (``algorithm='lbfgs'``,
  ``max_iterations=100``, ``all_possible_transitions=True``), one thread (it has no other);
- ``ours``: ``crfsdca.CRF`` with the same arguments but the algorithm, on every usable
  core (``threads`` = the usable cores, passed explicitly: the study pins no BLAS):
  pipelined SDCA since 2026-11-30;
- ``ours-1``: the same on one thread (the same model: a seed fixes it);
- ``ours-seq`` and ``ours-seq-1``: ``ours`` and ``ours-1`` with ``pipeline=False``,
  sequential SDCA (the default until 2026-11-30: one step at a time, the passes on every
  core);
- ``ours-lbfgs``: the tutorial's call unchanged (``algorithm='lbfgs'``), every core;
- ``ours-bB`` and ``ours-bB-1`` (not by default): ``ours`` and ``ours-1`` with
  ``batch_size=B`` (mini-batch SDCA).

Reported per cell: each tool's median fit seconds over the rounds with the spread, the
speed-ups over ``sk-100``'s median, the objective in CRFsuite's scale and test F1
(``practitioner.objective`` and ``scores``).

    python benchmarks/studies/every_core.py --json runs/every_core.json
    python benchmarks/studies/every_core.py --datasets chunk --json runs/every_core.json --add
    python benchmarks/studies/every_core.py --datasets ner --json runs/every_core.json --add
    python benchmarks/studies/every_core.py --datasets ner --c1 0.1 --c2 0.1 --limit 1000 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from common import head_commit, kept_note, kept_rows, machine, markdown_table, store_run
from practitioner import load, objective, scores

TOOLS = ("sk-100", "ours", "ours-1", "ours-seq", "ours-seq-1", "ours-lbfgs")


def fit(tool: str, c1: float, c2: float, data, cores: int, workdir: Path) -> dict:
    X, y, Xt, yt = data
    if tool == "sk-100":
        import sklearn_crfsuite

        from crfsdca.formats.crfsuite_model import read_crfsuite_model

        path = workdir / "sk.model"
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=100,
                                   all_possible_transitions=True, model_filename=str(path))
        t0 = time.perf_counter()
        crf.fit(X, y)
        seconds = time.perf_counter() - t0
        model = read_crfsuite_model(path)
    else:
        from crfsdca import CRF

        kw = {"algorithm": "lbfgs", "max_iterations": 100} if tool == "ours-lbfgs" else {}
        if tool.startswith("ours-b"):  # ours-bB (every core) and ours-bB-1: batch_size B
            kw = {"batch_size": int(tool.split("-")[1][1:])}
        if tool.startswith("ours-seq"):  # sequential SDCA
            kw = {"pipeline": False}
        crf = CRF(c1=c1, c2=c2, all_possible_transitions=True,
                  threads=1 if tool.endswith("-1") else cores, **kw)
        t0 = time.perf_counter()
        crf.fit(X, y)
        seconds = time.perf_counter() - t0
        model = crf.model_
        epochs = crf.training_log_[-1]["epoch"]
    f1, chunk = scores(yt, crf.predict(Xt), model.labels)
    return {"seconds": seconds, "objective": objective(model, X, y, c1, c2), "f1": f1,
            "chunk_f1": chunk, **({} if tool == "sk-100" else {"epochs": epochs})}


def main() -> None:
    from crfsdca.runtime.threads import usable_cores

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", nargs="+", type=float, default=[0.0, 0.1])
    ap.add_argument("--c2", nargs="+", type=float, default=[0.1, 1.0])
    ap.add_argument("--tools", nargs="+", default=list(TOOLS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, help="the first LIMIT training sequences")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--add", action="store_true",
                    help="keep the rows of --json for the cells not run now")
    args = ap.parse_args()
    cores = usable_cores()
    print(f"# {machine()}; {cores} cores used by ours; {args.rounds} rounds; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    commit = head_commit()  # each row says what it measured; --add keeps the others'
    note = kept_note(args.json, args.add)
    rows = kept_rows(args.json, args.add, lambda r: (
        r["dataset"] in args.datasets and r["c1"] in args.c1 and r["c2"] in args.c2))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets:
            data = load(name, args.limit)
            for c1 in args.c1:
                for c2 in args.c2:
                    runs = {tool: [] for tool in args.tools}
                    for _ in range(args.rounds):
                        for tool in args.tools:
                            runs[tool].append(fit(tool, c1, c2, data, cores, Path(tmp)))
                    row = {"dataset": name, "c1": c1, "c2": c2, "cores": cores,
                           "commit": commit, "date": time.strftime("%Y-%m-%d")}
                    for tool, fits in runs.items():
                        secs = [f["seconds"] for f in fits]
                        row[f"{tool} s"] = round(statistics.median(secs), 2)
                        row[f"{tool} runs"] = [round(s, 2) for s in secs]
                        row[f"{tool} obj"] = round(fits[-1]["objective"], 3)
                        row[f"{tool} F1"] = round(fits[-1]["f1"], 4)
                        row[f"{tool} chunk"] = round(fits[-1]["chunk_f1"], 2)
                        if "epochs" in fits[-1]:
                            row[f"{tool} epochs"] = fits[-1]["epochs"]
                    if "sk-100" in runs:
                        for tool in runs:
                            if tool != "sk-100":
                                row[f"{tool} speed-up"] = round(
                                    row["sk-100 s"] / row[f"{tool} s"], 2)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    store_run(args.json, {"machine": machine(), "cores": cores,
                                          "rounds": args.rounds, "limit": args.limit,
                                          **note, "rows": rows})
    cols = ["dataset", "c1", "c2"] + [f"{t} s" for t in args.tools] + \
        [f"{t} speed-up" for t in args.tools if t != "sk-100" and "sk-100" in args.tools]
    print()
    print(markdown_table(rows, cols))


if __name__ == "__main__":
    main()
