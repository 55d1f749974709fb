"""SDCA for CRFs with exact line search and adaptive sampling (the paper's Algorithm 2)."""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..model.features import soft_threshold
from ..model.objective import (
    dirac_start,
    primal,
    sequence_entropies,
    store_sizes,
    unary_store,
    weighted_sum,
    weights_from_marginals,
)
from ..model.oracle import make_workspace
from ..runtime.barrier import make_barrier
from ..runtime.jit import aligned_empty, aligned_zeros, dot, line_zeros, stream_copy
from ..runtime.threads import run_parallel
from .base import Problem, Solver
from .catalyst import CatalystLoop, kappa_ratio, momentum_share
from .catalyst_kappa import KappaRule
from .compact_store import (
    compact_dirac_start,
    compact_from_exact,
    compact_store,
    compact_weights,
)
from .index import max_distinct_attributes, max_distinct_edge_attributes, sequence_index
from .minibatch import batch_run, make_batch, make_step_buffers
from .pipeline import (
    defers_w,
    make_flow,
    make_slots,
    pipeline_run,
    settle_bias_transitions,
    settle_weights,
)
from .registry import SDCA_OPTIONS, store_window_mib
from .rng import make_rng
from .sampling import make_sampler, window_size
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

X_PASS_WITHIN = 4.0
"""A Catalyst round's end certifies its solution x_k by a primal pass only when the
stored gaps' estimate of x_k's gap is within this many times the driver's ``stop_at``:
further out, x_k cannot end the run. The estimate (stale block gaps) was 1.0-1.9 times
the exact gap at every round end but the first of the default fits measured (Dutch, c2 =
0.01; CoNLL-2000, c2 = 0.1); a round end whose pass is left out certifies the moved w by
its refreshed gaps alone, and :meth:`SDCA.settle` makes the pass where a run ends there."""


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


def active_members(weights: np.ndarray) -> np.ndarray:
    """The sequences a sampler draws from: all but those of weight 0, which are out of the
    objective (``weights`` empty: every sequence)."""
    return np.flatnonzero(weights > 0).astype(np.int64)


def _check_compact(options, n_edges: int) -> None:
    """ConfigError unless the compact store can run with these options."""
    refused = [what for what, bad in (
        ("transition attributes (their edges need every edge's pairwise marginals)", n_edges),
        ("store_dtype float32", options["store_dtype"] != "float64"),
        ("batch_size > 1", options["batch_size"] > 1)) if bad]
    if refused:
        raise ConfigError(f"sdca: dual_store 'compact' does not run with {refused[0]} yet: "
                          "dual_store 'exact'")


def _compact_start(p: Problem, options, initial, threads: int):
    """The compact store, w_hat and the entropies a run starts from: the smoothed Dirac,
    or a kept dual state (a compact one: unary, pairwise sums, entropy bounds; or an exact
    one's marginals, summed, with their exact entropies)."""
    K, where = p.n_labels, options["store_dir"]
    if initial is None:
        return compact_dirac_start(p.train, p.n_attributes, K, p.lam, p.feature_mask,
                                   c=options["init_c"], directory=where,
                                   threads=threads if where is None else 1)  # a file: one pass
    if len(initial) == 2:
        mu_unary, mu_pair, entropies = compact_from_exact(p.train, K, *initial, where)
    else:
        mu_unary, mu_pair, entropies = compact_store(p.train, K, where)
        store = (mu_unary, mu_pair, entropies)
        if tuple(map(len, initial)) != tuple(map(len, store)):
            raise ValueError(f"an initial compact state of sizes {tuple(map(len, initial))}; "
                             f"the training set needs {tuple(map(len, store))}")
        for mine, given in zip(store, initial, strict=True):
            mine[:] = given
    v = compact_weights(mu_unary, mu_pair, p.train, p.n_attributes, K, p.lam,
                        p.feature_mask)
    return mu_unary, mu_pair, v, entropies


