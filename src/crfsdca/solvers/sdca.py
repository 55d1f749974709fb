"""SDCA for CRFs with exact line search and adaptive sampling (the paper's Algorithm 2)."""

from __future__ import annotations

import numpy as np

from ..model.objective import dirac_marginals, sequence_entropies, weights_from_marginals
from ..model.oracle import make_workspace
from .base import Problem, Solver
from .random import make_rng
from .sampling import SCHEMES, make_sampler
from .sdca_kernel import (
    CYC_LS,
    CYC_ORACLE,
    LINE_SEARCHES,
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
    SDCAState,
    SequenceIndex,
    build_index,
    refresh_gaps,
    sdca_run,
)

STORE_DTYPES = {"float64": np.float64, "float32": np.float32}


def sequence_index(seq, n_attributes: int) -> SequenceIndex:
    """The split plus per-sequence distinct attribute lists used by sparse updates."""
    n = seq.n_sequences
    uniq_ptr = np.zeros(n + 1, dtype=np.int64)
    uniq_attr = np.zeros(seq.nnz, dtype=np.int32)
    local = np.zeros(seq.nnz, dtype=np.int32)
    total = build_index(seq.offsets, seq.attr_indptr, seq.attr_indices, n_attributes, uniq_ptr,
                        uniq_attr, local)
    return SequenceIndex(seq.offsets, seq.labels, seq.attr_indptr, seq.attr_indices, uniq_ptr,
                         uniq_attr[:total].copy(), local)


def theoretical_step(problem: Problem) -> float:
    """Uniform SDCA's fixed step (1 + R / (lambda n))^-1 with R = max_i R_i."""
    if problem.radii is None:
        raise ValueError("the theoretical step size needs the radii R_i of the dataset")
    return 1.0 / (1.0 + float(np.max(problem.radii)) / (problem.lam * problem.n))


