"""The ``optimum`` command: a long L-BFGS run giving P* of a featurized dataset.

``python -m crfsdca optimum --data data/processed/ocr.h5 --out results/optimum/ocr.h5``
minimizes P with scipy's L-BFGS-B (restarted while it stalls above the target accuracy)
and writes w*, P*, ||grad P(w*)|| and the gap bound ||grad P||^2 / (2 lambda) >= P(w*) - P*
(see :mod:`crfsdca.optimum`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import ConfigError


def _args_optimum(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, type=Path, help="featurized dataset (.h5)")
    p.add_argument("--out", required=True, type=Path, help="optimum file to write (.h5)")
    p.add_argument("--maxiter", type=int, default=5000,
                   help="L-BFGS iterations over all rounds, polish included (default 5000)")
    p.add_argument("--maxcor", type=int, default=50,
                   help="L-BFGS memory; history takes 2*maxcor*d*8 bytes (default 50)")
    p.add_argument("--gtol", type=float, default=1e-10,
                   help="stop when max |grad P| is below this (default 1e-10)")
    p.add_argument("--ftol", type=float, default=1e-15,
                   help="scipy's relative-decrease stopping test (default 1e-15)")
    p.add_argument("--rel-tol", type=float, default=1e-13,
                   help="work on while gap bound / |P| exceeds this (default 1e-13)")
    p.add_argument("--max-rounds", type=int, default=8, help="L-BFGS-B restarts at most")
    p.add_argument("--polish-iters", type=int, default=1000,
                   help="iterations of the final polish (gradient-only line search) at most")
    p.add_argument("--lambda", dest="lam", type=float, help="regularization (default 1/n)")
    p.add_argument("--subset", type=int, help="use the first k training sequences")
    p.add_argument("--init", type=Path, help="start from these weights: a run's weights.h5 "
                   "or an optimum file (default: w = 0)")


def _initial_weights(path: Path, dim: int):
    """Weights of an optimum file or of a run's weights.h5, checked against the problem."""
    from .errors import DataFormatError
    from .optimum import read_optimum
    from .training import read_weights

    try:
        w = read_optimum(path).w_star
    except DataFormatError:
        w = read_weights(path)[0]
    if w.shape != (dim,):
        raise ConfigError(f"--init {path}: weights of size {w.size}, the problem has d = {dim}")
    return w


def cmd_optimum(args: argparse.Namespace) -> int:
    from .data.hdf5 import load_dataset
    from .optimum import write_optimum
    from .solvers.base import Problem
    from .solvers.lbfgs import compute_optimum
    from .training import file_sha256

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.maxiter < 1 or args.maxcor < 1:
        raise ConfigError("--maxiter and --maxcor must be at least 1")
    dataset = load_dataset(args.data)
    problem = Problem.from_dataset(dataset, args.lam, args.subset)
    log(f"optimum of {dataset.name}: n={problem.n}, d={problem.dim}, lambda={problem.lam:.6g}, "
        f"L-BFGS-B history {2 * args.maxcor * problem.dim * 8 / 2**20:.0f} MiB")
    w0 = None if args.init is None else _initial_weights(args.init, problem.dim)
    settings = {"method": "scipy L-BFGS-B", "maxiter": args.maxiter, "maxcor": args.maxcor,
                "gtol": args.gtol, "ftol": args.ftol, "rel_tol": args.rel_tol,
                "max_rounds": args.max_rounds, "polish_iters": args.polish_iters,
                "subset": args.subset,
                "init": None if args.init is None else str(args.init)}
    result = compute_optimum(problem, maxiter=args.maxiter, maxcor=args.maxcor, gtol=args.gtol,
                             ftol=args.ftol, rel_tol=args.rel_tol, max_rounds=args.max_rounds,
                             polish_iters=args.polish_iters, w0=w0, log=log)
    write_optimum(args.out, result, dataset.name, file_sha256(args.data), problem.lam,
                  settings, dataset_path=str(args.data))
    log(f"P* = {result.p_star:.16e}, |grad P| = {result.grad_norm:.3e} "
        f"(max {result.grad_max:.3e}), gap bound = {result.gap_bound:.3e} "
        f"(relative {result.relative_bound:.2e}); "
        f"{result.iterations} iterations, {result.evaluations} evaluations, "
        f"{result.seconds:.1f}s -> {args.out}")
    if result.relative_bound > args.rel_tol:
        log(f"warning: P* is known only to {result.relative_bound:.2e} relative "
            f"(target {args.rel_tol:g})")
    return 0
