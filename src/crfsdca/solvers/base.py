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
from ..model.layout import WeightLayout


@dataclass(frozen=True)
class Problem:
    """A regularized CRF training problem: P(w) = lam/2 ||w||^2 + mean NLL over ``train``."""

    train: Sequences
    n_attributes: int
    n_labels: int
    lam: float
    radii: np.ndarray | None = None  # squared radii R_i (importance sampling)
    test: Sequences | None = None
    label_names: tuple[str, ...] | None = None

    @property
    def n(self) -> int:
        return self.train.n_sequences

    @property
    def layout(self) -> WeightLayout:
        return WeightLayout(self.n_attributes, self.n_labels)

    @property
    def dim(self) -> int:
        return self.layout.dim

    @classmethod
    def from_dataset(cls, dataset, lam: float | None = None,
                     subset: int | None = None) -> Problem:
        """Problem of a loaded :class:`~crfsdca.data.hdf5.Dataset`, on its first ``subset``
        training sequences if given; lam defaults to 1/n of the sequences kept."""
        train, radii = dataset.train, dataset.radii
        if subset is not None:
            if subset < 1:
                raise ConfigError(f"subset must be at least 1 sequence, got {subset}")
            train = subset_sequences(train, subset)
            radii = None if radii is None else radii[: train.n_sequences]
        n = train.n_sequences
        return cls(train=train, n_attributes=dataset.n_attributes,
                   n_labels=dataset.n_labels, lam=1.0 / n if lam is None else float(lam),
                   radii=radii, test=dataset.test, label_names=tuple(dataset.labels))


class Solver(ABC):
    """A CRF solver driven step by step by :func:`crfsdca.solvers.training.train`."""

    name: str = "solver"

    def __init__(self, problem: Problem, seed: int = 0):
        self.problem = problem
        self.seed = int(seed)

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

    @abstractmethod
    def counters(self) -> dict[str, int]:
        """Cumulative oracle_fb, oracle_fwd, updates, ls_evals."""

    def dual(self) -> float | None:
        """The dual objective D at the current dual iterate, for dual methods."""
        return None

    def gap_estimate(self) -> float | None:
        """A cheap running estimate of the duality gap, if the method has one."""
        return None

    def diagnostics(self) -> dict[str, float]:
        """Method-specific averages since the previous call (line search, step size)."""
        return {}

    def memory_bytes(self) -> dict[str, int]:
        """Bytes of the solver's per-sequence state, by name (printed before training)."""
        return {}

    def config(self) -> dict:
        """The options that define this run (written to the run's metadata)."""
        return {"solver": self.name, "seed": self.seed, "lambda": self.problem.lam}
