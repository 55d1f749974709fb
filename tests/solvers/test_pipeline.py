"""Pipelined SDCA (``solvers/pipeline.py``, ``docs/math.md`` section 9): each step's oracle
and line search at the weights of before the previous step's move, its move rebased on
the weights as they are; a dual that never falls, the sequential run's certificate, and
one model per seed on one thread or two."""

import numpy as np
import pytest
from helpers.bruteforce import random_split
from hypothesis import given, settings
from hypothesis import strategies as st
from test_minibatch import (
    certificate_case,
    certificate_holds,
    problem,
    reaches_the_optimum,
    steps_from,
)

from crfsdca.data.radii import squared_radii
from crfsdca.data.sequences import make_sequences
from crfsdca.model.features import soft_threshold
from crfsdca.model.objective import primal
from crfsdca.model.oracle import transition_offset, transition_potentials, unary_scores
from crfsdca.solvers.base import Problem
from crfsdca.solvers.minibatch import _rebased
from crfsdca.solvers.pipeline import (
    _gather,
    _potentials,
    _put_back,
    _rebase_and_move,
)
from crfsdca.solvers.registry import SAMPLERS, make_solver
from crfsdca.solvers.sdca_kernel import _apply_primal


@pytest.fixture(autouse=True)
def _two_cores(monkeypatch):
    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)


def test_each_step_reads_the_weights_of_before_the_previous_move():
    """Cyclic draws from w0: steps 0 and 1 both move along nu_i(w0) - mu_i (step 1 read
    w before step 0 moved); step 2 along nu_i(w1), w1 the weights after step 0 alone."""
    seq = random_split(np.random.default_rng(4), 32, 4, 3, 6)
    p = Problem(seq, 6, 3, 1.0 / 32)
    s = make_solver("sdca", p, seed=0, pipeline=True, sampler="cyclic")
    w0, mu0 = s.weights().copy(), s.marginals[0].copy()
    s.run(2)
    assert steps_from(seq, w0, mu0, s.marginals[0], 6, 3) == [True, True]
    one = make_solver("sdca", p, seed=0, pipeline=True, sampler="cyclic")
    one.run(1)
    w1, mu1 = one.weights().copy(), one.marginals[0].copy()
    three = make_solver("sdca", p, seed=0, pipeline=True, sampler="cyclic")
    three.run(3)
    moved = np.abs(three.marginals[0] - s.marginals[0]) > 1e-12  # step 2 alone
    assert moved.any()
    two = mu1.copy()
    two[moved] = three.marginals[0][moved]
    assert steps_from(seq, w1, mu1, two, 6, 3) == [True]


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_pipelined_sdca_converges_to_the_optimum_with_every_sampler(sampler):
    p = problem(n=120)
    s = make_solver("sdca", p, seed=1, pipeline=True, threads=2, sampler=sampler)
    reaches_the_optimum(s, p, 150)
    assert s.counters()["updates"] == 150 * (p.n // 10)


CASES = ["ridge", "l1", "float32", "weights", "dense", "dense-l1", "catalyst", "compact",
         "compact-l1"]


@pytest.mark.parametrize("case", CASES)
def test_pipelined_sdca_keeps_its_certificate_and_its_model_on_any_thread_count(case):
    """On one thread and two, and run to run: the same weights, marginals and dual, bit for
    bit, and a certified gap near 0 (w the primal image of the marginals where the store
    is exact)."""
    p, kw = certificate_case(case)
    runs = []
    for threads in (1, 2, 2):
        s = make_solver("sdca", p, seed=0, pipeline=True, threads=threads, **kw)
        s.prepare()
        for _ in range(120):
            s.run(p.n // 5)
        runs.append((s.weights().copy(), s.marginals[0].copy(), s.dual()))
    for w, mu, d in runs[1:]:
        assert np.array_equal(w, runs[0][0]) and np.array_equal(mu, runs[0][1])
        assert d == runs[0][2]
    if case in ("ridge", "l1", "weights", "dense", "dense-l1"):
        gap = certificate_holds(s, p)
    else:  # a rounded store, Catalyst's x_k, or a lower bound of the entropies
        gap = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam, p.l1) - s.dual()
    assert -1e-9 <= gap < 1e-2


def test_another_seed_another_model_and_the_sequential_run_is_another():
    p = problem(n=90, l1=0.005)
    models = []
    for seed, pipeline in ((7, True), (8, True), (7, False)):
        s = make_solver("sdca", p, seed=seed, threads=2, pipeline=pipeline)
        s.run(5 * p.n)
        models.append(s.weights().copy())
    assert not np.array_equal(models[0], models[1])
    assert not np.array_equal(models[0], models[2])


@given(st.integers(0, 2**16), st.integers(2, 6), st.sampled_from([None, "exact", "bound"]),
       st.sampled_from(list(SAMPLERS)))
@settings(max_examples=12, deadline=None)
def test_random_problems_give_one_model_on_one_thread_or_two(seed, n, l1, sampler):
    """Random splits (down to 2 sequences: a draw never takes the one in flight),
    penalties (the elastic net's line search exact or on its bound) and samplers: two
    threads' run is one thread's, bit for bit, and no step lowers the dual."""
    seq = random_split(np.random.default_rng(seed), n, 5, 3, 8)
    p = Problem(seq, 8, 3, 0.5 / n, radii=squared_radii(seq, 3, 8), l1=0.01 if l1 else 0.0)
    runs = []
    for t in (1, 2):
        s = make_solver("sdca", p, seed=seed, threads=t, pipeline=True, sampler=sampler,
                        l1_line_search=l1 or "exact")
        dual = s.dual()
        for _ in range(6):
            s.run(3 * p.n)
            assert s.dual() >= dual - 1e-12
            dual = s.dual()
        runs.append((s.weights().copy(), s.marginals[1].copy()))
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])


