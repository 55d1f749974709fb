"""Online exponentiated gradient (OEG) on the CRF dual (Collins et al. 2008, with the
initialization recommended by Schmidt et al. 2015; ``baselines.md`` section 6).

Each example's dual variable is a distribution u_i over labelings, stored through its
chain log-potentials (unary T_i x K, and pairwise a_i c0 [true transition] + Q_i, so
O(T_i K + K^2) per example), plus its unary and summed pairwise marginals and its
entropy. A visit of i interpolates the log-potentials toward the current model scores,
theta_i <- (1 - eta_i) theta_i + eta_i s_i(w), which is the EG step on u_i; the step
is accepted iff it increases the dual D (exact change computed from the new marginals,
one forward-backward each), otherwise eta_i is halved and the step retried.
w = w_hat(mu) is kept exactly (sparse updates), and D is known at all times, so the
monitor reports OEG's true duality gap.

Open choices of ``baselines.md`` section 9.7 taken here (parameters in brackets):

- start at the smoothed Dirac on the true labels, c0 = 10 [LP] (``c0``): the same dual
  point as SDCA (eq. 21); its n forward-backwards are counted as oracle calls
  (``count_init=True``);
- eta_i = 0.5 initially [R] (``eta0``), halved on every rejection and never increased
  after a success (``eta_increase=1``; e.g. 1.05 or 2 adds an increase rule, capped at
  ``eta_max``);
- strict acceptance (the dual must increase), at most 30 trials per visit
  (``max_trials``); after 30 rejections the example is left unchanged this visit and
  keeps its reduced eta_i;
- sampling uniform with replacement (``sampling="uniform"``; ``"perm"`` draws a fresh
  random permutation every epoch, Collins08's practice as recalled).
"""

from __future__ import annotations

import numpy as np

from ..model.oracle import make_workspace
from .base import Problem, Solver
from .oeg_kernel import (
    FAILED_VISITS,
    LS_EVALS,
    N_COUNTERS,
    ORACLE_FB,
    REJECTED,
    SAMPLINGS,
    SUM_ETA,
    UPDATES,
    OEGBuffers,
    OEGOptions,
    OEGState,
    oeg_init,
    oeg_run,
)
from .random import make_rng
from .sdca import sequence_index


