"""L-BFGS on the full-batch primal, as a solver with a trace (``baselines.md`` section 7).

:class:`LBFGS` (the ``lbfgs`` solver, [X]) is a plain L-BFGS written here in
  numpy: two-loop recursion with the initial scaling s'y / y'y (in numba, one pass
  over memory per stored vector: ``lbfgs_kernel.py``), and a
  strong-Wolfe line search (bracketing and zoom with safeguarded cubic
  interpolation, as in Nocedal & Wright algorithms 3.5-3.6 and minFunc's
  ``WolfeLineSearch``). Unlike scipy's it is resumable one iteration at a time
  (``run(n_steps)``), deterministic, and its work is counted like every other
  solver's: each evaluation of P and grad P is one forward-backward per
  sequence (``oracle_fb += n``, ``ls_evals += 1``), each accepted iterate one
  update. One monitor "epoch" is one L-BFGS iteration (``steps_per_epoch = 1``);
  the oracle counters say what it cost.

With an L1 term (``Problem.l1`` > 0) it is OWL-QN (Andrew and Gao, 2007), as CRFsuite
runs it through liblbfgs: the direction from the pseudo-gradient (the minimum-norm
subgradient), zeroed where it disagrees in sign with it, and a backtracking search whose
points are projected onto the orthant of the current iterate. CRFsuite's stopping tests
are options (``epsilon``, ``period``, ``delta``; off by default, the estimator and
``learn`` give them CRFsuite's defaults).
"""

from __future__ import annotations

import math

import numpy as np

from ..data.sequences import subset_sequences
from ..errors import ConfigError
from ..model.features import is_full, pseudo_gradient
from ..model.objective import SlotBuffers, primal_and_gradient
from ..runtime.jit import aligned_copy, aligned_empty, aligned_zeros, dot
from .base import Problem, Solver
from .lbfgs_kernel import orthant_point, two_loop
from .more_thuente import more_thuente
from .registry import LBFGS_OPTIONS

_EPS = float(np.finfo(np.float64).eps)


def objective(problem: Problem, threads: int = 1, reuse: bool = False):
    """w -> (P(w), grad P(w)) for ``problem`` (one full pass, n forward-backwards, on
    ``threads`` threads); with ``reuse``, the gradient is a buffer that the next call
    overwrites."""
    p = problem
    buffers = SlotBuffers()
    into = aligned_empty(p.dim) if reuse else None

    def fun(w):
        return primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam,
                                   p.feature_mask, threads, buffers, into)

    return fun


def on_support(fun, support: np.ndarray, dim: int):
    """``fun`` (w -> (P(w), grad P(w)) over all ``dim`` weights, whose gradient may be
    its own buffer) as a function of the weights at ``support`` alone, the others 0: its
    gradient is gathered there, into a new array."""
    w = aligned_zeros(dim)

    def restricted(x):
        w[support] = x
        f, g = fun(w)
        return f, g[support]

    return restricted


# ----------------------------------------------------------------------------- solver

def _cubic_min(t1, f1, d1, t2, f2, d2, lo, hi):
    """Minimizer of the cubic interpolating (t1, f1, d1) and (t2, f2, d2), clipped to [lo, hi].

    Falls back to the midpoint of [lo, hi] when the cubic has no real minimizer.
    """
    if t1 == t2:
        return 0.5 * (lo + hi)
    e1 = d1 + d2 - 3.0 * (f1 - f2) / (t1 - t2)
    disc = e1 * e1 - d1 * d2
    if not (disc >= 0.0) or not math.isfinite(disc):
        return 0.5 * (lo + hi)
    e2 = math.copysign(math.sqrt(disc), t2 - t1)
    denom = d2 - d1 + 2.0 * e2
    if denom == 0.0:
        return 0.5 * (lo + hi)
    t = t2 - (t2 - t1) * (d2 + e2 - e1) / denom
    if not math.isfinite(t):
        return 0.5 * (lo + hi)
    return min(max(t, lo), hi)


