"""SAG, SAG-NUS and SAG-NUS* for CRFs (Schmidt et al. 2015; ``baselines.md`` sections 2-5).

One class, three variants:

- ``sag``: uniform sampling with replacement, one global Lipschitz estimate L
  found by a line search on f_i at every iteration (doubling from
  L 2^(-1/n)), step 1/(L + lambda) [C13, SAGlineSearch].
- ``sag-nus``: per-example L_i, sampling of unseen examples with probability
  (n - m)/n, otherwise half uniform over the seen ones and half proportional
  to L_i (sum tree) [C13]; step size
  ((n-m)/n)/(Lmax + lambda) + (m/n)(1/(2(Lmax + lambda)) + 1/(2(Lmean + lambda))) [C13].
- ``sag-nus-star``: SAG-NUS that skips the line search of an example for
  2^(streak-1) visits after ``streak`` consecutive searches accepted without
  doubling (section 5).

All variants store per example its unary marginals and summed pairwise marginals
at the last visit (memory trick, section 2.1), keep the sum of stored gradients
``dvec`` (section 2.2; the step divides by m, the number of examples seen so
far), apply the emission part of every step just in time through the scaled
representation E = c V (section 2.3) and test the Lipschitz condition
f_i(w - g_i/L) <= f_i(w) - ||g_i||^2/(2L) with one forward pass per trial
(section 2.4, counted in ``oracle_fwd``), skipped when ||g_i||^2 <= 1e-8.

Open choices of ``baselines.md`` section 9 taken here (defaults; the
alternatives are reachable by the parameters named):

- 9.2 decrease of L_i: x0.9 before every search on a revisit
  (``decrease=0.9``; ``decrease=0.5`` gives [C13]'s halving rule). "Every visit where
  a line search is run" (9.2 (a), section 5's note) is read literally: when the
  guard ||g_i||^2 <= 1e-8 skips the search, L_i keeps its value, since nothing
  certifies a smaller one (``decrease_guarded=True`` decreases it anyway, section 4.3);
- 9.3 first visit: L_i starts at 0.5 x mean of the seen L_j, 1 if none
  (``first_visit=0.5``; 1.0 starts at the mean);
- 9.4 step size: [C13]'s average of the safe and aggressive steps
  (``step_rule="c13"``; ``"harmonic"`` is 1/((Lmax + Lmean)/2 + lambda)),
  Lmax the decayed running maximum;
- 9.5 unseen examples drawn as in [C13];
- 9.6 SAG-NUS* skips 2^(streak-1) visits; L_i is decreased before every
  search that is run, never on a skipped visit; the guard leaves streaks alone;
- 9.9 guard ||g||^2 <= 1e-8 (``guard``); at most ``max_doublings`` = 60 doublings
  per search (a safety cap against rounding, [X], counted in diagnostics);
- 9.10 flush every n iterations, when c < 1e-100, and before w is read;
  stored marginals in float64 (``store_dtype="float32"`` halves them; dvec then
  stays the exact sum of the stored, rounded gradients).
"""

from __future__ import annotations

import numpy as np

from ..model.oracle import make_workspace
from ..runtime.jit import aligned_zeros
from .base import Problem, Solver
from .index import max_distinct_attributes, sequence_index
from .registry import SAG_OPTIONS
from .rng import make_rng
from .sag_kernel import (
    CAPPED,
    CYC_LS,
    CYC_STEP,
    DOUBLINGS,
    FLUSHES,
    GUARDED,
    L_GLOBAL,
    L_MAX,
    LS_EVALS,
    N_COUNTERS,
    ORACLE_FB,
    ORACLE_FWD,
    SAG,
    SCALE,
    SEARCHES,
    SEEN_COUNT,
    SKIPPED,
    STEP_RULE_CODES,
    SUM_STEP,
    UPDATES,
    VARIANTS,
    SAGBuffers,
    SAGOptions,
    SAGState,
    flush,
    sag_run,
)
from .trees import make_sum_tree


