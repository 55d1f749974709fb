"""SDCA for CRFs with exact line search and adaptive sampling (the paper's Algorithm 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..model.features import soft_threshold
from ..model.objective import (
    dirac_start,
    primal,
    sequence_entropies,
    store_sizes,
    weighted_sum,
    weights_from_marginals,
)
from ..model.oracle import make_workspace
from ..runtime.jit import aligned_copy, aligned_empty, aligned_zeros, dot, line_zeros, stream_copy
from ..runtime.threads import run_parallel
from .base import Problem, Solver
from .catalyst import CatalystLoop, kappa_ratio
from .index import max_distinct_attributes, sequence_index
from .registry import SDCA_OPTIONS
from .rng import make_rng
from .sampling import TREE_SCHEMES, SamplerState, make_sampler, stack_samplers
from .sdca_kernel import (
    CYC_LS,
    CYC_ORACLE,
    LS_EVALS,
    N_COUNTERS,
    NULL_STEPS,
    ORACLE,
    PHASES,
    SUM_ENTROPY,
    SUM_GAPS,
    SUM_STEP,
    UPDATES,
    W_NORM2,
    SDCABuffers,
    SDCAOptions,
    SDCAState,
    refresh_gaps,
    sdca_run,
    sdca_run_lanes,
)
from .sdca_linesearch import LINE_SEARCH_CODES
from .sdca_locks import lane_locks, row_locks


def weighted_radii(problem: Problem) -> np.ndarray:
    """c_i R_i: the squared radius of the weighted loss c_i NLL_i (R_i unweighted)."""
    train = problem.train
    radii = np.asarray(problem.radii, dtype=np.float64)
    return train.weights * radii if train.weighted else radii


def theoretical_step(problem: Problem, lam: float | None = None) -> float:
    """Uniform SDCA's fixed step (1 + R / (lambda n))^-1 with R = max_i c_i R_i (``lam``:
    the lambda SDCA runs with, the problem's unless Catalyst's inner one)."""
    if problem.radii is None:
        raise ValueError("the theoretical step size needs the radii R_i of the dataset")
    lam = problem.lam if lam is None else lam
    return 1.0 / (1.0 + float(np.max(weighted_radii(problem))) / (lam * problem.n))


class _Lane(NamedTuple):
    """The sequences one thread works on, with its own sampler, random stream, buffers
    and counters; every lane shares w and the marginal store (``math.md`` section 9)."""

    members: np.ndarray  # int64, sorted: the lane's sampler index j is sequence members[j]
    state: SDCAState
    buffers: SDCABuffers
    sampler: SamplerState
    rng: np.ndarray


def lane_members(n: int, lanes: int, seed: int,
                 weights: np.ndarray | None = None) -> list[np.ndarray]:
    """The sequences of each lane: all of them for one lane; otherwise a random split
    (from ``seed``) into lanes of equal size, so that every lane holds about the same
    share of tokens and of the gap mass, and the threads stay busy alike. A sequence of
    weight 0 (``weights``) is in no lane: it is out of the objective, never sampled."""
    active = (np.arange(n, dtype=np.int64) if weights is None or len(weights) == 0
              else np.flatnonzero(weights > 0).astype(np.int64))
    if lanes == 1:
        return [active]
    order = active[np.random.default_rng(seed).permutation(len(active))]
    return [np.sort(order[t::lanes]).astype(np.int64) for t in range(lanes)]


def lane_steps(n_steps: int, samplers: Sequence[SamplerState], n: int) -> np.ndarray:
    """How many of ``n_steps`` draws each lane takes: its expected share under the
    sampler's distribution over all n sequences, rounded so that they add up."""
    if len(samplers) == 1:
        return np.array([n_steps])
    sizes = np.array([len(s.gaps) for s in samplers], dtype=np.float64)
    share = sizes / n
    mass = np.array([s.tree[1] for s in samplers])
    if samplers[0].scheme in TREE_SCHEMES and mass.sum() > 0:
        theta = samplers[0].theta
        share = (1.0 - theta) * share + theta * mass / mass.sum()
    cut = np.floor(n_steps * np.cumsum(share) / share.sum() + 0.5).astype(np.int64)
    return np.diff(np.concatenate([[0], cut]))


