"""What a microarchitecture level's kernels cost at run time against the host's own (issue 49).

Question: How much slower per SDCA epoch are the kernels the wheel ships for the standard
    levels (x86-64-v4, -v3, -v2) than kernels compiled for this processor?
Date: 2026-11-27
Commit: (the commit that adds this file)
Answer: on an AMD EPYC (Zen 5), 8 epochs of CRF() on one thread, median of 3 alternated
    processes: v4 1.075x and v3 1.086x the host's seconds per epoch on Dutch NER, 1.20x
    and 1.24x on CoNLL-2000 chunking; v2 (no AVX, no FMA) 1.81x and 2.88x. The
    losses are the generic levels' tuning and instruction sets against Zen 5's own; the
    table is in docs/history.md ("Kernels for other processors").

Solver seconds per epoch of ``crfsdca.CRF()`` with each kernel compiled for this
processor, and loaded as x86-64-v4, -v3 and -v2 code (what the wheel ships for other
processors).

Compiles this checkout's kernels into a temporary ``NUMBA_CACHE_DIR``
(``crfsdca precompile --level all``, a few minutes), then fits in alternated processes,
one variant after the other, ``--repeat`` times: each process loads a level by telling
numba it runs on a Skylake with a feature string that the level, and not the one above
it, fits (``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES``); the code it loads runs natively.
Every process checks that it compiled none of the package's kernels. Datasets: the
tutorial's features on CoNLL-2002 Dutch, CRFsuite's chunking features on CoNLL-2000
(``practitioner.load``); ``--epochs`` epochs of SDCA, one thread.

    cd benchmarks/studies && python levels.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, machine, markdown_table

HERE = Path(__file__).resolve().parent


def variants() -> dict[str, dict[str, str]]:
    """name -> numba's processor for a process that loads that variant's kernels: for a
    level, this machine's features less those of the levels above it."""
    import llvmlite.binding as ll

    from crfsdca.runtime.cpu_levels import LEVELS, runnable

    triple, host = ll.get_process_triple(), ll.get_host_cpu_features().flatten()
    levels = dict(LEVELS.get(triple.split("-")[0], ()))
    leveled = set().union(*levels.values())
    out = {"host": {}}
    for name in runnable(triple, host):
        features = ",".join(
            ("+" if f[0] == "+" and (f[1:] in levels[name] or f[1:] not in leveled) else "-")
            + f[1:] for f in host.split(","))
        out[name] = {"NUMBA_CPU_NAME": "skylake", "NUMBA_CPU_FEATURES": features}
    return out


def child(dataset: str, epochs: int) -> None:
    """One process's fit, printed as one JSON line."""
    from numba.core import event
    from practitioner import load

    from crfsdca import CRF
    from crfsdca.runtime import level_cache

    compiled = []

    class Compiled(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    event.register("numba:compile", Compiled())
    X, y, _, _ = load(dataset)
    CRF(max_iterations=2, all_possible_transitions=True).fit(X[:50], y[:50])
    crf = CRF(max_iterations=epochs, epsilon=1e-12, all_possible_transitions=True)
    crf.fit(X, y)
    last = crf.training_log_.iterations[-1]
    print(json.dumps({"solver": crf.model_.training["seconds"], "epochs": last["epoch"],
                      "loss": float(last["loss"]), "loads": dict(level_cache.loads),
                      "compiled": sorted(set(compiled))}))


def run(dataset: str, epochs: int, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", dataset, "--epochs",
                          str(epochs)], env=env, capture_output=True, text=True, cwd=HERE)
    if out.returncode:
        raise RuntimeError(f"{dataset}: exit status {out.returncode}\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["compiled"]:
        raise RuntimeError(f"{dataset}, {env.get('NUMBA_CPU_FEATURES', 'host')[:40]}...: "
                           f"compiled {result['compiled']}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", help="a NUMBA_CACHE_DIR already filled (default: a new one)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.epochs)
        return
    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    with tempfile.TemporaryDirectory(prefix="crfsdca-levels-") as tmp:
        cache = args.cache or tmp
        base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU")}
        base.update(NUMBA_CACHE_DIR=cache, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                    PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(HERE)]))
        if not args.cache:
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "crfsdca", "precompile", "-q", "-j", "2",
                            "--level", "all"], env=base, check=True)
            print(f"# precompile with every level: {time.perf_counter() - t:.0f} s", flush=True)
        rows = []
        for dataset in args.datasets:
            per_epoch: dict[str, list[float]] = {name: [] for name in variants()}
            for _ in range(args.repeat):
                for name, processor in variants().items():
                    result = run(dataset, args.epochs, dict(base, **processor))
                    per_epoch[name].append(result["solver"] / result["epochs"])
                    print(f"{dataset} {name} {json.dumps(result)}", flush=True)
            host = statistics.median(per_epoch["host"])
            for name, seconds in per_epoch.items():
                rows.append({"dataset": dataset, "kernels": name,
                             "s per epoch": ", ".join(f"{s:.3f}" for s in seconds),
                             "median": f"{statistics.median(seconds):.3f}",
                             "vs host": f"{statistics.median(seconds) / host:.3f}"})
    print(markdown_table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
