"""The least memory each fit trains in, under a hard limit (a cgroup), and what it ends on.

Question: Under a hard memory limit (a cgroup's, as a container or SLURM sets it), how
    little memory does each way of training need to finish: sklearn-crfsuite's tutorial
    call on lists, crfsdca's default fit on the same lists, and crfsdca's default fit on
    a generator of the same items (which, when the marginal store does not fit the limit,
    takes a float32 store and then a store in a file, store_dir)? And do the fits under
    the limit end on the certified objective of the fit without it?
Date: 2026-12-01
Commit: 800509a (every crfsdca row; sklearn-crfsuite's rows but twenty times over are of
    2026-11-29)
Answer: On the compact store (the default since these rows were last run, on the
    paper's): Dutch NER: sklearn-crfsuite 409 MiB, crfsdca on lists 394 MiB (0.96x, its
    store in a file), on a generator and from a crfsdca.Corpus 253 MiB (0.62x, the store
    in memory, about the unlimited fit's seconds). CoNLL-2000: 684, 820 (1.20x), 599
    (0.88x) and 552 MiB (0.81x), the compact store in a file at about the unlimited
    seconds; below, the memory check refuses. Twenty times CoNLL-2000 (--copies 20 --at
    4096): sklearn-crfsuite killed under 4,096 MiB (8,005 MiB at its peak without a limit,
    1,669 s beside other work, 15,418.177 after its 100 iterations); the fit on a
    generator runs there in memory as without the limit (3,231 MiB at its peak, 0.40x),
    the same run to the last bit (14,881.007, relative gap 2.1e-4), 221 s against 217.
    Four and ten times over: 1,041 and 1,889 MiB at their peaks, in memory under 1,536
    and 3,072 MiB, 1.06x and 1.00x the seconds. Before (2026-11-29/30, the paper's store):
    Dutch 574 / 349 / 363 MiB (lists / generator / corpus), CoNLL-2000 1,211 / 1,025 /
    684 MiB; twenty times over a float32 store of 8.2 GB in a file, 2,300 s against 336.
    Table: docs/benchmarks.md ("Bigger than memory"), from runs/memory_limit.json.

Each fit runs in a fresh process in a child cgroup of this process's (cgroup v1's memory
controller or v2's ``memory.max``; root is needed), the limit set before the process
starts; the least limit under which the process ends normally is found by bisection, to
``--resolution`` MiB. The items are those of ``peak_memory.py`` (the tutorial's features
for the NER sets, CRFsuite's example features for CoNLL-2000 and POS). Memory counted by
the cgroup includes the page cache of files the process writes (the store in a file), so
the limit is a bound on everything the fit holds; the kernel writes back and drops file
pages to stay under it, and kills the process (SIGKILL) only when what it cannot drop
exceeds it.

    python benchmarks/studies/memory_limit.py --datasets ner --json runs/memory_limit.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from peak_memory import CORPUS, PAIRS, ROOT

FITS = {
    "sklearn-crfsuite": (
        "X, y = [], []\nfor xseq, yseq in pairs():\n    X.append(xseq)\n    y.append(yseq)\n"
        "import sklearn_crfsuite, time\n_t0 = time.perf_counter()\n"
        "fit = sklearn_crfsuite.CRF(algorithm='lbfgs', c1=0.1, c2=0.1, max_iterations=100, "
        "all_possible_transitions=True).fit(X, y)\n"
        "end = {'loss': fit.training_log_.last_iteration['loss']}\n"),
    "crfsdca": (
        "X, y = [], []\nfor xseq, yseq in pairs():\n    X.append(xseq)\n    y.append(yseq)\n"
        "from crfsdca import CRF\nimport time\n_t0 = time.perf_counter()\n"
        "fit = CRF(c1=0.1, c2=0.1, all_possible_transitions=True).fit(X, y)\n"),
    "crfsdca-stream": (
        "from crfsdca import CRF\nimport time\n_t0 = time.perf_counter()\n"
        "fit = CRF(c1=0.1, c2=0.1, all_possible_transitions=True).fit(pairs())\n"),
    "crfsdca-corpus": (
        "from crfsdca import CRF, Corpus\nimport time\n_t0 = time.perf_counter()\n"
        "fit = CRF(c1=0.1, c2=0.1, all_possible_transitions=True).fit(Corpus(sys.argv[4]))\n"),
}
"""The fits, each a process's code after the items' (argv: dataset, limit, copies, and
for ``crfsdca-corpus`` the folder of a corpus of the items made beforehand, without a
limit, by :data:`~peak_memory.CORPUS`)."""

COPIES = """
copies = int(sys.argv[3]) if len(sys.argv) > 3 else 1
_one_copy = pairs


def pairs():  # the dataset's sentences, copies times over
    for _ in range(copies):
        yield from _one_copy()
"""

REPORT = """
import resource
if 'end' not in globals():
    last = fit.training_log_[-1]
    end = {'loss': float(last['loss']), 'relative_gap': float(last['relative_gap']),
           'store_dtype': fit.training_log_.method['store_dtype'],
           'store_dir': fit.training_log_.method['store_dir'] is not None}
