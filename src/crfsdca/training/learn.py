"""The estimator's and ``crfsdca learn``'s run in CRFsuite's scale: its problem, options, log.

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
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..data import radii as data_radii
from ..errors import ConfigError, DivergedError
from ..solvers.base import Problem
from ..solvers.catalyst import kappa_ratio
from ..solvers.registry import ALGORITHMS, SOLVERS, SolverConfig, spec
from .run import Progress, TrainingLog, log_row, run_solver

__all__ = ["ALGORITHMS", "DEFAULT_EPOCHS", "Learned", "TrainingLog", "learn", "lambda_of",
           "make_problem", "solver_config", "DEFAULT_EPSILON", "check_values",
           "feature_mass", "scale_problem"]

DEFAULT_EPOCHS = 1000
"""Epoch budget when none is given (training normally stops by ``epsilon`` well before)."""

DEFAULT_EPSILON = 3e-4
"""The certified relative sub-optimality a fit stops at when ``epsilon`` is not given:
on the practitioner's 18 cells (``benchmarks/studies/stopping_rule.py``) the first epoch at
3e-4 had a test F1 within 0.1 points of the converged model's in every cell, in both
runs of the benchmark (before and after Catalyst's floor: 0.076 and 0.089 points at
most), the only tolerance that did (1e-3: 0.129 and 0.098; 1e-4: 0.086 and 0.106);
10% fewer epochs than 1e-4 (docs/history.md)."""


def lambda_of(c2: float, n: int) -> float:
    """The paper's lambda for CRFsuite's c2 on n training sequences."""
    return 2.0 * float(c2) / int(n)


def c2_of(problem: Problem) -> float:
    """CRFsuite's c2 of a problem (lambda n / 2)."""
    return problem.lam * problem.n / 2.0


LARGEST_VALUE = 1e150
"""The largest attribute value (in magnitude) a fit takes: about the square root of the
largest double, so that sums of squares (step sizes, norms, radii) stay finite. Larger
values make every solver overflow at its first step; CRFsuite trains on them to a model
that predicts one label everywhere."""

SCORE_LIMIT = 1e300
"""What the scores and the squared norm of the dual solvers' weights may reach. SDCA's
(and OEG's) weights are w_hat(mu) = (1/(lambda n)) sum_i (F(x_i, y_i) - E_mu_i[F]), so
||w|| <= 2 M / (lambda n) = M / c2 and every score |<w, F(x_i, y)>| <= M^2 / c2, with M
the data's feature mass (the sum over tokens of |values| plus the bias and transition
entries); P(w) holds lambda/2 ||w||^2 <= (M / c2)^2 c2 / n."""


def feature_mass(train) -> float:
    """M: the sum over every token of the magnitudes of its features (its attribute
    values, its row of the dense block, one bias entry and, but for the last token of a
    sequence, one transition), each token's times its sequence's weight."""
    if train.weighted:
        seq_of_tok = np.repeat(np.arange(train.n_sequences), train.lengths())
        per_token = np.diff(train.attr_indptr).astype(np.float64) if train.binary else \
            np.add.reduceat(np.abs(np.append(train.attr_values, 0.0)),
                            train.attr_indptr[:-1]) * (np.diff(train.attr_indptr) > 0)
        if train.n_dense:
            per_token = per_token + np.abs(train.dense).sum(axis=1)
        per_seq = np.bincount(seq_of_tok, weights=per_token + 2.0,
                              minlength=train.n_sequences) - 1.0
        return float(train.weights @ per_seq)
    values = train.nnz if train.binary else np.abs(train.attr_values).sum()
    if train.n_dense:
        values += np.abs(train.dense).sum()
    return float(values) + 2.0 * train.n_tokens - train.n_sequences


def scale_problem(c2: float, mass: float, config: SolverConfig) -> str | None:
    """Why ``config``'s solver cannot train at ``c2`` on data of feature mass ``mass``
    (its weights would overflow: see :data:`SCORE_LIMIT`), or None. ``mass`` may be a
    lower bound (the token count, before the items are encoded): a refusal then holds."""
    smallest = max(mass * mass / SCORE_LIMIT, mass / SCORE_LIMIT**0.5)
    if not config.spec.needs_l2 or c2 <= 0 or c2 > smallest:
        return None
    return (f"c2 = {c2:g} is too small for {config.name}: its weights grow as 1/c2 and "
            f"would overflow on this data (c2 must exceed {smallest:.1g}); use a larger "
            f"c2, or algorithm='lbfgs', which needs no L2 term")


