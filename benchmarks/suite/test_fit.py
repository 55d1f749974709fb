"""The default fit against sklearn-crfsuite's tutorial call (the README's first figure).

Dutch, the tutorial's arguments (c1 = c2 = 0.1, ``all_possible_transitions``): crfsdca's
``CRF`` with its own algorithm, sklearn-crfsuite's ``CRF(algorithm='lbfgs',
max_iterations=100)``, alternated in one process, crfsdca on one thread and again on every
usable core (sklearn-crfsuite has one). Kept with the time: each model's test F1,
crfsdca's certified relative gap, epochs, and the fit's phases and counters
(``training_log_``).
"""

from __future__ import annotations

import pytest
import workload
from machine import cores

from crfsdca.training.learn import DEFAULT_EPSILON

ROUNDS = 5
EVERY_CORE = cores()["usable_cores"]
"""The threads of the every-core figures: the process's usable cores (``threads=None``
would read the suite's OMP_NUM_THREADS=1)."""


def _threads(benchmark, threads: int) -> dict:
    """crfsdca's arguments for ``threads`` (recorded in ``extra_info``)."""
    benchmark.extra_info["threads"] = threads
    return {"threads": threads}


def test_default_fit(benchmark, dutch):
    _default_fit(benchmark, dutch, 1)


@pytest.mark.skipif(EVERY_CORE < 2, reason="one usable core: the one-thread figure")
def test_default_fit_on_every_core(benchmark, dutch):
    _default_fit(benchmark, dutch, EVERY_CORE)


def _default_fit(benchmark, dutch, threads: int):
    import sklearn_crfsuite

    from crfsdca import CRF

    X, y, X_test, y_test = dutch
    kw = _threads(benchmark, threads)
    ours, theirs = workload.alternate(
        benchmark, lambda: CRF(**workload.DEFAULT_FIT, **kw).fit(X, y),
        lambda: sklearn_crfsuite.CRF(**workload.TUTORIAL_CALL).fit(X, y),
        "sklearn-crfsuite, the tutorial's call", ROUNDS)
    log = ours.training_log_
    last = log.last_iteration
    benchmark.extra_info.update(
        call=f"crfsdca.CRF(**{ {**workload.DEFAULT_FIT, **kw} })",
        reference_call=f"sklearn_crfsuite.CRF(**{workload.TUTORIAL_CALL})",
        sentences=len(X), f1=round(workload.tutorial_f1(ours, X_test, y_test), 4),
        reference_f1=round(workload.tutorial_f1(theirs, X_test, y_test), 4),
        relative_gap=last["relative_gap"], epochs=last["epoch"],
        status=ours.model_.training["status"], solver=log.method.get("solver"),
        phases=log.phases, counters=log.counters)
    assert last["relative_gap"] <= DEFAULT_EPSILON  # the figure is of a certified fit


def test_tutorial_call(benchmark, dutch):
    """The tutorial's call run unchanged (``algorithm='lbfgs'``: CRFsuite's L-BFGS and
    OWL-QN, the same iterations), against sklearn-crfsuite's."""
    _tutorial_call(benchmark, dutch, 1)


@pytest.mark.skipif(EVERY_CORE < 2, reason="one usable core: the one-thread figure")
def test_tutorial_call_on_every_core(benchmark, dutch):
    """The same, crfsdca's passes on every usable core (the same weights)."""
    _tutorial_call(benchmark, dutch, EVERY_CORE)


def _tutorial_call(benchmark, dutch, threads: int):
    import sklearn_crfsuite

    from crfsdca import CRF

    X, y, X_test, y_test = dutch
    kw = _threads(benchmark, threads)
    ours, theirs = workload.alternate(
        benchmark, lambda: CRF(**workload.TUTORIAL_CALL, **kw).fit(X, y),
        lambda: sklearn_crfsuite.CRF(**workload.TUTORIAL_CALL).fit(X, y),
        "sklearn-crfsuite, the tutorial's call", ROUNDS)
    log = ours.training_log_
    benchmark.extra_info.update(
        call=f"crfsdca.CRF(**{ {**workload.TUTORIAL_CALL, **kw} })", sentences=len(X),
        f1=round(workload.tutorial_f1(ours, X_test, y_test), 4),
        reference_f1=round(workload.tutorial_f1(theirs, X_test, y_test), 4),
        iterations=log.counters.get("updates"), solver=log.method.get("solver"),
        phases=log.phases, counters=log.counters)
