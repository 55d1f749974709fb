"""Drive a solver to a budget and record its trace (saved by :mod:`crfsdca.reproduction.rundir`).

A run stops at its epoch budget, its time limit, or when the duality gap is below a
tolerance, absolute or relative to the primal value (the finished statuses of
:data:`crfsdca.training.status.FINISHED`). It stops short, keeping the rows it has, on Ctrl-C
(``interrupted``), on SIGTERM (``terminated``, see :mod:`crfsdca.runtime.signals`) and at the
first non-finite primal, dual or gap estimate (``diverged``: going on would only waste
the budget, and NaN weights are no result).
"""

from __future__ import annotations

import logging
import math
import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, ResourceError, Terminated
from ..runtime import memory
from ..runtime.threads import check_threads
from ..solvers.base import Solver
from ..solvers.monitor import EARLY_CHECKPOINTS, Monitor, checkpoints
from ..solvers.registry import SolverConfig, store_window_mib

MAX_CHECKPOINTS = 100_000
"""Trace rows a run may ask for (epochs / period) at most: more is a typo, not a plan."""

log = logging.getLogger("crfsdca.train")


@dataclass
class TrainResult:
    rows: list[dict] = field(default_factory=list)
    status: str = "budget"  # status.FINISHED, or interrupted | terminated | diverged
    solver_seconds: float = 0.0


class Progress:
    """The progress of a run, one of two ways.

    ``status``: one status line rewritten in place (epoch, primal, gap; the ``train``
    command, on a terminal only unless ``enabled``); ``lines``: a line per checkpoint in
    CRFsuite's scale (:func:`log_row`: loss n P(w), the certified gap, dev scores; the
    estimator's ``verbose`` and ``learn``).
    """

    def __init__(self, stream=None, enabled: bool | None = None, style: str = "status",
                 n: int = 1):
        if style not in ("status", "lines"):
            raise ValueError(f"unknown progress style {style!r}")
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.style, self.n = style, n

    def update(self, row: dict, total_epochs: float) -> None:
        if not self.enabled:
            return
        if self.style == "lines":
            print(self.line(row), file=self.stream, flush=True)
            return
        gap = row["true_gap"] if not math.isnan(row["true_gap"]) else row["gap_estimate"]
        self.stream.write(
            f"\repoch {row['epoch']:7.2f}/{total_epochs:g}  primal {row['primal']:.10e}  "
            f"gap {gap:9.3e}  {row['seconds']:8.2f}s ")
        self.stream.flush()

    def line(self, row: dict) -> str:
        r = log_row(row, self.n)
        text = (f"epoch {r['epoch']:7.2f}  loss {r['loss']:.8e}  gap {r['gap']:.3e} "
                f"(relative {r['relative_gap']:.2e})  {r['seconds']:7.2f}s")
        if "kappa_n" in r:
            text += f"  kappa n {r['kappa_n']:.3g}"
        if "dev_accuracy" in r:
            text += f"  dev accuracy {r['dev_accuracy']:.4f}"
        if "dev_f1" in r:
            text += f"  dev F1 {r['dev_f1']:.2f}"
        return text

    def close(self) -> None:
        if self.enabled and self.style == "status":
            self.stream.write("\n")
            self.stream.flush()


def certificate(row: dict) -> float:
    """A bound on P(w) - P* from a trace row: the duality gap P - D of dual methods, else
    the row's ``certificate`` column (the monitor of the estimator puts
    ||grad P||^2 / (2 lambda) there), else NaN."""
    gap = row.get("true_gap", math.nan)
    return gap if not math.isnan(gap) else row.get("certificate", math.nan)


def log_row(row: dict, n: int) -> dict:
    """A trace row in CRFsuite's scale: loss = n P(w), gap = n times the certified bound
    on P(w) - P* (:func:`certificate`), its ratio to P(w), and the dev scores when there
    is a dev set (the rows of the estimator's ``training_log_``)."""
    cert = certificate(row)
    out = {"epoch": row["epoch"], "seconds": row["seconds"], "loss": n * row["primal"],
           "gap": n * cert if not math.isnan(cert) else math.nan,
           "relative_gap": cert / abs(row["primal"]) if row["primal"] else math.nan}
    if "kappa_n" in row:  # Catalyst's kappa n where the run is (catalyst_tune moves it)
        out["kappa_n"] = row["kappa_n"]
    if not math.isnan(row.get("test_error", math.nan)):
        out["dev_accuracy"] = 1.0 - row["test_error"]
    if not math.isnan(row.get("test_f1", math.nan)):
        out["dev_f1"] = row["test_f1"]
    return out