class LBFGS(Solver):
    """Full-batch L-BFGS with a strong-Wolfe line search, one iteration per step.

    Options (:data:`~crfsdca.solvers.registry.LBFGS_OPTIONS`): ``memory`` (number of
    (s, y) pairs kept; the history takes 2 * memory * d floats), ``c1``, ``c2`` (the
    sufficient-decrease and curvature constants of the strong Wolfe conditions),
    ``max_evals`` (evaluations allowed per line search), ``gtol`` (stop, doing nothing
    more, once ||grad P||_inf <= gtol; 0: never), ``line_search``: ``wolfe`` (strong
    Wolfe conditions, the default) or ``gradient``, a search on the directional
    derivative alone, phi'(t) = grad P(x + t d).d, which brackets its zero and accepts
    0.9 phi'(0) <= phi'(t) <= 0.1 |phi'(0)|. It ignores the values of P, so it keeps
    making progress when the decrease of P falls below the rounding noise of its
    evaluation (P is convex, so phi' is increasing);
    :func:`crfsdca.reproduction.optimum.compute_optimum` polishes with it. ``w0`` is the starting
    point (default 0).

    The first step length is min(1, 1/||g||_1) (minFunc's choice), later ones 1.
    A pair with s'y <= 1e-12 ||s|| ||y|| is not stored. If a line search finds
    no decrease the memory is cleared and the next iteration is a scaled
    steepest-descent step; if that fails too, the solver stops (``stalled``).

    With a feature set (``problem.feature_mask``) the iterates, gradients and stored pairs
    live on its weights alone, as CRFsuite's do: the others stay 0 (their gradient is
    masked), and on CoNLL-2000 the feature set is 453,094 of 7.4 million weights. ``fun``
    replaces P and its gradient: a function of all the weights that returns a new
    gradient array each call, as :func:`objective` without ``reuse``.
    """

    name = "lbfgs"
    OPTIONS = LBFGS_OPTIONS

    def __init__(self, problem: Problem, w0: np.ndarray | None = None, seed: int = 0,
                 threads: int = 1, fun=None, **options):
        super().__init__(problem, seed, threads, **options)
        o = self.opts
        if not o["c1"] < o["c2"]:
            raise ConfigError(f"lbfgs needs c1 < c2, got c1 = {o['c1']}, c2 = {o['c2']}")
        self.line_search = o["line_search"]
        self.memory = o["memory"]
        self.c1, self.c2 = o["c1"], o["c2"]
        self.max_evals = o["max_evals"]
        self.gtol = o["gtol"]
        self.epsilon, self.period, self.delta = o["epsilon"], o["period"], o["delta"]
        self.l1 = problem.l1
        self.first_step = o["first_step"]
        dim = problem.dim
        mask = problem.feature_mask
        self._support = None if is_full(mask) else np.flatnonzero(mask)
        if fun is None:
            fun = objective(problem, self.threads, reuse=self._support is not None)
        x = aligned_zeros(dim) if w0 is None else aligned_copy(np.asarray(w0, np.float64))
        if x.shape != (dim,):
            raise ValueError(f"w0 has shape {x.shape}, expected ({dim},)")
        if self._support is None:
            self._fun = fun
            self.x = x
        else:
            self._fun = on_support(fun, self._support, dim)
            self.x = aligned_copy(x[self._support])
        self._dense_x = None  # the iterate over all the weights, once asked for
        d = len(self.x)
        # the orthant search's trial point and step (work vectors, as the gradient's)
        self._xt = self._step = None
        self.f = math.nan  # P(w): the smooth part plus l1 ||w||_1
        self.g = None  # the gradient of the smooth part
        self.pg = None  # the pseudo-gradient with an L1 term, else g
        self._past: list[float] = []  # P of the iterates, for the delta test
        self._S = np.zeros((self.memory, d))
        self._Y = np.zeros((self.memory, d))
        self._rho = np.zeros(self.memory)
        self._yy = np.zeros(self.memory)  # y'y of each pair
        self._q = aligned_zeros(d)  # the search direction
        self._a = np.zeros(self.memory)
        self._pairs = 0  # pairs stored
        self._head = 0  # slot of the next pair
        self._counters = {"oracle_fb": 0, "oracle_fwd": 0, "updates": 0, "ls_evals": 0}
        self._iterations = 0
        self._failures = 0
        self.stalled = False
        self.converged = False
        self._last = dict(self._counters)
        self._step_sum = 0.0
        self._step_count = 0

    @property
    def steps_per_epoch(self) -> int:
        return 1

    # -- evaluation --------------------------------------------------------------------
    def _evaluate(self, x):
        """(P(x), gradient of P's smooth part at x): one full pass."""
        f, g = self._fun(x)
        self._counters["oracle_fb"] += self.problem.n
        if self.l1:
            f += self.l1 * float(np.sum(np.abs(x)))
        return float(f), g

    def _steering(self, x, g):
        """The gradient that directions and tests use: g, or OWL-QN's pseudo-gradient."""
        return pseudo_gradient(x, g, self.l1) if self.l1 else g

    def _direction(self, g):
        """-H g by the two-loop recursion over the stored pairs (newest first), into a
        buffer of the solver (:func:`~crfsdca.solvers.lbfgs_kernel.two_loop`)."""
        m = self._pairs
        slots = np.array([(self._head - 1 - j) % self.memory for j in range(m)],
                         dtype=np.int64)
        gamma = 1.0
        if m:
            newest = slots[0]
            gamma = 1.0 / (self._rho[newest] * self._yy[newest])  # s'y / y'y
        two_loop(self._S, self._Y, self._rho, slots, gamma, g, self._q, self._a)
        return self._q

    def _line_search(self, x, f0, g0, d, t):
        """Strong-Wolfe search along d from t; returns (t, f, g) of the accepted point or None."""
        gd0 = dot(g0, d)
        c1, c2 = self.c1, self.c2
        dmax = float(np.max(np.abs(d)))
        xmax = max(float(np.max(np.abs(x))), 1.0)
        evals = 0
        best = None  # lowest point satisfying sufficient decrease

        def phi(t):
            nonlocal evals, best
            evals += 1
            self._counters["ls_evals"] += 1
            f, g = self._evaluate(x + t * d)
            gd = dot(g, d)
            if math.isfinite(f) and f <= f0 + c1 * t * gd0 and (best is None or f < best[1]):
                best = (t, f, g)
            return f, g, gd

        t_prev, f_prev, gd_prev = 0.0, f0, gd0
        lo = hi = None
        while evals < self.max_evals:
            f, g, gd = phi(t)
            if not math.isfinite(f):
                lo, hi = (t_prev, f_prev, gd_prev), (t, math.inf, math.nan)
                break
            if f > f0 + c1 * t * gd0 or (evals > 1 and f >= f_prev):
                lo, hi = (t_prev, f_prev, gd_prev), (t, f, gd)
                break
            if abs(gd) <= -c2 * gd0:
                return t, f, g
            if gd >= 0.0:
                lo, hi = (t, f, gd), (t_prev, f_prev, gd_prev)
                break
            new = _cubic_min(t_prev, f_prev, gd_prev, t, f, gd, t + 0.01 * (t - t_prev), 10 * t)
            t_prev, f_prev, gd_prev = t, f, gd
            t = new
        else:
            return best
        # zoom: lo satisfies sufficient decrease and has the lowest value so far
        while evals < self.max_evals:
            a, b = min(lo[0], hi[0]), max(lo[0], hi[0])
            if math.isfinite(hi[1]):
                t = _cubic_min(lo[0], lo[1], lo[2], hi[0], hi[1], hi[2], a, b)
            else:
                t = 0.5 * (a + b)
            width = b - a
            if not (a + 0.1 * width <= t <= b - 0.1 * width):
                t = 0.5 * (a + b)
            # stop when the bracket no longer moves x, or f cannot tell its ends apart
            if width * dmax <= _EPS * xmax or abs(hi[1] - lo[1]) <= 4 * _EPS * abs(f0):
                break
            f, g, gd = phi(t)
            if not math.isfinite(f) or f > f0 + c1 * t * gd0 or f >= lo[1]:
                hi = (t, f, gd)
            else:
                if abs(gd) <= -c2 * gd0:
                    return t, f, g
                if gd * (hi[0] - lo[0]) >= 0.0:
                    hi = lo
                lo = (t, f, gd)
        return best

    def _gradient_search(self, x, g0, d, t):
        """Search on phi'(t) = grad P(x + t d).d only; returns (t, f, g) or None."""
        gd0 = dot(g0, d)
        lo, gd_lo = 0.0, gd0
        hi, gd_hi = math.inf, math.nan
        for _ in range(self.max_evals):
            self._counters["ls_evals"] += 1
            f, g = self._evaluate(x + t * d)
            gd = dot(g, d)
            if not math.isfinite(f) or not math.isfinite(gd):
                hi, gd_hi = t, math.nan
            elif self.c2 * gd0 <= gd <= -0.1 * gd0:
                return t, f, g
            elif gd > 0.0:
                hi, gd_hi = t, gd
            else:
                lo, gd_lo = t, gd
            if math.isinf(hi):
                t = 4.0 * t
                continue
            width = hi - lo
            if width <= _EPS * max(1.0, hi):
                return None
            new = 0.5 * (lo + hi)
            if math.isfinite(gd_hi) and gd_hi != gd_lo:
                sec = lo - gd_lo * width / (gd_hi - gd_lo)
                if lo + 0.05 * width <= sec <= hi - 0.05 * width:
                    new = sec
            t = new
        return None

    def _store_pair(self, s, y):
        sy = dot(s, y)
        yy = dot(y, y)
        if not sy > 1e-12 * math.sqrt(dot(s, s)) * math.sqrt(yy):
            return
        slot = self._head
        self._S[slot] = s
        self._Y[slot] = y
        self._rho[slot] = 1.0 / sy
        self._yy[slot] = yy
        self._head = (self._head + 1) % self.memory
        self._pairs = min(self._pairs + 1, self.memory)

    def _backtracking(self, x, f0, g0, d, t, strong: bool):
        """liblbfgs's backtracking search: halve t until the Armijo condition holds, then
        grow it (x 2.1) while the regular Wolfe curvature test fails and, for ``strong``,
        halve it while the strong one does; returns (t, f, g) or None."""
        gd0 = dot(g0, d)
        for _ in range(self.max_evals):
            self._counters["ls_evals"] += 1
            f, g = self._evaluate(x + t * d)
            if not (math.isfinite(f) and f <= f0 + self.c1 * t * gd0):
                t *= 0.5
                continue
            gd = dot(g, d)
            if gd < self.c2 * gd0:
                t *= 2.1
            elif strong and gd > -self.c2 * gd0:
                t *= 0.5
            else:
                return t, f, g
        return None

    def _more_thuente(self, x, f0, g0, d, t):
        """liblbfgs's More-Thuente search (:mod:`~crfsdca.solvers.more_thuente`);
        returns (t, f, g) or None."""

        def phi(t):
            self._counters["ls_evals"] += 1
            f, g = self._evaluate(x + t * d)
            return f, g, dot(g, d)

        return more_thuente(phi, f0, dot(g0, d), t, self.c1, self.c2, self.max_evals)

    def _orthant_search(self, x, f0, pg, d, t):
        """OWL-QN's backtracking search: x(t) = x + t d projected onto the orthant of x
        (of -pg where x is 0), halving t until P(x(t)) <= P(x) + c1 pg.(x(t) - x);
        returns (t, x(t) - x, f, g) or None."""
        if self._xt is None:
            self._xt, self._step = aligned_empty(len(x)), aligned_empty(len(x))
        xt, step = self._xt, self._step
        for _ in range(self.max_evals):
            self._counters["ls_evals"] += 1
            orthant_point(x, d, t, pg, xt, step)
            f, g = self._evaluate(xt)
            if math.isfinite(f) and f <= f0 + self.c1 * dot(pg, step):
                return t, step.copy(), f, g
            t *= 0.5
        return None

    def _search(self, d, t0):
        """The step along d by the configured search: (t, s, f, g) or None, the new
        iterate being x + s."""
        x = self.x
        if self.l1:
            return self._orthant_search(x, self.f, self.pg, d, t0)
        if self.line_search == "wolfe":
            found = self._line_search(x, self.f, self.g, d, t0)
        elif self.line_search == "gradient":
            found = self._gradient_search(x, self.g, d, t0)
        elif self.line_search == "more-thuente":
            found = self._more_thuente(x, self.f, self.g, d, t0)
        else:
            found = self._backtracking(x, self.f, self.g, d, t0,
                                       strong=self.line_search == "strong-backtracking")
        if found is None:
            return None
        t, f, g = found
        return t, t * d, f, g

    def _crfsuite_tests(self) -> bool:
        """CRFsuite's stopping tests at the current iterate (liblbfgs's order): epsilon on
        ||g|| / max(1, ||w||), g in CRFsuite's scale (n P), then delta over ``period``."""
        if self.epsilon > 0:
            gnorm = self.problem.n * math.sqrt(dot(self.pg, self.pg))
            if gnorm / max(1.0, math.sqrt(dot(self.x, self.x))) <= self.epsilon:
                return True
        if self.delta > 0:
            self._past.append(self.f)
            k = len(self._past) - 1
            if k >= self.period:
                if abs(self._past[k - self.period] - self.f) / abs(self.f) < self.delta:
                    return True
        return False

    # -- driving -----------------------------------------------------------------------
    def prepare(self) -> None:
        """Compile the full-batch kernels on one sequence, without counting or timing it."""
        p = self.problem
        primal_and_gradient(self.weights(), subset_sequences(p.train, 1), p.n_attributes,
                            p.n_labels, p.lam, p.feature_mask)

    def run(self, n_steps: int) -> None:
        if self.g is None:
            self.f, self.g = self._evaluate(self.x)
            self.pg = self._steering(self.x, self.g)
            if self._crfsuite_tests():
                self.converged = True
        for _ in range(int(n_steps)):
            if self.stalled or self.converged:
                return
            pg = self.pg
            if self.gtol > 0 and float(np.max(np.abs(pg))) <= self.gtol or not np.any(pg):
                self.converged = True
                return
            d = self._direction(pg)
            if self.l1:
                d[d * pg >= 0] = 0.0  # OWL-QN: keep the orthant -pg points into
            if not dot(d, pg) < 0.0:  # not a descent direction: restart
                self._pairs = 0
                d = -pg
            if self._iterations and self._pairs:
                t0 = 1.0
            elif self.l1 or self.first_step == "inverse-l2":  # liblbfgs's, 1 / ||d||
                t0 = 1.0 / math.sqrt(dot(d, d))
            else:
                t0 = min(1.0, 1.0 / float(np.sum(np.abs(pg))))
            found = self._search(d, t0)
            if found is None:
                self._failures += 1
                if self._pairs == 0:
                    self.stalled = True
                    return
                self._pairs = 0  # retry next step from steepest descent
                continue
            t, s, f, g = found
            self._store_pair(s, g - self.g)
            self.x = self.x + s
            self._dense_x = None
            self.f, self.g = f, g
            self.pg = self._steering(self.x, g)
            self._iterations += 1
            self._counters["updates"] += 1
            self._step_sum += t
            self._step_count += 1
            if self._crfsuite_tests():
                self.converged = True

    def finished(self) -> str | None:
        return "converged" if self.converged else "stalled" if self.stalled else None

    def smooth_gradient(self) -> np.ndarray | None:
        return self.g if self.g is None else self._dense(self.g)

    def objective(self) -> float | None:
        return None if self.g is None else self.f

    def nonzero_weights(self) -> int:
        return int(np.count_nonzero(self.x))

    def subgradient_sq_norm(self) -> float | None:
        return None if self.pg is None else dot(self.pg, self.pg)

    # -- reading -----------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        if self._dense_x is None:
            self._dense_x = self._dense(self.x)
        return self._dense_x

    def _dense(self, v: np.ndarray) -> np.ndarray:
        """v over all the weights (0 off the feature set)."""
        if self._support is None:
            return v
        out = aligned_zeros(self.problem.dim)
        out[self._support] = v
        return out

    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def gradient_norm(self) -> float:
        """||grad P|| at the current iterate (NaN before the first step)."""
        return math.nan if self.g is None else math.sqrt(dot(self.g, self.g))

    def diagnostics(self) -> dict[str, float]:
        c = self._counters
        upd = max(c["updates"] - self._last["updates"], 1)
        out = {"ls_iters": (c["ls_evals"] - self._last["ls_evals"]) / upd,
               "mean_step": self._step_sum / max(self._step_count, 1),
               "grad_norm": self.gradient_norm(),
               "ls_failures": float(self._failures)}
        self._last = dict(c)
        self._step_sum = 0.0
        self._step_count = 0
        return out

    def memory_bytes(self) -> dict[str, int]:
        return {"history": self._S.nbytes + self._Y.nbytes,
                "weights": self.x.nbytes + self._q.nbytes}


__all__ = ["LBFGS", "objective"]
