"""The reference optimum of a training problem: w*, P* and a certificate, computed and stored.

:func:`compute_optimum` (the ``optimum`` stage) minimizes P with the package's own
L-BFGS (:class:`crfsdca.solvers.lbfgs.LBFGS`, two-loop recursion in numba) and its line
search on the gradient alone, which keeps making progress where values of P are
rounding noise, on P and its gradient, whose full pass over the data runs in numba on
``threads`` threads (:func:`crfsdca.model.objective.primal_and_gradient`). The other
method, ``scipy``, runs scipy's L-BFGS-B
(``scipy.optimize.minimize(method="L-BFGS-B", jac=True)``), restarted from its last
point with a fresh memory while it stops early (its relative-reduction test ``ftol`` or
an abnormal line-search exit at the limits of floating-point precision) above the
target accuracy, then polished by the package's L-BFGS; it costs 2-3 times more per
evaluation at the paper's sizes (its compact-form algebra over d-long vectors) and
stays as an independent implementation to cross-check P*. The result carries its own
certificate: since P is lambda-strongly convex, ``P(w) - P* <= ||grad P(w)||^2 /
(2 lambda)`` (the duality gap at the pair (w, alpha_hat(w)), ``math.md`` eq. 7-8),
reported as ``gap_bound``
(``baselines.md`` section 7).

File ``results/optimum/{dataset}.h5`` (format ``crfsdca-optimum``, version 1)::

    /w_star            float64 (d)   the minimizer found by L-BFGS
    attrs: format, format_version, package_version, dataset (name), dataset_path,
           dataset_sha256, lambda, n, d, p_star, grad_norm (||grad P(w*)||_2),
           grad_max (||grad P(w*)||_inf), gap_bound (||grad P||^2 / (2 lambda), an upper
           bound on P(w*) - P*), relative_bound (gap_bound / |P*|), iterations,
           evaluations (each one full pass, n forward-backwards), seconds,
           settings (json: solver options), rounds (json: one entry per round)

Written atomically (temporary file, then rename).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from .. import __version__
from ..errors import DataFormatError
from ..runtime.io import atomic_path, read_hdf5
from ..runtime.jit import dot
from ..solvers.base import Problem
from ..solvers.lbfgs import LBFGS, objective

FORMAT = "crfsdca-optimum"
FORMAT_VERSION = 1
METHODS = ("lbfgs", "scipy")
"""How :func:`compute_optimum` minimizes P: the package's L-BFGS (the default), or
scipy's L-BFGS-B (an independent implementation, to cross-check P*)."""
PROGRESS_EVERY = 50
"""Iterations between two progress lines of an L-BFGS round."""
PATIENCE = 50
"""An L-BFGS round stops after this many iterations without a smaller gradient."""


@dataclass
class Optimum:
    """A long L-BFGS run: the minimizer, the minimum, its certificate and provenance."""

    w_star: np.ndarray
    p_star: float
    grad_norm: float  # ||grad P(w*)||_2
    grad_max: float  # ||grad P(w*)||_inf (what scipy's gtol tests)
    gap_bound: float  # ||grad P||^2 / (2 lambda) >= P(w*) - P*
    iterations: int
    evaluations: int
    seconds: float
    lam: float
    rounds: list[dict] = field(default_factory=list)  # one entry per round
    dataset: str = ""
    dataset_sha256: str = ""
    dataset_path: str = ""
    settings: dict = field(default_factory=dict)  # the options it was computed with

    @property
    def relative_bound(self) -> float:
        """gap_bound / |P*|: the relative accuracy to which P* is known."""
        return self.gap_bound / max(abs(self.p_star), 1e-300)


def write_optimum(path: str | os.PathLike, opt: Optimum) -> None:
    """Write ``opt`` to ``path`` atomically."""
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.create_dataset("w_star", data=np.asarray(opt.w_star, dtype=np.float64))
        a = f.attrs
        a["format"] = FORMAT
        a["format_version"] = FORMAT_VERSION
        a["package_version"] = __version__
        a["dataset"] = opt.dataset
        a["dataset_path"] = str(opt.dataset_path)
        a["dataset_sha256"] = opt.dataset_sha256
        a["lambda"] = float(opt.lam)
        a["d"] = int(len(opt.w_star))
        a["p_star"] = float(opt.p_star)
        a["grad_norm"] = float(opt.grad_norm)
        a["grad_max"] = float(opt.grad_max)
        a["gap_bound"] = float(opt.gap_bound)
        a["relative_bound"] = float(opt.relative_bound)
        a["iterations"] = int(opt.iterations)
        a["evaluations"] = int(opt.evaluations)
        a["seconds"] = float(opt.seconds)
        a["settings"] = json.dumps(opt.settings, sort_keys=True)
        a["rounds"] = json.dumps(opt.rounds)