def zero_objective(problem) -> float:
    """P(0) = (1/n) sum_i c_i T_i log K: at w = 0 every labelling is as likely, and P* <=
    P(0), so no certificate can put P(w) - P* below P(w) - P(0)."""
    seq = problem.train
    lengths = np.diff(np.asarray(seq.offsets, dtype=np.float64))
    tokens = float(np.dot(seq.weights, lengths)) if seq.weighted else float(lengths.sum())
    return tokens * math.log(problem.n_labels) / seq.n_sequences


def _sound(row: dict, has_dual: bool, p_zero: float = math.inf) -> bool:
    """Whether a row's objective values can be true: P(w) finite and not negative (a sum
    of log-losses and norms), the dual finite, and its certificate g no smaller than
    P(w) - P(0) (``p_zero``; P* <= P(0) <= P(w) - g otherwise). A row that fails holds
    no digit of information (overflow, or the cancellation of scores far beyond 1 /
    machine epsilon, which can leave a gap of 0 at a P(w) of 1e175): the run has
    diverged. (A dual above P by rounding is not a failure: a float32 store's gap goes
    slightly negative near the optimum.)"""
    primal = row["primal"]
    if not (math.isfinite(primal) and primal >= 0):
        return False
    cert = certificate(row)
    if not math.isnan(cert) and primal - cert > p_zero * (1.0 + 1e-9) + 1e-12:
        return False
    return not has_dual or math.isfinite(row["dual"])


class _Diverged(Exception):
    """A non-finite primal, dual or gap estimate: the run stops (status ``diverged``)."""


class TrainingLog(list):
    """The rows of :func:`log_row`, one per checkpoint (``iterations``, ``last_iteration``
    as sklearn-crfsuite's training log has them), and what the fit was:

    - ``method``: the solver that ran and its resolved options (its ``config()``: name,
      seed, lambda, threads and every option), so that a log says which method ran;
    - ``phases``: seconds of the fit's parts in order (the estimator's ``encode``,
      ``feature_set`` and ``problem``, then the solver's ``setup`` and ``solver``);
    - ``counters``: the solver's own counts (forward-backward and forward passes,
      updates, line-search evaluations) and, where it keeps them, the cycles of each
      phase of its steps (``cycles_oracle``...).
    """

    def __init__(self, rows=(), method: dict | None = None, phases: dict | None = None,
                 counters: dict | None = None):
        super().__init__(rows)
        self.method = dict(method or {})
        self.phases = dict(phases or {})
        self.counters = dict(counters or {})

    @property
    def iterations(self) -> list[dict]:
        return list(self)

    @property
    def last_iteration(self) -> dict | None:
        return self[-1] if self else None


def check_schedule(epochs: float, period: float, time_limit: float | None = None,
                   gap_tol: float | None = None) -> None:
    """Raise ConfigError unless the budget, period and tolerances are finite and > 0 and the
    trace has at most :data:`MAX_CHECKPOINTS` rows (a run that could never start, or never
    end, is refused before any work)."""
    given = {"epochs": epochs, "period": period, "seconds": time_limit, "gap_tol": gap_tol}
    for name, value in given.items():
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ConfigError(f"{name} must be a finite number > 0, got {value}")
    if epochs / period > MAX_CHECKPOINTS:
        raise ConfigError(f"epochs {epochs:g} / period {period:g} would record "
                          f"{epochs / period:.3g} trace rows, more than {MAX_CHECKPOINTS:,}: "
                          "monitor less often (a larger period)")


