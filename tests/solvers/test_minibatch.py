"""Mini-batch SDCA (``solvers/minibatch.py``, ``docs/math.md`` section 9): a certificate as
exact as sequential SDCA's, a dual that no step lowers, the same iterates as a
simulation written plainly, and one model per seed and batch size on any thread count."""

import numpy as np
import pytest
from helpers.bruteforce import joint, marginals_of, random_split
from helpers.scipy_reference import lbfgs_optimum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crfsdca.data.radii import squared_radii
from crfsdca.data.sequences import make_sequences
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.model.features import soft_threshold
from crfsdca.model.objective import block_gaps, primal, weights_from_marginals
from crfsdca.solvers.base import Problem
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


def certificate_case(case):
    """(problem, solver options) of a case of the certificate tests: ``ridge`` (none),
    ``l1``, ``float32``, ``weights``, ``dense``, ``dense-l1``, ``catalyst``, ``compact``,
    ``compact-l1``."""
    p, kw = problem(), {}
    if case in ("l1", "compact-l1"):
        p = problem(l1=0.01)
    if case == "float32":
        kw = {"store_dtype": "float32"}
    elif case == "weights":
        p = problem(weights=np.random.default_rng(5).choice([0.0, 0.5, 1.0, 3.0], size=60))
    elif case == "dense":
        p = problem(dense=3)
    elif case == "dense-l1":
        p = problem(dense=3, l1=0.01)
    elif case == "catalyst":
        kw = {"catalyst": 3.0, "catalyst_floor": 0.3}
    elif case.startswith("compact"):
        kw = {"dual_store": "compact", "catalyst": 3.0, "catalyst_floor": 0.3}
    return p, kw


