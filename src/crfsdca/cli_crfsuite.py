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

from .errors import ConfigError


def _args_crfsuite(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, type=Path, help="featurized dataset (.h5)")
    p.add_argument("--out", required=True, type=Path, help="run directory to write")
    p.add_argument("--max-iterations", type=int, default=1000)
    p.add_argument("--num-memories", type=int, default=6, help="L-BFGS history (CRFsuite's "
                   "default 6)")
    p.add_argument("--epsilon", type=float, default=1e-12)
    p.add_argument("--lambda", dest="lam", type=float, help="regularization (default 1/n)")


class _Trace:
    """A finished CRFsuite run presented through the Solver interface, for save_run."""

    name = "crfsuite"

    def __init__(self, problem, w, config):
        self.problem, self._w, self._config = problem, w, config

    def weights(self):
        return self._w

    def config(self):
        return self._config

    def memory_bytes(self):
        return {}


def cmd_crfsuite(args: argparse.Namespace) -> int:
    from .crfsuite import train_crfsuite, weights_from_model
    from .data.hdf5 import load_dataset
    from .solvers.base import Problem
    from .solvers.monitor import TRACE_COLUMNS, Monitor
    from .training import TrainResult, file_sha256, save_run

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    log = logging.getLogger("crfsdca.crfsuite")
    if args.max_iterations < 1:
        raise ConfigError(f"--max-iterations must be at least 1, got {args.max_iterations}")
    dataset = load_dataset(args.data)
    problem = Problem.from_dataset(dataset, args.lam)
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
                               args.epsilon)
        wall = time.perf_counter() - t0
        w = weights_from_model(model, problem)
    monitor = Monitor(problem)
    final_primal = monitor.primal(w)
    err, f1 = monitor.test_scores(w)
    rows, evals = [], 0
    for k, it in enumerate(iters, start=1):
        evals += it["evals"]
        row = dict.fromkeys(TRACE_COLUMNS, math.nan)
        row.update(epoch=float(k), oracle_fb=evals * n, oracle_fwd=0,
                   oracle_epochs=float(evals), updates=k, update_epochs=k / n, ls_evals=evals,
                   seconds=it["seconds"], primal=it["loss"] / n, cpu_seconds=it["cpu"])
        rows.append(row)
    if rows:
        rows[-1].update(test_error=err, test_f1=f1)
    result = TrainResult(rows=rows, status="converged" if len(iters) < args.max_iterations
                         else "budget", solver_seconds=rows[-1]["seconds"] if rows else 0.0)
    last_loss = iters[-1]["loss"] / n if iters else math.nan
    config = {"solver": "crfsuite", "lambda": problem.lam, "max_iterations":
              args.max_iterations, "num_memories": args.num_memories, "epsilon": args.epsilon,
              "c2": problem.lam * n / 2}
    meta = {"command": "crfsuite",
            "dataset": {"name": dataset.name, "path": str(args.data),
                        "sha256": file_sha256(args.data), "n": n, "d": problem.dim},
            "check": {"our_primal_at_crfsuite_weights": final_primal,
                      "crfsuite_final_loss_over_n": last_loss,
                      "difference": final_primal - last_loss,
                      "labels_missing_from_training": int(missing)},
            "wall_seconds_including_featgen": wall}
    save_run(args.out, result, _Trace(problem, w, config), meta)
    log.info("crfsuite on %s: %d iterations, %.2fs; loss/n %.12e, our P at its weights "
             "%.12e -> %s", dataset.name, len(iters), result.solver_seconds, last_loss,
             final_primal, args.out)
    if not missing and not math.isclose(final_primal, last_loss, rel_tol=1e-7, abs_tol=1e-9):
        log.warning("our P at CRFsuite's weights differs from its loss / n by %.3e",
                    final_primal - last_loss)
    return 0
