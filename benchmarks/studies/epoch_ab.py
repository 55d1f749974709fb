"""SDCA's epoch in two versions of the code, alternated processes, one thread.

Question: Is the SDCA epoch on data without vectors back to its time before the dense
    block (423e06f, issue 48) made every step carry its arrays (issue 55: within 2%)?
Date: 2026-11-30
Commit: bcac47f against 423e06f^ (the commit before the dense block)
Answer: Yes, within the spread on Dutch and faster on CoNLL-2000. Ten epochs of plain
    SDCA-GAP (no Catalyst), the same losses to the last digit in both versions, 5
    alternated processes each: Dutch NER 2.83 -> 2.81 s (medians, 0.99x; single fits
    2.72-2.95 and 2.77-2.90 s), CoNLL-2000 7.54 -> 7.14 s (0.95x; every fit after below
    every fit before). Two earlier runs of 3 (not stored) gave Dutch 0.98x and 1.03x,
    CoNLL-2000 0.97x and 0.97x. Stored in runs/epoch_ab.json.

Each version's ``src/`` is exported by ``git archive`` into a temporary folder; every
process loads that version, fits 50 sentences (its kernels loaded; a first process per
version compiles them), then times ``CRF(c1=0, c2=0.1, catalyst=0,
all_possible_transitions=True, max_iterations=10, epsilon=0, threads=1)`` on the whole
training set: exactly ten epochs of SDCA-GAP with its refreshes of the stored gaps, the
monitor's passes not counted (the solver seconds of the last row). The items are made
once by this checkout (``practitioner.load``) and handed to every process pickled, so
both versions train on the same lists. Processes alternate before, after, dataset by
dataset, ``--repeat`` times; nothing else may run beside them.

    cd benchmarks/studies && python epoch_ab.py --before 423e06f^ --json runs/epoch_ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ab_fit import export
from common import machine, store_run

CHILD = """
import json, os, pickle, sys, time
os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, sys.argv[1])
from crfsdca import CRF
X, y = pickle.load(open(sys.argv[2], "rb"))
CRF(c2=0.1, max_iterations=2, all_possible_transitions=True, catalyst=0).fit(X[:50], y[:50])
crf = CRF(c1=0.0, c2=0.1, catalyst=0, all_possible_transitions=True, max_iterations=10,
          epsilon=0, threads=1).fit(X, y)
last = crf.training_log_[-1]
print(json.dumps({"solver": last["seconds"], "epoch": last["epoch"], "loss": last["loss"]}))
"""


def fit(src: Path, data: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(src), str(data)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="a git revision")
    ap.add_argument("--after", default="HEAD", help="a git revision (default HEAD)")
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from practitioner import load

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "before").mkdir()
        (tmp / "after").mkdir()
        versions = {"before": export(args.before, tmp / "before"),
                    "after": export(args.after, tmp / "after")}
        data = {}
        for name in args.datasets:
            X, y, _, _ = load(name)
            data[name] = tmp / f"{name}.pkl"
            data[name].write_bytes(pickle.dumps((X, y), protocol=5))
        for src in versions.values():  # compile each version's kernels, not timed
            fit(src, data[args.datasets[0]])
        times: dict = {(v, name): [] for v in versions for name in args.datasets}
        rows = []
        for _ in range(args.repeat):
            for name in args.datasets:
                for version, src in versions.items():
                    got = fit(src, data[name])
                    times[version, name].append(got)
                    print(version, name, json.dumps(got), flush=True)
        for name in args.datasets:
            before, after = times["before", name], times["after", name]
            rows.append({"dataset": name, "before": [r["solver"] for r in before],
                         "after": [r["solver"] for r in after],
                         "same_loss": all(a["loss"] == b["loss"]
                                          for a, b in zip(before, after, strict=True)),
                         "ratio_of_medians": statistics.median(r["solver"] for r in after)
                         / statistics.median(r["solver"] for r in before)})
            print(json.dumps(rows[-1]), flush=True)
    store_run(args.json, {"machine": machine(), "before": args.before, "after": args.after,
                          "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
