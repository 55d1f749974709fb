"""The ``precompile`` command: the library's kernels compiled into numba's cache ahead of
their first use.

numba compiles a kernel on its first call in a process without a cache, some 45 s for
a first ``fit`` + ``predict`` with the default solver on a two-core machine. The
workloads below run every path of the library (each offered algorithm, L2 and elastic
net, one and two threads, ``predict``, marginals, the tagger, models saved and loaded in
both formats) on a tiny data set, so that numba's cache holds every kernel those paths
call. The wheel build runs them in the package it ships (see ``setup.py``), and
``crfsdca precompile`` runs them where a user wants them: a container image, the workers
of a cluster, a read-only install with ``NUMBA_CACHE_DIR`` set.

``--level`` then compiles every kernel in numba's cache again for standard
microarchitecture levels (:mod:`crfsdca.runtime.cpu_levels`), each in a process whose
numba targets that level (``NUMBA_CPU_NAME``, an empty ``NUMBA_CPU_FEATURES``): compiled,
never run, so that the build machine need not run a level's instructions. Other
processors load them (:mod:`crfsdca.runtime.level_cache`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigError
from ..solvers.registry import SOLVERS
from . import log, main

_WORDS = ("the cat sat on a mat", "A Dog ran far", "the dog sat", "a cat ran on the mat")
_TAGS = {"the": "D", "a": "D", "cat": "N", "dog": "N", "mat": "N", "sat": "V", "ran": "V",
         "on": "P", "far": "R"}


def tiny_data(copies: int = 8):
    """Sequences of items in both of python-crfsuite's forms (dicts with string, boolean
    and numeric values; lists of attribute names), and their labels."""
    X, y = [], []
    for s in _WORDS * copies:
        words = s.split()
        X.append([{"w": w.lower(), "cap": w[0].isupper(), "len": len(w) / 4,
                   "suffix": w[-2:]} for w in words])
        y.append([_TAGS[w.lower()] for w in words])
    X.append([["w=" + w, "first"] for w in _WORDS[0].split()])
    y.append([_TAGS[w] for w in _WORDS[0].split()])
    return X, y


def _use(crf, X, folder: Path, formats=("crfsuite", "hdf5")) -> None:
    """What a user does with a fitted model: predict, marginals, save (in ``formats``),
    load, tag."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..tagger import Tagger

    crf.predict(X)
    crf.predict_single(X[0])
    crf.predict_marginals(X[:2])
    # decoding under constraints, the n best, the pairwise marginals (model/decoding.py)
    forced = [{0: crf.classes_[0]}] + [None] * 3
    forbid = [(crf.classes_[0], crf.classes_[-1])]
    crf.predict(X[:4], constraints=forbid, forced=forced)
    crf.predict_n_best(X[:4], 3, constraints=forbid, forced=forced)
    crf.predict_n_best(X[:4], 2)
    crf.predict_marginals(X[:4], pairwise=True, constraints=forbid, forced=forced)
    crf.predict_single(X[0], constraints=forbid, forced=forced[0])
    crf.tagger_.tag(X[0], n_best=2, forced=forced[0])
    crf.score(X[:4], crf.predict(X[:4]))
    for fmt in formats:
        path = folder / f"model.{fmt}"
        saved = crf.__class__(algorithm=crf.algorithm, c1=crf.c1, c2=crf.c2,
                              max_iterations=2, model_filename=str(path), model_format=fmt,
                              transition_prefix=crf.transition_prefix)
        saved.fit(X, crf.predict(X))
        loaded = crf.__class__(model_filename=str(path))
        loaded.predict(X[:2])
        loaded.predict_marginals_single(X[0])
        with Tagger() as tagger:
            tagger.open(str(path))
            tagger.set(X[0])
            tagger.tag()
            tagger.probability(tagger.tag())
            tagger.marginal(tagger.labels()[0], 0)


def _fits(spec) -> Callable[[], None]:
    """Fits by the solver of registry entry ``spec``: L2, and the elastic net where it
    takes one; one thread, and two where it runs them; SDCA also sequential and in
    batches."""
    def run() -> None:
        # loaded when the command runs, not for its --help (numpy, numba, h5py)
        from ..estimator import CRF

        X, y = tiny_data()
        with tempfile.TemporaryDirectory(prefix="crfsdca-precompile-") as tmp:
            for c1 in (0.0, 0.1) if spec.supports_l1 else (0.0,):
                for threads in (1, 2) if spec.supports_threads else (1,):
                    crf = CRF(algorithm=spec.name, c1=c1, c2=0.1, threads=threads,
                              max_iterations=3, all_possible_transitions=True)
                    crf.fit(X, y, X_dev=X[:3], y_dev=y[:3])
            if spec.name == "sdca":  # the sequential step's and minibatch.py's kernels
                for c1 in (0.0, 0.1):
                    CRF(c1=c1, pipeline=False, max_iterations=3).fit(X, y)
                    CRF(c1=c1, batch_size=2, threads=2, max_iterations=3).fit(X, y)
            _use(crf, X, Path(tmp))
    return run


