"""CRFsuite's online trainers as solvers: averaged perceptron, passive-aggressive, AROW.

As CRFsuite 0.12 defines them (``train_averaged_perceptron.c``,
``train_passive_aggressive.c``, ``train_arow.c``): an epoch is one pass over the n
instances in an order shuffled before every epoch (CRFsuite's ``dataset_shuffle``, a
running permutation each of whose positions is swapped with a random one; here from the
run's seed, CRFsuite uses C's ``rand()``); each instance is decoded by Viterbi at the
current weights and, if a label is wrong, the weights of the features on the gold and
the Viterbi paths move (CRFsuite's feature set: ``Problem.feature_mask``). At the end of
an epoch each algorithm tests CRFsuite's stopping criterion on the epoch's loss
(``epsilon``), and :meth:`~OnlineSolver.finished` then says ``"converged"``.

The weights of the averaged algorithms (AP, PA with ``averaging``) are averaged lazily as
in CRFsuite: besides w, ws accumulates c times every change (c counting the instances
from 1), and the average of the iterates is w - ws / c, computed when read.

They do not minimize the CRF objective: ``lambda`` plays no role (the monitor still
reports P(w) at their weights).
"""

from __future__ import annotations

import numpy as np

from ..model.oracle import make_workspace
from ..runtime.jit import aligned_zeros
from .base import Problem, Solver
from .online_kernel import (
    DECODES,
    LOSS,
    N_SUMS,
    UPDATES,
    arow_pass,
    average_into,
    max_difference_terms,
    passive_aggressive_pass,
    perceptron_pass,
    shuffle_instances,
)
from .registry import AP_OPTIONS, AROW_OPTIONS, PA_OPTIONS
from .rng import make_rng


def shuffle_order(order: np.ndarray, rng: np.ndarray) -> None:
    """Shuffle the running instance order in place, as CRFsuite does before every epoch
    (and before L2SGD's calibration). A module function, so that a test can draw the
    swaps from C's ``rand()`` as CRFsuite does, and follow it step for step."""
    shuffle_instances(order, rng)


class OnlineSolver(Solver):
    """What CRFsuite's online trainers share: the instance order, shuffled before every
    epoch (option ``shuffle``; off: the data's order, every epoch), the epochs cut into
    the chunks that ``run`` is asked for, and the end-of-epoch test.

    Subclasses implement :meth:`_visit` (the instances ``order[lo:hi]``) and
    :meth:`_end_epoch` (which may set ``self._stopped``).
    """

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1, **options):
        super().__init__(problem, seed, threads, **options)
        p = problem
        self.order = np.arange(p.n, dtype=np.int64)
        self.rng = make_rng(self.seed)
        self.shuffle = bool(self.opts.get("shuffle", True))
        self.workspace = make_workspace(int(np.max(p.train.lengths())), p.n_labels)
        self.sums = np.zeros(N_SUMS)  # the current epoch's loss, updates, decodes
        self.epochs = 0  # epochs completed
        self.last_loss = np.nan  # the loss of the last completed epoch
        self._pos = 0  # instances of the current epoch visited
        self._stopped: str | None = None
        self._updates = 0
        self._decodes = 0

    # -- driving -------------------------------------------------------------------------
    def run(self, n_steps: int) -> None:
        n = self.problem.n
        remaining = int(n_steps)
        while remaining > 0 and self._stopped is None:
            if self._pos == 0:
                self._start_epoch()
            m = min(remaining, n - self._pos)
            self._visit(self._pos, self._pos + m)
            self._pos += m
            remaining -= m
            if self._pos == n:
                self._pos = 0
                self.epochs += 1
                self.last_loss = float(self.sums[LOSS])
                self._end_epoch()

    def prepare(self) -> None:
        self._visit(0, 0)

    def _shuffle(self) -> None:
        if self.shuffle:
            shuffle_order(self.order, self.rng)

    def _start_epoch(self) -> None:
        self._shuffle()
        self._updates += int(self.sums[UPDATES])
        self._decodes += int(self.sums[DECODES])
        self.sums[:] = 0.0

    def _visit(self, lo: int, hi: int) -> None:
        raise NotImplementedError

    def _end_epoch(self) -> None:
        raise NotImplementedError

    def finished(self) -> str | None:
        return self._stopped

    def _mean_loss_below(self, epsilon: float, or_equal: bool = False) -> bool:
        mean = self.last_loss / self.problem.n
        return mean <= epsilon if or_equal else mean < epsilon

    # -- reading ---------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        """Viterbi decodes count as forward passes (``oracle_fwd``), updates as the
        instances whose weights moved."""
        return {"oracle_fb": 0, "oracle_fwd": self._decodes + int(self.sums[DECODES]),
                "updates": self._updates + int(self.sums[UPDATES]), "ls_evals": 0}

    def diagnostics(self) -> dict[str, float]:
        """CRFsuite's loss of the last completed epoch (its log's ``Loss``)."""
        return {"epoch_loss": self.last_loss}


class _Difference:
    """The dense difference vector F(y) - F(y_hat) of PA and AROW, with the list of its
    distinct nonzero positions (CRFsuite's ``delta_t``)."""

    def __init__(self, problem: Problem):
        p = problem
        self.delta = aligned_zeros(p.dim)
        self.used = np.zeros(p.dim, dtype=np.uint8)
        self.actives = np.zeros(max(max_difference_terms(p.train, p.n_attributes,
                                                         p.n_labels), 1), dtype=np.int64)


class AveragedPerceptron(OnlineSolver):
    """CRFsuite's averaged perceptron (``ap``, ``averaged-perceptron``).

    Options (:data:`~crfsdca.solvers.registry.AP_OPTIONS`): ``epsilon`` (stop when the
    epoch's mean error rate, sum over the wrong instances of d_i / T_i over n, is below
    it; 0: never) and ``shuffle``. :meth:`weights` is the average of the iterates.
    """

    name = "ap"
    OPTIONS = AP_OPTIONS

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1, **options):
        super().__init__(problem, seed, threads, **options)
        d = problem.dim
        self.w = aligned_zeros(d)
        self.wsum = aligned_zeros(d)
        self.averaged = aligned_zeros(d)
        self.count = np.ones(1)  # c: 1 + the instances visited

    def _visit(self, lo: int, hi: int) -> None:
        p = self.problem
        perceptron_pass(self.order, lo, hi, self.w, self.wsum, self.count, p.n_attributes,
                        p.n_labels, p.train, p.mask, self.workspace, self.sums)

    def _end_epoch(self) -> None:
        if self._mean_loss_below(self.opts["epsilon"]):
            self._stopped = "converged"

    def weights(self) -> np.ndarray:
        average_into(self.averaged, self.w, self.wsum, float(self.count[0]))
        return self.averaged

    def memory_bytes(self) -> dict[str, int]:
        return {"weights": self.w.nbytes, "weight_sums": self.wsum.nbytes,
                "averaged": self.averaged.nbytes, "per_sequence": self.order.nbytes}