def train(solver: Solver, monitor: Monitor, epochs: float, period: float = 1.0,
          time_limit: float | None = None, gap_tol: float | None = None,
          progress: Progress | None = None, chunk_epochs: float = 0.1,
          relative: bool = False, early: tuple = EARLY_CHECKPOINTS,
          on_row=None) -> TrainResult:
    """Run ``solver`` for ``epochs`` epochs (iterations / steps_per_epoch), monitoring it.

    Stops early when the solver's gap estimate falls below ``gap_tol`` and one
    full-batch duality gap confirms it, or when solver time exceeds ``time_limit``; stops
    short on Ctrl-C, SIGTERM (as :class:`~crfsdca.errors.Terminated`) or divergence.
    With ``relative``, the tolerance is ``gap_tol * |P(w)|`` (P of the last row), and for
    solvers without a gap estimate every row's :func:`certificate` is tested against it.
    ``early``: the fractions of the first epoch with a row besides 0 and every ``period``.
    ``on_row(solver, row)``: called after each row is recorded (the estimator's
    checkpoints).
    """
    check_schedule(epochs, period, time_limit, gap_tol)
    result = TrainResult()
    has_dual = type(solver).dual is not Solver.dual
    p_zero = zero_objective(solver.problem)
    progress = progress or Progress(enabled=False)
    spe = solver.steps_per_epoch
    chunk = max(int(chunk_epochs * spe), 1)
    steps_done = 0
    t_solver = 0.0
    confirm_below = gap_tol  # after a failed confirmation, wait for the estimate to halve

    def tolerance() -> float:
        return gap_tol * abs(result.rows[-1]["primal"]) if relative else gap_tol

    def record(epoch: float, shown: dict | None = None) -> dict:
        """The row at ``epoch``, shown unless it tells what ``shown`` (a row it
        replaces) told already."""
        row = monitor.row(solver, t_solver, epoch)
        result.rows.append(row)
        if shown is None or (row["primal"], certificate(row)) != (shown["primal"],
                                                                  certificate(shown)):
            progress.update(row, epochs)
        if not _sound(row, has_dual, p_zero):
            raise _Diverged
        if on_row is not None:
            on_row(solver, row)
        return row

    def certified(row: dict) -> bool:
        return gap_tol is not None and certificate(row) <= tolerance()

    def finite(est: float | None) -> float | None:
        """``est``, unless it is not finite: then a last row, and the run diverged."""
        if est is not None and not math.isfinite(est):
            record(steps_done / spe)
            raise _Diverged
        return est

    def record_once() -> None:
        """A row at the current position, unless the last row is already there."""
        epoch = steps_done / spe
        if result.rows[-1]["epoch"] != epoch:
            record(epoch)

    solver.prepare()
    try:
        if certified(record(0.0)):
            result.status = "converged"
        for target in checkpoints(epochs, period, early)[1:]:
            if result.status != "budget":
                break
            target_steps = int(round(target * spe))
            while steps_done < target_steps:
                k = min(chunk, target_steps - steps_done)
                solver.stop_at = None if gap_tol is None else tolerance()
                t0 = time.perf_counter()
                solver.run(k)
                t_solver += time.perf_counter() - t0
                steps_done += k
                if time_limit is not None and t_solver >= time_limit:
                    result.status = "time_limit"
                    break
                why = solver.finished()
                if why is not None:  # its own test: CRFsuite's epsilon or delta, a stall
                    result.status = why
                    break
                est = finite(solver.gap_estimate_floor())
                if gap_tol is None or est is None:
                    continue
                below = confirm_below * (abs(result.rows[-1]["primal"]) if relative else 1.0)
                if est < below:  # the floor is below: read the whole estimate
                    est = finite(solver.gap_estimate())
                if est < below:
                    row = record(steps_done / spe)
                    if row["true_gap"] < tolerance():
                        result.status = "converged"
                        break
                    confirm_below = est / 2 / (abs(row["primal"]) if relative else 1.0)
            record_once()
            if result.status == "budget" and certified(result.rows[-1]):
                result.status = "converged"
            if result.status != "budget":
                break
        t0 = time.perf_counter()
        if solver.settle():  # what stop_at let it leave out at its last row, done now
            t_solver += time.perf_counter() - t0
            record(steps_done / spe, shown=result.rows.pop())
            if result.status == "budget" and certified(result.rows[-1]):
                result.status = "converged"
    except _Diverged:
        result.status = "diverged"
    except (KeyboardInterrupt, Terminated) as e:
        result.status = "interrupted" if isinstance(e, KeyboardInterrupt) else "terminated"
        try:  # one last row for the steps done since the previous checkpoint
            if result.rows:
                record_once()
        except (KeyboardInterrupt, Terminated, _Diverged):
            pass
    finally:
        solver.stop_at = None
        progress.close()
    result.solver_seconds = t_solver
    return result


@dataclass
class Run:
    """A finished (or stopped) run: the solver as it ended, its trace, its setup time."""

    solver: Solver
    result: TrainResult
    setup_seconds: float


def way_out(config: SolverConfig, style: str = "flag") -> str:
    """What makes a run smaller, for the memory error: its solver's registry entry's
    ``shrink`` values as command-line flags (``style="flag"``) or as parameters."""
    table = config.spec.options
    ways = []
    for w in config.spec.shrink:
        if config.options.get(w.option) == w.value:
            continue
        key = table.key(w.option)
        shown = w.value if w.chosen is not None else repr(w.value)  # a name, or the value
        if style == "flag":
            name = table.flag(w.option)
            ways.append(f"{name} {w.value} {w.effect}" if w.value is not None else
                        f"a smaller {name} {w.effect}")
        else:
            ways.append(f"{key}={shown} {w.effect}" if w.value is not None else
                        f"a smaller {key} {w.effect}")
    ways.append("--subset k trains on the first k sequences" if style == "flag" else
                "train on fewer sequences")
    return "; ".join(ways)


