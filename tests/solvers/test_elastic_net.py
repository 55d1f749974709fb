"""Elastic net (L1 + L2) by proximal SDCA (``docs/math.md`` section 8).

The references: the same objective minimized by scipy's L-BFGS-B on w = p - q with
p, q >= 0 (a smooth, bound-constrained form of the L1 term), and the dual recomputed in
full from the marginal store.
"""

import math

import numpy as np
import pytest
import scipy.optimize
from helpers.elastic_net import full_dual, l1_problem, split_lbfgs_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.errors import ConfigError
from crfsdca.model.features import soft_threshold
from crfsdca.model.objective import (
    block_gaps,
    primal,
    weights_from_marginals,
)
from crfsdca.runtime.jit import abs_sum
from crfsdca.solvers.base import Problem
from crfsdca.solvers.registry import SOLVERS, make_solver


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("line_search", ["newton", "golden"])
@pytest.mark.parametrize("l1_line_search", ["exact", "bound"])
def test_sdca_reaches_the_elastic_net_optimum_with_its_support(masked, line_search,
                                                               l1_line_search):
    p = l1_problem(masked=masked)
    w_star, p_star = split_lbfgs_optimum(p)
    assert (w_star == 0).sum() > 0.1 * p.dim  # the L1 term makes a sparse optimum
    s = make_solver("sdca", p, seed=0, line_search=line_search, subprecision=1e-8,
                    l1_line_search=l1_line_search)
    for _ in range(100):
        s.run(5 * p.n)
        value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam, p.l1)
        if value - s.dual() < 1e-11:
            break
    gap = value - s.dual()
    assert 0 <= gap < 1e-10
    assert value == pytest.approx(p_star, abs=1e-9)
    w = np.asarray(s.weights())
    near = np.abs(np.abs(s.state.v) - p.kappa) < 1e-8  # at the threshold: either way
    np.testing.assert_array_equal((w == 0)[~near], (np.abs(w_star) < 1e-9)[~near])
    np.testing.assert_allclose(w, w_star, atol=1e-5)


@pytest.mark.parametrize("how", [{}, {"l1_line_search": "bound"},
                                 {"l1_line_search": "bound", "pipeline": True},
                                 {"l1_line_search": "bound", "batch_size": 3}])
def test_the_gap_is_the_mean_block_gap_and_the_dual_never_decreases(how):
    """P(S(v(mu))) - D(mu) = mean_i D~(mu_i || nu_i(w)) with the L1 term, D recomputed in
    full from the store after every step, and D non-decreasing along the run: with the
    exact split and with the smoothness bound (which the steps maximize instead of the
    dual, a lower bound of it), one step at a time, pipelined and in batches."""
    p = l1_problem(masked=True)
    s = make_solver("sdca", p, seed=3, sampler="uniform", **how)
    prev = -np.inf
    for _ in range(4 * p.n):
        s.run(1)
        mu_u, mu_p = s.marginals
        D = full_dual(p, mu_u, mu_p)
        assert s.dual() == pytest.approx(D, rel=1e-12, abs=1e-13)
        assert D >= prev - 1e-13
        prev = D
    v = weights_from_marginals(mu_u, mu_p, p.train, p.n_attributes, p.n_labels, p.lam,
                               p.feature_mask)
    w = soft_threshold(v, p.kappa)
    np.testing.assert_allclose(s.weights(), w, atol=1e-12)
    P = primal(w, p.train, p.n_attributes, p.n_labels, p.lam, p.l1)
    gaps = block_gaps(w, mu_u, mu_p, p.train, p.n_attributes, p.n_labels)
    assert P - D == pytest.approx(gaps.mean(), rel=1e-9, abs=1e-12)