class OEG(Solver):
    """Online exponentiated gradient with per-example step sizes.

    Parameters
    ----------
    eta0: initial step size of every example (0.5).
    c0: constant of the smoothed-Dirac initialization (10).
    eta_increase, eta_max: optional increase of eta_i after a success (off by default).
    max_trials: trials (halvings + 1) per visit (30).
    sampling: ``uniform`` (with replacement) or ``perm``.
    count_init: count the n forward-backwards of the initialization as oracle calls.
    """

    name = "oeg"

    def __init__(self, problem: Problem, eta0: float = 0.5, c0: float = 10.0,
                 eta_increase: float = 1.0, eta_max: float = 1.0, max_trials: int = 30,
                 sampling: str = "uniform", count_init: bool = True, seed: int = 0):
        super().__init__(problem, seed)
        if not eta0 > 0:
            raise ValueError(f"eta0 must be positive, got {eta0}")
        if not c0 >= 0:
            raise ValueError(f"c0 must be non-negative, got {c0}")
        if not eta_increase >= 1.0:
            raise ValueError(f"eta_increase must be at least 1, got {eta_increase}")
        if max_trials < 1:
            raise ValueError(f"max_trials must be at least 1, got {max_trials}")
        if sampling not in SAMPLINGS:
            raise ValueError(f"unknown OEG sampling {sampling!r}; choose one of "
                             f"{', '.join(SAMPLINGS)}")
        self.eta0 = float(eta0)
        self.c0 = float(c0)
        self.eta_increase = float(eta_increase)
        self.eta_max = float(eta_max)
        self.max_trials = int(max_trials)
        self.sampling = sampling
        self.count_init = bool(count_init)

        p = problem
        n, K, A = p.n, p.n_labels, p.n_attributes
        N = p.train.n_tokens
        self.index = sequence_index(p.train, A)
        self.state = OEGState(
            w=np.zeros(p.dim), theta_unary=np.zeros(N * K), theta_scale=np.ones(n),
            theta_pair=np.zeros(n * K * K), mu_unary=np.zeros(N * K),
            mu_pair=np.zeros(n * K * K), entropy=np.zeros(n), eta=np.full(n, self.eta0),
            order=np.arange(n, dtype=np.int64), cursor=np.full(1, n, dtype=np.int64),
            counters=np.zeros(N_COUNTERS, dtype=np.int64), sums=np.zeros(2))
        self.options = OEGOptions(lam=float(p.lam), c0=self.c0, eta_increase=self.eta_increase,
                                  eta_max=self.eta_max, max_trials=self.max_trials,
                                  sampling=SAMPLINGS[sampling])
        ws = make_workspace(int(np.max(p.train.lengths())), K)
        max_uniq = int(np.max(np.diff(self.index.uniq_ptr))) if n else 0
        self.buffers = OEGBuffers(
            ws.scores, ws.emit, ws.alpha, ws.beta, ws.scale, ws.trans, ws.unary,
            np.zeros(len(ws.scores)), np.zeros(K * K), np.zeros(K * K),
            np.zeros(max(max_uniq, 1) * K), np.zeros(3 * K), np.zeros(K * K))
        oeg_init(self.state, self.index, self.buffers, A, K, self.options, self.eta0)
        if not self.count_init:
            self.state.counters[ORACLE_FB] = 0
        self.rng = make_rng(seed)
        self._last = self.state.counters.copy()
        self._last_eta_sum = 0.0

    # -- driving -------------------------------------------------------------------------
    def run(self, n_steps: int) -> None:
        p = self.problem
        oeg_run(int(n_steps), self.state, self.index, self.buffers, self.rng, p.n_attributes,
                p.n_labels, self.options)

    # -- reading ---------------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        return self.state.w

    def counters(self) -> dict[str, int]:
        c = self.state.counters
        return {"oracle_fb": int(c[ORACLE_FB]), "oracle_fwd": 0, "updates": int(c[UPDATES]),
                "ls_evals": int(c[LS_EVALS])}

    def dual(self) -> float:
        """D(mu) = (1/n) sum_i H(u_i) - lambda/2 ||w||^2 at the current dual iterate."""
        w = self.state.w
        return float(self.state.entropy.sum() / self.problem.n
                     - 0.5 * self.problem.lam * (w @ w))

    @property
    def marginals(self) -> tuple[np.ndarray, np.ndarray]:
        """(unary marginals N*K, summed pairwise marginals n*K*K) of every example."""
        return self.state.mu_unary, self.state.mu_pair

    def diagnostics(self) -> dict[str, float]:
        c = self.state.counters.copy()
        d = c - self._last
        visits_tests = max(int(d[LS_EVALS]), 1)
        updates = max(int(d[UPDATES]), 1)
        eta_sum = self.state.sums[SUM_ETA]
        out = {"ls_iters": d[LS_EVALS] / max(int(d[UPDATES] + d[FAILED_VISITS]), 1),
               "mean_step": (eta_sum - self._last_eta_sum) / updates,
               "rejection_share": d[REJECTED] / visits_tests,
               "failed_visits": float(d[FAILED_VISITS]),
               "mean_eta": float(self.state.eta.mean())}
        self._last = c
        self._last_eta_sum = eta_sum
        return out

    def memory_bytes(self) -> dict[str, int]:
        s = self.state
        return {"potentials_unary": s.theta_unary.nbytes,
                "potentials_pairwise": s.theta_pair.nbytes + s.theta_scale.nbytes,
                "marginals_unary": s.mu_unary.nbytes, "marginals_pairwise": s.mu_pair.nbytes,
                "weights": s.w.nbytes,
                "per_sequence": s.entropy.nbytes + s.eta.nbytes + s.order.nbytes}

    def config(self) -> dict:
        return {**super().config(), "eta0": self.eta0, "c0": self.c0,
                "eta_increase": self.eta_increase, "eta_max": self.eta_max,
                "max_trials": self.max_trials, "sampling": self.sampling,
                "count_init": self.count_init}


__all__ = ["OEG"]