def _paging(config: SolverConfig, sizes) -> str:
    """What a store in a file costs where it is larger than the memory left beside the
    rest of the state: SDCA's draws keep to windows of the store but for a share
    (``window_spill``) over all of it, which then mostly reads the disk (without the
    windows, CoNLL-2000 on a generator took 30 s without a limit and was still running
    after 17 minutes under 800 MiB; docs/benchmarks.md 'Windows over a store in a
    file')."""
    if config.options.get("store_dir") is None:
        return ""
    in_memory = config.spec.configure({**config.options, "store_dir": None})
    store = in_memory.train_bytes(sizes) - config.train_bytes(sizes)
    room, _ = memory.available()
    left = (room or 0) - config.train_bytes(sizes)
    if room is None or store <= 2 * max(left, 0):
        return ""
    return (f"; the store ({memory.gib(store)}) is more than twice the memory left beside "
            f"the rest ({memory.gib(max(left, 0))}): SDCA's draws outside its windows "
            "(window_spill) will read the disk, and the fit may run several times slower")


def run_solver(problem, config: SolverConfig, *, epochs: float, seed: int = 0,
               threads: int = 1, start=None, period: float = 1.0,
               seconds: float | None = None, tol: float | None = None,
               relative: bool = False, evaluate_test: bool = True,
               progress: Progress | None = None, say=None, what: str | None = None,
               hints: str = "flag", certify: bool = False,
               early: tuple = EARLY_CHECKPOINTS, shrink_to_fit: tuple = (),
               on_row=None) -> Run:
    """The one way into a training run (the ``train`` command, ``learn`` and the estimator).

    ``config`` is the solver with its options, resolved once by the caller
    (:meth:`~crfsdca.solvers.registry.SolverSpec.configure`). Says (``say``) what its state
    takes and refuses, before allocating, a run that does not fit
    (:mod:`crfsdca.runtime.memory`; the way out worded for ``hints``: ``"flag"`` or
    ``"param"``), builds the solver (``start``: what it continues from, see
    :meth:`~crfsdca.solvers.registry.SolverConfig.build`) and trains it with :func:`train`.
    With ``certify`` (and always with ``tol`` and ``relative``) the monitor adds the
    gradient certificate of the solvers without a dual, so that every solver stops on a
    certified bound and reports one. ``early``: as for :func:`train`. ``shrink_to_fit``
    names options the caller left to the run (``store_dtype``): where the state would not
    fit in memory, they take their ``shrink`` value if that makes it fit, and the run says
    so (a warning) rather than refusing. ``on_row``: as for :func:`train`.
    """
    cores = check_threads(threads)  # the monitor's; the solver resolves its own
    sizes = memory.DataSizes.of_problem(problem)
    if not memory.fits(config.train_bytes(sizes)):
        smaller = next((c for c in config.shrunk(shrink_to_fit)
                        if memory.fits(c.train_bytes(sizes))), None)
        if smaller is not None:
            changed = ", ".join(f"{k}={v!r}" for k, v in smaller.options.items()
                                if config.options[k] != v)
            warnings.warn(f"{what or config.name}: {changed} so that the state fits in "
                          f"memory ({memory.gib(smaller.train_bytes(sizes))} instead of "
                          f"{memory.gib(config.train_bytes(sizes))}){_paging(smaller, sizes)}",
                          RuntimeWarning, stacklevel=2)
            config = smaller
    parts = config.state_bytes(sizes)
    what = what or config.name
    if say is not None:
        where = config.options.get("store_dir")
        largest = ", ".join(f"{name.replace('_', ' ')} {size / 2**20:.1f}"
                            for name, size in memory.largest(parts, 3))
        say(f"{what}: n={problem.n} sequences, d={problem.dim} weights, K={problem.n_labels} "
            f"labels; solver state {sum(parts.values()) / 2**20:.1f} MiB in memory "
            f"({largest} MiB)"
            + ("" if where is None else f", its marginal store in a file in {where}"))
    hint = way_out(config, hints)
    memory.check(config.train_bytes(sizes), what, hint, parts)
    t0 = time.perf_counter()
    try:
        built = config.build(problem, seed=seed, threads=threads, start=start)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    except MemoryError:
        raise ResourceError(f"{what}: out of memory while allocating its state; "
                            f"{hint}") from None
    setup = time.perf_counter() - t0
    if say is not None:
        say(f"{what}: solver built in {setup:.1f}s")
        if getattr(built, "window", 0):
            say(f"{what}: draws keep to windows of {built.window} consecutive sequences "
                f"(store_window {store_window_mib(config.options):g} MiB of the store)")
    monitor = Monitor(problem, evaluate_test=evaluate_test, threads=cores,
                      certify=certify or (tol is not None and relative))
    result = train(built, monitor, epochs, period=period, time_limit=seconds, gap_tol=tol,
                   progress=progress, relative=relative, early=early, on_row=on_row)
    return Run(built, result, setup)