def read_optimum(path: str | os.PathLike) -> Optimum:
    """Read a reference optimum file; a file of another kind is a :class:`DataFormatError`."""
    path = Path(path)
    with read_hdf5(path, f"a {FORMAT} file (written by crfsdca optimum)") as f:
        if f.attrs.get("format") != FORMAT or "w_star" not in f:
            raise DataFormatError(path, f"not a {FORMAT} file (no 'format' attribute "
                                  f"{FORMAT!r} or no 'w_star' dataset)")
        if int(f.attrs["format_version"]) > FORMAT_VERSION:
            raise DataFormatError(path, f"format version {f.attrs['format_version']} is newer "
                                  f"than this package reads ({FORMAT_VERSION})")
        a = f.attrs
        return Optimum(w_star=f["w_star"][()], p_star=float(a["p_star"]),
                       grad_norm=float(a["grad_norm"]), grad_max=float(a["grad_max"]),
                       gap_bound=float(a["gap_bound"]), iterations=int(a["iterations"]),
                       evaluations=int(a["evaluations"]), seconds=float(a["seconds"]),
                       dataset=str(a["dataset"]), dataset_sha256=str(a["dataset_sha256"]),
                       dataset_path=str(a.get("dataset_path", "")), lam=float(a["lambda"]),
                       settings=json.loads(a["settings"]), rounds=json.loads(a["rounds"]))


# ----------------------------------------------------------------------------- computing

def _norm(g: np.ndarray) -> float:
    """||g||_2 on this thread (BLAS's threads would spin on the cores of the passes)."""
    return math.sqrt(dot(g, g))


def gap_bound(grad_norm: float, lam: float) -> float:
    """||grad P||^2 / (2 lambda): an upper bound on P(w) - P* (P is lambda-strongly convex)."""
    return grad_norm**2 / (2.0 * lam)


def certified(grad_norm: float, primal: float, lam: float, rel_tol: float) -> bool:
    """Whether the gap bound at a point certifies its P to ``rel_tol`` relative."""
    return gap_bound(grad_norm, lam) <= rel_tol * abs(primal)


def _round_info(iterations: int, evaluations: int, message: str, primal: float,
                grad_norm: float, lam: float, t0: float) -> dict:
    """What one round of :func:`compute_optimum` records (seconds since ``t0``)."""
    return {"iterations": iterations, "evaluations": evaluations, "message": message,
            "primal": primal, "grad_norm": grad_norm, "gap_bound": gap_bound(grad_norm, lam),
            "seconds": time.perf_counter() - t0}


def _describe(info: dict) -> str:
    return (f"{info['iterations']} iterations, {info['evaluations']} evaluations, "
            f"P = {info['primal']:.16e}, |grad| = {info['grad_norm']:.3e}, "
            f"gap bound = {info['gap_bound']:.3e} ({info['message']}; {info['seconds']:.1f}s)")


def _gradient_round(problem: Problem, counted, best: dict, budget: int, maxcor: int,
                    rel_tol: float, threads: int, t0: float, log, label: str) -> dict:
    """L-BFGS with the gradient-only line search from ``best["x"]`` until the certificate
    meets ``rel_tol``, ``budget`` iterations, or :data:`PATIENCE` iterations without a
    smaller gradient; ``best`` becomes the point of smallest gradient. Its round record."""
    lam = problem.lam
    solver = LBFGS(problem, memory=maxcor, w0=best["x"], line_search="gradient",
                   threads=threads, fun=counted)
    solver.run(0)  # evaluates the start
    cert = {"x": solver.weights(), "f": solver.f, "g": solver.smooth_gradient(),
            "gnorm": solver.gradient_norm()}
    since = logged = 0
    while not certified(cert["gnorm"], cert["f"], lam, rel_tol) and since < PATIENCE and \
            solver._iterations < budget and not (solver.stalled or solver.converged):
        solver.run(1)
        since += 1
        gn = solver.gradient_norm()
        if gn < cert["gnorm"]:
            cert = {"x": solver.weights().copy(), "f": solver.f,
                    "g": solver.smooth_gradient().copy(), "gnorm": gn}
            since = 0
        if log is not None and solver._iterations >= logged + PROGRESS_EVERY:
            logged = solver._iterations
            log(f"  iteration {logged}: P = {solver.f:.16e}, |grad| = {gn:.3e}, gap bound = "
                f"{gap_bound(gn, lam):.3e} ({time.perf_counter() - t0:.1f}s)")
    best.update(x=cert["x"], f=cert["f"], g=cert["g"])
    reason = ("target reached" if certified(cert["gnorm"], cert["f"], lam, rel_tol)
              else "stalled" if solver.stalled
              else f"no smaller gradient in {PATIENCE} iterations" if since >= PATIENCE
              else "iteration cap")
    return _round_info(solver._iterations, solver.counters()["oracle_fb"] // problem.n,
                       f"{label}: {reason}", cert["f"], cert["gnorm"], lam, t0)


