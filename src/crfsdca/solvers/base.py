"""What every solver shares: the training problem and the solver interface.

Every solver counts work the same way (``baselines.md`` section 1): ``oracle_fb``
forward-backward passes on one sequence, ``oracle_fwd`` forward-only passes,
``updates`` changes of w, ``ls_evals`` line-search evaluations. The monitor
reads these counters, the weights and (for dual methods) the dual objective;
solver time excludes monitoring.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..data.sequences import Sequences, subset_sequences
from ..errors import ConfigError
from ..model.features import NO_MASK, is_full
from ..model.layout import WeightLayout
from ..runtime.threads import check_threads
from .options import Option, OptionTable
from .registry import SOLVERS, SolverConfig

LAMBDA = Option("lambda", float, None, "regularization (default 1/n)", bounds="[0, inf)",
                nullable=True)
"""lambda enters here (the commands' --lambda, the workflow's training.lambda, Python):
finite and >= 0. Only the solvers whose registry entry says ``needs_l2`` = False take
lambda = 0 (CRFsuite's c2 = 0, pure L1 by OWL-QN): the others need a strongly convex
objective, and 1/(lambda n) is every dual method's scale."""
L1 = Option("l1", float, 0.0, "L1 regularization", bounds="[0, inf)")


@dataclass(frozen=True)
class Problem:
    """A regularized CRF training problem over the weights of ``feature_mask`` (uint8 per
    weight, 1 = a feature; None: all, the paper's model; :mod:`crfsdca.model.features`):

        P(w) = (1/n) sum_i c_i NLL_i(w) + lam/2 ||w||^2 + l1 ||w||_1,

    c_i the weights of the training sequences (``train.weights``; all 1 unless given).
    CRFsuite's c1, c2 are l1 = c1 / n and lam = 2 c2 / n (its objective divided by n).
    """

    train: Sequences
    n_attributes: int
    n_labels: int
    lam: float
    radii: np.ndarray | None = None  # squared radii R_i (importance sampling)
    test: Sequences | None = None
    label_names: tuple[str, ...] | None = None
    feature_mask: np.ndarray | None = None
    l1: float = 0.0
    n_transition_attributes: int = 0  # E, W_B's rows (:mod:`crfsdca.data.transitions`)

    @property
    def kappa(self) -> float:
        """kappa = l1 / lam: P = mean NLL + lam g(w) with g = 1/2 ||w||^2 + kappa ||w||_1
        (``math.md`` section 8)."""
        return self.l1 / self.lam

    @property
    def mask(self) -> np.ndarray:
        """The feature mask as the kernels take it: an empty array when every weight is a
        feature."""
        return NO_MASK if is_full(self.feature_mask) else self.feature_mask

    def __post_init__(self):
        for option, name in ((LAMBDA, "lam"), (L1, "l1")):
            try:
                object.__setattr__(self, name, option.parse(getattr(self, name)))
            except ValueError as e:
                raise ConfigError(f"{option.name}: {e}") from None

    @property
    def n(self) -> int:
        return self.train.n_sequences

    @property
    def layout(self) -> WeightLayout:
        return WeightLayout(self.n_attributes, self.n_labels, self.n_transition_attributes)

    @property
    def dim(self) -> int:
        return self.layout.dim

    @classmethod
    def from_dataset(cls, dataset, lam: float | None = None,
                     subset: int | None = None, l1: float = 0.0) -> Problem:
        """Problem of a loaded :class:`~crfsdca.data.hdf5.Dataset`, on its first ``subset``
        training sequences if given; lam defaults to 1/n of the sequences kept."""
        train, radii = dataset.train, dataset.radii
        if subset is not None:
            if subset < 1:
                raise ConfigError(f"subset must be at least 1 sequence, got {subset}")
            train = subset_sequences(train, subset)
            radii = None if radii is None else radii[: train.n_sequences]
        return cls(train=train, n_attributes=dataset.n_attributes, n_labels=dataset.n_labels,
                   lam=1.0 / train.n_sequences if lam is None else lam,
                   radii=radii, test=dataset.test, label_names=tuple(dataset.labels), l1=l1)


def _able(capability: str) -> str:
    """The offered solvers that have ``capability`` (a flag of their registry entry)."""
    return " or ".join(s.name for s in SOLVERS.values() if s.offered and getattr(s, capability))


class Solver(ABC):
    """A CRF solver driven step by step by :func:`crfsdca.training.run.train`.

    ``OPTIONS`` is the solver's option table (:mod:`crfsdca.solvers.registry`). A run
    passes its resolved :class:`~crfsdca.solvers.registry.SolverConfig` (``config``); a
    solver built by hand takes keyword options, checked against the table and completed
    with its defaults. Either way they are ``self.opts``, which :meth:`config` reports.
    """

    name: str = "solver"
    OPTIONS: OptionTable | None = None

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1,
                 config: SolverConfig | None = None, **options):
        caps = SOLVERS.get(self.name)
        if problem.l1 > 0 and not (caps and caps.supports_l1):
            raise ConfigError(f"{self.name} does not handle an L1 term (c1 > 0): use "
                              f"{_able('supports_l1')}")
        if problem.lam == 0 and (caps is None or caps.needs_l2):
            raise ConfigError(f"{self.name} needs an L2 term (c2 > 0, lambda > 0): use "
                              f"{_able('takes_no_l2')} for c2 = 0")
        if problem.train.weighted and not (caps and caps.supports_weights):
            raise ConfigError(f"{self.name} does not handle sequence weights (sample_weight, "
                              f"@weight): use {_able('supports_weights')}")
        if problem.train.n_dense and not (caps and caps.supports_dense):
            raise ConfigError(f"{self.name} does not read array attributes (a dense block): "
                              f"use {_able('supports_dense')}")
        if problem.train.has_edges and not (caps and caps.supports_edges):
            raise ConfigError(f"{self.name} does not train transition attributes (B "
                              f"templates that read the input): use {_able('supports_edges')}")
        threaded = caps is not None and caps.supports_threads
        if threads is not None and check_threads(threads) > 1 and not threaded:
            raise ConfigError(f"{self.name} runs on one thread: use "
                              f"{_able('supports_threads')} for threads > 1")
        self.threads = check_threads(threads) if threaded else 1  # None: every core
        self.problem = problem
        self.seed = int(seed)
        if config is not None:
            if options or config.spec.options is not self.OPTIONS:
                raise TypeError(f"{self.name}: give a config of its own table, or options")
            self.opts = dict(config.options)
        elif self.OPTIONS is None:
            if options:
                raise ConfigError(f"{self.name} takes no options, got {', '.join(options)}")
            self.opts: dict = {}
        else:
            self.opts = self.OPTIONS.resolve(options)

    @property
    def steps_per_epoch(self) -> int:
        """Iterations that make one epoch (n for stochastic methods)."""
        return self.problem.n

    @abstractmethod
    def run(self, n_steps: int) -> None:
        """Advance the solver by ``n_steps`` iterations."""

    def prepare(self) -> None:
        """Compile (or load from numba's cache) the kernels, so that no timed call pays it.

        Solvers whose ``run(0)`` does not reach their kernels override this.
        """
        self.run(0)

    @abstractmethod
    def weights(self) -> np.ndarray:
        """The current primal iterate w (a copy or a view that stays valid until ``run``)."""

    def final_weights(self) -> np.ndarray:
        """``weights()`` once no step follows (the solver may hand over an array of its
        state rather than make one)."""
        return self.weights()

    @abstractmethod
    def counters(self) -> dict[str, int]:
        """Cumulative oracle_fb, oracle_fwd, updates, ls_evals."""

    def phase_cycles(self) -> dict[str, int]:
        """Cycle-counter ticks spent so far in each phase of a step (none by default)."""
        return {}

    def objective(self) -> float | None:
        """P at ``weights()`` when the solver has it at hand (full-batch methods), else
        None (the monitor then computes it)."""
        return None

    def smooth_gradient(self) -> np.ndarray | None:
        """The gradient of P's smooth part (mean NLL + lambda/2 ||w||^2) at ``weights()``,
        when the solver has it at hand (full-batch methods), else None."""
        return None

    def nonzero_weights(self) -> int:
        """How many weights are not 0 (the trace's ``nonzero_weights``)."""
        return int(np.count_nonzero(self.weights()))

    def subgradient_sq_norm(self) -> float | None:
        """||s||^2, s the minimum-norm subgradient of P at ``weights()`` (the gradient of P
        without an L1 term), when the solver has it at hand (full-batch methods), else
        None (the monitor's certificate then takes a pass to compute it)."""
        return None

    stop_at: float | None = None
    """The absolute gap at or below which the driver (:func:`crfsdca.training.run.train`)
    stops, set before every ``run``; None when it runs to a budget. A solver may leave
    out work whose only use is a certificate within it (:meth:`settle` does it at the
    end)."""

    def settle(self) -> bool:
        """Do now what ``stop_at`` let the solver leave out at the current point, when the
        run ends there; True if that changed ``weights()`` or its certificate."""
        return False

    def finished(self) -> str | None:
        """Why the solver stopped by its own test: ``"converged"`` (its convergence test,
        e.g. CRFsuite's epsilon or delta for L-BFGS), ``"stalled"`` (it cannot make
        progress), or None while it goes on."""
        return None

    def dual(self) -> float | None:
        """The dual objective D at the current dual iterate, for dual methods."""
        return None

    def gap_estimate(self) -> float | None:
        """A cheap running estimate of the duality gap, if the method has one."""
        return None

    def gap_estimate_floor(self) -> float | None:
        """A lower bound on :meth:`gap_estimate`, cheaper to read where the estimate has a
        costly part (the training loop reads the estimate itself only below its
        tolerance)."""
        return self.gap_estimate()

    def diagnostics(self) -> dict[str, float]:
        """Method-specific averages since the previous call (line search, step size)."""
        return {}

    def memory_bytes(self) -> dict[str, int]:
        """Bytes of the solver's per-sequence state, by name (printed before training)."""
        return {}

    def config(self) -> dict:
        """The options that define this run (written to the run's metadata)."""
        out = {"solver": self.name, "seed": self.seed, "lambda": self.problem.lam,
               "threads": self.threads}
        if self.problem.l1:
            out["l1"] = self.problem.l1
        return {**out, **self.opts}
