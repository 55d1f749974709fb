"""The ``train`` command: one solver run on one featurized dataset."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from .errors import ConfigError


def _args_train(p: argparse.ArgumentParser) -> None:
    from .solvers.registry import SOLVER_NAMES
    from .solvers.sampling import SCHEMES
    from .solvers.sdca_kernel import LINE_SEARCHES

    p.add_argument("--data", required=True, type=Path, help="featurized dataset (.h5)")
    p.add_argument("--solver", default="sdca", choices=SOLVER_NAMES)
    p.add_argument("--out", required=True, type=Path, help="run directory to write")
    p.add_argument("--epochs", type=float, default=50.0, help="budget in epochs (default 50)")
    p.add_argument("--seconds", type=float, help="budget in solver seconds")
    p.add_argument("--gap-tol", type=float, help="stop when the duality gap is below this "
                   "(estimate, confirmed by one full-batch gap)")
    p.add_argument("--period", type=float, default=1.0,
                   help="monitor every this many epochs (plus a few early points)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lambda", dest="lam", type=float, help="regularization (default 1/n)")
    p.add_argument("--subset", type=int, help="train on the first k training sequences")
    p.add_argument("--no-test", action="store_true", help="skip test error in the trace")
    p.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                   help="progress line (default: on a terminal only)")
    g = p.add_argument_group("SDCA")
    g.add_argument("--sampler", default="gap", choices=SCHEMES)
    g.add_argument("--non-uniformity", type=float, default=0.8, help="theta (default 0.8)")
    g.add_argument("--line-search", default="newton", choices=tuple(LINE_SEARCHES))
    g.add_argument("--subprecision", type=float, default=1e-3)
    g.add_argument("--step-size", type=float,
                   help="fixed step (with --line-search fixed; default: theoretical)")
    g.add_argument("--refresh-every", type=float, default=0.0,
                   help="recompute all stored gaps every k epochs (0: never)")
    g.add_argument("--store-dtype", default="float64", choices=("float64", "float32"),
                   help="float width of stored marginals (SDCA and the SAG family)")
    g = p.add_argument_group("SAG, SAG-NUS, SAG-NUS*")
    g.add_argument("--sag-lipschitz-init", type=float, default=1.0,
                   help="initial Lipschitz estimate: SAG's global L, SAG-NUS's first "
                   "L_i (default 1)")
    g.add_argument("--sag-decrease", type=float, default=0.9,
                   help="L_i <- this * L_i before a line search on a revisit (SAG-NUS; "
                   "default 0.9, 0.5 is the halving rule of Schmidt's logistic code)")
    g.add_argument("--sag-decrease-guarded", action="store_true",
                   help="also decrease L_i when the gradient guard skips the line search")
    g.add_argument("--sag-first-visit", type=float, default=0.5,
                   help="first-visit L_i = this * mean of the seen L_j (default 0.5)")
    g.add_argument("--sag-step-rule", default="c13", choices=("c13", "harmonic"),
                   help="SAG-NUS step size: c13 = average of 1/Lmax and 1/Lmean steps "
                   "(default), harmonic = 1/((Lmax + Lmean)/2)")
    g.add_argument("--sag-guard", type=float, default=1e-8,
                   help="skip the line search when ||g_i||^2 is at most this (default 1e-8)")
    g = p.add_argument_group("OEG")
    g.add_argument("--oeg-eta0", type=float, default=0.5, help="initial step size (0.5)")
    g.add_argument("--oeg-c0", type=float, default=10.0,
                   help="smoothed-Dirac initialization constant (10)")
    g.add_argument("--oeg-eta-increase", type=float, default=1.0,
                   help="multiply eta_i by this after an accepted step (default 1: never)")
    g.add_argument("--oeg-max-trials", type=int, default=30,
                   help="trials (halvings + 1) per visit (default 30)")
    g.add_argument("--oeg-sampling", default="uniform", choices=("uniform", "perm"))
    g = p.add_argument_group("L-BFGS")
    g.add_argument("--lbfgs-memory", type=int, default=50,
                   help="number of (s, y) pairs; history takes 2*memory*d*8 bytes (50)")


def solver_options(args: argparse.Namespace) -> dict:
    """The options of ``args`` that the chosen solver takes."""
    if args.solver == "sdca":
        return {"sampler": args.sampler, "non_uniformity": args.non_uniformity,
                "line_search": args.line_search, "subprecision": args.subprecision,
                "step_size": args.step_size, "refresh_every": args.refresh_every,
                "store_dtype": args.store_dtype, "seed": args.seed}
    if args.solver in ("sag", "sag-nus", "sag-nus-star"):
        return {"lipschitz_init": args.sag_lipschitz_init, "decrease": args.sag_decrease,
                "decrease_guarded": args.sag_decrease_guarded,
                "first_visit": args.sag_first_visit, "step_rule": args.sag_step_rule,
                "guard": args.sag_guard, "store_dtype": args.store_dtype, "seed": args.seed}
    if args.solver == "oeg":
        return {"eta0": args.oeg_eta0, "c0": args.oeg_c0,
                "eta_increase": args.oeg_eta_increase, "max_trials": args.oeg_max_trials,
                "sampling": args.oeg_sampling, "seed": args.seed}
    if args.solver == "lbfgs":
        return {"memory": args.lbfgs_memory, "seed": args.seed}
    return {"seed": args.seed}


def cmd_train(args: argparse.Namespace) -> int:
    from .data.hdf5 import load_dataset
    from .solvers.base import Problem
    from .solvers.monitor import Monitor
    from .solvers.registry import make_solver
    from .training import Progress, file_sha256, save_run, train

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    log = logging.getLogger("crfsdca.train")
    if args.epochs <= 0:
        raise ConfigError(f"--epochs must be positive, got {args.epochs}")
    dataset = load_dataset(args.data)
    problem = Problem.from_dataset(dataset, args.lam, args.subset)
    t0 = time.perf_counter()
    try:
        solver = make_solver(args.solver, problem, **solver_options(args))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    setup = time.perf_counter() - t0
    mem = solver.memory_bytes()
    log.info("%s on %s: n=%d, d=%d, K=%d; solver state %s; setup %.1fs", args.solver,
             dataset.name, problem.n, problem.dim, problem.n_labels,
             ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in mem.items()) or "-", setup)
    progress = Progress(enabled={"auto": None, "on": True, "off": False}[args.progress])
    monitor = Monitor(problem, evaluate_test=not args.no_test)
    result = train(solver, monitor, args.epochs, period=args.period, time_limit=args.seconds,
                   gap_tol=args.gap_tol, progress=progress)
    meta = {"command": "train", "args": {k: (str(v) if isinstance(v, Path) else v)
                                         for k, v in vars(args).items() if k != "func"},
            "dataset": {"name": dataset.name, "path": str(args.data),
                        "sha256": file_sha256(args.data), "n": problem.n, "d": problem.dim},
            "setup_seconds": setup}
    save_run(args.out, result, solver, meta)
    last = result.rows[-1]
    log.info("%s after %.2f epochs, %.2fs: primal %.10e, gap %.3e -> %s", result.status,
             last["epoch"], result.solver_seconds, last["primal"], last["true_gap"], args.out)
    return 130 if result.status == "interrupted" else 0