def _catalyst_support(p: Problem, initial_weights: np.ndarray | None) -> np.ndarray | None:
    """The weights Catalyst's points are kept on: the feature set, off which v and w stay
    0 (the directions are masked); None (the points dense) without a mask, or where the
    weights a run restarts from are not 0 off it."""
    if len(p.mask) == 0:
        return None
    off = p.mask == 0
    if initial_weights is not None and np.any(np.asarray(initial_weights)[off]):
        return None
    return np.flatnonzero(p.mask)


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
    dual marginals), ``dual_store`` (``exact`` or ``compact``, :mod:`.compact_store`),
    ``init_c`` (the constant c of the smoothed-Dirac initialization, ``math.md`` section
    5.1), ``catalyst`` (kappa / lambda of Catalyst's outer loop,
    :mod:`.catalyst`; 0: the paper's SDCA), ``catalyst_floor`` (the least kappa n) and
    ``catalyst_momentum`` (the share of its momentum kept; None: by the L1 term).
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
        if ratio:  # the share of Catalyst's momentum that runs, in the log
            o["catalyst_momentum"] = momentum_share(o["catalyst_momentum"], p.l1)
        if o["line_search"] == "fixed" and o["step_size"] is None:
            o["step_size"] = theoretical_step(problem, lam)
        self.subprecision = o["subprecision"]
        self.step_size = o["step_size"]
        self.refresh_every = o["refresh_every"]

        K, n = p.n_labels, p.n
        E = p.n_transition_attributes
        if E and p.l1:
            raise ConfigError("sdca: the elastic net (c1 > 0) with transition attributes is "
                              "not offered yet: c1 = 0, or algorithm 'lbfgs'")
        dtype, where = np.dtype(o["store_dtype"]), o["store_dir"]
        self.compact = o["dual_store"] == "compact"
        if self.compact:
            _check_compact(o, E)
            mu_unary, mu_pair, v, entropies = _compact_start(p, o, initial_marginals, self.threads)
        elif initial_marginals is None:  # the store, w_hat and the entropies
            mu_unary, mu_pair, v, entropies = dirac_start(
                p.train, p.n_attributes, K, p.lam, p.feature_mask, c=o["init_c"], dtype=dtype,
                directory=where, n_edges=E,
                threads=self.threads if where is None else 1)  # a file's store: one pass
        else:
            mu_unary = unary_store(len(initial_marginals[0]), dtype, where)
            mu_unary[:] = initial_marginals[0]
            mu_pair = stream_copy(np.asarray(initial_marginals[1]), dtype, where)
            if (len(mu_unary), len(mu_pair)) != store_sizes(p.train, K):
                raise ValueError(f"initial marginals of sizes {len(mu_unary)}, "
                                 f"{len(mu_pair)}; the training set needs "
                                 f"{store_sizes(p.train, K)}")
            v = weights_from_marginals(mu_unary, mu_pair, p.train, p.n_attributes, K, p.lam,
                                       p.feature_mask, E)
            entropies = sequence_entropies(mu_unary, mu_pair, K, p.train.offsets,
                                           aligned_empty(n))
        self.catalyst = self.kappa_rule = None
        spare = None  # an array of the weights' size free for w (its first writes are dear)
        if ratio:
            x0 = soft_threshold(v, p.kappa) if p.l1 else v
            self.catalyst = CatalystLoop(p.lam, p.l1, ratio, x0, v, initial_weights,
                                         _catalyst_support(p, initial_weights),  # copies x0
                                         o["catalyst_momentum"])
            v = self.catalyst.inner_image(v)
            spare = x0 if p.l1 else None
            if o["catalyst_tune"]:
                self.kappa_rule = KappaRule(o["catalyst"] * p.lam)
        kappa = p.l1 / lam  # S_kappa(v) = w, for the inner problem with Catalyst
        w = soft_threshold(v, kappa, out=spare) if p.l1 else v
        self.options = SDCAOptions(
            lam_n=lam * n, method=LINE_SEARCH_CODES[o["line_search"]],
            tol=self.subprecision, fixed_step=self.step_size if self.step_size is not None
            else 1.0, exact_store=o["store_dtype"] == "float64",
            midpoint=o["line_search_start"] == "midpoint", mask=p.mask, kappa=kappa,
            compact=self.compact, l1_bound=o["l1_line_search"] == "bound")
        self.state = SDCAState(w, v, mu_unary, mu_pair, entropies, line_zeros(3),
                               line_zeros(N_COUNTERS, np.int64), line_zeros(1))
        lipschitz = None if p.radii is None else lam + weighted_radii(p) / n
        self.index = sequence_index(p.train, p.n_attributes)
        self.members = active_members(p.train.weights if p.train.weighted else np.ones(n))
        store = mu_unary.nbytes + mu_pair.nbytes
        self.window = window_size(len(self.members), store / n,
                                  store_window_mib(o) * 2**20)
        self.sampler = make_sampler(o["sampler"], o["non_uniformity"], len(self.members),
                                    None if lipschitz is None else lipschitz[self.members],
                                    window=self.window, spill=o["window_spill"])
        self.rng = make_rng(seed)
        max_len = int(np.max(np.diff(self.index.offsets)))
        vsize = max(max_distinct_attributes(self.index), 1) * K
        support = (vsize + 3 * K + K * K) if p.kappa else 0  # the crossing entries
        edges = p.train.has_edges
        self.buffers = SDCABuffers(
            make_workspace(max_len, K, edges), aligned_zeros(vsize), aligned_zeros(3 * K),
            aligned_zeros(K * K), aligned_zeros(self._tables(max_len) * K * K),
            aligned_zeros(vsize if p.kappa else
                          max_distinct_edge_attributes(self.index) * K * K),  # never both
            aligned_zeros(support), aligned_zeros(support))
        # a batch of at most an eighth of the sequences: on a handful of them a batch of
        # all would be one stale step for each (the dual checks would keep few)
        self.batch_size = min(o["batch_size"], max(len(self.members) // 8, 1))
        if self.batch_size > 1:
            self.batch = make_batch(self.batch_size)
            self.step_buffers = make_step_buffers(self.batch_size, self.buffers)
            # each computing thread's counters (its oracle calls and line-search
            # evaluations), the rest of the state shared
            self.thread_states = [
                self.state._replace(counters=line_zeros(N_COUNTERS, np.int64),
                                    sums=line_zeros(1))
                for _ in range(min(self.threads, self.batch_size))]
            self.barrier = make_barrier()
        self.pipeline = bool(o["pipeline"]) and self.batch_size == 1
        self._settled = None  # the weights whose w = S(v) a pipeline's run leaves to set
        self._w_stale = False  # whether it left them (set when w is next read)
        if self.pipeline:
            self.slots = make_slots(self.buffers)
            self.flow = make_flow(K, len(self.buffers.v_emission))
            if defers_w(self.options):  # its moves leave w (:mod:`.pipeline`)
                self._settled = (np.flatnonzero(p.mask) if len(p.mask) else
                                 np.zeros(0, dtype=np.int64))
            self.thread_states = [
                self.state._replace(counters=line_zeros(N_COUNTERS, np.int64))
                for _ in range(min(self.threads, 2))]
        self._pending = 0  # draws asked for that do not fill a batch yet
        self._spares = None
        self._steps = 0
        self._dual_at = (-1, np.nan)  # (the step count, D(mu) there): see dual()
        self._conjugate_at = (-1, np.nan)  # (the step count, g*(u) there, a pass made it)
        self.resync()
        self._next_refresh = self.refresh_every * n if self.refresh_every > 0 else np.inf
        self._round_end_at = -1  # the step count at which a Catalyst round last ended
        self._round_gap, self._round_point = None, None  # that round's certified point
        self._x_dense = None  # x_k over every weight, once asked for
        self._x_left = False  # whether that round end left out x_k's primal pass
        self._next_round = n if self.catalyst is not None else np.inf  # a round: an epoch
        self._last = np.zeros(N_COUNTERS, dtype=np.int64)
        self._last_step_sum = 0.0

    # -- driving -------------------------------------------------------------------------
    def run(self, n_steps: int) -> None:
        p = self.problem
        self._x_dense = None
        remaining = int(n_steps)
        while remaining > 0:
            chunk = int(min(remaining, max(self._next_refresh - self._steps, 1),
                            max(self._next_round - self._steps, 1)))
            self._run_steps(chunk)
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
        runs without this check, so the iterates are the same. With ``catalyst_tune``,
        every :data:`~.catalyst_kappa.PROBE_EVERY` rounds x_k's pass is made whatever its
        estimate, and kappa moves by the inner gap's share in it (:mod:`.catalyst_kappa`)
        before the refresh."""
        cat, rule = self.catalyst, self.kappa_rule
        probe = rule is not None and rule.probes(cat.rounds + 1)
        self._x_left = (not probe and self.stop_at is not None
                        and self.gap_estimate() > X_PASS_WITHIN * self.stop_at)
        x_gap = np.inf if self._x_left else self._primal_gap(self._current_w())
        kappa = cat.kappa
        if probe:  # the share of the inner problem's gap in x_k's certificate
            excess = cat.gap_estimate(0.0, self.state.v)
            kappa = rule.next(max(x_gap - excess, 0.0) / x_gap if x_gap > 0 else 0.0, kappa)
        terms = cat.next_round(self.state.v, self.state.w)  # w = S(v) there, x_k from v
        self._w_settled_by_round()
        if kappa != cat.kappa:
            lam = cat.retune(kappa, self.state.v, self.state.w)
            p = self.problem
            self.options = self.options._replace(lam_n=lam * p.n, kappa=p.l1 / lam)
            terms = None  # the same u (and g*(u)), another w
        w_gap = self._refreshed_gap(terms)
        self._round_gap = min(x_gap, w_gap)
        self._round_point = "x" if x_gap <= w_gap else "w"
        self._round_end_at = self._steps
        self._next_round += self.problem.n

    def _w_settled_by_round(self) -> None:
        """A round's end set w = S(v) on Catalyst's support (every weight, or the feature
        set, which holds the weights a pipeline's run leaves to set): the bias and
        transitions remain."""
        if self._w_stale:
            p, s = self.problem, self.state
            settle_bias_transitions(s.v, s.w, self.options.kappa, p.n_attributes, p.n_labels)
            self._w_stale = False

    def settle(self) -> bool:
        """At a round end that left out x_k's primal pass (``X_PASS_WITHIN``), make it:
        the run ends here, and x_k is almost always the better point."""
        if not (self._x_left and self._at_round_end()):
            return False
        self._x_left = False
        x_gap = self._primal_gap(self._x_point())
        if x_gap <= self._round_gap:
            self._round_gap, self._round_point = x_gap, "x"
        return True

    def _x_point(self) -> np.ndarray:
        """The last round's solution x_k over every weight (made once per round end, on
        demand: the loop keeps it on the feature set)."""
        if self._x_dense is None:
            self._x_dense = self.catalyst.dense(self.catalyst.previous)
        return self._x_dense

    def _primal_gap(self, w: np.ndarray) -> float:
        """P(w) - D(mu) of the original problem, exactly: a primal pass (the mean of the
        stored gaps refreshed at w, plus the O(d) rest, is the same number, but the
        refresh reads the whole marginal store too)."""
        p = self.problem
        value = primal(w, p.train, p.n_attributes, p.n_labels, p.lam, p.l1, self.threads)
        return max(value - self.dual(), 0.0)  # rounding must not make it negative

    def _refreshed_gap(self, terms: tuple[float, float] | None) -> float:
        """P(w) - D(mu) of the original problem at the current w, exactly: every stored
        gap refreshed there (n scores-and-forward passes), the inner mean plus the O(d)
        rest (``terms``: its parts, where the round's pass made them)."""
        self.refresh_gaps()
        self.resync()
        if terms is not None:
            self._conjugate_at = (self._steps, terms[0])
        return self.catalyst.gap_estimate(self._mean_stored_gap(), self.state.v, terms)

    def _at_round_end(self) -> bool:
        return self.catalyst is not None and self._round_end_at == self._steps

    def _mean_stored_gap(self) -> float:
        return float(self.sampler.gaps.sum() / self.problem.n)

    def _run_steps(self, n_steps: int) -> None:
        """n_steps draws: sequential SDCA, or in batches of ``batch_size``
        (:mod:`.minibatch`), the threads computing a batch's steps (draws that do not
        fill a batch wait for the next call)."""
        p, s = self.problem, self.state
        if self.pipeline:
            self.flow.counters[:] = 0
            threads = len(self.thread_states)
            self._w_stale = self._settled is not None  # also if the run is interrupted
            run_parallel([
                (lambda t=t: pipeline_run(t, threads, n_steps, s.w, p.n_attributes,
                                          p.n_labels, self.index, s, self.thread_states[t],
                                          self.slots, self.sampler, self.rng, self.options,
                                          self.members, self.flow))
                for t in range(threads)])
            return
        if self.batch_size == 1:
            sdca_run(n_steps, s.w, p.n_attributes, p.n_labels, self.index, s, self.buffers,
                     self.sampler, self.rng, self.options, self.members)
            return
        n_batches, self._pending = divmod(self._pending + n_steps, self.batch_size)
        threads = len(self.thread_states)
        run_parallel([
            (lambda t=t: batch_run(t, threads, n_batches, s.w, p.n_attributes, p.n_labels,
                                   self.index, s, self.thread_states[t], self.step_buffers,
                                   self.sampler, self.rng, self.options, self.members,
                                   self.batch, self.barrier))
            for t in range(threads)])

    def prepare(self) -> None:
        self._run_steps(0)

    def _current_w(self) -> np.ndarray:
        """w, first set to S_kappa(v) where a pipeline's elastic-net run left it (its
        steps move v alone, :mod:`.pipeline`): once per reading of w, not per run (the
        training loop runs a tenth of an epoch at a time; 6 ms a time on CoNLL-2000)."""
        if self._w_stale:
            p, s = self.problem, self.state
            settle_weights(s.v, s.w, self.options.kappa, self._settled, p.n_attributes,
                           p.n_labels)
            self._w_stale = False
        return self.state.w

    def refresh_gaps(self) -> None:
        """Recompute every stored gap at the current weights (n oracle calls), the
        sequences shared by the threads in chunks, each gap computed as one thread would,
        then stored in order."""
        p, s, w = self.problem, self.state, self._current_w()
        buffers = [self.buffers, *self._spare_buffers()]
        values = np.empty(len(self.members))
        run_parallel([
            (lambda t=t: gap_values(w, p.n_attributes, p.n_labels, self.index, s,
                                    buffers[t], self.members, values, t, len(buffers),
                                    REFRESH_CHUNK, self.compact))
            for t in range(len(buffers))])
        record_gaps(s, self.sampler, values)

    def _spare_buffers(self) -> list[SDCABuffers]:
        """Buffers for the threads past the first of a refresh (made once)."""
        if self._spares is None:
            K = self.problem.n_labels
            max_len = int(np.max(np.diff(self.index.offsets)))
            self._spares = [SDCABuffers(make_workspace(max_len, K, self.problem.train.has_edges),
                                        *(np.zeros(0),) * 3,
                                        aligned_zeros(self._tables(max_len) * K * K),
                                        *(np.zeros(0),) * 3)
                            for _ in range(self.threads - 1)]  # none on one thread
        return self._spares

    def _tables(self, max_len: int) -> int:
        """The transition tables the oracle reads: W, or one per edge of the longest
        sequence with transition attributes."""
        return max(max_len - 1, 1) if self.problem.train.has_edges else 1

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
        if self._at_round_end() and self._round_point == "x":
            return self._x_point()
        return self._current_w()

    def final_weights(self) -> np.ndarray:
        """``weights()`` once no step follows: x_k is made in v's array (the run's v is
        not read again), so that the end needs no third vector of the weights' size."""
        self._current_w()  # before v's array is overwritten
        if self._at_round_end() and self._round_point == "x" and self._x_dense is None:
            self._x_dense = self.catalyst.dense(self.catalyst.previous, out=self.state.v)
        return self.weights()

    def nonzero_weights(self) -> int:
        if self._at_round_end() and self._round_point == "x":
            return int(np.count_nonzero(self.catalyst.previous))
        return int(np.count_nonzero(self._current_w()))

    def _counters(self) -> np.ndarray:
        if self.pipeline:
            return self.state.counters + sum(t.counters for t in self.thread_states)
        if self.batch_size == 1:
            return self.state.counters.copy()
        return self.state.counters + sum(t.counters for t in self.thread_states)

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
        beyond one reading. D(mu) moves with the marginals alone (a Catalyst round's end
        moves v and w, not the dual sum u), so between two steps it is read once: a round
        end reads it up to three times, each an O(d) pass on CoNLL-2000's 453,094 features.
        """
        if self._dual_at[0] == self._steps:
            return self._dual_at[1]
        self.resync()
        s = self.state.scalars
        if self.catalyst is not None:
            at, conjugate = self._conjugate_at
            value = self.catalyst.dual(self.state.v, s[SUM_ENTROPY] / self.problem.n,
                                       conjugate if at == self._steps else None)
        else:
            value = -0.5 * self.problem.lam * s[W_NORM2] + s[SUM_ENTROPY] / self.problem.n
        self._dual_at = (self._steps, value)
        return value

    def resync(self) -> None:
        """Recompute the maintained sums exactly (removes floating-point drift); ||w||^2
        only without Catalyst, the one dual that reads it (Catalyst's reads g*(u); a pass
        over every weight, 59 MB on CoNLL-2000, four times a round)."""
        s = self.state
        if self.catalyst is None:
            w = self._current_w()
            s.scalars[W_NORM2] = dot(w, w)
        s.scalars[SUM_ENTROPY] = weighted_sum(s.entropies, self.problem.train)
        s.scalars[SUM_GAPS] = self.sampler.gaps.sum()

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
            terms = self.catalyst.gap_terms(self.state.v)  # reads S(v), not w
            self._conjugate_at = (self._steps, terms[0])  # for dual() at the same mu
            return self.catalyst.gap_estimate(inner, self.state.v, terms)
        return inner

    def gap_estimate_floor(self) -> float:
        """The mean of the stored block gaps (O(n)): the estimate itself, or with
        Catalyst the inner problem's part of it, to which an O(d) pass adds the rest (at
        a round's end, the round's exact gap)."""
        return self._round_gap if self._at_round_end() else self._mean_stored_gap()

    @property
    def marginals(self) -> tuple[np.ndarray, ...]:
        """The dual marginal store: (unary, pairwise), or the compact store's (unary,
        pairwise sums, entropy bounds)."""
        s = self.state
        return (s.mu_unary, s.mu_pair, s.entropies) if self.compact else (s.mu_unary,
                                                                          s.mu_pair)

    def phase_cycles(self) -> dict[str, int]:
        """Cycle-counter ticks spent so far in each phase of a step (sequential SDCA; a
        batch's steps are not profiled)."""
        c = self._counters()
        return {name: int(c[CYC_ORACLE + k]) for k, name in enumerate(PHASES)}

    def diagnostics(self) -> dict[str, float]:
        c = self._counters()
        d = c - self._last
        step_sum = self.state.sums[SUM_STEP]
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
        if self.catalyst is not None:  # where the run is (catalyst_tune moves it)
            out["kappa_n"] = self.catalyst.kappa * self.problem.n
        self._last = c
        self._last_step_sum = step_sum
        return out

    def config(self) -> dict:
        """The base's, with the window the draws keep to where there is one (sequences)."""
        out = super().config()
        if self.window:
            out["window_sequences"] = self.window
        return out

    def memory_bytes(self) -> dict[str, int]:
        s = self.state
        out = {"weights": s.w.nbytes, "per_sequence": s.entropies.nbytes * 4}
        if self.opts["store_dir"] is None:  # else in a file, the page cache's
            out["marginals_unary"] = s.mu_unary.nbytes
            out["marginals_pairwise"] = s.mu_pair.nbytes
        if self.catalyst is not None:
            out["catalyst_points"] = self.catalyst.nbytes
        return out


__all__ = ["SDCA", "theoretical_step"]
