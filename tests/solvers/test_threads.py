"""Several threads: full-batch passes, the spin lock, threads refused where a solver has
none (mini-batch SDCA: ``test_minibatch.py``)."""

import numpy as np
import pytest
from helpers.bruteforce import random_split
from numba import njit

from crfsdca.data.radii import squared_radii
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import ConfigError
from crfsdca.model.objective import (
    SlotBuffers,
    block_gaps,
    predict,
    primal,
    primal_and_gradient,
)
from crfsdca.runtime.jit import lock, unlock
from crfsdca.runtime.threads import run_parallel
from crfsdca.solvers.base import Problem
from crfsdca.solvers.registry import make_solver


def problem(n=60, K=4, A=30, seed=2, l1=0.0):
    seq = synthetic_sequences(n, 1, 9, K, A, 4, seed=seed)
    return Problem(seq, A, K, 1.0 / n, radii=squared_radii(seq, K, A), test=seq, l1=l1)


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_full_batch_passes_agree_across_thread_counts(threads):
    rng = np.random.default_rng(0)
    seq = random_split(rng, 50, 8, 5, 20, real=True)
    w = rng.normal(size=20 * 5 + 3 * 5 + 25)
    f1, g1 = primal_and_gradient(w, seq, 20, 5, 0.1)
    fk, gk = primal_and_gradient(w, seq, 20, 5, 0.1, threads=threads)
    again = primal_and_gradient(w, seq, 20, 5, 0.1, threads=threads)
    assert fk == pytest.approx(f1, rel=1e-12)
    np.testing.assert_allclose(gk, g1, rtol=1e-12, atol=1e-14)
    assert again[0] == fk and np.array_equal(again[1], gk)  # bitwise for a thread count
    mask = (rng.random(len(w)) < 0.5).astype(np.uint8)
    masked = primal_and_gradient(w, seq, 20, 5, 0.1, mask=mask, threads=threads)[1]
    np.testing.assert_allclose(masked, g1 * mask, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(primal_and_gradient(w, seq, 20, 5, 0.1, mask=mask)[1],
                                  g1 * mask)
    assert primal(w, seq, 20, 5, 0.1, threads=threads) == pytest.approx(f1, rel=1e-12)
    np.testing.assert_array_equal(predict(w, seq, 20, 5, threads=threads),
                                  predict(w, seq, 20, 5))
    mu_u = np.full(seq.n_tokens * 5, 0.2)
    mu_p = np.full((seq.n_tokens - seq.n_sequences) * 25, 0.04)
    np.testing.assert_allclose(block_gaps(w, mu_u, mu_p, seq, 20, 5, threads=threads),
                               block_gaps(w, mu_u, mu_p, seq, 20, 5), rtol=1e-12)


def test_kept_slot_buffers_give_the_fresh_results_and_a_new_gradient_each_call():
    rng = np.random.default_rng(1)
    seq = random_split(rng, 40, 8, 4, 15, real=True)
    other = random_split(rng, 30, 12, 4, 15, real=True)  # longer sequences: new workspaces
    d = 15 * 4 + 3 * 4 + 16
    buffers = SlotBuffers()
    for split in (seq, other, seq):
        w = rng.normal(size=d)
        fresh = primal_and_gradient(w, split, 15, 4, 0.1, threads=2)
        kept = primal_and_gradient(w, split, 15, 4, 0.1, threads=2, buffers=buffers)
        assert kept[0] == fresh[0] and np.array_equal(kept[1], fresh[1])
        copy = kept[1].copy()
        primal_and_gradient(rng.normal(size=d), split, 15, 4, 0.1, threads=2,
                            buffers=buffers)
        np.testing.assert_array_equal(kept[1], copy)  # not overwritten by the next call


def test_threads_are_refused_where_a_solver_has_none():
    with pytest.raises(ConfigError, match="one thread"):
        make_solver("sag-nus", problem(), threads=2)
    with pytest.raises(ConfigError, match="positive integer"):
        make_solver("sdca", problem(), threads=0)
    lb = make_solver("lbfgs", problem(), threads=2)
    lb.run(3)
    ref = make_solver("lbfgs", problem())
    ref.run(3)
    np.testing.assert_allclose(lb.weights(), ref.weights(), rtol=1e-9, atol=1e-12)


@njit(nogil=True)
def _count_under_lock(counts, locks, rounds):
    for _ in range(rounds):
        lock(locks, 0)
        counts[0] += 1.0  # read-modify-write: two threads lose updates without the lock
        counts[1] = counts[0]
        unlock(locks, 0)


def test_the_lock_loses_no_update():
    counts = np.zeros(2)
    locks = np.zeros(16, dtype=np.int32)
    rounds = 200_000
    run_parallel([lambda: _count_under_lock(counts, locks, rounds)] * 4)
    assert counts[0] == counts[1] == 4 * rounds
    assert locks[0] == 0  # released


def test_one_compiled_kernel_serves_every_thread_count(monkeypatch):
    """The slots' gradients reach the kernels as flat arrays, and every part of
    partitioned SDCA runs the one sequential kernel: SDCA and a full-batch pass at 3 and 5
    threads compile nothing that 2 did not (a tuple per thread had the count in its type:
    6-10 s of compiling for each new thread count on CoNLL-2000)."""
    from crfsdca.model.passes import _emission_rows
    from crfsdca.solvers.minibatch import batch_run

    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    p = problem(n=40)
    w = np.random.default_rng(0).normal(size=p.dim)

    def run(threads):
        s = make_solver("sdca", p, seed=0, threads=threads, batch_size=threads)
        assert len(s.thread_states) == threads
        s.run(p.n)
        primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam, threads=threads)

    run(2)
    compiled = (set(batch_run.signatures), set(_emission_rows.signatures))
    for threads in (3, 5):
        run(threads)
    assert (set(batch_run.signatures), set(_emission_rows.signatures)) == compiled


