"""Several threads: full-batch passes and parallel SDCA (``docs/math.md`` section 9)."""

import numpy as np
import pytest
from helpers.bruteforce import random_split
from helpers.scipy_reference import lbfgs_optimum
from numba import njit

from crfsdca.data.radii import squared_radii
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import ConfigError
from crfsdca.model.features import soft_threshold
from crfsdca.model.objective import (
    SlotBuffers,
    block_gaps,
    predict,
    primal,
    primal_and_gradient,
    weights_from_marginals,
)
from crfsdca.runtime.jit import lock, unlock
from crfsdca.runtime.threads import run_parallel
from crfsdca.solvers.base import Problem
from crfsdca.solvers.registry import SAMPLERS, make_solver
from crfsdca.solvers.sdca import lane_members


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


def test_lanes_split_the_sequences():
    lanes = lane_members(10, 3, seed=4)
    together = np.sort(np.concatenate(lanes))
    np.testing.assert_array_equal(together, np.arange(10))
    assert [len(m) for m in lanes] == [4, 3, 3]
    assert all(np.all(np.diff(m) > 0) for m in lanes)


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_parallel_sdca_converges_with_every_sampler(sampler):
    """Two lanes on two threads: the gap certificate stays exact (P - D = mean block gap,
    w = w_hat(mu)), the gap falls as with one thread (within a factor 10 or below 1e-6
    after the same number of updates, or at most twice as many: asynchronous runs vary
    from run to run, and deep in the tail a one-token sequence's stored gap can go stale
    (other steps move the bias weights it depends on) until a uniform draw revisits it:
    in 90 runs each, 2 with the gap sampler and 4 with gap-importance were above the
    bound after the same number and below it within 1.5 times as many, none in 30 runs of
    each other sampler; cyclic, importance and max sampling are slow either way) and
    P is the optimum of scipy's L-BFGS-B within that certified gap, at any gap: weak
    duality gives P* <= P(w) <= P* + (P(w) - D(mu))."""
    p = problem(n=200)
    _, p_star = lbfgs_optimum(p)
    gaps_after = {}
    for threads in (1, 2):
        s = make_solver("sdca", p, seed=1, threads=threads, sampler=sampler)
        s.prepare()
        for _ in range(300):
            s.run(p.n // 10)
        P = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
        gaps_after[threads] = P - s.dual()
    bound = 10 * gaps_after[1] + 1e-6
    chunks = 300
    while gaps_after[2] > bound and chunks < 600:
        s.run(p.n // 10)
        chunks += 1
        P = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
        gaps_after[2] = P - s.dual()
    mu_u, mu_p = s.marginals
    w_hat = weights_from_marginals(mu_u, mu_p, p.train, p.n_attributes, p.n_labels, p.lam)
    np.testing.assert_allclose(s.weights(), w_hat, atol=1e-10)
    gaps = block_gaps(s.weights(), mu_u, mu_p, p.train, p.n_attributes, p.n_labels)
    assert gaps_after[2] == pytest.approx(gaps.mean(), rel=1e-8, abs=1e-12)
    assert -1e-12 <= gaps_after[2] <= bound
    # weak duality, at any gap: 1e-10 below for scipy's own tolerance (gtol 1e-12)
    assert -1e-10 <= P - p_star <= gaps_after[2] * (1 + 1e-9) + 1e-12, (P, p_star, gaps_after)
    assert s.counters()["updates"] == chunks * (p.n // 10)
    assert s.lane_draws.sum() == chunks * (p.n // 10)  # the draws given to the lanes


def test_a_thread_done_with_its_lane_takes_the_draws_left_to_the_others():
    """One thread alone runs its lane's draws, then the other lane's, from that lane's
    sampler; every sequence is released afterwards."""
    from crfsdca.solvers.sdca_kernel import sdca_run_lanes

    p = problem(n=40)
    s = make_solver("sdca", p, seed=2, threads=2, sampler="gap")
    before = [lane.sampler.gaps.copy() for lane in s.lanes]
    quota = np.array([5, 7], dtype=np.int64)
    lane = s.lanes[0]
    sdca_run_lanes(0, quota, s._samplers, s._members, s._member_starts, s._busy,
                   s._lane_locks, lane.state.w, p.n_attributes, p.n_labels, s.index,
                   lane.state, lane.buffers, lane.rng, s.options)
    assert quota.tolist() == [0, 0]
    assert s.counters()["updates"] == 12
    assert not s._busy.any() and not s._lane_locks.any()
    for x, old in zip(s.lanes, before, strict=True):  # both lanes' stored gaps moved
        assert np.any(x.sampler.gaps != old)


def test_parallel_sdca_with_l1_and_float32():
    p = problem(l1=0.01)
    s = make_solver("sdca", p, seed=0, threads=2)
    ref = make_solver("sdca", p, seed=0)
    # P is lam-strongly convex: |w - w*|^2 <= 2 (P(w) - P*) / lam <= 2 gap / lam, the gap
    # known to the rounding of P and D (1e-12 here; a converged gap can read as 0 or below)
    radius = 0.0
    for solver in (s, ref):
        for _ in range(300):
            solver.run(p.n // 5)
        gap = primal(solver.weights(), p.train, p.n_attributes, p.n_labels, p.lam,
                     p.l1) - solver.dual()
        assert -1e-12 <= gap < 1e-9
        radius += np.sqrt(2 * (max(gap, 0.0) + 1e-12) / p.lam)
    assert np.linalg.norm(s.weights() - ref.weights()) <= radius
    # each row is changed under its lock: w = S_kappa(v) holds exactly after the threads
    np.testing.assert_array_equal(s.weights(), soft_threshold(s.state.v, p.kappa))
    f32 = make_solver("sdca", problem(), seed=0, threads=2, store_dtype="float32")
    f32.run(30 * p.n)
    assert primal(f32.weights(), p.train, p.n_attributes, p.n_labels, p.lam) - f32.dual() \
        < 1e-5


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


@pytest.mark.parametrize("stripes", [1, 2, 3, 16])
def test_every_attribute_row_has_a_stripe_lock_apart_from_the_blocks(stripes):
    from numba import njit as _njit

    from crfsdca.solvers.sdca_locks import BIAS_LOCK, TRANS_LOCK, row_locks, stripe_lock

    locks = row_locks(stripes)
    n_attr = 1000
    which = _njit(lambda a, locks: stripe_lock(a, n_attr, locks))
    held = {which(a, locks) for a in range(n_attr)}
    assert len(held) == stripes  # each stripe a contiguous range of attributes
    assert all(0 <= x < len(locks) and x not in (BIAS_LOCK, TRANS_LOCK) for x in held)
    assert sorted(which(a, locks) for a in range(n_attr)) == [which(a, locks)
                                                              for a in range(n_attr)]


def test_one_compiled_kernel_serves_every_thread_count(monkeypatch):
    """The lanes' samplers and the slots' gradients reach the kernels as flat arrays:
    parallel SDCA and a full-batch pass at 3 and 5 threads compile nothing that 2 did
    not (a tuple per thread had the count in its type: 6-10 s of compiling for each new
    thread count on CoNLL-2000). The lanes' samplers are views of the flat arrays."""
    from crfsdca.model.passes import _emission_rows
    from crfsdca.solvers.sdca_kernel import sdca_run_lanes

    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)  # lanes past the cores
    p = problem(n=40)
    w = np.random.default_rng(0).normal(size=p.dim)

    def run(threads):
        s = make_solver("sdca", p, seed=0, threads=threads)
        assert len(s.lanes) == threads
        s.run(p.n)
        for t, lane in enumerate(s.lanes):
            a, b = s._samplers.starts[t], s._samplers.starts[t + 1]
            assert np.shares_memory(lane.sampler.gaps, s._samplers.gaps)
            np.testing.assert_array_equal(lane.sampler.gaps, s._samplers.gaps[a:b])
        assert s.lane_draws.sum() == p.n
        primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam, threads=threads)

    run(2)
    compiled = (set(sdca_run_lanes.signatures), set(_emission_rows.signatures))
    for threads in (3, 5):
        run(threads)
    assert (set(sdca_run_lanes.signatures), set(_emission_rows.signatures)) == compiled
