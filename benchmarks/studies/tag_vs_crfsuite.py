"""``crfsdca tag`` against CRFsuite's own ``crfsuite tag``: one model, one file (issue 28).

Question: How does `crfsdca tag` compare with CRFsuite's `crfsuite tag` on one model and
    one file?
Date: 2026-11-26
Commit: 74d7233
Answer: 4.7-5.4x slower as a whole command (1.44 s against 0.27 s on Dutch, 1.22 s
    against 0.26 s on CoNLL-2000): the text's parsing in Python and the interpreter's
    start. The suite's `test_tag` measures it now.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/tag_vs_crfsuite.py`.

For each dataset (the practitioner's: sklearn-crfsuite's tutorial features on CoNLL-2002
Dutch, CRFsuite's chunking features on CoNLL-2000), ``crfsdca.CRF(c1=0.1, c2=0.1,
all_possible_transitions=True)`` is fitted and written as a CRFsuite model; the test set
is written in CRFsuite's data format (each dict item's entries flattened as both tools
read them: ``key:value`` of weight 1 for a str value, else ``key`` of weight the value;
CoNLL-2000's items are lists of names already).
Then both programs tag that file with that model, alternated ``--repeat`` times, one
process each, as a user runs them:

- ``crfsuite tag -m MODEL FILE`` (CRFsuite's program, built with gcc from the sources in
  python-crfsuite's sdist,
  :func:`crfsdca.reproduction.crfsuite_baseline.build_program`) and ``crfsdca tag -m
  MODEL FILE``, labels to /dev/null: the whole command's wall seconds, the interpreter's
  start and numba's kernel loading included for crfsdca;
- the same with ``-t -q``: each program's own "Elapsed time" line (CRFsuite's: CPU
  seconds of reading, tagging and evaluating the file; crfsdca's: wall seconds of
  encoding and tagging it, the file already read).

The labels of the two programs are checked to be identical first.

    cd benchmarks/studies && python tag_vs_crfsuite.py [--datasets ner chunk] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import machine, report  # noqa: E402
from practitioner import load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SDIST = ROOT / ".venv" / "sdist" / "python_crfsuite-0.9.12.tar.gz"
ELAPSED = re.compile(r"Elapsed time: ([0-9.]+)")


def write_data(path: Path, X, y) -> None:
    """X (lists of flat dicts) and y in CRFsuite's data format."""
    from crfsdca.data.crfsuite_format import write_sequences
    from crfsdca.data.items import pair_names, pair_weights

    def flat(item) -> list:
        if not isinstance(item, dict):  # names, or (name, weight) pairs, as they are
            return list(item)
        keys, values = list(item), list(item.values())
        return list(zip(pair_names(keys, values), pair_weights(values), strict=True))

    with open(path, "w", encoding="utf-8") as f:
        write_sequences(f, [[flat(item) for item in xseq] for xseq in X], y)


def run(cmd: list[str], capture: bool = False) -> tuple[float, str]:
    """(wall seconds, stdout if ``capture``) of one command."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return seconds, done.stdout if capture else ""


def elapsed(cmd: list[str]) -> float:
    """The program's own "Elapsed time" of ``cmd`` with ``-t -q`` (after ``tag``)."""
    at = cmd.index("tag") + 1
    out = run([*cmd[:at], "-t", "-q", *cmd[at:]], capture=True)[1]
    found = ELAPSED.search(out)
    if found is None:
        raise SystemExit(f"no Elapsed line from {' '.join(cmd)}:\n{out[-1000:]}")
    return float(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sdist", type=Path, default=SDIST,
                    help="python-crfsuite's sdist, whose sources build CRFsuite's program")
    ap.add_argument("--crfsuite-bin", type=Path, help="a crfsuite program instead")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from crfsdca import CRF
    from crfsdca.reproduction.crfsuite_baseline import build_program

    print(f"# {machine()}; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        program = args.crfsuite_bin or build_program(args.sdist, tmp / "build")
        for name in args.datasets:
            X, y, X_test, y_test = load(name)
            model = tmp / f"{name}.crfsuite"
            CRF(c1=0.1, c2=0.1, all_possible_transitions=True, model_filename=str(model)).fit(X, y)
            data = tmp / f"{name}.txt"
            write_data(data, X_test, y_test)
            theirs = [str(program), "tag", "-m", str(model), str(data)]
            ours = [sys.executable, "-m", "crfsdca", "tag", "-m", str(model), str(data)]
            if run(theirs, capture=True)[1] != run(ours, capture=True)[1]:
                raise SystemExit(f"{name}: the two programs' labels differ")
            walls = {"crfsuite": [], "crfsdca": []}
            own = {"crfsuite": [], "crfsdca": []}
            for _ in range(args.repeat):
                for tool, cmd in (("crfsuite", theirs), ("crfsdca", ours)):
                    walls[tool].append(run(cmd)[0])
                    own[tool].append(elapsed(cmd))
            wall = {t: statistics.median(v) for t, v in walls.items()}
            mine = {t: statistics.median(v) for t, v in own.items()}
            rows.append({"dataset": name, "sequences": len(X_test),
                         "crfsuite tag s": round(wall["crfsuite"], 3),
                         "crfsdca tag s": round(wall["crfsdca"], 3),
                         "wall crfsdca / crfsuite": round(wall["crfsdca"] / wall["crfsuite"], 2),
                         "crfsuite Elapsed": round(mine["crfsuite"], 3),
                         "crfsdca Elapsed": round(mine["crfsdca"], 3),
                         "Elapsed crfsdca / crfsuite":
                             round(mine["crfsdca"] / mine["crfsuite"], 2)})
            print(rows[-1], flush=True)
    report(rows, args.json)


if __name__ == "__main__":
    main()
