"""The monitor shared by all solvers: one trace row per checkpoint, same columns for all.

A row records where the solver is (epochs, oracle calls, updates, solver
seconds) and how good it is (primal, dual, true gap, gap estimate, test error,
F1; with ``certify``, a ``certificate`` column bounds P(w) - P* for the solvers without
a dual). Monitoring work (full-batch primal, Viterbi on the test set) is never
counted in the solver's counters or seconds.
"""

from __future__ import annotations

import math

import numpy as np

from ..model.evaluation import chunk_f1, chunk_scheme, token_error
from ..model.features import pseudo_gradient
from ..model.objective import predict, primal, primal_and_gradient
from ..runtime.jit import dot
from .base import Problem, Solver

TRACE_COLUMNS = (
    "epoch", "oracle_fb", "oracle_fwd", "oracle_epochs", "updates", "update_epochs",
    "ls_evals", "seconds", "primal", "dual", "true_gap", "gap_estimate", "test_error",
    "test_f1", "ls_iters", "ls_time_share", "mean_step", "nonzero_weights",
)
"""Columns every trace has, in this order; solver-specific diagnostics follow."""


EARLY_CHECKPOINTS = (0.1, 0.25, 0.5)
"""Fractions of the first epoch where a trace has rows (the figures' first progress)."""


def checkpoints(epochs: float, period: float = 1.0, early: tuple = EARLY_CHECKPOINTS):
    """Monitor positions in epochs: 0, a few early fractions, then every ``period``."""
    points = {0.0, float(epochs)}
    points.update(e for e in early if e < epochs and e < period)
    k = 1
    while k * period < epochs:
        points.add(round(k * period, 12))
        k += 1
    return sorted(points)


class Monitor:
    """Evaluates a solver's iterate on the training objective and the test split."""

    def __init__(self, problem: Problem, evaluate_test: bool = True, threads: int = 1,
                 certify: bool = False):
        self.problem = problem
        self.threads = threads
        self.certify = certify
        self.evaluate_test = evaluate_test and problem.test is not None
        names = problem.label_names
        self.scheme = chunk_scheme(list(names)) if names else None

    def primal(self, w: np.ndarray) -> float:
        p = self.problem
        return primal(w, p.train, p.n_attributes, p.n_labels, p.lam, p.l1, self.threads)

    def test_scores(self, w: np.ndarray) -> tuple[float, float]:
        """(token error rate, chunk F1 in % or NaN) on the test split."""
        p = self.problem
        if not self.evaluate_test:
            return math.nan, math.nan
        pred = predict(w, p.test, p.n_attributes, p.n_labels, self.threads)
        err = token_error(p.test.labels, pred)
        f1 = (chunk_f1(p.test.labels, pred, p.test.offsets, self.scheme)[2]
              if self.scheme is not None else math.nan)
        return err, f1

    def row(self, solver: Solver, seconds: float, epoch: float) -> dict:
        """The trace row of the solver's current iterate, ``epoch`` epochs into the run."""
        n = self.problem.n
        c = solver.counters()
        known = solver.objective()
        dual = solver.dual()
        sq_norm = solver.subgradient_sq_norm() if self.certify and dual is None else None
        w = (solver.weights() if known is None or self.evaluate_test
             or (self.certify and dual is None and sq_norm is None) else None)
        primal_value = self.primal(w) if known is None else known
        est = solver.gap_estimate()
        err, f1 = self.test_scores(w)
        out = {
            "epoch": epoch,
            "oracle_fb": c["oracle_fb"],
            "oracle_fwd": c["oracle_fwd"],
            "oracle_epochs": (c["oracle_fb"] + c["oracle_fwd"]) / n,
            "updates": c["updates"],
            "update_epochs": c["updates"] / n,
            "ls_evals": c["ls_evals"],
            "seconds": seconds,
            "primal": primal_value,
            "dual": math.nan if dual is None else dual,
            "true_gap": math.nan if dual is None else primal_value - dual,
            "gap_estimate": math.nan if est is None else est,
            "test_error": err,
            "test_f1": f1,
            "ls_iters": math.nan,
            "ls_time_share": math.nan,
            "mean_step": math.nan,
            "nonzero_weights": solver.nonzero_weights(),
        }
        out.update(solver.diagnostics())
        if self.certify and dual is None:
            out["certificate"] = self.gradient_certificate(w, sq_norm)
        return out

    def gradient_certificate(self, w: np.ndarray, sq_norm: float | None = None) -> float:
        """||s||^2 / (2 lambda) >= P(w) - P*, the certificate of solvers without a dual: s
        the minimum-norm subgradient of P at w (the gradient without an L1 term; P is
        lambda-strongly convex). ``sq_norm``: ||s||^2, if known."""
        p = self.problem
        if p.lam == 0:  # not strongly convex: no bound from the gradient
            return math.nan
        if sq_norm is None:
            _, g = primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam,
                                       p.feature_mask, self.threads)
            s = pseudo_gradient(w, g, p.l1) if p.l1 else g
            sq_norm = dot(s, s)
        return sq_norm / (2 * p.lam)