class SDCA(Solver):
    """Stochastic dual coordinate ascent on the CRF dual (marginal parametrization).

    Options (:data:`~crfsdca.solvers.registry.SDCA_OPTIONS`): ``sampler`` (uniform,
    importance, gap, gap-importance, max, perm, cyclic), ``non_uniformity`` theta (the
    share of draws that follow the sampler, the rest uniform), ``line_search``
    (``newton``: safeguarded, to ``subprecision``; ``single-newton``: the same search
    stopped after its first Newton step, taken from the regula-falsi point, since a
    Newton step from 0 vanishes under the log-barrier of the near-Dirac start and one
    from 1 overshoots and diverges on every dataset; ``fixed``: ``step_size``, or the
    theoretical step if None; ``golden``), ``refresh_every`` (recompute every stored gap
    every that many epochs, 0: never), ``store_dtype`` (float64 or float32 storage of the
    dual marginals), ``init_c`` (the constant c of the smoothed-Dirac initialization,
    ``math.md`` section 5.1), ``catalyst`` (kappa / lambda of Catalyst's outer loop,
    :mod:`.catalyst`; 0: the paper's SDCA) and ``catalyst_floor`` (the least kappa n).
    ``initial_marginals`` continue a dual state; with Catalyst, ``initial_weights`` are
    the weights the run that left it ended at, where this one restarts (without Catalyst
    the weights are the marginals').
    """

    name = "sdca"
    OPTIONS = SDCA_OPTIONS

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1,
                 initial_marginals: tuple[np.ndarray, np.ndarray] | None = None,
                 initial_weights: np.ndarray | None = None, **options):
        super().__init__(problem, seed, threads, **options)
        o = self.opts
        p = problem
        ratio = kappa_ratio(o["catalyst"], o["catalyst_floor"], p.lam * p.n)
        lam = p.lam * (1.0 + ratio)  # the lambda SDCA runs with
        if o["line_search"] == "fixed" and o["step_size"] is None:
            o["step_size"] = theoretical_step(problem, lam)
        self.subprecision = o["subprecision"]
        self.step_size = o["step_size"]
        self.refresh_every = o["refresh_every"]

        K, n = p.n_labels, p.n
        self.index = sequence_index(p.train, p.n_attributes)
        dtype = np.dtype(o["store_dtype"])
        if initial_marginals is None:  # the store, w_hat and the entropies in one pass
            mu_unary, mu_pair, v, entropies = dirac_start(
                p.train, p.n_attributes, K, p.lam, p.feature_mask, c=o["init_c"], dtype=dtype)
        else:
            mu_unary = aligned_copy(np.asarray(initial_marginals[0], dtype=dtype))
            mu_pair = stream_copy(np.asarray(initial_marginals[1]), dtype)
            if (len(mu_unary), len(mu_pair)) != store_sizes(p.train, K):
                raise ValueError(f"initial marginals of sizes {len(mu_unary)}, "
                                 f"{len(mu_pair)}; the training set needs "
                                 f"{store_sizes(p.train, K)}")
            v = weights_from_marginals(mu_unary, mu_pair, p.train, p.n_attributes, K, p.lam,
                                       p.feature_mask)
            entropies = sequence_entropies(mu_unary, mu_pair, K, p.train.offsets,
                                           aligned_empty(n))
        self.catalyst = None
        spare = None  # an array of the weights' size free for w (its first writes are dear)
        if ratio:
            x0 = soft_threshold(v, p.kappa) if p.l1 else v
            self.catalyst = CatalystLoop(p.lam, p.l1, ratio, x0, v,
                                         initial_weights)  # copies x0
            v = self.catalyst.inner_image(v)
            spare = x0 if p.l1 else None
        kappa = p.l1 / lam  # S_kappa(v) = w, for the inner problem with Catalyst
        w = soft_threshold(v, kappa, out=spare) if p.l1 else v
        self.options = SDCAOptions(
            lam_n=lam * n, method=LINE_SEARCH_CODES[o["line_search"]],
            tol=self.subprecision, fixed_step=self.step_size if self.step_size is not None
            else 1.0, exact_store=o["store_dtype"] == "float64",
            midpoint=o["line_search_start"] == "midpoint", mask=p.mask, kappa=kappa,
            atomic=self.threads > 1)
        lipschitz = None if p.radii is None else lam + weighted_radii(p) / n
        max_len = int(np.max(p.train.lengths()))
        vsize = max(max_distinct_attributes(self.index), 1) * K
        support = (vsize + 3 * K + K * K) if p.kappa else 0  # the crossing entries
        locks = row_locks(self.threads)
        self.lanes = []
        for t, members in enumerate(lane_members(n, self.threads, seed, p.train.weights)):
            self.lanes.append(_Lane(
                members,
                SDCAState(w, v, mu_unary, mu_pair, entropies, line_zeros(3),
                          line_zeros(N_COUNTERS, np.int64), line_zeros(1), locks),
                SDCABuffers(make_workspace(max_len, K), aligned_zeros(vsize),
                            aligned_zeros(3 * K), aligned_zeros(K * K), aligned_zeros(K * K),
                            aligned_zeros(vsize if p.kappa else 0), aligned_zeros(support),
                            aligned_zeros(support)),
                make_sampler(o["sampler"], o["non_uniformity"], len(members),
                             None if lipschitz is None else lipschitz[members]),
                make_rng(seed if t == 0 else seed * 1_000_003 + t)))
        if len(self.lanes) > 1:  # the kernel's flat form; each lane keeps views of it
            self._samplers, views = stack_samplers([lane.sampler for lane in self.lanes])
            self._members = np.concatenate([lane.members for lane in self.lanes])
            self._member_starts = np.zeros(len(self.lanes) + 1, dtype=np.int64)
            np.cumsum([len(lane.members) for lane in self.lanes],
                      out=self._member_starts[1:])
            self.lanes = [lane._replace(sampler=view, members=self._members[a:b])
                          for lane, view, a, b in zip(self.lanes, views,
                                                      self._member_starts[:-1],
                                                      self._member_starts[1:], strict=True)]
        self.state = self.lanes[0].state
        self.sampler = self.lanes[0].sampler
        self.lane_draws = np.zeros(len(self.lanes), dtype=np.int64)  # draws of each lane
        self._busy = np.zeros(n, dtype=np.int32)  # sequences a thread is stepping on
        self._lane_locks = lane_locks(len(self.lanes))
        self.resync()
        self._steps = 0
        self._next_refresh = self.refresh_every * n if self.refresh_every > 0 else np.inf
        self._round_end_at = -1  # the step count at which a Catalyst round last ended
        self._round_gap, self._round_point = None, None  # that round's certified point
        self._next_round = n if self.catalyst is not None else np.inf  # a round: an epoch
        self._last = np.zeros(N_COUNTERS, dtype=np.int64)
        self._last_step_sum = 0.0

    # -- driving -------------------------------------------------------------------------
    def run(self, n_steps: int) -> None:
        p = self.problem
        remaining = int(n_steps)
        while remaining > 0:
            chunk = int(min(remaining, max(self._next_refresh - self._steps, 1),
                            max(self._next_round - self._steps, 1)))
            self._run_lanes(chunk)
            self._steps += chunk
            remaining -= chunk
            if self._steps >= self._next_round:
                self._end_round()
            if self._steps >= self._next_refresh:
                self.refresh_gaps()
                self._next_refresh += self.refresh_every * p.n

    def _end_round(self) -> None:
        """End a Catalyst round: its solution x_k (the inner problem's iterate) and the
        point w moves to with the extrapolated center are both certified, P(.) - D(mu)
        exactly with the same mu: x_k by a primal pass, the moved w by the stored gaps
        refreshed at it (both a scores-and-forward pass; the refresh also reads the
        store, and leaves the sampler the gaps of the problem the new round solves).
        Until the next step, ``weights()`` is the better of the two, x_k almost always
        (from the first rounds, where the moved w's primal is many times x_k's, to the
        last); the new round starts from the moved w with its gaps, as Catalyst's loop
        runs without this check, so the iterates are the same."""
        x_gap = self._primal_gap()
        self.catalyst.next_round(self.state.v, self.state.w)
        w_gap = self._refreshed_gap()
        self._round_gap = min(x_gap, w_gap)
        self._round_point = self.catalyst.previous if x_gap <= w_gap else self.state.w
        self._round_end_at = self._steps
        self._next_round += self.problem.n

    def _primal_gap(self) -> float:
        """P(w) - D(mu) of the original problem at the current w, exactly: a primal pass
        (the mean of the stored gaps refreshed at w, plus the O(d) rest, is the same
        number, but the refresh reads the whole marginal store too)."""
        p = self.problem
        value = primal(self.state.w, p.train, p.n_attributes, p.n_labels, p.lam, p.l1,
                       self.threads)
        return max(value - self.dual(), 0.0)  # rounding must not make it negative

    def _refreshed_gap(self) -> float:
        """P(w) - D(mu) of the original problem at the current w, exactly: every stored
        gap refreshed there (n scores-and-forward passes), the inner mean plus the O(d)
        rest."""
        self.refresh_gaps()
        self.resync()
        return self.catalyst.gap_estimate(self._mean_stored_gap(), self.state.v, self.state.w)

    def _at_round_end(self) -> bool:
        return self.catalyst is not None and self._round_end_at == self._steps

    def _mean_stored_gap(self) -> float:
        return float(sum(lane.sampler.gaps.sum() for lane in self.lanes) / self.problem.n)

    def _run_lanes(self, n_steps: int) -> None:
        """n_steps iterations, shared by the lanes as the sampler would share them with
        one thread: in expectation, (1 - theta) n_t / n + theta M_t / M of the draws go to
        lane t, M_t the scheme's mass of its sequences (their stored gaps, for gap
        sampling). With several lanes the shares are recomputed every n / 20 steps, as
        the masses change, and a thread done with its lane's draws takes the draws left
        to the others (from their samplers), so that none waits for a slower one."""
        p = self.problem
        if len(self.lanes) == 1:
            lane = self.lanes[0]
            sdca_run(n_steps, lane.state.w, p.n_attributes, p.n_labels, self.index,
                     lane.state, lane.buffers, lane.sampler, lane.rng, self.options,
                     lane.members)
            return
        samplers = [lane.sampler for lane in self.lanes]
        rounds = max(1, -(-n_steps // max(p.n // 20, 1)))
        done = 0
        for r in range(1, rounds + 1):
            k = n_steps * r // rounds - done
            done += k
            quota = lane_steps(k, samplers, p.n)
            self.lane_draws += quota
            run_parallel([
                (lambda t=t, lane=lane, quota=quota: sdca_run_lanes(
                    t, quota, self._samplers, self._members, self._member_starts,
                    self._busy, self._lane_locks,
                    lane.state.w, p.n_attributes, p.n_labels, self.index, lane.state,
                    lane.buffers, lane.rng, self.options))
                for t, lane in enumerate(self.lanes)])

    def prepare(self) -> None:
        self._run_lanes(0)

    def refresh_gaps(self) -> None:
        """Recompute every stored gap at the current weights (n oracle calls)."""
        p = self.problem
        run_parallel([
            (lambda lane=lane: refresh_gaps(lane.state.w, p.n_attributes, p.n_labels,
                                            self.index, lane.state, lane.buffers,
                                            lane.sampler, lane.members))
            for lane in self.lanes])

    def objective(self) -> float | None:
        """P at ``weights()`` at the end of a Catalyst round (at the monitor's epochs), where
        the refreshed gaps certify it exactly: the dual plus that gap (then no full pass is
        needed to certify the round)."""
        if not self._at_round_end():
            return None
        return self.dual() + self._round_gap

    # -- reading ---------------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        """w, or at the end of a Catalyst round the better of its solution x_k and the
        moved w (:meth:`_end_round`)."""
        return self._round_point if self._at_round_end() else self.state.w

    def _counters(self) -> np.ndarray:
        return sum(lane.state.counters for lane in self.lanes)

    def counters(self) -> dict[str, int]:
        c = self._counters()
        return {"oracle_fb": int(c[ORACLE]), "oracle_fwd": 0, "updates": int(c[UPDATES]),
                "ls_evals": int(c[LS_EVALS])}

    def dual(self) -> float:
        """D(mu) = -lam/2 ||w||^2 + (1/n) sum_i c_i H~(mu_i), from the maintained sums (with
        L1, w = S_kappa(w_hat(mu)) and lam g*(w_hat) = lam/2 ||w||^2, the same formula);
        with Catalyst, the original problem's dual of the same mu (:mod:`.catalyst`).

        The kernel keeps ||w||^2 and sum_i H~(mu_i) current in O(1) per step; reading the
        dual first re-anchors them exactly (O(d + n)), so rounding never accumulates
        beyond one reading.
        """
        self.resync()
        s = self.state.scalars
        if self.catalyst is not None:
            return self.catalyst.dual(self.state.v, s[SUM_ENTROPY] / self.problem.n)
        return -0.5 * self.problem.lam * s[W_NORM2] + s[SUM_ENTROPY] / self.problem.n

    def resync(self) -> None:
        """Recompute the maintained sums exactly (removes floating-point drift; with
        threads, each lane's sums are moot and the first lane holds the whole)."""
        s = self.state
        s.scalars[W_NORM2] = dot(s.w, s.w)
        s.scalars[SUM_ENTROPY] = weighted_sum(s.entropies, self.problem.train)
        for lane in self.lanes:
            lane.state.scalars[SUM_GAPS] = lane.sampler.gaps.sum()
        s.scalars[SUM_GAPS] = sum(lane.sampler.gaps.sum() for lane in self.lanes)

    def gap_estimate(self) -> float:
        """Mean of the stored (possibly stale) block gaps.

        Maintained in O(1) per step by the kernel and re-anchored here in O(n): the
        running sum starts at 100 n and falls to about n * 1e-12, so the updates alone
        would leave an absolute error of about 1e-12 in the mean. At the end of a Catalyst
        round, the exact gap of ``weights()``.
        """
        if self._at_round_end():
            return self._round_gap
        inner = self._mean_stored_gap()
        if self.catalyst is not None:  # the original problem's, from the inner one's
            return self.catalyst.gap_estimate(inner, self.state.v, self.state.w)
        return inner

    def gap_estimate_floor(self) -> float:
        """The mean of the stored block gaps (O(n)): the estimate itself, or with
        Catalyst the inner problem's part of it, to which an O(d) pass adds the rest (at
        a round's end, the round's exact gap)."""
        return self._round_gap if self._at_round_end() else self._mean_stored_gap()

    @property
    def marginals(self) -> tuple[np.ndarray, np.ndarray]:
        """The dual marginal store (unary, pairwise)."""
        return self.state.mu_unary, self.state.mu_pair

    def phase_cycles(self) -> dict[str, int]:
        """Cycle-counter ticks spent so far in each phase of a step, summed over lanes."""
        c = self._counters()
        return {name: int(c[CYC_ORACLE + k]) for k, name in enumerate(PHASES)}

    def diagnostics(self) -> dict[str, float]:
        c = self._counters()
        d = c - self._last
        step_sum = sum(lane.state.sums[SUM_STEP] for lane in self.lanes)
        updates = max(int(d[UPDATES]), 1)
        cyc = d[CYC_ORACLE:CYC_ORACLE + len(PHASES)]
        total = max(int(cyc.sum()), 1)
        out = {
            "ls_iters": d[LS_EVALS] / updates,
            "ls_time_share": d[CYC_LS] / total,
            "mean_step": (step_sum - self._last_step_sum) / updates,
            "null_steps": d[NULL_STEPS] / updates,
        }
        out.update({f"share_{name}": c / total for name, c in zip(PHASES, cyc, strict=True)})
        self._last = c
        self._last_step_sum = step_sum
        return out

    def memory_bytes(self) -> dict[str, int]:
        s = self.state
        out = {"marginals_unary": s.mu_unary.nbytes, "marginals_pairwise": s.mu_pair.nbytes,
               "weights": s.w.nbytes, "per_sequence": s.entropies.nbytes * 4}
        if self.catalyst is not None:
            out["catalyst_points"] = self.catalyst.center.nbytes * 2
        return out


__all__ = ["SDCA", "theoretical_step"]
