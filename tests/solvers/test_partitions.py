"""Partitioned SDCA (``solvers/partitions.py``, ``docs/math.md`` section 9): parts fixed by
the data, local subproblems that see the same problem, a certificate as exact as with
one part, a dual that no round lowers, and one model per seed and P on any thread count."""

import numpy as np
import pytest
from helpers.bruteforce import random_split
from helpers.scipy_reference import lbfgs_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.data.radii import squared_radii
from crfsdca.data.sequences import make_sequences
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.model.features import soft_threshold
from crfsdca.model.objective import block_gaps, predict, primal, weights_from_marginals
from crfsdca.solvers.base import Problem
from crfsdca.solvers.partitions import local_split, partition_bounds
from crfsdca.solvers.registry import SAMPLERS, make_solver


def problem(n=60, K=4, A=30, seed=2, l1=0.0, weights=None, dense=0):
    """A synthetic problem; ``dense`` columns of N(0, 1) values as attributes A.. A + dense."""
    seq = synthetic_sequences(n, 1, 9, K, A, 4, seed=seed)
    if weights is not None or dense:
        rng = np.random.default_rng(seed)
        seq = make_sequences(
            seq.offsets, seq.labels, seq.attr_indptr, seq.attr_indices, None, weights,
            rng.normal(size=(seq.n_tokens, dense)) if dense else None,
            np.arange(A, A + dense) if dense else None)
    A += dense
    return Problem(seq, A, K, 1.0 / n, radii=squared_radii(seq, K, A), test=seq, l1=l1)


def certificate_holds(s, p):
    """P - D is the mean of the block gaps at the solver's weights and marginals, and w is
    the primal image of the marginals (S_kappa of it with the elastic net)."""
    mu_u, mu_p = s.marginals
    w_hat = weights_from_marginals(mu_u, mu_p, p.train, p.n_attributes, p.n_labels, p.lam,
                                   p.feature_mask)
    w = soft_threshold(w_hat, p.kappa) if p.l1 else w_hat
    np.testing.assert_allclose(s.weights(), w, atol=1e-9)
    gap = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam, p.l1) - s.dual()
    if not p.l1:
        gaps = block_gaps(s.weights(), mu_u, mu_p, p.train, p.n_attributes, p.n_labels)
        assert gap == pytest.approx(gaps.mean(), rel=1e-7, abs=1e-11)  # c_i in each
    return gap


@given(st.integers(1, 200), st.integers(1, 12), st.integers(0, 2**16))
@settings(max_examples=40, deadline=None)
def test_parts_are_contiguous_token_balanced_and_never_empty(n, parts, seed):
    rng = np.random.default_rng(seed)
    seq = random_split(rng, n, 12, 2, 5)
    parts = min(parts, n)
    bounds = partition_bounds(seq, parts)
    assert bounds[0] == 0 and bounds[-1] == n and len(bounds) == parts + 1
    assert np.all(np.diff(bounds) >= 1)
    tokens = np.diff(seq.offsets[bounds])
    assert tokens.max() <= seq.n_tokens / parts + 2 * seq.lengths().max()


def test_more_parts_than_sequences_are_refused():
    seq = random_split(np.random.default_rng(0), 3, 4, 2, 5)
    with pytest.raises(ValueError, match="partitions must be between 1 and the 3"):
        partition_bounds(seq, 4)