def _scipy_rounds(counted, best: dict, lam: float, maxiter: int, maxcor: int, gtol: float,
                  ftol: float, rel_tol: float, max_rounds: int, t0: float, record) -> int:
    """scipy's L-BFGS-B from ``best["x"]``, restarted while it stops above the target;
    the iterations of all rounds."""
    import scipy.optimize  # lazy: 0.3 s to import, only for method "scipy"

    iterations = 0
    rounds = 0
    while iterations < maxiter and rounds < max_rounds:
        f_before = best["f"]
        budget = maxiter - iterations
        res = scipy.optimize.minimize(
            counted, best["x"], jac=True, method="L-BFGS-B",
            options={"maxiter": budget, "maxfun": max(int(1.25 * budget), 10),
                     "maxcor": int(maxcor), "gtol": gtol, "ftol": ftol})
        iterations += int(res.nit)
        rounds += 1
        gnorm = _norm(best["g"])
        record(_round_info(int(res.nit), int(res.nfev), str(res.message), best["f"], gnorm,
                           lam, t0))
        converged = certified(gnorm, best["f"], lam, rel_tol) and (
            float(np.max(np.abs(best["g"]))) <= gtol or res.success)
        if converged or not best["f"] < f_before or res.nit == 0:
            break
    return iterations


def compute_optimum(problem: Problem, maxiter: int = 5000, maxcor: int = 50,
                    gtol: float = 1e-10, ftol: float = 1e-15, rel_tol: float = 1e-13,
                    max_rounds: int = 8, w0: np.ndarray | None = None,
                    polish_iters: int = 1000, log=None, threads: int = 1,
                    method: str = METHODS[0]) -> Optimum:
    """Minimize P by L-BFGS until P* is known to ``rel_tol`` relative.

    ``method`` ``lbfgs``: :class:`LBFGS` (``maxcor`` pairs) with its line search on the
    directional derivative alone, from ``w0`` (default 0), until the gap bound meets the
    target, ``maxiter`` iterations, or :data:`PATIENCE` iterations bring no smaller
    gradient; the point with the smallest gradient is kept (its P and gap bound are
    reported). A search on values of P would stall near the optimum, where the decrease
    of P per step falls below the rounding noise of P itself (about 1e-16 relative per
    term, summed over n sequences) while the gradient is still accurate; with lambda =
    1/n the bound ||g||^2 / (2 lambda) is far above the true sub-optimality there.

    ``method`` ``scipy``: L-BFGS-B (``maxcor`` pairs, ``gtol`` on the max-norm of the
    gradient, ``ftol`` on the relative decrease, ``maxfun = 1.25 maxiter``), restarted
    from its last point while ``gap_bound > rel_tol * |P|``, the iteration budget
    ``maxiter`` (shared by all rounds) is not exhausted, at most ``max_rounds`` times,
    and the previous round lowered P; then, if the bound is still above the target, the
    round above as a "polish" from the best point, for at most ``polish_iters``
    iterations (within ``maxiter``).

    ``log`` (a callable taking a string) receives one line per round and a progress line
    every :data:`PROGRESS_EVERY` iterations of the package's L-BFGS. Every pass runs on
    ``threads`` threads.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    fun = objective(problem, threads)
    lam = problem.lam
    x = np.zeros(problem.dim) if w0 is None else np.array(w0, dtype=np.float64)
    if x.shape != (problem.dim,):
        raise ValueError(f"w0 has shape {x.shape}, expected ({problem.dim},)")
    if problem.feature_mask is not None:
        x *= problem.feature_mask
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

    def record(info):
        rounds.append(info)
        if log is not None:
            log(f"round {len(rounds)}: {_describe(info)}")

    if method == "lbfgs":
        info = _gradient_round(problem, counted, best, maxiter, maxcor, rel_tol, threads, t0,
                               log, "LBFGS (gradient-only line search)")
        record(info)
        iterations = info["iterations"]
    else:
        iterations = _scipy_rounds(counted, best, lam, maxiter, maxcor, gtol, ftol, rel_tol,
                                   max_rounds, t0, record)
        budget = min(int(polish_iters), maxiter - iterations)  # maxiter covers all rounds
        if not certified(_norm(best["g"]), best["f"], lam, rel_tol) and budget > 0:
            info = _gradient_round(problem, counted, best, budget, maxcor, rel_tol, threads,
                                   t0, log, "polish (LBFGS, gradient-only line search)")
            rounds.append(info)
            if log is not None:
                log(f"polish: {_describe(info)}")
            iterations += info["iterations"]
    g = best["g"]
    gnorm = _norm(g)
    return Optimum(w_star=best["x"], p_star=float(best["f"]), grad_norm=gnorm,
                   grad_max=float(np.max(np.abs(g))), gap_bound=gap_bound(gnorm, lam),
                   iterations=iterations, evaluations=evaluations,
                   seconds=time.perf_counter() - t0, lam=lam, rounds=rounds)