def reaches_the_optimum(s, p, rounds):
    """Run ``rounds`` calls of n / 10 steps, none lowering the dual; then the gap is a
    certificate, P is scipy's optimum within it, and the relative gap is below 0.05 (from
    about 1 at the start)."""
    _, p_star = lbfgs_optimum(p)
    s.prepare()
    dual = s.dual()
    for _ in range(rounds):
        s.run(p.n // 10)
        now = s.dual()
        assert now >= dual - 1e-12
        dual = now
    gap = certificate_holds(s, p)
    P = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
    assert -1e-10 <= P - p_star <= gap * (1 + 1e-9) + 1e-12
    assert gap < 0.05 * P


def steps_from(seq, w, mu_before, mu_after, A, K):
    """For each sequence whose unary marginals moved: whether they moved along
    nu_i(w) - mu_i (brute force over every labeling), the direction of a step taken at w."""
    along = []
    for i in range(seq.n_sequences):
        lo, hi = seq.offsets[i] * K, seq.offsets[i + 1] * K
        moved = mu_after[lo:hi] - mu_before[lo:hi]
        if np.abs(moved).max() < 1e-12:
            continue
        ys, _, prob, _ = joint(w, seq, i, A, K)
        nu = marginals_of(ys, prob, int(seq.offsets[i + 1] - seq.offsets[i]), K)[0].ravel()
        d = nu - mu_before[lo:hi]
        gamma = moved @ d / (d @ d)
        along.append(bool(np.allclose(moved, gamma * d, atol=1e-9) and 0 < gamma <= 1))
    return along


@pytest.mark.parametrize("batch_size", [1, 4])
def test_every_step_of_a_batch_is_taken_at_the_batch_weights(batch_size):
    """Cyclic draws, one batch of 4 (or 4 sequential steps): with batches, the 4 blocks move
    along nu_i(w0) - mu_i, their directions at the weights before the batch; sequentially,
    only the first does (the others see the steps before them)."""
    seq = random_split(np.random.default_rng(4), 32, 4, 3, 6)  # batches of up to n / 8
    p = Problem(seq, 6, 3, 1.0 / 32)
    s = make_solver("sdca", p, seed=0, batch_size=batch_size, sampler="cyclic")
    w0, mu0 = s.weights().copy(), s.marginals[0].copy()
    s.run(4)
    along = steps_from(seq, w0, mu0, s.marginals[0], 6, 3)
    assert along == ([True] * 4 if batch_size == 4 else [True, False, False, False])


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_minibatch_sdca_converges_to_the_optimum_with_every_sampler(sampler):
    """Batches of 3: the gap certificate stays exact, no batch lowers the dual, and P
    reaches scipy's optimum within the certified gap (weak duality, at any gap)."""
    p = problem(n=120)
    s = make_solver("sdca", p, seed=1, batch_size=3, sampler=sampler)
    reaches_the_optimum(s, p, 200)
    # every draw is a step (of distinct sequences within a batch), the last draws that do
    # not fill a batch waiting for the next call
    assert 200 * (p.n // 10) - 2 <= s.counters()["updates"] <= 200 * (p.n // 10)


@pytest.mark.parametrize("case", ["l1", "float32", "weights", "dense", "catalyst"])
def test_minibatch_sdca_keeps_its_certificate(case):
    p, kw = certificate_case(case)
    s = make_solver("sdca", p, seed=0, batch_size=4, **kw)
    s.prepare()
    for _ in range(150):
        s.run(p.n // 5)
    if case in ("float32", "catalyst"):  # w is w_hat of the rounded store, or Catalyst's x_k
        gap = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam) - s.dual()
    else:
        gap = certificate_holds(s, p)
    assert -1e-9 <= gap < 1e-2


def test_the_model_is_the_seed_and_the_batch_size_whatever_the_threads(monkeypatch):
    """Batches of 3 on 1, 2 and 3 threads (and run to run): the same weights and marginals,
    bit for bit; another seed, another model."""
    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    p = problem(n=90, l1=0.005)
    runs = []
    for threads in (1, 2, 3, 2):
        s = make_solver("sdca", p, seed=7, threads=threads, batch_size=3)
        for _ in range(25):
            s.run(p.n // 10)
        runs.append((s.weights().copy(), s.marginals[0].copy(), s.dual()))
    for w, mu, d in runs[1:]:
        assert np.array_equal(w, runs[0][0]) and np.array_equal(mu, runs[0][1])
        assert d == runs[0][2]
    other = make_solver("sdca", p, seed=8, threads=2, batch_size=3)
    for _ in range(25):
        other.run(p.n // 10)
    assert not np.array_equal(other.weights(), runs[0][0])


@pytest.mark.parametrize("options", [{}, {"catalyst": 3.0, "catalyst_floor": 0.3},
                                     {"refresh_every": 1.0}])
def test_batches_of_one_are_sequential_sdca_on_any_thread_count(monkeypatch, options):
    """The threads share the refresh of the stored gaps (Catalyst's round ends, or
    ``refresh_every``): the same gaps, stored in the same order, so the same steps."""
    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    p = problem(n=300)
    a = make_solver("sdca", p, seed=3, threads=1, **options)
    b = make_solver("sdca", p, seed=3, threads=4, **options)
    for s in (a, b):
        s.run(5 * p.n)
    assert np.array_equal(a.weights(), b.weights())
    np.testing.assert_array_equal(a.sampler.gaps, b.sampler.gaps)


@given(st.integers(0, 2**16), st.integers(2, 7), st.integers(2, 4), st.booleans())
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_problems_give_one_model_on_any_thread_count(monkeypatch, seed, batch_size,
                                                            threads, l1):
    """Random splits, batch sizes, thread counts and penalties: the threads' run is the
    one thread's, bit for bit, and no batch lowers the dual."""
    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    rng = np.random.default_rng(seed)
    seq = random_split(rng, 30, 6, 3, 10)
    p = Problem(seq, 10, 3, 0.5 / 30, l1=0.01 if l1 else 0.0)
    runs = []
    for t in (1, threads):
        s = make_solver("sdca", p, seed=seed, threads=t, batch_size=batch_size)
        dual = s.dual()
        for _ in range(6):
            s.run(p.n // 2)
            assert s.dual() >= dual - 1e-12
            dual = s.dual()
        runs.append((s.weights().copy(), s.marginals[1].copy()))
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])


def test_the_threads_claim_the_longest_steps_first():
    """A batch's claim order: its steps by decreasing length, ties in draw order (who
    computes a step does not change it, so only the threads' idle time depends on it)."""
    from crfsdca.solvers.minibatch import _longest_first, make_batch

    lengths = np.array([3, 7, 3, 1, 7, 5])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    members = np.array([5, 4, 3, 2, 1, 0])  # sampler index j is sequence 5 - j
    batch = make_batch(6)
    batch.drawn[:] = [5, 1, 0, 4, 3, 2]  # sequences 0, 4, 5, 1, 2, 3
    _longest_first(batch, 6, offsets, members)
    seqs = members[batch.drawn[batch.order]]
    assert list(lengths[seqs]) == [7, 7, 5, 3, 3, 1]
    assert list(batch.order) == [1, 3, 2, 0, 4, 5]  # ties (7, 7) and (3, 3) in draw order


@pytest.mark.parametrize("threads", [1, 3])
def test_the_apply_in_lanes_is_the_apply_of_one_thread(threads):
    """A batch computed once, applied by the threads in lanes and by the one-thread
    apply that rebases each step on w directly: the same steps taken, the same weights
    and marginals up to rounding (the lanes add <w, u> in another order)."""
    import copy

    from crfsdca.runtime.barrier import make_barrier
    from crfsdca.runtime.threads import run_parallel
    from crfsdca.solvers import minibatch as mb

    p = problem(n=120)
    s = make_solver("sdca", p, seed=4, batch_size=8)
    s.run(3 * p.n)  # away from the start, where every step is large
    st, o = s.state, s.options
    mb._draw_batch(s.sampler, s.rng, s.batch, s.index.offsets, s.members)
    for q in range(s.batch.size[0]):
        mb._compute(q, st.w, p.n_attributes, p.n_labels, s.index, st,
                    mb._step_buffers(s.step_buffers, q), o, s.members, s.batch)
        s.batch.computed_by[q] = q % threads
    assert mb._in_lanes(o, s.batch)
    ends = []
    for lanes in (False, True):
        state, sampler, batch = copy.deepcopy((st, s.sampler, s.batch))
        if lanes:
            barrier = make_barrier()
            run_parallel([
                (lambda t=t, args=(state, sampler, batch, barrier): mb._apply_lanes(
                    t, threads, args[0].w, p.n_attributes, p.n_labels, s.index, args[0],
                    s.step_buffers, args[1], o, s.members, args[2], args[3]))
                for t in range(threads)])
        else:
            mb._apply(state.w, p.n_attributes, p.n_labels, s.index, state, s.step_buffers,
                      sampler, o, s.members, batch)
        ends.append((state, sampler))
    (a, sa), (b, sb) = ends
    assert a.counters[mb.NULL_STEPS] == b.counters[mb.NULL_STEPS]
    assert a.counters[mb.UPDATES] == b.counters[mb.UPDATES] == st.counters[mb.UPDATES] + 8
    np.testing.assert_allclose(b.w, a.w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.mu_unary, a.mu_unary, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.entropies, a.entropies, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.scalars, a.scalars, rtol=1e-12)
    np.testing.assert_array_equal(sb.gaps, sa.gaps)
    assert not np.array_equal(a.w, st.w)  # the batch moved the weights