@pytest.mark.parametrize("real", [False, True])
def test_a_local_split_scores_as_the_whole(real):
    """Each part on its renumbered attributes, at the gathered weights: the same Viterbi
    labels, and the parts' losses add up to the whole's."""
    rng = np.random.default_rng(3)
    A, K = 25, 3
    seq = random_split(rng, 40, 7, K, A, real=real)
    w = rng.normal(size=A * K + 3 * K + K * K)
    whole = predict(w, seq, A, K)
    bounds = partition_bounds(seq, 4)
    loss = 0.0
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        part = local_split(seq, lo, hi, A, K)
        t0, t1 = seq.offsets[lo], seq.offsets[hi]
        np.testing.assert_array_equal(predict(w[part.rows], part.seq, part.n_attributes, K),
                                      whole[t0:t1])
        loss += (hi - lo) * primal(w[part.rows], part.seq, part.n_attributes, K, 0.0)
    assert loss == pytest.approx(seq.n_sequences * primal(w, seq, A, K, 0.0), rel=1e-12)


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_partitioned_sdca_converges_to_the_optimum_with_every_sampler(sampler):
    """Three parts: the gap certificate stays exact, no round lowers the dual, and P
    reaches scipy's optimum within the certified gap (weak duality, at any gap)."""
    p = problem(n=120)
    _, p_star = lbfgs_optimum(p)
    s = make_solver("sdca", p, seed=1, partitions=3, sampler=sampler)
    s.prepare()
    dual = s.dual()
    for _ in range(200):
        s.run(p.n // 10)
        now = s.dual()
        assert now >= dual - 1e-12
        dual = now
    gap = certificate_holds(s, p)
    P = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
    assert -1e-10 <= P - p_star <= gap * (1 + 1e-9) + 1e-12
    assert gap < 0.05 * P  # from a relative gap of about 1 at the start
    assert s.counters()["updates"] == 200 * (p.n // 10) == s.part_draws.sum()


@pytest.mark.parametrize("case", ["l1", "float32", "weights", "dense", "catalyst"])
def test_partitioned_sdca_keeps_its_certificate(case):
    kw = {}
    p = problem()
    if case == "l1":
        p = problem(l1=0.01)
    elif case == "float32":
        kw = {"store_dtype": "float32"}
    elif case == "weights":
        p = problem(weights=np.random.default_rng(5).choice([0.0, 0.5, 1.0, 3.0], size=60))
    elif case == "dense":
        p = problem(dense=3)
    else:
        kw = {"catalyst": 3.0, "catalyst_floor": 0.3}
    s = make_solver("sdca", p, seed=0, partitions=4, **kw)
    s.prepare()
    for _ in range(150):
        s.run(p.n // 5)
    if case in ("float32", "catalyst"):  # w is w_hat of the rounded store, or Catalyst's x_k
        gap = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam) - s.dual()
    else:
        gap = certificate_holds(s, p)
    assert -1e-9 <= gap < 1e-2


def test_the_model_is_the_seed_and_the_parts_whatever_the_threads(monkeypatch):
    """P = 3 on 1, 2 and 3 threads (and run to run): the same weights and marginals, bit
    for bit; another seed, another model."""
    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    p = problem(n=90, l1=0.005)
    runs = []
    for threads in (1, 2, 3, 2):
        s = make_solver("sdca", p, seed=7, threads=threads, partitions=3)
        for _ in range(25):
            s.run(p.n // 10)
        runs.append((s.weights().copy(), s.marginals[0].copy(), s.dual()))
    for w, mu, d in runs[1:]:
        assert np.array_equal(w, runs[0][0]) and np.array_equal(mu, runs[0][1])
        assert d == runs[0][2]
    other = make_solver("sdca", p, seed=8, threads=2, partitions=3)
    for _ in range(25):
        other.run(p.n // 10)
    assert not np.array_equal(other.weights(), runs[0][0])


@pytest.mark.parametrize("options", [{}, {"catalyst": 3.0, "catalyst_floor": 0.3},
                                     {"refresh_every": 1.0}])
def test_one_part_is_sequential_sdca_on_any_thread_count(monkeypatch, options):
    """The threads share the refresh of the stored gaps (Catalyst's round ends, or
    ``refresh_every``): the same gaps, stored in the same order, so the same steps."""
    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    p = problem(n=300)
    a = make_solver("sdca", p, seed=3, threads=1, **options)
    b = make_solver("sdca", p, seed=3, threads=4, **options)
    for s in (a, b):
        s.run(5 * p.n)
    assert len(a.parts) == len(b.parts) == 1
    assert np.array_equal(a.weights(), b.weights())
    np.testing.assert_array_equal(a.sampler.gaps, b.sampler.gaps)