def check_values(train, attributes) -> None:
    """Refuse attribute values beyond :data:`LARGEST_VALUE` in magnitude, naming the first
    such entry (sequence, item, and its name in the ``attributes`` vocabulary)."""
    if train.n_dense:
        big = np.flatnonzero(~(np.abs(train.dense) <= LARGEST_VALUE))
        if len(big):
            token, col = divmod(int(big[0]), train.n_dense)
            i = int(np.searchsorted(train.offsets, token, side="right")) - 1
            name = attributes.strings()[int(train.dense_attr[col])]
            raise ValueError(f"sequence {i}, item {token - int(train.offsets[i])}, attribute "
                             f"{name!r}: value {train.dense[token, col]:g} is too large (at "
                             f"most {LARGEST_VALUE:g} in magnitude; scale the values to "
                             "about 1)")
    if not train.nnz or train.binary:
        return
    values = train.attr_values
    big = np.flatnonzero(~(np.abs(values) <= LARGEST_VALUE))
    if not len(big):
        return
    entry = int(big[0])
    token = int(np.searchsorted(train.attr_indptr, entry, side="right")) - 1
    i = int(np.searchsorted(train.offsets, token, side="right")) - 1
    name = attributes.strings()[int(train.attr_indices[entry])]
    raise ValueError(f"sequence {i}, item {token - int(train.offsets[i])}, attribute "
                     f"{name!r}: value {values[entry]:g} is too large (at most "
                     f"{LARGEST_VALUE:g} in magnitude; scale the values to about 1)")


def make_problem(train, n_attributes: int, n_labels: int, label_names: list[str],
                 c2: float, feature_mask: np.ndarray | None = None, dev=None,
                 c1: float = 0.0, radii: bool = True, n_transition_attributes: int = 0
                 ) -> Problem:
    """The training problem; ``label_names`` are the model's K labels, then any dev-only
    label (ids K and up in ``dev``: always errors). ``radii``: compute the squared radii
    R_i (for the solvers that need them, :meth:`SolverSpec.needs_radii`)."""
    return Problem(train=train, n_attributes=n_attributes, n_labels=n_labels,
                   lam=lambda_of(c2, train.n_sequences),
                   radii=data_radii.squared_radii(train, n_labels, n_attributes) if radii else None,
                   test=dev,
                   label_names=tuple(label_names), feature_mask=feature_mask,
                   l1=float(c1) / train.n_sequences,
                   n_transition_attributes=n_transition_attributes)


def solver_config(algorithm: str, given: Mapping) -> SolverConfig:
    """``algorithm`` with its options from estimator parameters, named by run key
    (``sampler``, ``lbfgs_memory``...) or by CRFsuite's name (``num_memories``,
    ``linesearch="MoreThuente"``), resolved once; None is the default: CRFsuite's for the
    options that are CRFsuite's parameters, else the table's.

    A value for another solver's option is an error, not silently ignored.
    """
    s = spec(algorithm)
    table = s.options
    mine = {table.key(o.name): o for o in table}
    crfsuite = {o.crfsuite: o for o in table if o.crfsuite is not None}
    out = {o.name: o.from_crfsuite(o.crfsuite_default) for o in table
           if o.crfsuite_default is not None}
    named: dict[str, str] = {}
    for key, value in given.items():
        if value is None:
            continue
        option = crfsuite.get(key) or mine.get(key)
        if option is None:
            owners = [o.name for o in SOLVERS.values()
                      if any(key in (o.options.key(x.name), x.crfsuite) for x in o.options)]
            raise ConfigError(f"{key} is a parameter of {', '.join(owners) or 'no solver'}, "
                              f"not of algorithm {algorithm!r}")
        if option.name in named:
            raise ConfigError(f"{named[option.name]} and {key} are the same option of "
                              f"{algorithm}: give one")
        named[option.name] = key
        try:
            out[option.name] = (option.from_crfsuite(value) if key == option.crfsuite
                                else option.parse(value))
        except ValueError as e:
            raise ConfigError(f"{key}: {e}") from None
    return s.configure(out)


@dataclass
class Learned:
    """A finished (or stopped) run: the weights, the log rows, why it stopped, and what a
    later run can continue from (the dual marginals of a solver that continues from its
    dual state)."""

    weights: np.ndarray
    log: list[dict]
    status: str
    seconds: float
    marginals: tuple[np.ndarray, np.ndarray] | None = None
    options: dict = field(default_factory=dict)