def test_the_line_search_maximizes_the_recomputed_dual_along_the_block():
    from crfsdca.model.oracle import sequence_marginals

    p = l1_problem(l1=0.05)
    K = p.n_labels
    s = make_solver("sdca", p, seed=0, sampler="cyclic", subprecision=1e-11)
    for _ in range(4):
        s.run(p.n + 2)
        i = int(s.sampler.cursor[0] % p.n)
        o, T = p.train.offsets[i], int(p.train.lengths()[i])
        mu_u, mu_p = (m.copy() for m in s.marginals)
        _, nu_u, nu_p = sequence_marginals(s.weights(), p.n_attributes, K, p.train, i)
        su = slice(o * K, (o + T) * K)
        sp = slice((o - i) * K * K, (o - i + T - 1) * K * K)

        def dual_along(g, mu_u=mu_u, mu_p=mu_p, nu_u=nu_u, nu_p=nu_p, su=su, sp=sp):
            u, q = mu_u.copy(), mu_p.copy()
            u[su] += g * (nu_u.ravel() - mu_u[su])
            q[sp] += g * (nu_p.ravel() - mu_p[sp])
            return full_dual(p, u, q)

        best = scipy.optimize.minimize_scalar(lambda g: -dual_along(g), bounds=(0.0, 1.0),
                                              method="bounded", options={"xatol": 1e-12})
        before = s.state.sums[0]
        s.run(1)
        assert s.state.sums[0] - before == pytest.approx(best.x, abs=1e-6)
        assert s.dual() == pytest.approx(-best.fun, abs=1e-12)


@pytest.mark.parametrize("how", [{"pipeline": True}, {"batch_size": 4}, {}])
def test_the_bound_reaches_the_elastic_net_optimum(how):
    """``l1_line_search='bound'`` converges to the elastic net's optimum pipelined, in
    batches and one step at a time, every step certified."""
    p = l1_problem(masked=True)
    w_star, p_star = split_lbfgs_optimum(p)
    s = make_solver("sdca", p, seed=2, subprecision=1e-8, l1_line_search="bound", **how)
    for _ in range(200):
        s.run(5 * p.n)
        value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam, p.l1)
        assert value - s.dual() >= -1e-12
        if value - s.dual() < 1e-11:
            break
    assert value - s.dual() < 1e-10
    assert value == pytest.approx(p_star, abs=1e-9)
    np.testing.assert_allclose(s.weights(), w_star, atol=1e-5)


def test_a_vanishing_l1_term_gives_the_ridge_trajectory():
    ridge = l1_problem(l1=0.0)
    tiny = l1_problem(l1=1e-15)
    a = make_solver("sdca", ridge, seed=2)
    b = make_solver("sdca", tiny, seed=2)
    a.run(6 * ridge.n)
    b.run(6 * tiny.n)
    np.testing.assert_allclose(b.weights(), a.weights(), atol=1e-11)
    assert b.dual() == pytest.approx(a.dual(), abs=1e-11)


def test_the_float32_store_converges_with_l1():
    p = l1_problem()
    _, p_star = split_lbfgs_optimum(p)
    s = make_solver("sdca", p, seed=0, store_dtype="float32")
    s.run(60 * p.n)
    value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam, p.l1)
    assert value - p_star < 1e-5


@pytest.mark.parametrize("solver", [n for n, s in SOLVERS.items() if not s.supports_l1])
def test_the_other_solvers_refuse_an_l1_term(solver):
    with pytest.raises(ConfigError, match="L1"):
        make_solver(solver, l1_problem())


def test_owlqn_reaches_the_split_optimum_and_certifies_it():
    """L-BFGS with an L1 term is OWL-QN: it reaches P* of the split bound-constrained
    problem, and ||pseudo-gradient||^2 / (2 lambda) bounds P(w) - P* on its way."""
    from crfsdca.solvers.monitor import Monitor

    p = l1_problem()
    _, p_star = split_lbfgs_optimum(p)
    s = make_solver("lbfgs", p)
    monitor = Monitor(p, evaluate_test=False, certify=True)
    for _ in range(300):
        s.run(1)
        row = monitor.row(s, 0.0, 0.0)
        assert row["primal"] - p_star <= row["certificate"] * (1 + 1e-9) + 1e-15
        if s.finished():
            break
    value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam, p.l1)
    assert value - p_star < 1e-10
    assert (s.weights() == 0).sum() > 0  # OWL-QN lands on exact zeros


