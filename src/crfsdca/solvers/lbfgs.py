"""L-BFGS on the full-batch primal: the reference optimum P* and a solver with a trace.

Two implementations, on purpose (``baselines.md`` section 7):

- :func:`compute_optimum` (the ``optimum`` stage) runs scipy's L-BFGS-B
  (``scipy.optimize.minimize(method="L-BFGS-B", jac=True)``) on P and its
  gradient, whose full pass over the data runs in numba
  (:func:`crfsdca.model.objective.primal_and_gradient`). When scipy stops
  early (its relative-reduction test ``ftol`` or an abnormal line-search exit
  at the limits of floating-point precision) while the gap bound is not yet
  small enough, it is restarted from its last point with a fresh memory, a
  few times, as long as each round still lowers P. The result carries its own
  certificate: since P is lambda-strongly convex,
  ``P(w) - P* <= ||grad P(w)||^2 / (2 lambda)`` (the duality gap at the pair
  (w, alpha_hat(w)), ``math.md`` eq. 7-8), reported as ``gap_bound``.
- :class:`LBFGS` (the ``lbfgs`` solver, [X]) is a plain L-BFGS written here in
  numpy: two-loop recursion with the initial scaling s'y / y'y, and a
  strong-Wolfe line search (bracketing and zoom with safeguarded cubic
  interpolation, as in Nocedal & Wright algorithms 3.5-3.6 and minFunc's
  ``WolfeLineSearch``). Unlike scipy's it is resumable one iteration at a time
  (``run(n_steps)``), deterministic, and its work is counted like every other
  solver's: each evaluation of P and grad P is one forward-backward per
  sequence (``oracle_fb += n``, ``ls_evals += 1``), each accepted iterate one
  update. One monitor "epoch" is one L-BFGS iteration (``steps_per_epoch = 1``);
  the oracle counters say what it cost.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..data.sequences import subset_sequences
from ..model.objective import primal_and_gradient
from .base import Problem, Solver

_EPS = float(np.finfo(np.float64).eps)


def objective(problem: Problem):
    """w -> (P(w), grad P(w)) for ``problem`` (one full pass, n forward-backwards)."""
    p = problem

    def fun(w):
        return primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam)

    return fun


# ----------------------------------------------------------------------------- optimum

@dataclass
class OptimumResult:
    """A long L-BFGS run: the minimizer, the minimum and its certificate."""

    w: np.ndarray
    p_star: float
    grad_norm: float  # ||grad P(w*)||_2
    grad_max: float  # ||grad P(w*)||_inf (what scipy's gtol tests)
    gap_bound: float  # ||grad P||^2 / (2 lambda) >= P(w*) - P*
    iterations: int
    evaluations: int
    seconds: float
    rounds: list[dict] = field(default_factory=list)  # one entry per scipy run

    @property
    def relative_bound(self) -> float:
        """gap_bound / |P*|: the relative accuracy to which P* is known."""
        return self.gap_bound / max(abs(self.p_star), 1e-300)


def _round_info(iterations: int, evaluations: int, message: str, primal: float,
                grad_norm: float, lam: float, t0: float) -> dict:
    """What one round of :func:`compute_optimum` records (seconds since ``t0``)."""
    return {"iterations": iterations, "evaluations": evaluations, "message": message,
            "primal": primal, "grad_norm": grad_norm, "gap_bound": grad_norm**2 / (2.0 * lam),
            "seconds": time.perf_counter() - t0}


def _describe(info: dict) -> str:
    return (f"{info['iterations']} iterations, {info['evaluations']} evaluations, "
            f"P = {info['primal']:.16e}, |grad| = {info['grad_norm']:.3e}, "
            f"gap bound = {info['gap_bound']:.3e} ({info['message']}; {info['seconds']:.1f}s)")


def compute_optimum(problem: Problem, maxiter: int = 5000, maxcor: int = 50,
                    gtol: float = 1e-10, ftol: float = 1e-15, rel_tol: float = 1e-13,
                    max_rounds: int = 8, w0: np.ndarray | None = None,
                    polish_iters: int = 1000, log=None) -> OptimumResult:
    """Minimize P with scipy's L-BFGS-B until P* is known to ``rel_tol`` relative.

    Runs L-BFGS-B (``maxcor`` pairs, ``gtol`` on the max-norm of the gradient,
    ``ftol`` on the relative decrease, ``maxfun = 1.25 maxiter``) and restarts
    it from its last point while ``gap_bound > rel_tol * |P|``, the iteration
    budget ``maxiter`` (shared by all rounds) is not exhausted, and the previous
    round lowered P. If the bound is still above the target, a last "polish"
    round runs :class:`LBFGS` (same memory) from the best point with its
    gradient-only line search, for at most ``polish_iters`` iterations (and within
    ``maxiter``, which bounds the iterations of all rounds together), until the
    target is met or 50 iterations bring no smaller gradient; the point with the
    smallest gradient is kept (its P and gap bound are reported). Near the
    optimum the decrease of P per step falls below the rounding noise of P itself
    (about 1e-16 relative per term, summed over n sequences), so any search on
    values of P stalls, while the gradient is still accurate; with lambda = 1/n
    the bound ||g||^2 / (2 lambda) is far above the true sub-optimality there.
    ``log`` (a callable taking a string) receives one line per round.
    """
    fun = objective(problem)
    lam = problem.lam
    x = np.zeros(problem.dim) if w0 is None else np.array(w0, dtype=np.float64)
    if x.shape != (problem.dim,):
        raise ValueError(f"w0 has shape {x.shape}, expected ({problem.dim},)")
    best = {"f": math.inf, "x": x, "g": None}
    evaluations = 0

    def counted(w):
        nonlocal evaluations
        evaluations += 1
        f, g = fun(w)
        if f < best["f"]:
            best.update(f=f, x=w.copy(), g=g.copy())
        return f, g

    t0 = time.perf_counter()
    iterations = 0
    rounds = []
    import scipy.optimize

    while iterations < maxiter and len(rounds) < max_rounds:
        f_before = best["f"]
        budget = maxiter - iterations
        res = scipy.optimize.minimize(
            counted, best["x"], jac=True, method="L-BFGS-B",
            options={"maxiter": budget, "maxfun": max(int(1.25 * budget), 10),
                     "maxcor": int(maxcor), "gtol": gtol, "ftol": ftol})
        iterations += int(res.nit)
        gnorm = float(np.linalg.norm(best["g"]))
        info = _round_info(int(res.nit), int(res.nfev), str(res.message), best["f"], gnorm,
                           lam, t0)
        rounds.append(info)
        if log is not None:
            log(f"round {len(rounds)}: {_describe(info)}")
        converged = info["gap_bound"] <= rel_tol * abs(best["f"]) and (
            float(np.max(np.abs(best["g"]))) <= gtol or res.success)
        if converged or not best["f"] < f_before or res.nit == 0:
            break
    gnorm = float(np.linalg.norm(best["g"]))
    polish_iters = min(int(polish_iters), maxiter - iterations)  # maxiter covers all rounds
    if gnorm**2 / (2.0 * lam) > rel_tol * abs(best["f"]) and polish_iters > 0:
        polisher = LBFGS(problem, memory=maxcor, w0=best["x"], line_search="gradient")
        polisher._fun = counted
        polisher.run(0)  # evaluates the start
        cert = {"x": best["x"], "f": best["f"], "g": best["g"], "gnorm": gnorm}
        since = 0
        while since < 50 and polisher._iterations < polish_iters and not (
                polisher.stalled or polisher.converged):
            polisher.run(1)
            since += 1
            gn = polisher.gradient_norm()
            if gn < cert["gnorm"]:
                cert = {"x": polisher.x.copy(), "f": polisher.f, "g": polisher.g.copy(),
                        "gnorm": gn}
                since = 0
                if gn**2 / (2.0 * lam) <= rel_tol * abs(polisher.f):
                    break
        best.update(x=cert["x"], f=cert["f"], g=cert["g"])
        iterations += polisher._iterations
        gnorm = cert["gnorm"]
        reason = ("target reached" if gnorm**2 / (2.0 * lam) <= rel_tol * abs(best["f"])
                  else "stalled" if polisher.stalled
                  else "no smaller gradient in 50 iterations" if since >= 50
                  else "iteration cap")
        info = _round_info(polisher._iterations, polisher.counters()["oracle_fb"] // problem.n,
                           f"polish (LBFGS, gradient-only line search): {reason}", best["f"],
                           gnorm, lam, t0)
        rounds.append(info)
        if log is not None:
            log(f"polish: {_describe(info)}")
    g = best["g"]
    gnorm = float(np.linalg.norm(g))
    return OptimumResult(w=best["x"], p_star=float(best["f"]), grad_norm=gnorm,
                         grad_max=float(np.max(np.abs(g))), gap_bound=gnorm**2 / (2.0 * lam),
                         iterations=iterations, evaluations=evaluations,
                         seconds=time.perf_counter() - t0, rounds=rounds)


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

    Parameters
    ----------
    memory: number of (s, y) pairs kept (history memory is 2 * memory * d floats).
    c1, c2: sufficient-decrease and curvature constants of the strong Wolfe conditions.
    max_evals: function evaluations allowed per line search.
    gtol: stop (do nothing more) once ||grad P||_inf <= gtol (0: never).
    w0: starting point (default 0).
    line_search: ``wolfe`` (strong Wolfe conditions, the default) or ``gradient``: a
        search on the directional derivative alone, phi'(t) = grad P(x + t d).d, which
        brackets its zero and accepts 0.9 phi'(0) <= phi'(t) <= 0.1 |phi'(0)|. It ignores
        the values of P, so it keeps making progress when the decrease of P falls below
        the rounding noise of its evaluation (P is convex, so phi' is increasing);
        :func:`compute_optimum` polishes with it.

    The first step length is min(1, 1/||g||_1) (minFunc's choice), later ones 1.
    A pair with s'y <= 1e-12 ||s|| ||y|| is not stored. If a line search finds
    no decrease the memory is cleared and the next iteration is a scaled
    steepest-descent step; if that fails too, the solver stops (``stalled``).
    """

    name = "lbfgs"

    def __init__(self, problem: Problem, memory: int = 50, c1: float = 1e-4, c2: float = 0.9,
                 max_evals: int = 25, gtol: float = 0.0, w0: np.ndarray | None = None,
                 line_search: str = "wolfe", seed: int = 0):
        super().__init__(problem, seed)
        if memory < 1:
            raise ValueError(f"L-BFGS memory must be at least 1, got {memory}")
        if not 0.0 < c1 < c2 < 1.0:
            raise ValueError(f"need 0 < c1 < c2 < 1, got c1 = {c1}, c2 = {c2}")
        if line_search not in ("wolfe", "gradient"):
            raise ValueError(f"line_search must be 'wolfe' or 'gradient', got {line_search!r}")
        self.line_search = line_search
        self.memory = int(memory)
        self.c1, self.c2 = float(c1), float(c2)
        self.max_evals = int(max_evals)
        self.gtol = float(gtol)
        d = problem.dim
        self._fun = objective(problem)
        self.x = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
        if self.x.shape != (d,):
            raise ValueError(f"w0 has shape {self.x.shape}, expected ({d},)")
        self.f = math.nan
        self.g = None
        self._S = np.zeros((self.memory, d))
        self._Y = np.zeros((self.memory, d))
        self._rho = np.zeros(self.memory)
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
        f, g = self._fun(x)
        self._counters["oracle_fb"] += self.problem.n
        return float(f), g

    def _direction(self, g):
        """-H g by the two-loop recursion over the stored pairs (newest first)."""
        q = -g.copy()
        m = self._pairs
        if m == 0:
            return q
        slots = [(self._head - 1 - j) % self.memory for j in range(m)]
        a = np.empty(m)
        for j, s in enumerate(slots):
            a[j] = self._rho[s] * (self._S[s] @ q)
            q -= a[j] * self._Y[s]
        newest = slots[0]
        y = self._Y[newest]
        q *= 1.0 / (self._rho[newest] * (y @ y))  # gamma = s'y / y'y
        for j in range(m - 1, -1, -1):
            s = slots[j]
            b = self._rho[s] * (self._Y[s] @ q)
            q += (a[j] - b) * self._S[s]
        return q

    def _line_search(self, x, f0, g0, d, t):
        """Strong-Wolfe search along d from t; returns (t, f, g) of the accepted point or None."""
        gd0 = float(g0 @ d)
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
            gd = float(g @ d)
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
        gd0 = float(g0 @ d)
        lo, gd_lo = 0.0, gd0
        hi, gd_hi = math.inf, math.nan
        for _ in range(self.max_evals):
            self._counters["ls_evals"] += 1
            f, g = self._evaluate(x + t * d)
            gd = float(g @ d)
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
        sy = float(s @ y)
        if not sy > 1e-12 * float(np.linalg.norm(s)) * float(np.linalg.norm(y)):
            return
        slot = self._head
        self._S[slot] = s
        self._Y[slot] = y
        self._rho[slot] = 1.0 / sy
        self._head = (self._head + 1) % self.memory
        self._pairs = min(self._pairs + 1, self.memory)

    # -- driving -----------------------------------------------------------------------
    def prepare(self) -> None:
        """Compile the full-batch kernels on one sequence, without counting or timing it."""
        p = self.problem
        primal_and_gradient(self.x, subset_sequences(p.train, 1), p.n_attributes, p.n_labels,
                            p.lam)

    def run(self, n_steps: int) -> None:
        if self.g is None:
            self.f, self.g = self._evaluate(self.x)
        for _ in range(int(n_steps)):
            if self.stalled or self.converged:
                return
            if self.gtol > 0 and float(np.max(np.abs(self.g))) <= self.gtol or not np.any(self.g):
                self.converged = True
                return
            d = self._direction(self.g)
            if not float(d @ self.g) < 0.0:  # not a descent direction: restart
                self._pairs = 0
                d = -self.g
            if self._iterations == 0 or self._pairs == 0:
                t0 = min(1.0, 1.0 / float(np.sum(np.abs(self.g))))
            else:
                t0 = 1.0
            if self.line_search == "wolfe":
                found = self._line_search(self.x, self.f, self.g, d, t0)
            else:
                found = self._gradient_search(self.x, self.g, d, t0)
            if found is None:
                self._failures += 1
                if self._pairs == 0:
                    self.stalled = True
                    return
                self._pairs = 0  # retry next step from steepest descent
                continue
            t, f, g = found
            s = t * d
            self._store_pair(s, g - self.g)
            self.x = self.x + s
            self.f, self.g = f, g
            self._iterations += 1
            self._counters["updates"] += 1
            self._step_sum += t
            self._step_count += 1

    # -- reading -----------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        return self.x

    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def gradient_norm(self) -> float:
        """||grad P|| at the current iterate (NaN before the first step)."""
        return math.nan if self.g is None else float(np.linalg.norm(self.g))

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
        return {"history": self._S.nbytes + self._Y.nbytes, "weights": self.x.nbytes}

    def config(self) -> dict:
        return {**super().config(), "memory": self.memory, "c1": self.c1, "c2": self.c2,
                "max_evals": self.max_evals, "gtol": self.gtol, "line_search": self.line_search}


__all__ = ["LBFGS", "OptimumResult", "compute_optimum", "objective"]
