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
from .index import SequenceIndex, max_distinct_attributes, sequence_index
from .partitions import (
    NO_ROWS,
    add_change,
    gather,
    local_split,
    partition_bounds,
    threshold_rows,
)
from .registry import SDCA_OPTIONS
from .rng import make_rng
from .sampling import TREE_SCHEMES, SamplerState, make_sampler
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
    gap_values,
    record_gaps,
    sdca_run,
)
from .sdca_linesearch import LINE_SEARCH_CODES

REFRESH_CHUNK = 64
"""Sequences a thread takes at a time when the threads share a refresh of the gaps."""


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


class _Part(NamedTuple):
    """One part of the sequences (:mod:`.partitions`): its own index (attributes
    renumbered, unless it is the only part), sampler, random stream, buffers, counters
    and copy of the weights; its slices of the marginal store and entropies are views."""

    lo: int  # its sequences: lo..hi - 1
    hi: int
    members: np.ndarray  # int64, local: the sampler's index j is sequence lo + members[j]
    index: SequenceIndex
    n_attributes: int
    rows: np.ndarray  # where its local weights lie in w (empty: the part is the whole)
    start: np.ndarray  # v[rows] at the round's start
    options: SDCAOptions
    state: SDCAState
    buffers: SDCABuffers
    sampler: SamplerState
    rng: np.ndarray


def active_members(weights: np.ndarray) -> np.ndarray:
    """The sequences a sampler draws from: all but those of weight 0, which are out of the
    objective (``weights`` empty: every sequence)."""
    return np.flatnonzero(weights > 0).astype(np.int64)