def test_the_optimum_and_its_support_agree_with_crfsuite_owlqn(tmp_path):
    """CRFsuite's OWL-QN (python-crfsuite) on the identical objective (c1 = l1 n,
    c2 = lam n / 2, every attribute-label pair and transition a feature, bias / first /
    last as attributes): the same P* to 1e-6 relative, the same zero weights (CRFsuite's
    model file keeps 6 decimals, so weights below 1e-5 in magnitude are not compared)."""
    from crfsdca.data.synthetic import synthetic_sequences
    from crfsdca.reproduction.crfsuite_baseline import train_crfsuite, weights_from_model

    seq = synthetic_sequences(60, 2, 7, 3, 15, 3, seed=8)
    p = Problem(seq, 15, 3, 1.0 / 60, l1=0.01, label_names=("a", "b", "c"))
    train_crfsuite(p, tmp_path / "m.crfsuite", max_iterations=3000, epsilon=1e-12)
    w_crf = weights_from_model(tmp_path / "m.crfsuite", p)
    s = make_solver("sdca", p, seed=0)
    for _ in range(200):
        s.run(5 * p.n)
        value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam, p.l1)
        if value - s.dual() < 1e-12:
            break
    p_crf = primal(w_crf, p.train, p.n_attributes, p.n_labels, p.lam, p.l1)
    assert value - s.dual() < 1e-10
    assert value == pytest.approx(p_crf, rel=1e-6)
    w = np.asarray(s.weights())
    clear = np.maximum(np.abs(w), np.abs(w_crf)) > 1e-5
    np.testing.assert_array_equal((w == 0)[clear], (w_crf == 0)[clear])
    assert (w == 0).sum() > 0.2 * p.dim


def _one_sequence_rows(rows: np.ndarray):
    """A SequenceIndex whose sequence 0 has the distinct attributes ``rows`` (all that
    l1_split reads), of the kernels' own types: an overload compiled for a type defined
    here would be cached beside the package's and break its cache index for processes
    that cannot import this module."""
    from crfsdca.solvers.index import SequenceIndex

    none = np.zeros(0, dtype=np.int32)
    return SequenceIndex(np.zeros(2, dtype=np.int64), none, np.zeros(2, dtype=np.int64), none,
                         np.zeros(0), np.zeros(0), np.zeros((0, 0)), none, none,
                         np.array([0, len(rows)], dtype=np.int64),
                         rows.astype(np.int32), none, np.zeros(0, dtype=np.int64), none,
                         np.zeros(0), np.zeros(0, dtype=np.int64), none, none)


def _crossing_buffers(cross_v: np.ndarray, cross_u: np.ndarray, K: int):
    """SDCABuffers around the crossing lists (what quadratic reads), for the same reason."""
    from crfsdca.model.oracle import make_workspace
    from crfsdca.solvers.sdca_kernel import SDCABuffers

    return SDCABuffers(make_workspace(1, K), np.zeros(K), np.zeros(3 * K), np.zeros(K * K),
                       np.zeros(K * K), np.zeros(3 * K), cross_v, cross_u)


def _random_step(seed: int, K: int, n_rows: int, kappa: float, n_attr: int):
    """A random elastic-net step for l1_split and l1_change: its sequence's distinct
    attributes (``n_rows`` of ``n_attr``), v over every weight with a fifth of its
    entries on a threshold, the direction's (emission, bias, transition) parts with a
    fifth of their entries 0, and the positions in v the direction covers."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n_attr, size=n_rows, replace=False)).astype(np.int64)
    v = rng.normal(scale=0.5, size=n_attr * K + 3 * K + K * K)
    v[rng.random(len(v)) < 0.2] = kappa * rng.choice([-1.0, 1.0])  # on a threshold
    u = tuple(rng.normal(scale=0.6, size=m) for m in (n_rows * K, 3 * K, K * K))
    for part in u:
        part[rng.random(len(part)) < 0.2] = 0.0
    support = np.concatenate([np.arange(a * K, a * K + K) for a in rows]
                             + [np.arange(n_attr * K, len(v))])
    return rows, v, u, support


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), K=st.integers(1, 4), g_max=st.sampled_from([1.0, 1.7]),
       n_rows=st.sampled_from([1, 3, 40]))
def test_the_split_quadratic_equals_the_direct_sum(seed, K, g_max, n_rows):
    """l1_split + quadratic give g*(v + gamma u) - g*(v) and its derivatives as the direct
    sum over the support, for gamma in [0, g_max], with entries on the thresholds, zero
    directions and entries that cross one or both thresholds; 40 rows span several of the
    split's chunks (SPLIT_CHUNK entries each)."""
    from crfsdca.solvers.sdca_linesearch import Block, l1_split, quadratic, soft

    kappa, n_attr = 0.3, 50
    rows, v, (u_em, u_bias, u_trans), support = _random_step(seed, K, n_rows, kappa, n_attr)
    u_all = np.concatenate([u_em, u_bias, u_trans])
    cross_v, cross_u = np.zeros(len(support) + 1), np.zeros(len(support) + 1)
    idx = _one_sequence_rows(rows)
    a0, b0, wv, n = l1_split(v, idx, 0, K, n_attr, kappa, g_max, u_em, u_bias, u_trans,
                             np.zeros(len(u_em)), cross_v, cross_u)
    w = np.array([soft(x, kappa) for x in v[support]])
    assert wv == pytest.approx(float(u_all @ w), abs=1e-12)
    blk = Block(0, 0, 0, 2, K, n_attr, 1.0, wv, 0.0, kappa, a0, b0, n)
    buf = _crossing_buffers(cross_v, cross_u, K)
    for gamma in np.linspace(0.0, g_max, 7)[1:]:
        y = np.array([soft(x, kappa) for x in v[support] + gamma * u_all])
        d1, d2, val = quadratic(blk, buf, gamma)
        assert d1 == pytest.approx(float(u_all @ y), abs=1e-12)
        assert val == pytest.approx(0.5 * float(y @ y - w @ w), abs=1e-12)
        if np.all(np.abs(v[support] + gamma * u_all) != kappa):
            assert d2 == pytest.approx(float(u_all[y != 0] @ u_all[y != 0]), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), K=st.integers(1, 4), n_rows=st.sampled_from([1, 3, 40]),
       gamma=st.sampled_from([1e-3, 0.4, 1.0, 1.7]))