def test_threads_none_follows_omp_num_threads_and_an_explicit_count_does_not(monkeypatch):
    """``threads=None`` takes the usable cores, capped by an explicit OMP_NUM_THREADS (what
    joblib's workers set to their share); an explicit count is capped by the cores only
    (the workflow pins OMP_NUM_THREADS=1 for BLAS and still runs --threads 2)."""
    from crfsdca.runtime.threads import check_threads, default_threads

    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert default_threads() == check_threads(None) == 8
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert check_threads(None) == 3 and check_threads(5) == 5
    monkeypatch.setenv("OMP_NUM_THREADS", "16")
    assert check_threads(None) == 8
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert check_threads(None) == 8
    with pytest.warns(RuntimeWarning, match="more than the 8 cores"):
        assert check_threads(9) == 8


def test_the_usable_cores_read_the_affinity_mask():
    import os

    from crfsdca.runtime.threads import usable_cores

    if hasattr(os, "sched_getaffinity"):
        assert 1 <= usable_cores() <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize("kw", [{}, {"batch_size": 4}, {"batch_size": 4, "c1": 0.1},
                                {"algorithm": "lbfgs"}])
def test_the_default_fit_is_one_model_on_any_number_of_threads(monkeypatch, kw):
    """``CRF()`` as users call it (SDCA, sequential or in batches of 4 with and without the
    elastic net, or the tutorial's lbfgs), with a dev set: the same weights and the same
    log, bit for bit, on 1, 2 and 3 threads and run to run."""
    from helpers.corpora import small_corpus

    from crfsdca import CRF

    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    X, y = small_corpus(n=60, seed=3)
    fits = [CRF(threads=t, max_iterations=40, epsilon=1e-6, **kw).fit(X[:45], y[:45],
                                                                      X_dev=X[45:],
                                                                      y_dev=y[45:])
            for t in (1, 2, 3, 2)]
    if "batch_size" in kw:
        assert fits[0].training_log_.method["batch_size"] == 4
    for crf in fits[1:]:
        np.testing.assert_array_equal(crf.model_.weights, fits[0].model_.weights)
        assert [(r["loss"], r["dev_accuracy"]) for r in crf.training_log_.iterations] \
            == [(r["loss"], r["dev_accuracy"]) for r in fits[0].training_log_.iterations]