end['seconds'] = time.perf_counter() - _t0  # the fit's, items made on the way included
end['peak_rss_mib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(end))
"""


def cgroup_dir() -> tuple[Path, str]:
    """A child cgroup of this process's, named by its pid (two studies at once do not
    share it), and its controller's version ("v1" or "v2")."""
    name = f"crfsdca-limit-{os.getpid()}"
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/") / name, "v1"
    path = next(p for _, c, p in (line.split(":", 2) for line in lines) if c == "")
    return Path("/sys/fs/cgroup") / path.lstrip("/") / name, "v2"


def run_limited(code: str, args: list[str], limit_mib: int | None,
                timeout: float | None = None) -> tuple[int | str, dict | None]:
    """(return code, the fit's report) of ``python -c code args`` under the limit (none:
    None), stopped after ``timeout`` seconds if given (return code ``"timeout"``)."""
    where, version = cgroup_dir()
    where.mkdir(exist_ok=True)
    limit = str(limit_mib * 2**20) if limit_mib else "max" if version == "v2" else "-1"
    (where / ("memory.max" if version == "v2" else "memory.limit_in_bytes")).write_text(limit)
    procs = str(where / "cgroup.procs")

    def enter():
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    try:
        out = subprocess.run([sys.executable, "-c", code, *args], preexec_fn=enter,
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", None
    lines = [s for s in out.stdout.splitlines() if s.startswith("{")]
    if out.returncode > 0:  # an error, not a kill: its last line says which
        print(f"      {(out.stderr.strip().splitlines() or [''])[-1][:200]}", flush=True)
    return out.returncode, (json.loads(lines[-1]) if out.returncode == 0 and lines else None)


def least_limit(code: str, args: list[str], lo: int, hi: int, resolution: int,
                timeout: float | None = None):
    """The least limit (MiB) in (lo, hi] under which the fit ends (within ``timeout``
    seconds, if given: a fit paging for longer counts as not ending), by bisection, and
    its report there; (None, None) if it does not end under hi."""
    rc, report = run_limited(code, args, hi, timeout)
    if rc != 0:
        return None, None
    best = (hi, report)
    while hi - lo > resolution:
        mid = (lo + hi) // 2
        rc, report = run_limited(code, args, mid, timeout)
        print(f"    {mid} MiB: {'ends' if rc == 0 else f'killed or failed ({rc})'}",
              flush=True)
        if rc == 0:
            hi, best = mid, (mid, report)
        else:
            lo = mid
    return best


def at_limit(code: str, args: list[str], limit: int) -> dict:
    """One run under ``limit`` MiB: whether it ended, and its report."""
    rc, report = run_limited(code, args, limit)
    return {"limit_mib": limit, "returncode": rc, "report": report}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ner"])
    ap.add_argument("--tools", nargs="+", default=list(FITS), choices=list(FITS))
    ap.add_argument("--limit", type=int, default=0, help="first N training sentences")
    ap.add_argument("--resolution", type=int, default=16, help="MiB")
    ap.add_argument("--high", type=int, default=4096, help="MiB, the bisection's top")
    ap.add_argument("--copies", type=int, default=1,
                    help="the training sentences this many times over (a bigger corpus)")
    ap.add_argument("--at", type=int, help="MiB: one run under this limit, no bisection")
    ap.add_argument("--unlimited", nargs="*", choices=list(FITS), default=None,
                    help="the tools also run without a limit (default: all)")
    ap.add_argument("--timeout", type=float, help="seconds: a bisection's fit running "
                    "longer counts as not ending (default: none)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--add", action="store_true",
                    help="keep the rows of --json for the datasets and tools not run now")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from common import head_commit, kept_rows, machine, store_run

    rows = kept_rows(args.json, args.add, lambda r: (
        r["dataset"] in args.datasets and r["tool"] in args.tools
        and r.get("copies", 1) == args.copies and ("at" in r) == bool(args.at)))
    prelude = PAIRS.format(src=str(ROOT / "src"), raw=str(ROOT / "data" / "raw"),
                           config=str(ROOT / "config.yaml"))
    folder = tempfile.TemporaryDirectory()
    commit = head_commit()
    for name in args.datasets:
        made = False
        for tool in args.tools:
            code = prelude + COPIES + FITS[tool] + REPORT
            given = [name, str(args.limit), str(args.copies), folder.name]
            if tool == "crfsdca-corpus" and not made:  # the corpus, outside any limit
                run_limited(prelude + COPIES + CORPUS.replace("argv[3]", "argv[4]"),
                            given, None)
                made = True
            print(f"{name} x{args.copies} {tool}", flush=True)
            free = None
            if args.unlimited is None or tool in args.unlimited:
                _, free = run_limited(code, given, None)
            row = {"dataset": name, "copies": args.copies, "tool": tool, "commit": commit,
                   "unlimited": free}
            if args.at:
                row["at"] = at_limit(code, given, args.at)
            else:
                row["least_mib"], row["at_least"] = least_limit(code, given, 64, args.high,
                                                                args.resolution, args.timeout)
                row["timeout"] = args.timeout
            rows.append(row)
            print(json.dumps(rows[-1]), flush=True)
            store_run(args.json, {"machine": machine(), "limit": args.limit,
                                  "resolution_mib": args.resolution, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