class SDCA(Solver):
    """Stochastic dual coordinate ascent on the CRF dual (marginal parametrization).

    Parameters
    ----------
    sampler: one of ``uniform, importance, gap, gap-importance, max, perm, cyclic``.
    non_uniformity: theta, the share of draws that follow the scheme (rest uniform).
    line_search: ``newton`` (safeguarded, to ``subprecision``), ``single-newton`` (the
        same search stopped after its first Newton step, taken from the regula-falsi
        point; a Newton step from 0 vanishes under the log-barrier of the near-Dirac
        start, one from 1 overshoots and diverges on every dataset), ``fixed``
        (``step_size``, or the theoretical step if None) or ``golden``.
    refresh_every: recompute every stored gap every that many epochs (0: never).
    store_dtype: ``float64`` or ``float32`` storage of the dual marginals.
    init_c: the constant c of the smoothed-Dirac initialization (eq. 21).
    """

    name = "sdca"

    def __init__(self, problem: Problem, sampler: str = "gap", non_uniformity: float = 0.8,
                 line_search: str = "newton", subprecision: float = 1e-3,
                 step_size: float | None = None, refresh_every: float = 0.0,
                 store_dtype: str = "float64", init_c: float = 10.0, seed: int = 0):
        super().__init__(problem, seed)
        if line_search not in LINE_SEARCHES:
            raise ValueError(f"unknown line search {line_search!r}; choose one of "
                             f"{', '.join(LINE_SEARCHES)}")
        if store_dtype not in STORE_DTYPES:
            raise ValueError(f"store_dtype must be one of {', '.join(STORE_DTYPES)}")
        if not subprecision > 0:
            raise ValueError(f"subprecision must be positive, got {subprecision}")
        self.sampler_name = sampler
        self.line_search = line_search
        self.subprecision = float(subprecision)
        if line_search == "fixed" and step_size is None:
            step_size = theoretical_step(problem)
        if step_size is not None and not 0.0 < step_size <= 1.0:
            raise ValueError(f"step size must be in (0, 1], got {step_size}")
        self.step_size = step_size
        self.refresh_every = float(refresh_every)
        self.store_dtype = store_dtype
        self.init_c = float(init_c)

        p = problem
        K, n = p.n_labels, p.n
        self._lam_n = p.lam * n
        self.index = sequence_index(p.train, p.n_attributes)
        mu_unary, mu_pair = dirac_marginals(p.train, K, c=init_c,
                                            dtype=STORE_DTYPES[store_dtype])
        w = weights_from_marginals(mu_unary, mu_pair, p.train, p.n_attributes, K, p.lam)
        entropies = sequence_entropies(mu_unary, mu_pair, K, p.train.offsets, np.empty(n))
        scalars = np.zeros(3)
        scalars[W_NORM2] = w @ w
        scalars[SUM_ENTROPY] = entropies.sum()
        self.state = SDCAState(w, mu_unary, mu_pair, entropies, scalars,
                               np.zeros(N_COUNTERS, dtype=np.int64), np.zeros(1))
        lipschitz = None if p.radii is None else p.lam + np.asarray(p.radii) / n
        self.sampler = make_sampler(sampler, non_uniformity, n, lipschitz)
        scalars[SUM_GAPS] = self.sampler.gaps.sum()
        self.rng = make_rng(seed)
        max_len = int(np.max(p.train.lengths()))
        ws = make_workspace(max_len, K)
        max_uniq = int(np.max(np.diff(self.index.uniq_ptr))) if n else 0
        self.buffers = SDCABuffers(ws.scores, ws.emit, ws.alpha, ws.beta, ws.scale, ws.trans,
                                   ws.unary, ws.pair, np.zeros(max(max_uniq, 1) * K),
                                   np.zeros(3 * K), np.zeros(K * K))
        self._steps = 0
        self._next_refresh = self.refresh_every * n if self.refresh_every > 0 else np.inf
        self._last = np.zeros(N_COUNTERS, dtype=np.int64)
        self._last_step_sum = 0.0

    # -- driving -------------------------------------------------------------------------
    def run(self, n_steps: int) -> None:
        p = self.problem
        method = LINE_SEARCHES[self.line_search]
        fixed = self.step_size if self.step_size is not None else 1.0
        exact = self.store_dtype == "float64"
        remaining = int(n_steps)
        while remaining > 0:
            chunk = int(min(remaining, max(self._next_refresh - self._steps, 1)))
            sdca_run(chunk, self.state.w, p.n_attributes, p.n_labels, self.index, self.state,
                     self.buffers, self.sampler, self.rng, self._lam_n, method,
                     self.subprecision, fixed, exact)
            self._steps += chunk
            remaining -= chunk
            if self._steps >= self._next_refresh:
                self.refresh_gaps()
                self._next_refresh += self.refresh_every * p.n

    def prepare(self) -> None:
        p = self.problem
        sdca_run(0, self.state.w, p.n_attributes, p.n_labels, self.index, self.state,
                 self.buffers, self.sampler, self.rng, self._lam_n,
                 LINE_SEARCHES[self.line_search], self.subprecision, 1.0,
                 self.store_dtype == "float64")

    def refresh_gaps(self) -> None:
        """Recompute every stored gap at the current weights (n oracle calls)."""
        p = self.problem
        refresh_gaps(self.state.w, p.n_attributes, p.n_labels, self.index, self.state,
                     self.buffers, self.sampler)

    # -- reading ---------------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        return self.state.w

    def counters(self) -> dict[str, int]:
        c = self.state.counters
        return {"oracle_fb": int(c[ORACLE]), "oracle_fwd": 0, "updates": int(c[UPDATES]),
                "ls_evals": int(c[LS_EVALS])}

    def dual(self) -> float:
        """D(mu) = -lam/2 ||w||^2 + (1/n) sum_i H~(mu_i), from the maintained sums.

        The kernel keeps ||w||^2 and sum_i H~(mu_i) current in O(1) per step; reading the
        dual first re-anchors them exactly (O(d + n)), so rounding never accumulates
        beyond one reading.
        """
        self.resync()
        s = self.state.scalars
        return -0.5 * self.problem.lam * s[W_NORM2] + s[SUM_ENTROPY] / self.problem.n

    def resync(self) -> None:
        """Recompute the maintained sums exactly (removes floating-point drift)."""
        s = self.state
        s.scalars[W_NORM2] = s.w @ s.w
        s.scalars[SUM_ENTROPY] = s.entropies.sum()
        s.scalars[SUM_GAPS] = self.sampler.gaps.sum()

    def gap_estimate(self) -> float:
        """Mean of the stored (possibly stale) block gaps.

        Maintained in O(1) per step by the kernel and re-anchored here in O(n): the
        running sum starts at 100 n and falls to about n * 1e-12, so the updates alone
        would leave an absolute error of about 1e-12 in the mean.
        """
        self.state.scalars[SUM_GAPS] = self.sampler.gaps.sum()
        return float(self.state.scalars[SUM_GAPS] / self.problem.n)

    @property
    def marginals(self) -> tuple[np.ndarray, np.ndarray]:
        """The dual marginal store (unary, pairwise)."""
        return self.state.mu_unary, self.state.mu_pair

    def diagnostics(self) -> dict[str, float]:
        c = self.state.counters.copy()
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
        self._last = c
        self._last_step_sum = step_sum
        return out

    def memory_bytes(self) -> dict[str, int]:
        s = self.state
        return {"marginals_unary": s.mu_unary.nbytes, "marginals_pairwise": s.mu_pair.nbytes,
                "weights": s.w.nbytes, "per_sequence": s.entropies.nbytes * 4}

    def config(self) -> dict:
        return {**super().config(), "sampler": self.sampler_name,
                "non_uniformity": self.sampler.theta, "line_search": self.line_search,
                "subprecision": self.subprecision, "step_size": self.step_size,
                "refresh_every": self.refresh_every, "store_dtype": self.store_dtype,
                "init_c": self.init_c}


__all__ = ["SDCA", "SCHEMES", "sequence_index", "theoretical_step"]