def test_a_rebased_moves_change_is_the_direct_sum_and_the_splits(seed, K, n_rows, gamma):
    """l1_change (a rebased move's Q(gamma) - Q(0), one read-only pass) against the direct
    sum over the support, with entries on the thresholds and zero directions, and against
    l1_split + quadratic at the same step."""
    from crfsdca.solvers.sdca_linesearch import Block, l1_change, l1_split, quadratic, soft

    kappa, n_attr = 0.3, 50
    rows, v, (u_em, u_bias, u_trans), support = _random_step(seed, K, n_rows, kappa, n_attr)
    u_all = np.concatenate([u_em, u_bias, u_trans])
    idx = _one_sequence_rows(rows)
    change = l1_change(v, idx, 0, K, n_attr, kappa, gamma, u_em, u_bias, u_trans)
    w = np.array([soft(x, kappa) for x in v[support]])
    y = np.array([soft(x, kappa) for x in v[support] + gamma * u_all])
    assert change == pytest.approx(0.5 * float(y @ y - w @ w), abs=1e-12)
    cross_v, cross_u = np.zeros(len(support) + 1), np.zeros(len(support) + 1)
    a0, b0, wv, n = l1_split(v, idx, 0, K, n_attr, kappa, max(1.0, gamma), u_em, u_bias,
                             u_trans, np.zeros(len(u_em)), cross_v, cross_u)
    blk = Block(0, 0, 0, 2, K, n_attr, 1.0, wv, 0.0, kappa, a0, b0, n)
    assert change == pytest.approx(quadratic(blk, _crossing_buffers(cross_v, cross_u, K),
                                             gamma)[2], abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6), max_size=40))
def test_the_l1_norm_of_the_primal_is_the_sum_of_absolute_values(values):
    """``abs_sum``, the L1 term of ``primal``, against the exactly rounded sum."""
    a = np.array(values, dtype=np.float64)
    exact = math.fsum(abs(x) for x in values)
    assert abs_sum(a) == pytest.approx(exact, rel=1e-13, abs=1e-300)


def test_the_fit_says_which_elastic_net_step_ran(capsys):
    from crfsdca import CRF
    from crfsdca.cli.precompile import tiny_data

    X, y = tiny_data(2)
    bound = CRF(c1=0.1, c2=0.1, max_iterations=1, verbose=True).fit(X, y)
    exact = CRF(c1=0.1, c2=0.1, max_iterations=1, verbose=True,
                l1_line_search="exact").fit(X, y)
    CRF(c2=0.1, max_iterations=1, verbose=True).fit(X, y)  # no L1 term: nothing to say
    out = capsys.readouterr().out
    assert out.count("quadratic bound of the L1 part's smoothness") == 1
    assert out.count("the L1 part split exactly") == 1
    assert bound.training_log_.method["l1_line_search"] == "bound"
    assert exact.training_log_.method["l1_line_search"] == "exact"
