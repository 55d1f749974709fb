"""Catalyst's outer loop around SDCA (``docs/math.md`` section 10).

What must hold: SDCA runs the inner problem P(w) + kappa/2 ||w - y||^2 exactly (its gap
is the mean of the block gaps of that problem), the dual it reports is the original
problem's dual of the same marginals recomputed in full (so P(w) - D <= gap certifies
the original problem at every step), the gap estimate is that certificate once the
stored block gaps are fresh, and the loop converges to the original optimum.
"""

import numpy as np
import pytest
from helpers.elastic_net import full_dual, l1_problem, split_lbfgs_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.model.features import soft_threshold
from crfsdca.model.objective import block_gaps, primal, sequence_entropies, weights_from_marginals
from crfsdca.solvers.registry import SOLVERS, DualStart, make_solver


def P(p, w):
    return primal(w, p.train, p.n_attributes, p.n_labels, p.lam, p.l1)


def inner_problem_gap(p, s):
    """P_inner(w) - D_inner(mu) recomputed from the marginal store and the center y:
    P_inner = P + kappa/2 ||w - y||^2, D_inner = mean H~(mu_i) - g_in*(u), g_in the
    inner regularizer g + kappa/2 ||. - y||^2, u the dual sum of mu; also returns the
    maximizer of g_in*'s sup (the weights of mu in the inner problem)."""
    c = s.catalyst
    mu_u, mu_p = s.marginals
    u = p.lam * weights_from_marginals(mu_u, mu_p, p.train, p.n_attributes, p.n_labels,
                                       p.lam, p.feature_mask)
    lam2 = p.lam + c.kappa
    y = c.dense(c.center)  # kept on the feature set when there is a mask
    w_mu = soft_threshold((u + c.kappa * y) / lam2, p.l1 / lam2)
    g_in = (0.5 * p.lam * w_mu @ w_mu + p.l1 * np.abs(w_mu).sum()
            + 0.5 * c.kappa * (w_mu - y) @ (w_mu - y))
    ent = sequence_entropies(mu_u, mu_p, p.n_labels, p.train.offsets, np.empty(p.n))
    d_inner = ent.mean() - (u @ w_mu - g_in)
    w = np.asarray(s.state.w)  # the inner iterate (weights() is x_k at a round's end)
    p_inner = P(p, w) + 0.5 * c.kappa * (w - y) @ (w - y)
    return p_inner - d_inner, w_mu


