"""CRFsuite's SGD with L2 regularization (``l2sgd``), as ``train_l2sgd.c`` of CRFsuite 0.12.

It minimizes CRFsuite's objective, n P(w) = sum_i NLL_i + c2 ||w||^2 (lambda = 2 c2 / n,
the problem's ``lam``), by Pegasos-like steps eta_t = 1 / (lambda (t0 + t)) on one
instance at a time, in an order shuffled before every epoch (without the projection
onto the L2 ball, as CRFsuite). The kernels are in :mod:`.l2sgd_kernel`.

t0 comes from CRFsuite's calibration, run at the start of the first ``run``: after one
shuffle, the first S = min(n, ``calibration_samples``) instances of the order are the
sample; each trial starts from w = 0 and makes one SGD pass over the sample with
t0 = 1 / (lambda eta), its loss the sum of the instances' losses (each before its own
step) plus lambda / 2 ||w||^2 S. Starting at ``calibration_eta``, eta is multiplied by
``calibration_rate`` while the trials improve on the loss at w = 0, then divided by it
from ``calibration_eta / calibration_rate`` on, until ``calibration_candidates`` trials
improved in each direction or ``calibration_max_trials`` - 1 trials ran; the eta of the
lowest loss is kept.

Every epoch then starts from the weights of the previous one (w = 0 at first) and ends
with its loss, the sum of the instances' losses plus lambda / 2 ||w||^2 n; the solver
stops (``"converged"``) when that loss improved by less than ``delta`` relatively over
the last ``period`` epochs, and its weights are those of the epoch of the lowest loss
(CRFsuite's "best" weights). Before an epoch has ended they are the current iterate.
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime.jit import aligned_zeros
from .base import Problem
from .l2sgd_kernel import (
    DECAY,
    LAST,
    LOSS,
    N_STATE,
    T_STEPS,
    loss_sum,
    scale_into,
    sgd_pass,
    squared_norm,
)
from .online import OnlineSolver
from .online_kernel import UPDATES
from .registry import L2SGD_OPTIONS


class L2SGD(OnlineSolver):
    """CRFsuite's L2-regularized SGD with its learning-rate calibration.

    Options (:data:`~crfsdca.solvers.registry.L2SGD_OPTIONS`): ``period`` and ``delta``
    (the stopping test), ``calibration_eta``, ``calibration_rate``,
    ``calibration_samples``, ``calibration_candidates``, ``calibration_max_trials`` (the
    calibration) and ``shuffle``. c2 is the problem's: lambda = ``problem.lam``.
    """

    name = "l2sgd"
    OPTIONS = L2SGD_OPTIONS

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1, **options):
        super().__init__(problem, seed, threads, **options)
        d, K = problem.dim, problem.n_labels
        self.lam = float(problem.lam)
        self.w = aligned_zeros(d)
        self.best = aligned_zeros(d)  # the weights of the best epoch (the output)
        self.tw = aligned_zeros(K * K)  # the scaled transition weights of a step
        self.state = np.zeros(N_STATE)
        self.state[DECAY] = 1.0
        self.period = int(self.opts["period"])
        self.delta = float(self.opts["delta"])
        self.history = np.zeros(self.period)  # CRFsuite's pf: the last period losses
        self.best_loss = math.inf
        self.t0: float | None = None  # from the calibration, at the first run
        self.eta0: float | None = None
        self.calibration: list[tuple[float, float]] = []  # (eta, loss) of every trial
        self.initial_loss = math.nan
        self.improvement = math.nan
        self._fb = 0
        self._fwd = 0

    # -- driving -------------------------------------------------------------------------
    def run(self, n_steps: int) -> None:
        if n_steps > 0 and self.t0 is None:
            self.t0 = self.calibrate()
            self.w[:] = 0.0
            self.state[:] = 0.0
            self.state[DECAY] = 1.0
        super().run(n_steps)

    def prepare(self) -> None:
        p = self.problem
        self._visit(0, 0)
        loss_sum(self.order, 0, 0, self.w, p.n_attributes, p.n_labels, p.train,
                 self.workspace, self.tw)
        scale_into(self.tw, self.tw, 1.0)
        squared_norm(self.tw)

    def _pass(self, lo: int, hi: int, t0: float) -> None:
        p = self.problem
        self._fb += sgd_pass(self.order, lo, hi, self.w, p.n_attributes, p.n_labels, p.train,
                             p.mask, self.workspace, self.tw, self.lam, t0, self.state)

    def _visit(self, lo: int, hi: int) -> None:
        self._pass(lo, hi, self.t0 if self.t0 is not None else 1.0 / self.lam)
        self.sums[UPDATES] += hi - lo  # every step updates

    def _start_epoch(self) -> None:
        super()._start_epoch()
        self.state[LOSS] = 0.0

    def _end_epoch(self) -> None:
        n = self.problem.n
        last = float(self.state[LAST])
        decay = float(self.state[DECAY])
        scale_into(self.w, self.w, decay)
        self.state[DECAY] = 1.0
        loss = float(self.state[LOSS]) + 0.5 * self.lam * squared_norm(self.w) * n
        self.last_loss = loss
        if not (math.isfinite(last) and math.isfinite(loss)):
            self._stopped = "diverged"  # CRFsuite stops with an overflow error
            return
        e = self.epochs
        if loss < self.best_loss:
            self.best_loss = loss
            self.best[:] = self.w
        slot = (e - 1) % self.period
        if self.period < e:
            self.improvement = (self.history[slot] - loss) / loss
        else:
            self.improvement = self.delta
        self.history[slot] = loss
        if self.improvement < self.delta:
            self._stopped = "converged"

    # -- calibration -------------------------------------------------------------------------
    def _trial(self, S: int, eta: float) -> float:
        """One SGD epoch over the sample from w = 0 with t0 = 1 / (lambda eta): its loss."""
        self.w[:] = 0.0
        self.state[:] = 0.0
        self.state[DECAY] = 1.0
        self._pass(0, S, 1.0 / (self.lam * eta))
        scale_into(self.w, self.w, float(self.state[DECAY]))
        last = float(self.state[LAST])
        loss = float(self.state[LOSS]) + 0.5 * self.lam * squared_norm(self.w) * S
        return loss if math.isfinite(last) else last

    def calibrate(self) -> float:
        """CRFsuite's calibration of the learning rate (see the module's docstring);
        returns t0 = 1 / (lambda eta) of the best eta."""
        p, o = self.problem, self.opts
        S = min(p.n, int(o["calibration_samples"]))
        rate = float(o["calibration_rate"])
        init_eta = float(o["calibration_eta"])
        candidates = int(o["calibration_candidates"])
        max_trials = int(o["calibration_max_trials"])
        self._shuffle()
        self.w[:] = 0.0
        self.initial_loss = float(loss_sum(self.order, 0, S, self.w, p.n_attributes,
                                           p.n_labels, p.train, self.workspace, self.tw))
        self._fwd += S
        eta, best_eta, best_loss = init_eta, init_eta, math.inf
        num, decreasing, trials = candidates, False, 1
        while num > 0 or not decreasing:
            loss = self._trial(S, eta)
            self.calibration.append((eta, loss))
            ok = math.isfinite(loss) and loss < self.initial_loss
            if ok:
                num -= 1
            if math.isfinite(loss) and loss < best_loss:
                best_loss, best_eta = loss, eta
            if not decreasing:
                if ok and num > 0:
                    eta *= rate
                else:
                    decreasing = True
                    num = candidates
                    eta = init_eta / rate
            else:
                eta /= rate
            trials += 1
            if max_trials <= trials:
                break
        self.eta0 = best_eta
        return 1.0 / (self.lam * best_eta)

    # -- reading ---------------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        if self.epochs == 0:  # no epoch has ended: the current iterate
            scale_into(self.best, self.w, float(self.state[DECAY]))
        return self.best

    def counters(self) -> dict[str, int]:
        """Forward-backward passes (the calibration's included), forward passes (its
        loss at w = 0), one update per step."""
        return {"oracle_fb": self._fb, "oracle_fwd": self._fwd,
                "updates": self._updates + int(self.sums[UPDATES]), "ls_evals": 0}

    def diagnostics(self) -> dict[str, float]:
        """CRFsuite's loss of the last epoch, the learning rate of the last step, and the
        calibrated eta."""
        t0 = self.t0 if self.t0 is not None else math.nan
        eta = 1.0 / (self.lam * (t0 + self.state[T_STEPS] - 1)) if self.state[T_STEPS] \
            else math.nan
        return {"epoch_loss": self.last_loss, "eta": eta,
                "calibrated_eta": self.eta0 if self.eta0 is not None else math.nan}

    def memory_bytes(self) -> dict[str, int]:
        return {"weights": self.w.nbytes, "best_weights": self.best.nbytes,
                "per_sequence": self.order.nbytes}


__all__ = ["L2SGD"]
