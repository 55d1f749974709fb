"""Catalyst's kappa moved by the run (``catalyst_tune``, ``solvers/catalyst_kappa.py``).

What must hold: the rule moves kappa only as documented (up 1.5x above the band at once,
down 2/3x after two probes in a row below it, never below the ratio's kappa); a move
changes the inner problem SDCA runs and nothing else: the marginals, the original
problem's dual and the certificate stay exact, the weights are the new inner problem's
weights of the store, the run still reaches the original optimum, and the model is the
same on one thread and on two.
"""

import numpy as np
import pytest
from helpers.elastic_net import full_dual, l1_problem, split_lbfgs_optimum
from hypothesis import given, settings
from hypothesis import strategies as st
from test_catalyst import P, inner_problem_gap

from crfsdca.solvers import catalyst_kappa
from crfsdca.solvers.base import Problem
from crfsdca.solvers.catalyst_kappa import KAPPA_DOWN, KAPPA_UP, SHARE_HIGH, SHARE_LOW, KappaRule
from crfsdca.solvers.registry import make_solver


@settings(max_examples=60, deadline=None)
@given(shares=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30),
       start=st.floats(1.0, 50.0))
def test_the_rule_moves_kappa_only_as_documented(shares, start):
    least = 1.0
    rule, kappa, lows = KappaRule(least), start, 0
    for share in shares:
        new = rule.next(share, kappa)
        assert new >= least
        if share > SHARE_HIGH:
            assert new == pytest.approx(kappa * KAPPA_UP)
            lows = 0
        elif share >= SHARE_LOW:  # inside the band: no move, and the count of lows restarts
            assert new == kappa
            lows = 0
        else:
            lows += 1
            if lows < 2:
                assert new == kappa
            else:
                assert new == pytest.approx(max(kappa * KAPPA_DOWN, least))
                lows = 0
        kappa = new


def test_probes_every_third_round():
    assert [r for r in range(1, 13) if KappaRule.probes(r)] == [3, 6, 9, 12]


@pytest.fixture
def swinging(monkeypatch):
    """The rule replaced by one that moves kappa at every probe, down and up in turn, so
    that the run crosses several inner problems."""
    moves = [0.5, 2.0, 0.4, 2.5]  # kappa comes back every four moves

    def swing(self, share, kappa):
        self.moved = getattr(self, "moved", -1) + 1  # each run's own rule: its own swings
        return max(kappa * moves[self.moved % len(moves)], self.least)

    monkeypatch.setattr(catalyst_kappa.KappaRule, "probes", staticmethod(lambda r: True))
    monkeypatch.setattr(catalyst_kappa.KappaRule, "next", swing)


@pytest.mark.parametrize("l1", [0.0, 0.03])
def test_a_move_keeps_the_certificate_and_runs_the_new_inner_problem(l1, swinging):
    p = l1_problem(l1=l1, masked=True)
    s = make_solver("sdca", p, seed=4, catalyst=2.0, catalyst_tune=True)
    kappas = set()
    for _ in range(12):
        s.run(p.n // 2 + 1)
        kappas.add(s.catalyst.kappa)
        mu_u, mu_p = s.marginals
        assert s.dual() == pytest.approx(full_dual(p, mu_u, mu_p), rel=1e-11, abs=1e-13)
        gap, w_mu = inner_problem_gap(p, s)  # the inner problem at the kappa now
        np.testing.assert_allclose(s.state.w, w_mu, atol=1e-12)
        assert gap >= -1e-12
        assert P(p, s.weights()) - s.dual() >= -1e-12
    assert len(kappas) >= 3


@pytest.mark.parametrize("l1", [0.0, 0.02])
def test_with_kappa_moving_the_run_reaches_the_original_optimum(l1, swinging):
    p = l1_problem(l1=l1, masked=True)
    _, p_star = split_lbfgs_optimum(p)
    s = make_solver("sdca", p, seed=1, catalyst=3.0, catalyst_tune=True, subprecision=1e-9)
    for _ in range(300):
        s.run(p.n)
        value, dual = P(p, s.weights()), s.dual()
        assert dual <= p_star + 1e-12 <= value + 2e-12
        if value - dual < 1e-10:
            break
    assert value - dual < 1e-10


@pytest.mark.parametrize("l1", [0.0, 0.03])
def test_moves_give_the_same_model_on_one_thread_and_two(l1, swinging):
    p = l1_problem(l1=l1, masked=True, n=40)
    runs = []
    for threads in (1, 2):
        s = make_solver("sdca", p, seed=9, threads=threads, catalyst=2.0, catalyst_tune=True,
                        pipeline=True)
        s.run(9 * p.n)
        runs.append((np.array(s.weights()), s.dual(), s.catalyst.kappa))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1:] == runs[1][1:]


@pytest.mark.parametrize("floor, way", [(30.0, "down"), (0.3, "up")])
def test_the_real_rule_moves_kappa_toward_the_band_and_not_below_the_ratio(floor, way):
    """At lambda n = 0.1 a kappa n of 30 solves the inner problems far past need (kappa
    goes down) and one of 0.3 leaves most of the certificate to them (it goes up)."""
    q = l1_problem(l1=0.0, masked=True, n=40)
    p = Problem(q.train, q.n_attributes, q.n_labels, 0.1 / q.n, feature_mask=q.feature_mask)
    s = make_solver("sdca", p, seed=2, catalyst=3.0, catalyst_floor=floor, catalyst_tune=True)
    start = s.catalyst.kappa
    for _ in range(15):
        s.run(p.n)
        assert s.catalyst.kappa >= 3.0 * p.lam * (1 - 1e-12)
    assert (s.catalyst.kappa < start) if way == "down" else (s.catalyst.kappa > start)