@given(st.integers(0, 2**16), st.booleans(), st.integers(0, 5), st.floats(0.01, 1.0),
       st.booleans())
@settings(max_examples=25, deadline=None)
def test_reads_of_gathered_rows_give_the_scores_and_potentials_of_the_weights(
        seed, real, dense, kappa, thresholded):
    """R copies the rows it reads (of v with the elastic net, thresholded) and the compute
    sums the scores from the copy: its unary scores and transition potentials are those
    of w (w = S_kappa(v) with the elastic net), bit for bit (binary or real attribute
    values, with and without a dense block), which one thread's R sums from w as it
    reads it, without the copy (no elastic net, no dense block)."""
    rng = np.random.default_rng(seed)
    K, A = 3, 7
    seq = random_split(rng, 6, 6, K, A, max_attrs=4, real=real)
    if dense:
        seq = make_sequences(seq.offsets, seq.labels, seq.attr_indptr, seq.attr_indices,
                             seq.attr_values if real else None, None,
                             rng.normal(size=(seq.n_tokens, dense)), np.arange(A, A + dense))
    n_attr = A + dense
    p = Problem(seq, n_attr, K, 0.1, l1=0.05)
    s = make_solver("sdca", p, seed=0, pipeline=True)
    v = rng.normal(scale=2 * kappa, size=len(s.state.v))  # a share in [-kappa, kappa]
    w = soft_threshold(v, kappa) if thresholded else v
    buf = s.slots[0]
    small, scores, trans = np.zeros(3 * K + K * K), np.zeros(seq.n_tokens * K), np.zeros(K * K)
    for i in range(seq.n_sequences):
        _gather(v, n_attr, K, s.index, i, buf, small, kappa, thresholded, True)
        tmax = _potentials(K, s.index, i, buf, small, kappa, thresholded)
        T = unary_scores(w, n_attr, K, seq, i, scores)
        assert tmax == transition_potentials(w, transition_offset(n_attr, K), K, trans)
        assert np.array_equal(buf.ws.scores[:T * K], scores[:T * K])
        assert np.array_equal(buf.ws.trans[:K * K], trans)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("search", ["exact", "bound"])
def test_elastic_net_runs_leave_w_the_threshold_of_v(threads, search):
    """The pipeline's elastic-net moves change v alone (w is left as it was); read after
    a run, w = S_kappa(v) on every weight (the solver's other passes read w)."""
    p = problem(l1=0.01)
    s = make_solver("sdca", p, seed=3, pipeline=True, threads=threads, l1_line_search=search)
    for steps in (7, p.n, 3 * p.n + 1):
        before = s.state.w.copy()
        s.run(steps)
        assert np.array_equal(s.state.w, before)
        w = s.weights()
        assert np.array_equal(w, soft_threshold(s.state.v, s.options.kappa))
        assert not np.array_equal(w, before)


@given(st.integers(0, 2**16), st.booleans(), st.floats(0.01, 1.0), st.booleans(),
       st.floats(0.05, 1.0))
@settings(max_examples=25, deadline=None)
def test_one_pass_rebase_and_move_is_the_two_passes_and_puts_back_exactly(
        seed, real, kappa, thresholded, gamma):
    """One thread's A reads <w, u> in the pass that moves the weights: the same <w, u> as
    the rebase's pass of reads, bit for bit (w = S_kappa(v) with the elastic net), the
    same moved weights as the move's own pass, and the weights as they were, bit for
    bit, once put back (a move that would lower the dual)."""
    rng = np.random.default_rng(seed)
    K, A = 3, 7
    seq = random_split(rng, 6, 6, K, A, max_attrs=4, real=real)
    p = Problem(seq, A, K, 0.1, l1=0.05 if thresholded else 0.0)
    s = make_solver("sdca", p, seed=0, pipeline=True, l1_line_search="bound")
    opt = s.options._replace(kappa=kappa if thresholded else 0.0)
    buf = s.slots[0]
    for i in range(seq.n_sequences):
        nu = s.index.uniq_ptr[i + 1] - s.index.uniq_ptr[i]
        buf.v_emission[:nu * K] = rng.normal(size=nu * K)
        buf.v_bias[:] = rng.normal(size=3 * K)
        buf.v_trans[:] = rng.normal(size=K * K)
        v = rng.normal(scale=2 * kappa, size=len(s.state.v))
        before = v.copy()
        blk, _ = _rebased(v, A, K, s.index, s.state._replace(v=v), buf, opt, i, 1.0, gamma,
                          thresholded)
        moved = v.copy()
        _apply_primal(moved, A, K, s.index, i, gamma, buf.v_emission, buf.v_bias, buf.v_trans)
        assert not np.array_equal(moved, before)
        wv = _rebase_and_move(v, A, K, s.index, i, buf, gamma, opt.kappa, thresholded,
                              s.flow.kept)
        assert wv == blk.wv
        assert np.array_equal(v, moved)
        _put_back(v, A, K, s.index, i, s.flow.kept)
        assert np.array_equal(v, before)
