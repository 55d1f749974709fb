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
  point as SDCA (``math.md`` section 5.1); its n forward-backwards are counted as oracle calls
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
from ..runtime.jit import aligned_zeros, dot
from .base import Problem, Solver
from .index import max_distinct_attributes, sequence_index
from .oeg_kernel import (
    FAILED_VISITS,
    LS_EVALS,
    N_COUNTERS,
    ORACLE_FB,
    REJECTED,
    SAMPLING_CODES,
    SUM_ETA,
    UPDATES,
    OEGBuffers,
    OEGOptions,
    OEGState,
    oeg_init,
    oeg_run,
)
from .registry import OEG_OPTIONS
from .rng import make_rng


class OEG(Solver):
    """Online exponentiated gradient with per-example step sizes.

    Options (:data:`~crfsdca.solvers.registry.OEG_OPTIONS`): ``eta0`` (initial step size
    of every example), ``c0`` (constant of the smoothed-Dirac initialization),
    ``eta_increase`` and ``eta_max`` (an optional increase of eta_i after a success, off
    by default), ``max_trials`` (trials, halvings + 1, per visit), ``sampling``
    (``uniform`` with replacement, or ``perm``), ``count_init`` (count the n
    forward-backwards of the initialization as oracle calls).
    """

    name = "oeg"
    OPTIONS = OEG_OPTIONS

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1, **options):
        super().__init__(problem, seed, threads, **options)
        o = self.opts

        p = problem
        n, K, A = p.n, p.n_labels, p.n_attributes
        N = p.train.n_tokens
        self.index = sequence_index(p.train, A)
        self.state = OEGState(
            w=aligned_zeros(p.dim), theta_unary=aligned_zeros(N * K), theta_scale=np.ones(n),
            theta_pair=aligned_zeros(n * K * K), mu_unary=aligned_zeros(N * K),
            mu_pair=aligned_zeros(n * K * K), entropy=aligned_zeros(n),
            eta=np.full(n, o["eta0"]), order=np.arange(n, dtype=np.int64),
            cursor=np.full(1, n, dtype=np.int64),
            counters=np.zeros(N_COUNTERS, dtype=np.int64), sums=np.zeros(2))
        self.options = OEGOptions(lam=float(p.lam), c0=o["c0"], eta_increase=o["eta_increase"],
                                  eta_max=o["eta_max"], max_trials=o["max_trials"],
                                  sampling=SAMPLING_CODES[o["sampling"]], mask=p.mask)
        ws = make_workspace(int(np.max(p.train.lengths())), K)
        chain = ws._replace(scores=aligned_zeros(len(ws.scores)), trans=aligned_zeros(K * K),
                            pair=aligned_zeros(K * K))
        max_uniq = max_distinct_attributes(self.index)
        self.buffers = OEGBuffers(ws, chain, aligned_zeros(K * K),
                                  aligned_zeros(max(max_uniq, 1) * K), aligned_zeros(3 * K),
                                  aligned_zeros(K * K))
        oeg_init(self.state, self.index, self.buffers, A, K, self.options, o["eta0"])
        if not o["count_init"]:
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
                     - 0.5 * self.problem.lam * dot(w, w))

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


__all__ = ["OEG"]
