"""The ``train`` command: one solver run on one featurized dataset."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ..errors import ConfigError
from ..runtime.io import check_writable, sha256_file
from ..runtime.signals import shielded
from ..solvers.registry import SOLVERS, spec
from ..training.status import exit_status
from .arguments import COUNT, NON_NEGATIVE, NON_NEGATIVE_INT, POSITIVE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, type=Path, help="featurized dataset (.h5)")
    p.add_argument("--solver", default="sdca", choices=tuple(SOLVERS))
    p.add_argument("--out", required=True, type=Path, help="run directory to write")
    p.add_argument("--epochs", type=POSITIVE, default=50.0,
                   help="budget in epochs (default 50)")
    p.add_argument("--seconds", type=POSITIVE, help="budget in solver seconds")
    p.add_argument("--gap-tol", type=POSITIVE, help="stop when the duality gap is below this "
                   "(estimate, confirmed by one full-batch gap)")
    p.add_argument("--period", type=POSITIVE, default=1.0,
                   help="monitor every this many epochs (plus a few early points)")
    p.add_argument("--seed", type=NON_NEGATIVE_INT, default=0)
    p.add_argument("--threads", type=COUNT, default=1, help="threads: the full-batch passes "
                   "(lbfgs, the monitor, sdca's refresh) and the steps of sdca's batches; the "
                   "trace is the same on any number (default 1)")
    p.add_argument("--lambda", dest="lam", type=POSITIVE, help="L2 regularization lambda: "
                   "P = mean NLL + lambda/2 ||w||^2 + l1 ||w||_1 (default 1/n; CRFsuite's "
                   "c2 is lambda n / 2)")
    p.add_argument("--l1", type=NON_NEGATIVE, default=0.0, help="L1 regularization "
                   "(elastic net: sdca, or lbfgs as OWL-QN; CRFsuite's c1 is l1 n; default 0)")
    p.add_argument("--subset", type=COUNT, help="train on the first k training sequences")
    p.add_argument("--no-test", action="store_true", help="skip test error in the trace")
    p.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                   help="progress line (default: on a terminal only)")
    seen: set[str] = set()
    for table in dict.fromkeys(s.options for s in SOLVERS.values()):
        users = ", ".join(s.name for s in SOLVERS.values() if s.options is table)
        table.add_arguments(p.add_argument_group(f"options of {users}"), seen)


def solver_options(args: argparse.Namespace) -> dict:
    """The chosen solver's options given on the command line (its table fills in the rest).

    A flag of another solver's table is an error, not silently ignored.
    """
    table = spec(args.solver).options
    mine = set(table.given_in(args))
    for other in dict.fromkeys(s.options for s in SOLVERS.values()):
        for name in other.given_in(args):
            if other is not table and not (name in mine and other[name].shared):
                raise ConfigError(f"{other.flag(name)} is an option of "
                                  f"{other.solver}, not of --solver {args.solver}")
    return table.given_in(args)


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..data.hdf5 import load_dataset
    from ..reproduction.rundir import save_run
    from ..solvers.base import Problem
    from ..training.run import Progress, check_schedule, run_solver

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    log = logging.getLogger("crfsdca.train")
    check_schedule(args.epochs, args.period, args.seconds, args.gap_tol)
    spec(args.solver).check_budget(args.epochs, "--epochs")
    config = spec(args.solver).configure(solver_options(args))  # before the data is read
    check_writable(args.out, directory=True)
    dataset = load_dataset(args.data)
    problem = Problem.from_dataset(dataset, args.lam, args.subset, args.l1)
    progress = Progress(enabled={"auto": None, "on": True, "off": False}[args.progress])
    done = run_solver(problem, config, epochs=args.epochs, seed=args.seed,
                      threads=args.threads, period=args.period, seconds=args.seconds,
                      tol=args.gap_tol, evaluate_test=not args.no_test, progress=progress,
                      say=log.info, what=f"{args.solver} on {dataset.name}")
    solver, result, setup = done.solver, done.result, done.setup_seconds
    meta = {"command": "train", "args": {k: (str(v) if isinstance(v, Path) else v)
                                         for k, v in vars(args).items() if k != "func"},
            "dataset": {"name": dataset.name, "path": str(args.data),
                        "sha256": sha256_file(args.data), "n": problem.n, "d": problem.dim},
            "setup_seconds": setup}
    if not result.rows:  # stopped before the first row: nothing to keep
        log.error("%s before the first checkpoint; nothing written", result.status)
        return exit_status(result.status)
    with shielded():  # a second Ctrl-C or SIGTERM does not cut the save short
        save_run(args.out, result, solver, meta)
    last = result.rows[-1]
    log.info("%s after %.2f epochs, %.2fs: primal %.10e, gap %.3e -> %s", result.status,
             last["epoch"], result.solver_seconds, last["primal"], last["true_gap"], args.out)
    if result.status == "diverged":
        log.error("the run diverged (a primal, dual or gap estimate is not finite): its "
                  "trace and weights are kept in %s for a look, not as a result", args.out)
    return exit_status(result.status)
