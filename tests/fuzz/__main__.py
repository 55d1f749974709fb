"""``python -m fuzz``: run the fuzzer (``--inputs``, ``--jobs``, ``--out``), or one worker
of it (``--worker``, which the supervisor starts). Exit status 1 when anything was found."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .engine import supervise, work
from .targets import LIBHDF5, TARGETS


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__)
    p.add_argument("--inputs", type=int, default=100_000, help="inputs in all (default 1e5)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--out", type=Path, default=Path(".venv/fuzz"),
                   help="seeds, findings and summary.json (default .venv/fuzz)")
    p.add_argument("--targets", nargs="+", choices=[*TARGETS, LIBHDF5.name],
                   default=list(TARGETS), help="default: every reader of the package")
    p.add_argument("--seed", type=int, default=int(time.time()) % 100_000,
                   help="the random seed (default: from the clock; the summary says it)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds an input may take")
    p.add_argument("--max-memory", type=int, default=2**30,
                   help="bytes a worker may allocate beyond its start (default 1 GiB)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        w = json.loads(args.worker)
        work(w["names"], Path(w["seeds_dir"]), w["count"], w["seed"], Path(w["work_dir"]),
             w["timeout"], w["max_memory"])
        return 0
    summary = supervise(args.targets, args.inputs, args.jobs, args.out, args.seed,
                        args.timeout, hang=6 * args.timeout, max_memory=args.max_memory)
    rate = summary["inputs"] / max(summary["seconds"], 1e-9)
    print(f"{summary['inputs']:,} inputs in {summary['seconds']:.0f} s ({rate:.0f}/s) on "
          f"{args.jobs} worker(s), seed {args.seed}: {len(summary['findings'])} finding(s)"
          + (f" under {args.out / 'findings'}" if summary["findings"] else ""))
    return 1 if summary["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
