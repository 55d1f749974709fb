"""A regularization path on one fold: the grid's (c1, c2) points fitted in turn, each
starting from the solution of the point before it.

The start of a point (``next_start``) is what its solver continues from: SDCA's dual
marginals with the weights the previous point ended at (``DualStart``), L-BFGS's weights;
the other solvers start fresh. The dual marginals mu stay feasible when lambda = 2 c2 / n
or l1 = c1 / n change (the constraints on mu do not involve them); the dual image
w_hat(mu) = (1/(lambda n)) sum_i psi_i(mu_i) then scales by lambda_old / lambda_new and
the primal point is w = S_{l1/lambda}(w_hat) (``math.md``, sections 4 and 8). With
Catalyst's outer loop (the estimator's default), SDCA restarts from the previous
weights instead, with the center that makes them its inner weights; its certificate
P(w) - D(mu) is the new problem's, exact, from the first row. Every point stops on its own
certificate at ``epsilon`` like a cold fit, whatever its start.

The order (``path_order``): c2 from the largest down, and within each c2, c1 up and
down in turn, so that every point but the first is one step of the grid from the one
before it.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..data.radii import squared_radii
from ..solvers.registry import DualStart, SolverConfig
from .feature_set import crfsuite_feature_mask
from .folds import Fold
from .learn import Learned, learn, make_problem
from .status import raise_stop
from .weighting import fit_weights


@dataclass(frozen=True)
class PathRun:
    """How every point of a path is fitted: the solver's config, its budget and tolerance
    (``epsilon``: the certified relative gap it stops at, None for a solver whose own test
    stops it), and the feature set and label weights of the estimator's parameters."""

    config: SolverConfig
    epochs: float
    epsilon: float | None
    max_seconds: float | None = None
    seed: int = 0
    threads: int = 1
    possible_states: bool = False
    possible_transitions: bool = False
    min_freq: float = 0.0
    bias: bool = False
    class_weight: object = None


class PathPoint(NamedTuple):
    """A fitted point: why it stopped, its epochs, its fit seconds (the solver's setup and
    run), its objective (``loss``, CRFsuite's scale) and certificate (``gap``, the same
    scale, and ``relative_gap``; NaN for a solver without one) at the end and the
    certificate (``gap``) at its start, and the caller's score of its weights."""

    c1: float
    c2: float
    status: str
    epochs: float
    fit_seconds: float
    loss: float
    gap: float
    relative_gap: float
    start_gap: float
    score: float
    score_seconds: float


def path_order(c1s: Sequence[float], c2s: Sequence[float]) -> list[tuple[float, float]]:
    """The grid's points in path order: c2 decreasing, c1 increasing then decreasing."""
    c1_up = sorted(c1s)
    order = []
    for j, c2 in enumerate(sorted(c2s, reverse=True)):
        order += [(c1, c2) for c1 in (c1_up if j % 2 == 0 else c1_up[::-1])]
    return order


def point_costs(points: Sequence[tuple[float, float]]) -> np.ndarray:
    """The expected work of each (c1, c2) point relative to the others, 1 / sqrt(c2):
    SDCA's epochs in Catalyst's loop grow as 1 / sqrt(lambda n) = 1 / sqrt(2 c2) once c2
    is small (``math.md``, section 10); on CoNLL-2002 Spanish's default grid they grew
    1.3-1.7x for each halving of c2. A point at c2 = 0 counts as the dearest of the
    others."""
    c2 = np.array([c for _, c in points], dtype=np.float64)
    costs = np.zeros(len(c2))
    positive = c2 > 0
    costs[positive] = 1.0 / np.sqrt(c2[positive])
    costs[~positive] = costs.max() if positive.any() else 1.0
    return costs


def split_path(points: list, pieces: int) -> list[list]:
    """``points`` cut into ``pieces`` consecutive paths of about equal expected work
    (:func:`point_costs`; a piece starts cold, the others warm), so that pieces run side
    by side end about together."""
    pieces = max(1, min(int(pieces), len(points)))
    total = np.concatenate([[0.0], np.cumsum(point_costs(points))])
    targets = np.arange(1, pieces) * (total[-1] / pieces)
    inner = [int(np.argmin(np.abs(total - t))) for t in targets]
    cuts = np.unique(np.clip([0, *inner, len(points)], 0, len(points)))
    return [points[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]


def next_start(config: SolverConfig, learned: Learned):
    """What the next point's fit starts from, by what ``config``'s solver continues from."""
    kind = config.spec.continues_from
    if kind == "dual" and learned.marginals is not None:
        return DualStart(learned.marginals, learned.weights)
    return learned.weights if kind == "weights" else None


def fit_path(fold: Fold, points: Sequence[tuple[float, float]], run: PathRun,
             score: Callable[[float, float, np.ndarray], float]) -> list[PathPoint]:
    """Fit ``points`` of the fold in turn, each from the previous one's solution, and
    score each one's weights by ``score(c1, c2, weights)`` (the fold's layout) before the
    next."""
    A, K = len(fold.attributes), len(fold.labels)
    train = fit_weights(fold.train, fold.labels, run.class_weight)
    mask = crfsuite_feature_mask(train, A, K, run.possible_states, run.possible_transitions,
                                 run.min_freq, run.bias, fold.zero_entries)
    radii = squared_radii(train, K, A) if run.config.needs_radii() else None
    start = None
    out = []
    for c1, c2 in points:
        problem = dataclasses.replace(
            make_problem(train, A, K, fold.labels, c2, mask, None, c1, radii=False),
            radii=radii)  # the radii, where the solver needs them, once per fold
        learned = learn(problem, run.config, seed=run.seed, epochs=run.epochs,
                        epsilon=run.epsilon, max_seconds=run.max_seconds,
                        start=start, threads=run.threads)
        raise_stop(learned.status)  # Ctrl-C, SIGTERM: the whole search stops
        start = next_start(run.config, learned)
        t0 = time.perf_counter()
        value = float(score(c1, c2, learned.weights))
        first, last = (learned.log[0], learned.log[-1]) if learned.log else ({}, {})
        out.append(PathPoint(c1, c2, learned.status, float(last.get("epoch", 0.0)),
                             sum(learned.log.phases.values()),
                             float(last.get("loss", math.nan)),
                             float(last.get("gap", math.nan)),
                             float(last.get("relative_gap", math.nan)),
                             float(first.get("gap", math.nan)), value,
                             time.perf_counter() - t0))
    return out


__all__ = ["PathPoint", "PathRun", "fit_path", "next_start", "path_order", "point_costs",
           "split_path"]
