"""The ``optimum`` command: a long L-BFGS run giving P* of a featurized dataset.

``python -m crfsdca optimum --data data/processed/ocr.h5 --out results/optimum/ocr.h5``
minimizes P with the package's L-BFGS (or, ``--method scipy``, scipy's L-BFGS-B and a
polish by ours), and writes w*, P*, ||grad P(w*)|| and the gap bound
||grad P||^2 / (2 lambda) >= P(w*) - P* (see :mod:`crfsdca.reproduction.optimum`).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DataFormatError
from ..reproduction.optimum import METHODS
from ..runtime.io import check_writable, sha256_file
from . import log
from .arguments import COUNT, NON_NEGATIVE_INT, POSITIVE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, type=Path, help="featurized dataset (.h5)")
    p.add_argument("--out", required=True, type=Path, help="optimum file to write (.h5)")
    p.add_argument("--maxiter", type=COUNT, default=5000,
                   help="L-BFGS iterations over all rounds, polish included (default 5000)")
    p.add_argument("--maxcor", type=COUNT, default=50,
                   help="L-BFGS memory; history takes 2*maxcor*d*8 bytes (default 50)")
    p.add_argument("--gtol", type=POSITIVE, default=1e-10,
                   help="scipy: stop when max |grad P| is below this (default 1e-10)")
    p.add_argument("--method", choices=METHODS, default=METHODS[0],
                   help="the package's L-BFGS, or scipy's L-BFGS-B to cross-check P* "
                        f"(default {METHODS[0]})")
    p.add_argument("--ftol", type=POSITIVE, default=1e-15,
                   help="scipy's relative-decrease stopping test (default 1e-15; scipy only)")
    p.add_argument("--rel-tol", type=POSITIVE, default=1e-13,
                   help="work on while gap bound / |P| exceeds this (default 1e-13)")
    p.add_argument("--max-rounds", type=COUNT, default=8,
                   help="L-BFGS-B restarts at most (scipy only)")
    p.add_argument("--polish-iters", type=NON_NEGATIVE_INT, default=1000,
                   help="scipy: iterations of the final polish by our L-BFGS at most "
                        "(default 1000)")
    p.add_argument("--lambda", dest="lam", type=POSITIVE, help="regularization (default 1/n)")
    p.add_argument("--threads", type=COUNT, default=1,
                   help="threads of the full-batch passes (default 1)")
    p.add_argument("--subset", type=COUNT, help="use the first k training sequences")
    p.add_argument("--init", type=Path, help="start from these weights: a run's weights.h5 "
                   "or an optimum file (default: w = 0)")


def _initial_weights(path: Path, dim: int):
    """Weights of an optimum file or of a run's weights.h5, checked against the problem."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..reproduction.optimum import read_optimum
    from ..reproduction.rundir import read_weights

    try:
        w = read_optimum(path).w_star
    except DataFormatError as e:
        if not path.is_file() or "HDF5" in str(e):
            raise
        try:
            w = read_weights(path)[0]
        except DataFormatError:
            raise DataFormatError(path, "--init: neither an optimum file nor a run's "
                                        "weights.h5") from None
    if w.shape != (dim,) or not np.all(np.isfinite(w)):
        if w.shape == (dim,):
            raise ConfigError(f"--init {path}: weights not all finite")
        raise ConfigError(f"--init {path}: weights of size {w.size}, the problem has d = {dim}")
    return w


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..data.hdf5 import load_dataset
    from ..reproduction.optimum import compute_optimum, write_optimum
    from ..runtime.memory import DataSizes, check, optimum_bytes
    from ..solvers.base import Problem

    check_writable(args.out)
    dataset = load_dataset(args.data)
    problem = Problem.from_dataset(dataset, args.lam, args.subset)
    check(optimum_bytes(args.maxcor, DataSizes.of_problem(problem)),
          f"the optimum of {dataset.name} (L-BFGS memory {args.maxcor})",
          "a smaller --maxcor shortens the history; --subset k uses fewer sequences")
    log(f"optimum of {dataset.name}: n={problem.n}, d={problem.dim}, lambda={problem.lam:.6g}, "
        f"L-BFGS history {2 * args.maxcor * problem.dim * 8 / 2**20:.0f} MiB "
        f"(method {args.method})")
    w0 = None if args.init is None else _initial_weights(args.init, problem.dim)
    settings = {"method": args.method, "maxiter": args.maxiter, "maxcor": args.maxcor,
                "gtol": args.gtol, "ftol": args.ftol, "rel_tol": args.rel_tol,
                "max_rounds": args.max_rounds, "polish_iters": args.polish_iters,
                "subset": args.subset,
                "init": None if args.init is None else str(args.init)}
    result = compute_optimum(problem, maxiter=args.maxiter, maxcor=args.maxcor, gtol=args.gtol,
                             ftol=args.ftol, rel_tol=args.rel_tol, max_rounds=args.max_rounds,
                             polish_iters=args.polish_iters, w0=w0, log=log,
                             threads=args.threads, method=args.method)
    result = dataclasses.replace(result, dataset=dataset.name, dataset_path=str(args.data),
                                 dataset_sha256=sha256_file(args.data), settings=settings)
    write_optimum(args.out, result)
    log(f"P* = {result.p_star:.16e}, |grad P| = {result.grad_norm:.3e} "
        f"(max {result.grad_max:.3e}), gap bound = {result.gap_bound:.3e} "
        f"(relative {result.relative_bound:.2e}); "
        f"{result.iterations} iterations, {result.evaluations} evaluations, "
        f"{result.seconds:.1f}s -> {args.out}")
    if result.relative_bound > args.rel_tol:
        log(f"warning: P* is known only to {result.relative_bound:.2e} relative "
            f"(target {args.rel_tol:g})")
    return 0