def _transitions() -> None:
    """Models with transition attributes (B templates that read the input): fits by SDCA
    (pipelined, sequential and in batches on two threads) and L-BFGS, and every decoder
    (model/decoding.py's per-edge tables, the tagger's)."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..estimator import CRF

    X, y = [], []
    for s in _WORDS * 4:
        words = s.split()
        X.append([["w=" + w.lower(), "B~suffix=" + w[-2:]] for w in words])
        y.append([_TAGS[w.lower()] for w in words])
    with tempfile.TemporaryDirectory(prefix="crfsdca-precompile-") as tmp:
        for params in ({}, {"pipeline": False}, {"batch_size": 2, "threads": 2},
                       {"algorithm": "lbfgs"}):
            crf = CRF(c2=0.1, transition_prefix="B~", max_iterations=3,
                      all_possible_transitions=True, **params).fit(X, y)
        _use(crf, X, Path(tmp), formats=("hdf5",))
        crf.tagger_.tag(X[1], n_best=2)
        crf.tagger_.probability(crf.predict(X[1:2])[0])


def _command_line() -> None:
    """``crfsdca learn`` and ``tag`` on a file in CRFsuite's format."""
    lines = []
    for s in _WORDS:
        lines += [f"{_TAGS[w.lower()]}\tw={w.lower()}\tcap:{int(w[0].isupper())}"
                  for w in s.split()] + [""]
    with tempfile.TemporaryDirectory(prefix="crfsdca-precompile-") as tmp, \
            open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), \
            contextlib.redirect_stderr(devnull):
        data = Path(tmp) / "train.txt"
        data.write_text("\n".join(lines) + "\n")
        model = str(Path(tmp) / "m.model")
        for extra in ([], ["-a", "lbfgs", "-p", "c1=0.1"]):
            if main(["learn", "-q", "-m", model, *extra, str(data)]) != 0:
                raise RuntimeError("crfsdca learn failed on the precompile data")
        for extra in ([], ["-n", "2", "--forbid", "D", "V"], ["--forbid", "D", "V"]):
            if main(["tag", "-m", model, "-i", "-p", *extra, str(data)]) != 0:
                raise RuntimeError("crfsdca tag failed on the precompile data")
        columns = Path(tmp) / "train.data"  # a template's B line that reads the input
        columns.write_text("\n".join(line.replace("\t", " ").split(" ", 1)[1] + " "
                                     + line.split("\t", 1)[0] if line else ""
                                     for line in lines) + "\n")
        template = Path(tmp) / "template"
        template.write_text("U00:%x[0,0]\nB\nB01:%x[0,1]\n")
        if main(["learn", "-q", "-T", str(template), "-m", model, str(columns)]) != 0:
            raise RuntimeError("crfsdca learn -T failed on the precompile data")
        if main(["tag", "-T", str(template), "-m", model, "-p", "-l", "-n", "2",
                 str(columns)]) != 0:
            raise RuntimeError("crfsdca tag -T failed on the precompile data")


