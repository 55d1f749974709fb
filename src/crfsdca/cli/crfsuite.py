"""The ``crfsuite`` command: CRFsuite's L-BFGS on our objective, traced like our solvers."""

from __future__ import annotations

import argparse
import logging
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..runtime.io import check_writable, sha256_file
from ..runtime.signals import shielded
from ..training.status import exit_status
from .arguments import COUNT, NON_NEGATIVE, POSITIVE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, type=Path, help="featurized dataset (.h5)")
    p.add_argument("--out", required=True, type=Path, help="run directory to write")
    p.add_argument("--max-iterations", type=COUNT, default=1000)
    p.add_argument("--num-memories", type=COUNT, default=6, help="L-BFGS history (CRFsuite's "
                   "default 6)")
    p.add_argument("--epsilon", type=POSITIVE, default=1e-12)
    p.add_argument("--delta", type=NON_NEGATIVE, default=0.0, help="stop when 10 iterations "
                   "lowered the objective by less than this, relatively (CRFsuite's delta "
                   "over its period; 0: never)")
    p.add_argument("--lambda", dest="lam", type=POSITIVE, help="regularization (default 1/n)")
    p.add_argument("--l1", type=NON_NEGATIVE, default=0.0, help="L1 regularization as in "
                   "train (c1 = l1 n: CRFsuite then runs OWL-QN)")


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..data.hdf5 import load_dataset
    from ..reproduction.crfsuite_baseline import (
        FinishedRun,
        trace_rows,
        train_crfsuite,
        weights_from_model,
    )
    from ..reproduction.rundir import save_run
    from ..solvers.base import Problem
    from ..solvers.monitor import Monitor
    from ..training.run import TrainResult

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    log = logging.getLogger("crfsdca.crfsuite")
    check_writable(args.out, directory=True)
    dataset = load_dataset(args.data)
    problem = Problem.from_dataset(dataset, args.lam, l1=args.l1)
    n = problem.n
    missing = problem.n_labels - len(np.unique(problem.train.labels))
    if missing:
        log.warning("%d of the %d labels never occur in the training split: CRFsuite will "
                    "not know them, so its objective differs from ours", missing,
                    problem.n_labels)
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model.crfsuite"
        t0 = time.perf_counter()
        iters = train_crfsuite(problem, model, args.max_iterations, args.num_memories,
                               args.epsilon, args.delta)
        wall = time.perf_counter() - t0
        w = weights_from_model(model, problem)
    monitor = Monitor(problem)
    final_primal = monitor.primal(w)
    err, f1 = monitor.test_scores(w)
    rows = trace_rows(iters, n)
    if rows:
        rows[-1].update(test_error=err, test_f1=f1, nonzero_weights=int(np.count_nonzero(w)))
    status = "converged" if len(iters) < args.max_iterations else "budget"
    if not math.isfinite(final_primal):
        status = "diverged"
    result = TrainResult(rows=rows, status=status,
                         solver_seconds=rows[-1]["seconds"] if rows else 0.0)
    last_loss = iters[-1]["loss"] / n if iters else math.nan
    config = {"solver": "crfsuite", "lambda": problem.lam, "max_iterations":
              args.max_iterations, "num_memories": args.num_memories, "epsilon": args.epsilon,
              "delta": args.delta,
              "c2": problem.lam * n / 2, "c1": problem.l1 * n,
              "algorithm": "owl-qn" if problem.l1 else "lbfgs"}
    meta = {"command": "crfsuite",
            "dataset": {"name": dataset.name, "path": str(args.data),
                        "sha256": sha256_file(args.data), "n": n, "d": problem.dim},
            "check": {"our_primal_at_crfsuite_weights": final_primal,
                      "crfsuite_final_loss_over_n": last_loss,
                      "difference": final_primal - last_loss,
                      "labels_missing_from_training": int(missing)},
            "wall_seconds_including_featgen": wall}
    with shielded():
        save_run(args.out, result, FinishedRun(problem, w, config), meta)
    log.info("crfsuite on %s: %d iterations, %.2fs; loss/n %.12e, our P at its weights "
             "%.12e -> %s", dataset.name, len(iters), result.solver_seconds, last_loss,
             final_primal, args.out)
    if not missing and not math.isclose(final_primal, last_loss, rel_tol=1e-7, abs_tol=1e-9):
        log.warning("our P at CRFsuite's weights differs from its loss / n by %.3e",
                    final_primal - last_loss)
    return exit_status(result.status)
