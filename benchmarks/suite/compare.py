"""Whether one stored run is slower than another, benchmark by benchmark.

For each benchmark both runs have: crfsdca's median in each and their ratio, and, where
the benchmark measured a reference in the same run, the speed-up over it in each (a
figure that the machine's own speed moves less). A benchmark is slower when its median
grew by more than ``--threshold`` (default 10%) and its speed-up over the reference,
where it has one, fell by more than that too; the exit status is 1 if any is.

    python benchmarks/suite/compare.py                 # the two newest runs of this machine
    python benchmarks/suite/compare.py 7b58180 HEAD~3  # runs named by commit (or file)
    make bench-compare BASE=7b58180 HEAD=abc1234
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import store
from machine import label


def _resolve(spec: str, root: Path) -> store.Run:
    """A file, a commit prefix, or a git revision (HEAD~1...) turned into a commit id."""
    try:
        return store.find(spec, root)
    except SystemExit:
        done = subprocess.run(["git", "rev-parse", spec], capture_output=True, text=True)
        if done.returncode != 0:
            raise
        return store.find(done.stdout.strip(), root)


def compare(base: store.Run, head: store.Run, threshold: float) -> tuple[list[str], bool]:
    """The comparison's table, and whether any benchmark is slower."""
    lines = [f"base: {base.path.name} ({base.describe()})",
             f"head: {head.path.name} ({head.describe()})", "",
             "| benchmark | base median | head median | head / base | speed-up base -> head "
             "| verdict |", "|---|---|---|---|---|---|"]
    slower = False
    for name, b in base.benchmarks.items():
        h = head.benchmarks.get(name)
        if h is None:
            continue
        ratio = h["stats"]["median"] / b["stats"]["median"]
        sb, sh = b["extra_info"].get("speedup"), h["extra_info"].get("speedup")
        worse = ratio > 1 + threshold and (sb is None or sh is None
                                           or sh < sb / (1 + threshold))
        better = ratio < 1 / (1 + threshold)
        verdict = "slower" if worse else "faster" if better else "same"
        slower |= worse
        speedups = f"{sb:.2f}x -> {sh:.2f}x" if sb and sh else ""
        lines.append(f"| `{name}` | {b['stats']['median']:.4g} s | {h['stats']['median']:.4g} s "
                     f"| {ratio:.3f} | {speedups} | {verdict} |")
    return lines, slower


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", nargs="?", help="a stored run: file, commit or revision")
    ap.add_argument("head", nargs="?", help="the run compared with it (default: newest)")
    ap.add_argument("--threshold", type=float, default=0.10)
    ap.add_argument("--results", type=Path, default=store.RESULTS,
                    help="the folder of stored runs (default: benchmarks/results)")
    args = ap.parse_args(argv)
    mine = [r for r in store.runs(args.results) if r.machine.get("label") == label()]
    head = _resolve(args.head, args.results) if args.head else (mine[-1] if mine else None)
    base = _resolve(args.base, args.results) if args.base else \
        (mine[-2] if len(mine) > 1 else None)
    if base is None or head is None:
        print(f"need two stored runs (this machine, {label()}, has {len(mine)}): "
              "make bench, or name them", file=sys.stderr)
        return 2
    lines, slower = compare(base, head, args.threshold)
    print("\n".join(lines))
    if base.machine.get("label") != head.machine.get("label"):
        print("\nnote: two machines; the speed-ups, measured in each run, compare better "
              "than the seconds")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