@pytest.mark.parametrize("l1", [0.0, 0.02])
@pytest.mark.parametrize("masked", [False, True])
def test_catalyst_reaches_the_original_optimum_and_certifies_every_step(l1, masked):
    p = l1_problem(l1=l1, masked=masked)
    w_star, p_star = split_lbfgs_optimum(p)
    s = make_solver("sdca", p, seed=1, catalyst=3.0, subprecision=1e-9)
    for _ in range(200):
        s.run(p.n // 2)  # checkpoints inside rounds and at their ends
        value, dual = P(p, s.weights()), s.dual()
        assert dual <= p_star + 1e-12 <= value + 2e-12  # weak duality: a certificate
        if value - dual < 1e-11:
            break
    assert value - dual < 1e-11
    assert s.catalyst.rounds >= 10
    assert value == pytest.approx(p_star, abs=1e-9)
    np.testing.assert_allclose(s.weights(), w_star, atol=2e-5)


@pytest.mark.parametrize("l1", [0.0, 0.03])
def test_the_reported_dual_is_the_original_dual_of_the_store(l1):
    p = l1_problem(l1=l1, masked=True)
    s = make_solver("sdca", p, seed=2, catalyst=5.0, sampler="uniform")
    for _ in range(3 * 4):
        s.run(p.n // 4 + 1)
        mu_u, mu_p = s.marginals
        assert s.dual() == pytest.approx(full_dual(p, mu_u, mu_p), rel=1e-11, abs=1e-13)


@pytest.mark.parametrize("l1", [0.0, 0.03])
def test_sdca_runs_the_inner_problem_exactly(l1):
    """The weights are the inner problem's weights of the store, and its gap is the mean
    of the block gaps at them (the identity of plain SDCA, for the inner problem)."""
    p = l1_problem(l1=l1, masked=True)
    s = make_solver("sdca", p, seed=4, catalyst=2.0)
    for _ in range(7):
        s.run(p.n // 3 + 2)
        gap, w_mu = inner_problem_gap(p, s)
        np.testing.assert_allclose(s.state.w, w_mu, atol=1e-12)
        mu_u, mu_p = s.marginals
        gaps = block_gaps(np.asarray(s.state.w), mu_u, mu_p, p.train, p.n_attributes,
                          p.n_labels)
        assert gap == pytest.approx(gaps.mean(), rel=1e-9, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), ratio=st.floats(0.25, 30.0),
       l1=st.sampled_from([0.0, 0.01, 0.1]), steps=st.integers(1, 80))
def test_with_fresh_block_gaps_the_estimate_is_the_certificate(seed, ratio, l1, steps):
    """After a refresh of the stored block gaps, the gap estimate equals P(w) - D(mu) of
    the original problem, wherever the run is (inside a round or just after one)."""
    p = l1_problem(l1=l1, seed=seed % 50, n=12)
    s = make_solver("sdca", p, seed=seed, catalyst=ratio)
    s.run(steps)
    s.refresh_gaps()
    true_gap = P(p, s.weights()) - s.dual()
    assert true_gap >= -1e-12
    assert s.gap_estimate() == pytest.approx(true_gap, rel=1e-8, abs=1e-12)
    # the training loop reads the O(n) floor first, the O(d) estimate only below it
    assert s.gap_estimate_floor() <= s.gap_estimate() * (1 + 1e-12) + 1e-15


def test_zero_is_the_papers_sdca_and_the_library_default_is_catalyst():
    option = SOLVERS["sdca"].options["catalyst"]
    assert option.default == 0.0  # the reproduction's SDCA: no outer loop
    p = l1_problem(l1=0.0)
    plain = make_solver("sdca", p, seed=0)
    off = make_solver("sdca", p, seed=0, catalyst=0.0)
    plain.run(3 * p.n)
    off.run(3 * p.n)
    assert plain.catalyst is None and off.catalyst is None
    np.testing.assert_array_equal(plain.weights(), off.weights())
    from crfsdca.training.learn import solver_config

    assert solver_config("sdca", {}).options["catalyst"] == option.crfsuite_default > 0


@pytest.mark.parametrize("l1", [0.0, 0.03])
def test_a_continued_run_restarts_at_the_weights_it_ended_at(l1):
    """A dual state and the weights it ended at give back the same certificate: the first
    center is the one whose inner weights they are (any w, thresholded entries too)."""
    p = l1_problem(l1=l1, masked=True)
    first = make_solver("sdca", p, seed=5, catalyst=3.0)
    first.run(3 * p.n // 2)  # inside a round: weights and center from different rounds
    marginals = tuple(np.array(m, copy=True) for m in first.marginals)
    again = make_solver("sdca", p, seed=6, catalyst=3.0,
                        start=DualStart(marginals, np.array(first.weights())))
    np.testing.assert_allclose(again.weights(), first.weights(), rtol=0, atol=1e-13)
    assert again.dual() == pytest.approx(first.dual(), rel=1e-13)
    fresh = make_solver("sdca", p, seed=6, catalyst=3.0, start=DualStart(marginals))
    assert np.abs(np.asarray(fresh.weights()) - first.weights()).max() > 1e-6


@pytest.mark.parametrize("l1", [0.0, 0.03])
def test_every_round_starts_with_fresh_gaps_and_knows_its_objective(l1):
    """A round ends with a primal pass at its solution x_k and a refresh of every stored
    gap at the new center's w: the solver knows P at both (at the moved w, the dual plus
    the mean block gap), offers the better one, and the monitor needs no pass."""
    p = l1_problem(l1=l1, masked=True)
    s = make_solver("sdca", p, seed=7, catalyst=3.0)
    s.run(p.n // 2)
    assert s.objective() is None  # inside a round: the stored gaps are stale
    s.run(p.n - p.n // 2)
    assert s.catalyst.rounds == 1
    x_k, moved = s.catalyst.dense(s.catalyst.previous), np.array(s.state.w)
    best = min(P(p, x_k), P(p, moved))
    assert P(p, moved) > P(p, x_k)  # the extrapolated point, early: far worse
    assert s.objective() == pytest.approx(P(p, s.weights()), rel=1e-10, abs=1e-13)
    assert s.objective() == pytest.approx(best, rel=1e-10, abs=1e-13)
    assert s.gap_estimate() == pytest.approx(s.objective() - s.dual(), rel=1e-10, abs=1e-13)
    assert s.gap_estimate_floor() == s.gap_estimate()
    mu_u, mu_p = s.marginals  # the new round samples by the gaps at the moved w
    gaps = block_gaps(moved, mu_u, mu_p, p.train, p.n_attributes, p.n_labels)
    np.testing.assert_allclose(s.sampler.gaps, np.maximum(gaps, 0.0), rtol=1e-9, atol=1e-13)
    s.run(3)
    assert s.objective() is None
    np.testing.assert_array_equal(s.weights(), s.state.w)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), ratio=st.floats(0.5, 30.0),
       l1=st.sampled_from([0.0, 0.01, 0.1]), rounds=st.integers(1, 6))
def test_a_round_offers_the_better_of_its_two_certified_points(seed, ratio, l1, rounds):
    """At a round's end, weights() is x_k or the moved w, whichever has the lower primal,
    and its certificate P - D is exact."""
    p = l1_problem(l1=l1, seed=seed % 50, n=12)
    s = make_solver("sdca", p, seed=seed, catalyst=ratio)
    s.run(rounds * p.n)
    values = [P(p, s.catalyst.dense(s.catalyst.previous)), P(p, np.array(s.state.w))]
    assert P(p, s.weights()) == pytest.approx(min(values), rel=1e-10, abs=1e-13)
    assert s.gap_estimate() == pytest.approx(P(p, s.weights()) - s.dual(), rel=1e-8,
                                             abs=1e-12)
    assert s.gap_estimate() >= -1e-12


@pytest.mark.parametrize("l1", [0.0, 0.03])
def test_a_round_far_from_stop_at_leaves_out_its_primal_pass_until_settled(l1):
    """With the driver's ``stop_at`` far below the stored gaps' estimate, a round end
    certifies the moved w alone (no primal pass at x_k); ``settle`` makes that pass and
    offers the better point, as a round end without ``stop_at`` does; the iterates are
    those of a run without ``stop_at``."""
    from crfsdca.solvers.sdca import X_PASS_WITHIN

    p = l1_problem(l1=l1, masked=True)
    full = make_solver("sdca", p, seed=7, catalyst=3.0)
    lean = make_solver("sdca", p, seed=7, catalyst=3.0)
    full.run(2 * p.n)
    lean.run(p.n)
    lean.stop_at = lean.gap_estimate() / (10 * X_PASS_WITHIN)  # far below: left out
    lean.run(p.n)
    np.testing.assert_array_equal(lean.state.w, full.state.w)
    moved = np.array(lean.state.w)
    assert lean.objective() == pytest.approx(P(p, moved), rel=1e-10, abs=1e-13)
    np.testing.assert_array_equal(lean.weights(), moved)
    assert lean.gap_estimate() == pytest.approx(P(p, moved) - lean.dual(), rel=1e-8,
                                                abs=1e-12)
    assert lean.settle() and not lean.settle()  # once
    assert lean.objective() == pytest.approx(full.objective(), rel=1e-10, abs=1e-13)
    np.testing.assert_array_equal(lean.weights(), full.weights())
    lean.stop_at = 1e9  # within reach: the pass is made at the round end
    lean.run(p.n)
    full.run(p.n)
    assert not lean.settle()
    assert lean.objective() == pytest.approx(full.objective(), rel=1e-10, abs=1e-13)


def test_a_run_ending_at_a_round_it_left_short_ends_on_the_better_point():
    """train() sets ``stop_at``; a run whose budget ends at a round end that left out
    x_k's pass settles it: its last row and its weights are those of a run that made
    every pass (the rows before may be the moved w's)."""
    from crfsdca.solvers.monitor import Monitor
    from crfsdca.training.run import train

    p = l1_problem(l1=0.0, masked=True)
    runs = []
    for gap_tol in (None, 1e-14):
        s = make_solver("sdca", p, seed=3, catalyst=3.0)
        result = train(s, Monitor(p), epochs=3, gap_tol=gap_tol)
        assert result.status == "budget" and s.stop_at is None
        runs.append((result.rows, np.array(s.weights())))
    (full_rows, w_full), (lean_rows, w_lean) = runs
    full, lean = full_rows[-1], lean_rows[-1]
    left_short = [a["primal"] > b["primal"] * (1 + 1e-9) and a["epoch"] == b["epoch"] == 1
                  for a, b in zip(lean_rows, full_rows, strict=True)]
    assert any(left_short)  # epoch 1's row: the moved w's primal, x_k's pass left out
    np.testing.assert_array_equal(w_lean, w_full)
    assert lean["epoch"] == full["epoch"] == 3.0
    assert lean["primal"] == pytest.approx(full["primal"], rel=1e-10, abs=1e-13)
    assert lean["primal"] == pytest.approx(P(p, w_lean), rel=1e-10, abs=1e-13)


def test_the_floor_sets_kappa_where_lambda_n_is_small():
    """kappa = max(catalyst lambda, catalyst_floor / n); the floor alone starts no loop;
    the library's default has a floor, the option table (the reproduction) none."""
    from crfsdca.solvers.catalyst import kappa_ratio
    from crfsdca.training.learn import solver_config

    assert kappa_ratio(3.0, 0.3, 0.02) == pytest.approx(15.0)  # c2 = 0.01: lambda n = 0.02
    assert kappa_ratio(3.0, 0.3, 2.0) == 3.0  # c2 = 1: the ratio rules
    assert kappa_ratio(0.0, 0.3, 0.02) == 0.0
    assert kappa_ratio(3.0, 0.3, 0.0) == 3.0  # lambda = 0: SDCA refuses it, not this
    option = SOLVERS["sdca"].options["catalyst_floor"]
    assert option.default == 0.0
    assert solver_config("sdca", {}).options["catalyst_floor"] == option.crfsuite_default > 0
    p = l1_problem(l1=0.02)
    floor = 40.0 * p.lam * p.n
    s = make_solver("sdca", p, seed=3, catalyst=3.0, catalyst_floor=floor,
                    catalyst_momentum=1.0)
    assert s.catalyst.kappa == pytest.approx(floor / p.n, rel=1e-12)
    assert s.options.lam_n == pytest.approx(41.0 * p.lam * p.n, rel=1e-12)
    low = make_solver("sdca", p, seed=3, catalyst=3.0, catalyst_floor=1e-9)
    assert low.catalyst.kappa == pytest.approx(3.0 * p.lam, rel=1e-12)
    off = make_solver("sdca", p, seed=3, catalyst=0.0, catalyst_floor=floor)
    plain = make_solver("sdca", p, seed=3)
    off.run(2 * p.n)
    plain.run(2 * p.n)
    assert off.catalyst is None
    np.testing.assert_array_equal(off.weights(), plain.weights())
    s.run(40 * p.n)  # the floor's loop certifies as the ratio's does
    assert P(p, s.weights()) - s.dual() >= 0
    assert P(p, s.weights()) - s.dual() < 1e-6 * abs(P(p, s.weights()))


def test_verbose_names_the_kappa_that_ran(capsys):
    from crfsdca import CRF
    from crfsdca.cli.precompile import tiny_data

    X, y = tiny_data(2)
    CRF(c2=0.01, max_iterations=1, verbose=True).fit(X, y)  # lambda n = 0.02: the floor
    CRF(c2=1.0, max_iterations=1, verbose=True).fit(X, y)  # the ratio
    CRF(c2=0.01, max_iterations=1, verbose=True, catalyst=0).fit(X, y)
    out = capsys.readouterr().out
    assert out.count("Catalyst's outer loop, kappa = 15 lambda") == 1
    assert out.count("Catalyst's outer loop, kappa = 3 lambda") == 1
    assert out.count("Catalyst") == 2


def test_verbose_without_l2_is_the_same_clear_error():
    from crfsdca import CRF
    from crfsdca.cli.precompile import tiny_data
    from crfsdca.errors import ConfigError

    X, y = tiny_data(1)
    for verbose in (False, True):
        with pytest.raises(ConfigError, match="L2"):
            CRF(c2=0.0, max_iterations=1, verbose=verbose).fit(X, y)


@pytest.mark.parametrize("l1", [0.0, 0.03])
def test_points_on_the_feature_set_run_as_dense_ones(l1, monkeypatch):
    """With a feature mask the loop keeps y and x_k on the feature set alone (v and w are
    0 off it): the iterates are those of dense points, bit for bit, round after round;
    the certificate and the final weights (x_k made in v's array) agree."""
    import crfsdca.solvers.sdca as sdca

    p = l1_problem(l1=l1, masked=True)
    kept = make_solver("sdca", p, seed=3, catalyst=3.0)
    assert len(kept.catalyst.center) == int(p.feature_mask.sum()) < p.dim
    monkeypatch.setattr(sdca, "_catalyst_support", lambda p, w: None)
    dense = make_solver("sdca", p, seed=3, catalyst=3.0)
    assert len(dense.catalyst.center) == p.dim
    for _ in range(4):
        kept.run(p.n)
        dense.run(p.n)
        np.testing.assert_array_equal(kept.state.v, dense.state.v)
        np.testing.assert_array_equal(kept.state.w, dense.state.w)
        np.testing.assert_array_equal(kept.catalyst.dense(kept.catalyst.previous),
                                      dense.catalyst.previous)
        np.testing.assert_array_equal(kept.weights(), dense.weights())
        assert kept.dual() == pytest.approx(dense.dual(), rel=1e-13)
        assert kept.gap_estimate() == pytest.approx(dense.gap_estimate(), rel=1e-9,
                                                    abs=1e-13)
        assert kept.nonzero_weights() == dense.nonzero_weights()
    best = np.array(kept.weights())
    np.testing.assert_array_equal(kept.final_weights(), best)
    np.testing.assert_array_equal(dense.final_weights(), best)


def test_weights_off_the_feature_set_keep_the_points_dense():
    """A run restarted from weights that are not 0 off the feature set (an earlier run on
    other data) keeps its points dense, and its certificate holds."""
    p = l1_problem(l1=0.02, masked=True)
    first = make_solver("sdca", p, seed=5, catalyst=3.0)
    first.run(2 * p.n)
    marginals = tuple(np.array(m, copy=True) for m in first.marginals)
    weights = np.array(first.weights())
    off = np.flatnonzero(p.feature_mask == 0)
    weights[off[0]] = 0.5
    again = make_solver("sdca", p, seed=6, catalyst=3.0, start=DualStart(marginals, weights))
    assert len(again.catalyst.center) == p.dim
    again.run(3 * p.n)
    value = P(p, again.weights())
    assert again.dual() <= value + 1e-12


@pytest.mark.parametrize("l1", [0.0, 0.02])
def test_the_momentum_keeps_its_share_and_none_is_the_proximal_point_method(l1):
    """By default the loop keeps all of Catalyst's momentum (1 - sqrt q) / (1 + sqrt q)
    without L1 and :data:`L1_MOMENTUM` of it with L1, and the solver's options record the
    share that ran; ``catalyst_momentum`` sets it, 0 making the loop the proximal point
    method (each new center is the round's solution). The certificate holds either way."""
    from crfsdca.solvers.catalyst import L1_MOMENTUM

    p = l1_problem(l1=l1)
    full = None
    for share in (None, 1.0, 0.5, 0.0):
        s = make_solver("sdca", p, seed=3, catalyst=3.0, catalyst_momentum=share)
        c = s.catalyst
        q = p.lam / (p.lam + c.kappa)
        full = (1.0 - q**0.5) / (1.0 + q**0.5)
        kept = (L1_MOMENTUM if l1 else 1.0) if share is None else share
        assert c.momentum == pytest.approx(kept * full, rel=1e-15)
        assert s.config()["catalyst_momentum"] == kept
        s.run(3 * p.n)
        assert s.dual() <= P(p, s.weights()) + 1e-12
    np.testing.assert_array_equal(c.center, c.previous)  # share 0: y_k = x_k
    assert 0.0 < L1_MOMENTUM < 1.0 and full > 0.0


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.05]), st.booleans())
def test_a_round_end_moves_the_point_and_sums_its_gap_terms_in_one_pass(seed, l1, masked):
    """``next_round`` reads x_k = S(v) from v (w may be stale), moves the center and v,
    sets w = S(v) on the support, and returns g*(u) and -<u, w> + g(w) of the moved
    point; ``gap_terms`` reads the same from v alone. Checked against numpy's formulas."""
    from crfsdca.solvers.catalyst import CatalystLoop

    rng = np.random.default_rng(seed)
    d, lam = 60, 0.2
    support = np.flatnonzero(rng.random(d) < 0.6) if masked else None
    on = np.zeros(d, dtype=bool)
    on[support if masked else slice(None)] = True
    x0 = np.where(on, rng.normal(size=d), 0.0)
    loop = CatalystLoop(lam, l1, 3.0, x0, x0.copy(), support=support, share=0.5)
    v = np.where(on, rng.normal(size=d), 0.0)
    t = l1 / loop.inner_lam
    w = np.full(d, 7.0) if l1 else v  # stale where thresholded: never read
    x = soft_threshold(v, t) if l1 else v.copy()
    prev, center = loop.dense(loop.previous), loop.dense(loop.center)
    y = x + loop.momentum * (x - prev)
    v_moved = v + (loop.kappa / loop.inner_lam) * (y - center) * on
    kept = w.copy()
    conj, rest = loop.next_round(v, w)
    np.testing.assert_allclose(v, v_moved, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(loop.dense(loop.center), np.where(on, y, 0.0), rtol=1e-14,
                               atol=1e-15)
    np.testing.assert_array_equal(loop.dense(loop.previous), np.where(on, x, 0.0))
    x_moved = soft_threshold(v, t) if l1 else v
    if l1:
        np.testing.assert_array_equal(w[on], x_moved[on])
        np.testing.assert_array_equal(w[~on], kept[~on])
    u = loop.inner_lam * v - loop.kappa * loop.dense(loop.center)
    want_conj = np.sum(np.maximum(np.abs(u) - l1, 0.0)[on] ** 2) / (2 * lam)
    want_rest = np.sum((x_moved * (0.5 * lam * x_moved - u) + l1 * np.abs(x_moved))[on])
    assert conj == pytest.approx(want_conj, rel=1e-12, abs=1e-14)
    assert rest == pytest.approx(want_rest, rel=1e-10, abs=1e-12)
    again = loop.gap_terms(v)
    assert again[0] == pytest.approx(want_conj, rel=1e-12, abs=1e-14)
    assert again[1] == pytest.approx(want_rest, rel=1e-10, abs=1e-12)
    assert loop.dual(v, 1.5) == pytest.approx(1.5 - want_conj, rel=1e-12)