class PassiveAggressive(OnlineSolver):
    """CRFsuite's passive-aggressive (``pa``, ``passive-aggressive``): PA, PA-I or PA-II.

    Options (:data:`~crfsdca.solvers.registry.PA_OPTIONS`): ``type`` (0, 1, 2), ``c``
    (aggressiveness), ``error_sensitive`` (the cost adds sqrt(d), else 1), ``averaging``
    (:meth:`weights` is the average of the iterates, as the perceptron's), ``epsilon``
    (stop when the epoch's mean cost is below it; 0: never) and ``shuffle``.
    """

    name = "pa"
    OPTIONS = PA_OPTIONS

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1, **options):
        super().__init__(problem, seed, threads, **options)
        d = problem.dim
        self.averaging = bool(self.opts["averaging"])
        self.w = aligned_zeros(d)
        self.wsum = aligned_zeros(d if self.averaging else 0)
        self.averaged = aligned_zeros(d if self.averaging else 0)
        self.count = np.ones(1)  # u: 1 + the instances visited
        self.diff = _Difference(problem)

    def _visit(self, lo: int, hi: int) -> None:
        p, o, diff = self.problem, self.opts, self.diff
        passive_aggressive_pass(self.order, lo, hi, self.w, self.wsum, self.count,
                                p.n_attributes, p.n_labels, p.train, p.mask, self.workspace,
                                diff.delta, diff.used, diff.actives, int(o["type"]),
                                float(o["c"]), bool(o["error_sensitive"]), self.averaging,
                                self.sums)

    def _end_epoch(self) -> None:
        if self._mean_loss_below(self.opts["epsilon"]):
            self._stopped = "converged"

    def weights(self) -> np.ndarray:
        if not self.averaging:
            return self.w
        average_into(self.averaged, self.w, self.wsum, float(self.count[0]))
        return self.averaged

    def memory_bytes(self) -> dict[str, int]:
        return {"weights": self.w.nbytes, "weight_sums": self.wsum.nbytes,
                "averaged": self.averaged.nbytes, "difference": self.diff.delta.nbytes,
                "difference_flags": self.diff.used.nbytes, "per_sequence": self.order.nbytes}


class AROW(OnlineSolver):
    """CRFsuite's AROW, adaptive regularization of weights (``arow``).

    Options (:data:`~crfsdca.solvers.registry.AROW_OPTIONS`): ``variance`` (the initial
    variance of every weight), ``gamma`` (the trade-off), ``epsilon`` (stop when the
    epoch's mean cost is at most it: with 0, after an epoch without a mistake) and
    ``shuffle``. :meth:`weights` is the mean (no averaging, as in CRFsuite).
    """

    name = "arow"
    OPTIONS = AROW_OPTIONS

    def __init__(self, problem: Problem, seed: int = 0, threads: int = 1, **options):
        super().__init__(problem, seed, threads, **options)
        d = problem.dim
        self.mean = aligned_zeros(d)
        self.cov = aligned_zeros(d)
        self.cov[:] = self.opts["variance"]
        self.diff = _Difference(problem)

    def _visit(self, lo: int, hi: int) -> None:
        p, diff = self.problem, self.diff
        arow_pass(self.order, lo, hi, self.mean, self.cov, p.n_attributes, p.n_labels,
                  p.train, p.mask, self.workspace, diff.delta, diff.used, diff.actives,
                  float(self.opts["gamma"]), self.sums)

    def _end_epoch(self) -> None:
        if self._mean_loss_below(self.opts["epsilon"], or_equal=True):
            self._stopped = "converged"

    def weights(self) -> np.ndarray:
        return self.mean

    def memory_bytes(self) -> dict[str, int]:
        return {"weights": self.mean.nbytes, "variances": self.cov.nbytes,
                "difference": self.diff.delta.nbytes,
                "difference_flags": self.diff.used.nbytes, "per_sequence": self.order.nbytes}


__all__ = ["AROW", "AveragedPerceptron", "OnlineSolver", "PassiveAggressive", "shuffle_order"]