def _tuning() -> None:
    """``CRFCV``'s paths: each point started from the previous one's dual state (the
    kernels that rebuild weights and entropies from marginals), with and without L1."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..cv import CRFCV

    X, y = tiny_data()
    CRFCV(c1s=[0.0, 0.1], c2s=[0.1, 1.0], cv=2, max_iterations=3).fit(X, y)


def workloads() -> dict[str, Callable[[], None]]:
    """One workload per offered algorithm, ``CRFCV``'s paths and the command line; each
    name runs alone (``crfsdca precompile --only NAME``)."""
    jobs = {s.name: _fits(s) for s in SOLVERS.values() if s.offered}
    jobs["tuning"] = _tuning
    jobs["transitions"] = _transitions
    jobs["command-line"] = _command_line
    return jobs


def precompile(jobs: int = 1, only: list[str] | None = None, log=print) -> float:
    """Run the workloads (``jobs`` processes at a time, then once more in this process,
    which compiles what the processes' concurrent writes to one cache index lost); returns
    the seconds taken."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..runtime.kernel_cache import persistent

    if not persistent():
        raise RuntimeError("numba has no writable cache folder here: set NUMBA_CACHE_DIR")
    table = workloads()
    names = list(table) if not only else only
    unknown = sorted(set(names) - set(table))
    if unknown:
        raise ValueError(f"unknown workload(s) {unknown}; known: {sorted(table)}")
    t0 = time.perf_counter()
    if jobs > 1:
        running: list[tuple[str, subprocess.Popen]] = []
        pending = list(names)
        while pending or running:
            while pending and len(running) < jobs:
                name = pending.pop(0)
                running.append((name, subprocess.Popen(
                    [sys.executable, "-m", "crfsdca", "precompile", "--only", name],
                    stdout=subprocess.DEVNULL)))
            name, proc = running.pop(0)
            if proc.wait() != 0:
                raise RuntimeError(f"precompile workload {name} exited {proc.returncode}")
    for name in names:
        t = time.perf_counter()
        table[name]()
        log(f"{name:>14}: {time.perf_counter() - t:6.1f} s")
    return time.perf_counter() - t0


NO_KERNELS = ("cli", "reproduction", "__main__")
"""Subpackages and modules of crfsdca that define no kernel (the reproduction's need its
extra; ``__main__`` runs the command line): :func:`compile_cached` imports the others."""


def compile_cached() -> int:
    """Compile, for this process's numba target, every signature that numba's cache holds
    of each of the package's kernels (those compiled for another processor or level); a
    kernel of this target in the cache loads instead. Returns the signatures."""
    # loaded when the command runs, not for its --help (numba)
    from numba.core.dispatcher import Dispatcher

    package = Path(__file__).resolve().parents[1]
    count = 0
    for info in pkgutil.walk_packages([str(package)], f"{package.name}."):
        if info.name.split(".")[1] in NO_KERNELS:
            continue
        module = importlib.import_module(info.name)
        for kernel in vars(module).values():
            if not (isinstance(kernel, Dispatcher) and kernel.py_func.__module__ == info.name
                    and hasattr(kernel._cache, "_cache_file")):
                continue
            for sig in {key[0] for key in kernel._cache._cache_file._load_index()}:
                kernel.compile(sig)
                count += 1
    return count


def compile_levels(levels: list[str], jobs: int = 1, log=print) -> float:
    """:func:`compile_cached` for each of ``levels``, each in a process whose numba targets
    it, ``jobs`` at a time (then once more each, alone, for what concurrent writes to one
    cache index lost); returns the seconds taken."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    command = [sys.executable, "-m", "crfsdca", "precompile", "--compile-cached"]

    def run(at_once: int) -> None:
        for i in range(0, len(levels), at_once):
            running = [(level, subprocess.Popen(
                command, env=dict(env, NUMBA_CPU_NAME=level, NUMBA_CPU_FEATURES=""),
                stdout=subprocess.DEVNULL)) for level in levels[i:i + at_once]]
            for level, proc in running:
                if proc.wait() != 0:
                    raise RuntimeError(f"compiling for {level} exited {proc.returncode}")

    t0 = time.perf_counter()
    run(jobs)
    if jobs > 1 and len(levels) > 1:
        run(1)
    log(f"{' '.join(levels)}: {time.perf_counter() - t0:6.1f} s")
    return time.perf_counter() - t0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="workloads compiled in N processes at a time (default 1)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="this workload only (an algorithm, or 'command-line'); repeatable")
    p.add_argument("--level", action="append", metavar="LEVEL",
                   help="then every kernel compiled for this microarchitecture level too "
                        "(x86-64-v2, x86-64-v3, x86-64-v4, aarch64's generic; 'all': "
                        "those of this machine's architecture); repeatable")
    p.add_argument("--compile-cached", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("-q", "--quiet", action="store_true", help="no line per workload")


def _levels(names: list[str]) -> list[str]:
    """The levels named (``all``: those of this machine's architecture)."""
    # loaded when the command runs, not for its --help (llvmlite comes with numba)
    import llvmlite.binding as ll

    from ..runtime.cpu_levels import named

    return named(names, ll.get_process_triple())


def run(args: argparse.Namespace) -> int:
    if args.compile_cached:
        compile_cached()
        return 0
    if args.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, not {args.jobs}")
    say = (lambda _msg: None) if args.quiet else log
    try:
        levels = _levels(args.level or [])
        seconds = precompile(jobs=args.jobs, only=args.only, log=say)
        if levels:
            seconds += compile_levels(levels, jobs=args.jobs, log=say)
    except (ValueError, RuntimeError) as e:
        raise ConfigError(str(e)) from None
    if not args.quiet:
        log(f"kernels compiled into numba's cache in {seconds:.1f} s")
    return 0