def part_steps(n_steps: int, samplers: Sequence[SamplerState]) -> np.ndarray:
    """How many of ``n_steps`` draws each part takes: its expected share under the
    sampler's distribution over all the sequences, rounded so that they add up (a
    function of the parts' states alone)."""
    if len(samplers) == 1:
        return np.array([n_steps])
    sizes = np.array([len(s.gaps) for s in samplers], dtype=np.float64)
    share = sizes / sizes.sum()
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
            midpoint=o["line_search_start"] == "midpoint", mask=p.mask, kappa=kappa)
        self.state = SDCAState(w, v, mu_unary, mu_pair, entropies, line_zeros(3),
                               line_zeros(N_COUNTERS, np.int64), line_zeros(1))
        lipschitz = None if p.radii is None else lam + weighted_radii(p) / n
        bounds = partition_bounds(p.train, o["partitions"])
        self.parts = [self._part(k, int(lo), int(hi), len(bounds) - 1, seed, lipschitz)
                      for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))]
        self.sampler = self.parts[0].sampler
        self.part_draws = np.zeros(len(self.parts), dtype=np.int64)  # draws of each part
        self._spares = None
        self.resync()
        self._steps = 0
        self._next_refresh = self.refresh_every * n if self.refresh_every > 0 else np.inf
        self._round_end_at = -1  # the step count at which a Catalyst round last ended
        self._round_gap, self._round_point = None, None  # that round's certified point
        self._next_round = n if self.catalyst is not None else np.inf  # a round: an epoch
        self._last = np.zeros(N_COUNTERS, dtype=np.int64)
        self._last_step_sum = 0.0

    def _part(self, k: int, lo: int, hi: int, parts: int, seed: int,
              lipschitz: np.ndarray | None) -> _Part:
        """Part k of ``parts``: sequences lo..hi - 1. The only part works on the solver's
        own arrays (sequential SDCA, step for step); one of several on its own rows of
        w, over the local subproblem of lambda / P (:mod:`.partitions`)."""
        p, s, o = self.problem, self.state, self.opts
        K = p.n_labels
        weights = p.train.weights[lo:hi] if p.train.weighted else np.ones(hi - lo)
        members = active_members(weights)
        if parts == 1:
            index, n_attr, rows, start = sequence_index(p.train, p.n_attributes), \
                p.n_attributes, NO_ROWS, np.zeros(0)
            state, options = s, self.options
        else:
            split = local_split(p.train, lo, hi, p.n_attributes, K)
            index, n_attr, rows = sequence_index(split.seq, split.n_attributes), \
                split.n_attributes, split.rows
            start = aligned_zeros(len(rows))
            v_k = aligned_zeros(len(rows))
            w_k = aligned_zeros(len(rows)) if p.l1 else v_k
            t0, t1 = int(p.train.offsets[lo]), int(p.train.offsets[hi])
            state = SDCAState(w_k, v_k, s.mu_unary[t0 * K:t1 * K],
                              s.mu_pair[(t0 - lo) * K * K:(t1 - hi) * K * K],
                              s.entropies[lo:hi], line_zeros(3),
                              line_zeros(N_COUNTERS, np.int64), line_zeros(1))
            mask = self.options.mask[rows] if len(self.options.mask) else self.options.mask
            options = self.options._replace(lam_n=self.options.lam_n / parts, mask=mask)
        max_len = int(np.max(np.diff(index.offsets)))
        vsize = max(max_distinct_attributes(index), 1) * K
        support = (vsize + 3 * K + K * K) if p.kappa else 0  # the crossing entries
        return _Part(
            lo, hi, members, index, n_attr, rows, start, options, state,
            SDCABuffers(make_workspace(max_len, K), aligned_zeros(vsize),
                        aligned_zeros(3 * K), aligned_zeros(K * K), aligned_zeros(K * K),
                        aligned_zeros(vsize if p.kappa else 0), aligned_zeros(support),
                        aligned_zeros(support)),
            make_sampler(o["sampler"], o["non_uniformity"], len(members),
                         None if lipschitz is None else lipschitz[lo + members]),
            make_rng(seed if k == 0 else seed * 1_000_003 + k))

    # -- driving -------------------------------------------------------------------------
    def run(self, n_steps: int) -> None:
        p = self.problem
        remaining = int(n_steps)
        while remaining > 0:
            chunk = int(min(remaining, max(self._next_refresh - self._steps, 1),
                            max(self._next_round - self._steps, 1)))
            self._run_parts(chunk)
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
        return float(sum(part.sampler.gaps.sum() for part in self.parts) / self.problem.n)

    def _run_parts(self, n_steps: int) -> None:
        """n_steps iterations. One part runs them as sequential SDCA. Several share them
        as the sampler would share them with one (in expectation, (1 - theta) n_k / n +
        theta M_k / M of the draws go to part k, M_k the scheme's mass of its sequences:
        their stored gaps, for gap sampling) and run them as one round
        (:mod:`.partitions`): each part from the round's w on its own copy, the threads
        taking the parts in turn, then the parts' changes added in part order."""
        p = self.problem
        if len(self.parts) == 1:
            part = self.parts[0]
            sdca_run(n_steps, part.state.w, part.n_attributes, p.n_labels, part.index,
                     part.state, part.buffers, part.sampler, part.rng, part.options,
                     part.members)
            return
        quota = part_steps(n_steps, [part.sampler for part in self.parts])
        self.part_draws += quota

        def run(part, steps):
            self._gather(part)
            sdca_run(steps, part.state.w, part.n_attributes, p.n_labels, part.index,
                     part.state, part.buffers, part.sampler, part.rng, part.options,
                     part.members)

        self._each_part(lambda k, part: run(part, int(quota[k])))
        self._combine()

    def _each_part(self, task) -> None:
        """task(k, part) for every part, the threads taking parts t, t + threads, ...: the
        parts are independent, so the order in which they run changes nothing."""
        parts, threads = self.parts, min(self.threads, len(self.parts))
        run_parallel([(lambda t=t: [task(k, parts[k]) for k in range(t, len(parts), threads)])
                      for t in range(threads)])

    def _gather(self, part: _Part) -> None:
        """The part's copy of the round's v (and w = S_kappa(v) with the elastic net)."""
        s = part.state
        gather(part.rows, self.state.v, s.v, part.start)
        if s.w is not s.v:
            soft_threshold(s.v, part.options.kappa, out=s.w)

    def _combine(self) -> None:
        """The round's end: v += (v_k - v_round) / P for each part k in turn (the parts'
        changes added, CoCoA+'s sigma' = P), then w = S_kappa(v) where v moved."""
        v, w, P = self.state.v, self.state.w, len(self.parts)
        for part in self.parts:
            add_change(part.rows, v, part.state.v, part.start, 1.0 / P)
        if w is not v:
            for part in self.parts:
                threshold_rows(v, w, part.rows, self.options.kappa)
        self.resync()

    def prepare(self) -> None:
        self._run_parts(0)

    def refresh_gaps(self) -> None:
        """Recompute every stored gap at the current weights (n oracle calls): each part
        on a thread, or the one part's sequences shared by the threads in chunks, each
        gap computed as one thread would, then stored in order."""
        p = self.problem

        def refresh(part, buffers):
            values = np.empty(len(part.members))
            run_parallel([
                (lambda t=t: gap_values(part.state.w, part.n_attributes, p.n_labels,
                                        part.index, part.state, buffers[t], part.members,
                                        values, t, len(buffers), REFRESH_CHUNK))
                for t in range(len(buffers))])
            record_gaps(part.state, part.sampler, values)

        if len(self.parts) == 1:
            refresh(self.parts[0], [self.parts[0].buffers, *self._spare_buffers()])
            return

        def gathered(part):
            self._gather(part)
            refresh(part, [part.buffers])

        self._each_part(lambda k, part: gathered(part))

    def _spare_buffers(self) -> list[SDCABuffers]:
        """Buffers for the threads past the first of a one-part refresh (made once)."""
        if self._spares is None:
            part, K = self.parts[0], self.problem.n_labels
            max_len = int(np.max(np.diff(part.index.offsets)))
            self._spares = [SDCABuffers(make_workspace(max_len, K), *(np.zeros(0),) * 3,
                                        aligned_zeros(K * K), *(np.zeros(0),) * 3)
                            for _ in range(self.threads - 1)]  # none on one thread
        return self._spares

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
        return sum(part.state.counters for part in self.parts)

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
        several parts, each part's sums are its own and the solver's state holds the
        whole)."""
        s = self.state
        s.scalars[W_NORM2] = dot(s.w, s.w)
        s.scalars[SUM_ENTROPY] = weighted_sum(s.entropies, self.problem.train)
        for part in self.parts:
            part.state.scalars[SUM_GAPS] = part.sampler.gaps.sum()
        s.scalars[SUM_GAPS] = sum(part.sampler.gaps.sum() for part in self.parts)

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
        """Cycle-counter ticks spent so far in each phase of a step, summed over parts."""
        c = self._counters()
        return {name: int(c[CYC_ORACLE + k]) for k, name in enumerate(PHASES)}

    def diagnostics(self) -> dict[str, float]:
        c = self._counters()
        d = c - self._last
        step_sum = sum(part.state.sums[SUM_STEP] for part in self.parts)
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