class SAGFamily(Solver):
    """SAG (``variant="sag"``), SAG-NUS (``"sag-nus"``) or SAG-NUS* (``"sag-nus-star"``).

    ``variant`` is ``sag``, ``sag-nus`` or ``sag-nus-star``. Options
    (:data:`~crfsdca.solvers.registry.SAG_OPTIONS`): ``lipschitz_init`` is the initial
    global L of SAG and the L_i of the first example SAG-NUS visits [C13]; the others
    are the open choices of ``baselines.md`` section 9 (module docstring).
    """

    OPTIONS = SAG_OPTIONS

    def __init__(self, problem: Problem, variant: str = "sag", seed: int = 0, threads: int = 1,
                 **options):
        if variant not in VARIANTS:
            raise ValueError(f"unknown SAG variant {variant!r}; choose one of "
                             f"{', '.join(VARIANTS)}")
        self.name = variant
        super().__init__(problem, seed, threads, **options)
        self.variant = variant
        o = self.opts

        p = problem
        n, K, A = p.n, p.n_labels, p.n_attributes
        d = p.dim
        self.index = sequence_index(p.train, A)
        dtype = np.dtype(o["store_dtype"])
        scalars = np.zeros(4)
        scalars[SCALE] = 1.0
        scalars[L_GLOBAL] = o["lipschitz_init"]
        scalars[L_MAX] = 1.0
        self.state = SAGState(
            w=aligned_zeros(d), dvec=aligned_zeros(d), cum=np.zeros(n + 1),
            last=np.zeros(A, dtype=np.int64),
            store_unary=aligned_zeros(p.train.n_tokens * K, dtype),
            store_pair=aligned_zeros(n * K * K, dtype),
            seen=np.zeros(n, dtype=np.uint8), lip=np.zeros(n),
            streak=np.zeros(n, dtype=np.int64), skip=np.zeros(n, dtype=np.int64),
            order=np.arange(n, dtype=np.int64), tree=make_sum_tree(np.zeros(n)),
            scalars=scalars, ints=np.zeros(2, dtype=np.int64),
            counters=np.zeros(N_COUNTERS, dtype=np.int64))
        self.options = SAGOptions(
            variant=VARIANTS[variant], lam=float(p.lam), lipschitz_init=o["lipschitz_init"],
            guard=o["guard"], decrease=o["decrease"], decrease_guarded=o["decrease_guarded"],
            first_visit=o["first_visit"], decay=2.0 ** (-1.0 / n),
            max_doublings=o["max_doublings"],
            step_rule=STEP_RULE_CODES[o["step_rule"]], mask=p.mask)
        self.rng = make_rng(seed)
        ws = make_workspace(int(np.max(p.train.lengths())), K)
        tk = len(ws.scores)
        trial = ws._replace(scores=aligned_zeros(tk), trans=aligned_zeros(K * K))
        max_uniq = max_distinct_attributes(self.index)
        self.buffers = SAGBuffers(
            ws, trial, aligned_zeros(tk), aligned_zeros(tk),
            aligned_zeros(max(max_uniq, 1) * K), aligned_zeros(3 * K), aligned_zeros(K * K),
            aligned_zeros(K * K), aligned_zeros(K * K))
        self._last = self.state.counters.copy()
        self._last_step_sum = 0.0

    # -- driving -------------------------------------------------------------------------
    def run(self, n_steps: int) -> None:
        p = self.problem
        sag_run(int(n_steps), self.state, self.index, self.buffers, self.rng, p.n_attributes,
                p.n_labels, self.options)

    def flush(self) -> None:
        """Apply every pending lazy update to the emission block (O(A K))."""
        if self.state.ints[0] > 0 or self.state.scalars[SCALE] != 1.0:
            flush(self.state, self.problem.n_attributes, self.problem.n_labels)

    # -- reading ---------------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        """The exact current w (flushes the lazy updates first)."""
        self.flush()
        return self.state.w

    def counters(self) -> dict[str, int]:
        c = self.state.counters
        return {"oracle_fb": int(c[ORACLE_FB]), "oracle_fwd": int(c[ORACLE_FWD]),
                "updates": int(c[UPDATES]), "ls_evals": int(c[LS_EVALS])}

    @property
    def seen_count(self) -> int:
        return int(self.state.ints[SEEN_COUNT])

    def average_gradient(self) -> np.ndarray:
        """dvec / m, SAG's running average of the stored gradients (data term only)."""
        return self.state.dvec / max(self.seen_count, 1)

    def lipschitz(self) -> float:
        """The current global L (SAG) or the mean of the seen L_i (SAG-NUS, SAG-NUS*)."""
        if self.options.variant == SAG:
            return float(self.state.scalars[L_GLOBAL])
        return float(self.state.tree[1] / max(self.seen_count, 1))

    def diagnostics(self) -> dict[str, float]:
        c = self.state.counters.copy()
        d = c - self._last
        updates = max(int(d[UPDATES]), 1)
        step_sum = self.state.scalars[SUM_STEP]
        out = {
            "ls_iters": d[LS_EVALS] / updates,
            "ls_time_share": d[CYC_LS] / d[CYC_STEP] if d[CYC_STEP] > 0 else 0.0,
            "mean_step": (step_sum - self._last_step_sum) / updates,
            "lipschitz": self.lipschitz(),
            "doublings": d[DOUBLINGS] / updates,
            "searches": d[SEARCHES] / updates,
            "skip_share": d[SKIPPED] / updates,
            "guarded_share": d[GUARDED] / updates,
            "capped_searches": float(d[CAPPED]),
            "flushes": float(d[FLUSHES]),
        }
        if self.options.variant != SAG:
            out["lipschitz_max"] = float(self.state.scalars[L_MAX])
        self._last = c
        self._last_step_sum = step_sum
        return out

    def memory_bytes(self) -> dict[str, int]:
        s = self.state
        per_seq = (s.seen.nbytes + s.lip.nbytes + s.streak.nbytes + s.skip.nbytes
                   + s.order.nbytes + s.tree.nbytes + s.cum.nbytes)
        return {"marginals_unary": s.store_unary.nbytes, "marginals_pairwise": s.store_pair.nbytes,
                "weights": s.w.nbytes, "gradient_sum": s.dvec.nbytes,
                "lazy_rows": s.last.nbytes, "per_sequence": per_seq}

    def config(self) -> dict:
        return {**super().config(), "variant": self.variant}


__all__ = ["SAGFamily"]