def learn(problem: Problem, config: SolverConfig, seed: int = 0,
          epochs: float | None = None, epsilon: float | None = None,
          max_seconds: float | None = None, verbose: bool = False, stream=None,
          start=None, threads: int = 1, shrink_to_fit: tuple = (),
          on_row=None) -> Learned:
    """Train the solver of ``config`` on ``problem`` until ``epsilon``, ``epochs`` or
    ``max_seconds`` (:func:`crfsdca.training.run.run_solver`, a line per epoch when
    ``verbose``).

    ``start`` continues a previous run (what the solver's registry entry says it continues
    from: a dual state's marginals, or weights); ``threads``: the full-batch passes and
    SDCA's parts (None: every usable core; the model is the same on any number). Ctrl-C
    stops with the weights reached (status ``interrupted``). The log has a row at the start
    and one per epoch; none is scheduled within the first (the reproduction's traces have
    such rows; each costs a pass over the data), though a stop there (convergence, a time
    limit, Ctrl-C) writes its row.
    ``shrink_to_fit``: the options the user left to the fit, which may shrink the state
    where it would not fit in memory (:func:`~crfsdca.training.run.run_solver`).
    ``on_row(solver, row)``: called after each row of the log (a checkpoint).
    """
    stream = stream if stream is not None else sys.stderr
    say = (lambda msg: print(msg, file=stream, flush=True)) if verbose else None
    if epsilon is not None and not epsilon >= 0:
        raise ConfigError(f"epsilon must be >= 0 (0 or None: run the whole budget), got "
                          f"{epsilon}")
    algorithm, options = config.name, config.options
    if say is not None and options.get("catalyst"):
        floor = options.get("catalyst_floor", 0.0)
        ratio = kappa_ratio(options["catalyst"], floor, problem.lam * problem.n)
        moves = ("; every third round it moves by the inner gap's share of the certificate "
                 "(catalyst_tune)") if options.get("catalyst_tune") else ""
        say(f"training {algorithm}: in Catalyst's outer loop, kappa = {ratio:.3g} lambda "
            f"(catalyst={options['catalyst']:g}, catalyst_floor={floor:g}; catalyst=0: "
            f"the paper's SDCA){moves}")
    if say is not None and problem.l1 and "l1_line_search" in options:
        how = ("on the quadratic bound of the L1 part's smoothness" if
               options["l1_line_search"] == "bound" else "on the L1 part split exactly")
        say(f"training {algorithm}: the elastic net's steps search {how} "
            f"(l1_line_search={options['l1_line_search']})")
    budget = DEFAULT_EPOCHS if epochs is None else float(epochs)
    if not (budget > 0 and math.isfinite(budget)):
        raise ConfigError(f"max_iterations must be a finite number > 0, got {epochs}")
    done = run_solver(problem, config, epochs=budget, seed=seed, threads=threads,
                      start=start, seconds=max_seconds, tol=epsilon or None, relative=True,
                      evaluate_test=problem.test is not None,
                      progress=Progress(stream, verbose, style="lines", n=problem.n),
                      say=say, what=f"training {algorithm}", hints="param",
                      certify=config.spec.converges, early=(),
                      shrink_to_fit=shrink_to_fit, on_row=on_row)
    solver, result = done.solver, done.result
    if result.status == "diverged":
        last = result.rows[-1]["primal"] if result.rows else float("nan")
        raise DivergedError(
            f"training {algorithm} diverged (the objective became {last!r}): attribute "
            f"weights of a large magnitude (scale them to about 1) or a tiny c2 "
            f"({c2_of(problem):g} here) make the problem ill-conditioned; no model "
            f"was kept")
    if say is not None and result.rows:
        last = result.rows[-1]
        say(f"{result.status} after {last['epoch']:.2f} epochs, {result.solver_seconds:.2f}s")
    marginals = solver.marginals if config.spec.continues_from == "dual" else None
    cycles = solver.phase_cycles()
    log = TrainingLog((log_row(r, problem.n) for r in result.rows), method=solver.config(),
                      phases={"setup": done.setup_seconds, "solver": result.solver_seconds},
                      counters={**solver.counters(),
                                **{f"cycles_{k}": v for k, v in cycles.items()}})
    # the solver ends here: its weights are taken, not copied (a copy of the d weights
    # while the solver's state is alive was the default fit's peak)
    return Learned(solver.final_weights(), log, result.status, result.solver_seconds,
                   marginals, solver.config())
