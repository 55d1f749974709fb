"""The suite's fixtures: one thread for every tool, the tutorial's Dutch items, and the
facts of the machine that each stored result keeps (``machine_info``, ``extra_info``)."""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before numpy: one thread, as the figures say

import pytest  # noqa: E402
import workload  # noqa: E402
from machine import cores, label, processor  # noqa: E402

THREADS = 1
"""Threads of every fit and prediction (``crfsdca.CRF``'s default)."""


PACKAGES = ("crfsdca", "numba", "numpy", "scikit-learn", "sklearn-crfsuite", "python-crfsuite")


def pytest_configure(config):
    """The commit checked out when the suite starts: the code it measures (pytest-benchmark
    reads the commit again when it saves, after others may have committed)."""
    from pytest_benchmark.utils import get_commit_info

    config._crfsdca_commit = get_commit_info()
    config._crfsdca_load = round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None


def pytest_benchmark_update_commit_info(config, commit_info):
    commit_info.update(config._crfsdca_commit)


def pytest_benchmark_update_machine_info(config, machine_info):
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    machine_info.update(processor=processor(), label=label(), **cores(),
                        packages={name: installed(name) for name in PACKAGES},
                        load_average=config._crfsdca_load)  # others' work on the machine


@pytest.fixture(autouse=True)
def _facts(request):
    """Each benchmark's ``extra_info`` says the threads it ran on and the cores it had."""
    if "benchmark" in request.fixturenames:
        bench = request.getfixturevalue("benchmark")
        bench.extra_info.update(threads=THREADS, **cores())
    yield


@pytest.fixture(scope="session")
def dutch():
    """The tutorial's items: (X_train, y_train, X_test, y_test) on CoNLL-2002 Dutch."""
    return (*workload.items("ned.train"), *workload.items("ned.testb"))


@pytest.fixture(scope="session")
def fitted(dutch):
    """(crfsdca's default fit, sklearn-crfsuite's tutorial call), each fitted once on the
    Dutch training items: the models that the prediction benchmarks serve."""
    import sklearn_crfsuite

    from crfsdca import CRF

    X, y, _, _ = dutch
    return (CRF(**workload.DEFAULT_FIT).fit(X, y),
            sklearn_crfsuite.CRF(**workload.TUTORIAL_CALL).fit(X, y))
