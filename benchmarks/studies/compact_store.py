"""The library's default fit on the compact dual store against the exact one (issue 57).

Question: With ``dual_store="compact"`` (each sequence's pairwise marginals summed and a
    lower bound of its entropy, the step maximizing the dual with that bound), how many
    epochs and seconds does the default fit (SDCA-GAP with Catalyst, the elastic net where
    c1 > 0) take to its certified relative gap against the exact store, on the same data,
    with the same objective and test F1?
Date: 2026-11-30
Commit: 0ec5e39 (the compact store the estimator's default again, after 5355aa6 fixed its
    stall: a block whose marginals had underflowed to 0 never moved again)
Answer: The compact store is faster in 11 of 12 cells, 0.67-0.95x the exact store's
    seconds (medians of 3 alternated fits, one thread; 1.03x at c1 = 0.1, c2 = 0.1 on
    CoNLL-2000), for 0.99-1.4x its epochs: a step's line search costs K logarithms an
    evaluation instead of (T - 1) K^2, and the store's traffic shrinks with it. At c2 =
    0.0026 it converges like the exact store (Dutch 51.0 / 43.6 epochs against 51.0 /
    44.2; CoNLL-2000 48.0 / 95 against 48.8 / 84). The objective within 1e-5 (relative)
    of the exact store's or lower (each stops at its own certified 3e-4), test F1 within
    0.12 points. Dutch (c1, c2 = 0, 0.1 / 0, 0.01 / 0, 0.0026 / 0.1, 0.1 / 0.1, 0.01 / 0.1,
    0.0026): 5.1 / 8.6 / 17.6 / 6.1 / 10.9 / 19.2 s against 5.5 / 10.1 / 21.5 / 6.4 /
    12.4 / 22.8; CoNLL-2000: 16.0 / 21.6 / 37.0 / 22.8 / 43.6 / 90.2 against 18.3 /
    32.1 / 53.3 / 22.1 / 47.7 / 106.7. Table: docs/benchmarks.md ("The compact store in
    the library"), from runs/compact_store.json. (At f9daa8e, before the fix: 0.68-0.96x
    the seconds, 1.02-1.4x the epochs at c2 in {0.01, 0.1}; at c2 = 0.0026 on Dutch a
    stall at 5e-3.)

Data: CoNLL-2002 Dutch NER with the tutorial's features and CoNLL-2000 chunking with
CRFsuite's example features (``practitioner.load``). Each cell (c1, c2): ``crfsdca.CRF(c1,
c2, all_possible_transitions=True, threads=1, dual_store=...)``, the two stores alternated
in one process, ``--rounds`` times. Epochs and the objective do not depend on the machine;
seconds are medians (one thread; the other core idle, as far as this machine allows).

    python benchmarks/studies/compact_store.py --json runs/compact_store.json
    python benchmarks/studies/compact_store.py --datasets ner --c2 0.1 --limit 2000 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import head_commit, kept_rows, machine, markdown_table, store_run  # noqa: E402
from practitioner import load, objective, scores  # noqa: E402

STORES = ("exact", "compact")


def fit(store: str, c1: float, c2: float, data) -> dict:
    from crfsdca import CRF

    X, y, Xt, yt = data
    crf = CRF(c1=c1, c2=c2, all_possible_transitions=True, threads=1, dual_store=store)
    t0 = time.perf_counter()
    crf.fit(X, y)
    seconds = time.perf_counter() - t0
    last = crf.training_log_[-1]
    f1, _ = scores(yt, crf.predict(Xt), crf.model_.labels)
    return {"seconds": seconds, "epochs": last["epoch"], "gap": last["relative_gap"],
            "objective": objective(crf.model_, X, y, c1, c2), "f1": f1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", nargs="+", type=float, default=[0.0, 0.1])
    ap.add_argument("--c2", nargs="+", type=float, default=[0.1, 0.01, 0.0026])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--limit", type=int, help="the first LIMIT training sequences")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--add", action="store_true",
                    help="keep the rows of --json for the datasets not run now")
    args = ap.parse_args()
    commit = head_commit()
    print(f"# {machine()}; one thread; {args.rounds} rounds; commit {commit}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = kept_rows(args.json, args.add, lambda r: r["dataset"] in args.datasets)
    for name in args.datasets:
        data = load(name, args.limit)
        for c1 in args.c1:
            for c2 in args.c2:
                runs = {store: [] for store in STORES}
                for _ in range(args.rounds):
                    for store in STORES:
                        runs[store].append(fit(store, c1, c2, data))
                row = {"dataset": name, "c1": c1, "c2": c2}
                for store, fits in runs.items():
                    secs = [f["seconds"] for f in fits]
                    row[f"{store} s"] = round(statistics.median(secs), 2)
                    row[f"{store} runs"] = [round(s, 2) for s in secs]
                    row[f"{store} epochs"] = fits[-1]["epochs"]
                    row[f"{store} gap"] = float(f"{fits[-1]['gap']:.3g}")
                    row[f"{store} obj"] = round(fits[-1]["objective"], 3)
                    row[f"{store} F1"] = round(fits[-1]["f1"], 4)
                row["epochs ratio"] = round(row["compact epochs"] / row["exact epochs"], 2)
                row["time ratio"] = round(row["compact s"] / row["exact s"], 2)
                rows.append(row)
                print(json.dumps(row), flush=True)
                store_run(args.json, {"machine": machine(), "commit": commit,
                                      "rounds": args.rounds, "limit": args.limit,
                                      "rows": rows})
    cols = ["dataset", "c1", "c2", "exact epochs", "compact epochs", "exact s", "compact s",
            "exact obj", "compact obj", "exact F1", "compact F1"]
    print()
    print(markdown_table(rows, cols))


if __name__ == "__main__":
    main()
