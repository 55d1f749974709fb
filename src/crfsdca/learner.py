"""One training run of the estimator and of ``crfsdca learn``: problem, memory, solver, log.

CRFsuite's scale: the objective is sum_i NLL_i + c1 ||w||_1 + c2 ||w||^2, i.e. n times
the paper's P(w) with lambda = 2 c2 / n and l1 = c1 / n (only SDCA handles c1 > 0).
Stopping (``epsilon``): the certified relative sub-optimality, (P(w) - D) / |P(w)| <=
epsilon with D the dual of SDCA or OEG, or, for the primal solvers,
||grad P(w)||^2 / (2 lambda) / |P(w)| <= epsilon (both bound (P(w) - P*) / P*); SDCA
tests its running gap estimate and confirms it with one full pass.
CRFsuite's own epsilon is an L-BFGS convergence test on the gradient, not a certificate.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np

from .errors import ConfigError
from .jit import dot
from .solvers.base import Problem
from .solvers.registry import SOLVER_NAMES, SOLVERS, spec

ALGORITHMS = tuple(name for name in SOLVER_NAMES if name != "sag")
"""The solvers the estimator and ``learn`` offer: all but plain SAG, the paper's baseline
with one global step size, which needs thousands of epochs on small problems (sag-nus
does not)."""

DUAL_SOLVERS = ("sdca",)
"""Solvers whose dual state continued training can start from."""

DEFAULT_EPOCHS = 1000
"""Epoch budget when none is given (training normally stops by ``epsilon`` well before)."""


def lambda_of(c2: float, n: int) -> float:
    """The paper's lambda for CRFsuite's c2 on n training sequences."""
    return 2.0 * float(c2) / int(n)


def make_problem(train, n_attributes: int, n_labels: int, label_names: list[str],
                 c2: float, feature_mask: np.ndarray | None = None, dev=None,
                 c1: float = 0.0) -> Problem:
    """The training problem; ``label_names`` are the model's K labels, then any dev-only
    label (ids K and up in ``dev``: always errors)."""
    from .data.radii import squared_radii

    return Problem(train=train, n_attributes=n_attributes, n_labels=n_labels,
                   lam=lambda_of(c2, train.n_sequences),
                   radii=squared_radii(train, n_labels, n_attributes), test=dev,
                   label_names=tuple(label_names), feature_mask=feature_mask,
                   l1=float(c1) / train.n_sequences)


def solver_options(algorithm: str, given: dict) -> dict:
    """The options of ``algorithm`` from estimator parameters named by run key
    (``sampler``, ``sag_decrease``, ``lbfgs_memory``...; None: the table's default).

    A value for another solver's option is an error, not silently ignored.
    """
    table = spec(algorithm).options
    mine = {table.key(o.name): o.name for o in table}
    out = {}
    for key, value in given.items():
        if value is None:
            continue
        if key in mine:
            out[mine[key]] = table.check(mine[key], value)
            continue
        owners = [s.name for s in SOLVERS.values() if key in {s.options.key(o.name)
                                                               for o in s.options}]
        raise ConfigError(f"{key} is an option of {', '.join(owners) or 'no solver'}, not of "
                          f"algorithm {algorithm!r}")
    return out


def check_memory(algorithm: str, problem: Problem, options: dict, log=None) -> int:
    """Say how much the solver's state takes; a clear error, before allocating, if it
    would not fit in the memory available (:mod:`crfsdca.memory`)."""
    from . import memory

    sizes = memory.DataSizes.of_problem(problem)
    resolved = spec(algorithm).options.resolve(options)
    parts = memory.solver_state_bytes(algorithm, resolved, sizes)
    need = memory.train_bytes(algorithm, resolved, sizes)
    if log is not None:
        log(f"{algorithm}: n={problem.n} sequences, d={problem.dim} weights, "
            f"K={problem.n_labels} labels; solver state {sum(parts.values()) / 2**20:.1f} MiB")
    hint = ("store_dtype='float32' halves the dual store, or train on fewer sequences"
            if resolved.get("store_dtype", "float64") == "float64" else
            "train on fewer sequences")
    memory.check(need, f"training {algorithm}", hint, parts)
    return need


@dataclass
class Learned:
    """A finished (or stopped) run: the weights, the log rows, why it stopped."""

    weights: np.ndarray
    log: list[dict]
    status: str
    seconds: float
    marginals: tuple[np.ndarray, np.ndarray] | None = None
    options: dict = field(default_factory=dict)


def log_row(row: dict, n: int) -> dict:
    """A monitor row in CRFsuite's scale: loss = n P(w), gap = n (P - D) or the
    gradient certificate, and the dev scores when there is a dev set."""
    from .training import certificate

    cert = certificate(row)
    out = {"epoch": row["epoch"], "seconds": row["seconds"], "loss": n * row["primal"],
           "gap": n * cert if not math.isnan(cert) else math.nan,
           "relative_gap": cert / abs(row["primal"]) if row["primal"] else math.nan}
    if not math.isnan(row.get("test_error", math.nan)):
        out["dev_accuracy"] = 1.0 - row["test_error"]
    if not math.isnan(row.get("test_f1", math.nan)):
        out["dev_f1"] = row["test_f1"]
    return out


class TrainingLog(list):
    """The rows of :func:`log_row`, one per checkpoint (``iterations``, ``last_iteration``
    as sklearn-crfsuite's training log has them)."""

    @property
    def iterations(self) -> list[dict]:
        return list(self)

    @property
    def last_iteration(self) -> dict | None:
        return self[-1] if self else None


def _monitor(problem: Problem, need_certificate: bool, threads: int):
    from .model.objective import primal_and_gradient
    from .solvers.monitor import Monitor

    class CertifyingMonitor(Monitor):
        """Adds ||grad P||^2 / (2 lambda) for solvers without a dual."""

        def row(self, solver, seconds, epoch):
            out = super().row(solver, seconds, epoch)
            if need_certificate and math.isnan(out["dual"]):
                p = self.problem
                _, g = primal_and_gradient(solver.weights(), p.train, p.n_attributes,
                                           p.n_labels, p.lam, p.feature_mask, self.threads)
                out["certificate"] = dot(g, g) / (2 * p.lam)
            return out

    return CertifyingMonitor(problem, evaluate_test=problem.test is not None, threads=threads)


class LineProgress:
    """One line per checkpoint (epoch, objective, gap, dev scores) when ``enabled``."""

    def __init__(self, n: int, enabled: bool, stream=None):
        self.n, self.enabled = n, enabled
        self.stream = stream if stream is not None else sys.stderr

    def update(self, row: dict, total_epochs: float) -> None:
        if not self.enabled:
            return
        r = log_row(row, self.n)
        text = (f"epoch {r['epoch']:7.2f}  loss {r['loss']:.8e}  gap {r['gap']:.3e} "
                f"(relative {r['relative_gap']:.2e})  {r['seconds']:7.2f}s")
        if "dev_accuracy" in r:
            text += f"  dev accuracy {r['dev_accuracy']:.4f}"
        if "dev_f1" in r:
            text += f"  dev F1 {r['dev_f1']:.2f}"
        print(text, file=self.stream, flush=True)

    def close(self) -> None:
        pass


def learn(problem: Problem, algorithm: str, options: dict, seed: int = 0,
          epochs: float | None = None, epsilon: float | None = None,
          max_seconds: float | None = None, verbose: bool = False, stream=None,
          initial_marginals=None, initial_weights=None, threads: int = 1) -> Learned:
    """Train ``algorithm`` on ``problem`` until ``epsilon``, ``epochs`` or ``max_seconds``.

    ``initial_marginals`` (SDCA) or ``initial_weights`` (L-BFGS) continue a previous run;
    ``threads``: SDCA's lanes and the full-batch passes (sdca, lbfgs).
    Ctrl-C stops with the weights reached (status ``interrupted``).
    """
    from .training import train

    stream = stream if stream is not None else sys.stderr
    say = (lambda msg: print(msg, file=stream, flush=True)) if verbose else None
    check_memory(algorithm, problem, options, say)
    s = spec(algorithm)
    extra = {}
    if initial_marginals is not None:
        if algorithm not in DUAL_SOLVERS:
            raise ConfigError(f"continuing from a dual state needs algorithm 'sdca', not "
                              f"{algorithm!r}")
        extra["initial_marginals"] = initial_marginals
    if initial_weights is not None:
        if algorithm != "lbfgs":
            raise ConfigError(f"continuing from weights alone needs algorithm 'lbfgs'; "
                              f"{algorithm!r} continues from a saved dual state (sdca)")
        extra["w0"] = initial_weights
    try:
        solver = s.solver_class()(problem, seed=seed, threads=threads, **s.fixed, **options,
                                  **extra)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if epsilon is not None and not epsilon >= 0:
        raise ConfigError(f"epsilon must be >= 0 (0 or None: run the whole budget), got "
                          f"{epsilon}")
    epsilon = epsilon or None
    budget = DEFAULT_EPOCHS if epochs is None else float(epochs)
    if budget <= 0:
        raise ConfigError(f"max_iterations must be positive, got {epochs}")
    monitor = _monitor(problem, need_certificate=epsilon is not None, threads=threads)
    result = train(solver, monitor, budget, period=1.0, time_limit=max_seconds,
                   gap_tol=epsilon, relative=True,
                   progress=LineProgress(problem.n, verbose, stream))
    if say is not None:
        last = result.rows[-1]
        say(f"{result.status} after {last['epoch']:.2f} epochs, {result.solver_seconds:.2f}s")
    marginals = getattr(solver, "marginals", None) if algorithm in DUAL_SOLVERS else None
    return Learned(np.array(solver.weights(), copy=True),
                   TrainingLog(log_row(r, problem.n) for r in result.rows), result.status,
                   result.solver_seconds, marginals, solver.config())
