"""Real-valued attributes and restricted feature sets (CRFsuite's model) in every solver."""

import numpy as np
import pytest
from helpers.bruteforce import random_split
from helpers.scipy_reference import lbfgs_optimum

from crfsdca.model.features import crfsuite_mask, is_full
from crfsdca.model.layout import WeightLayout
from crfsdca.model.objective import (
    block_gaps,
    dual_objective,
    primal,
    primal_and_gradient,
    weights_from_marginals,
)
from crfsdca.solvers.base import Problem
from crfsdca.solvers.registry import SOLVERS, make_solver


def restricted_problem(seed=4, n=30, K=3, A=10, real=True, **mask_options):
    rng = np.random.default_rng(seed)
    seq = random_split(rng, n, 6, K, A, max_attrs=3, real=real)
    mask = crfsuite_mask(seq, A, K, **mask_options)
    return Problem(seq, A, K, 1.0 / n, feature_mask=mask)


def test_crfsuite_mask_keeps_the_pairs_seen_in_training():
    rng = np.random.default_rng(1)
    K, A = 4, 6
    seq = random_split(rng, 12, 5, K, A, real=True)
    layout = WeightLayout(A, K)
    mask = crfsuite_mask(seq, A, K)
    seen_states, seen_trans = set(), set()
    for i in range(seq.n_sequences):
        lo, hi = seq.offsets[i], seq.offsets[i + 1]
        for tok in range(lo, hi):
            for j in range(seq.attr_indptr[tok], seq.attr_indptr[tok + 1]):
                if seq.attr_values[j] != 0:
                    seen_states.add((int(seq.attr_indices[j]), int(seq.labels[tok])))
            if tok + 1 < hi:
                seen_trans.add((int(seq.labels[tok]), int(seq.labels[tok + 1])))
    E, B, W = layout.emission(mask), layout.bias(mask), layout.transition(mask)
    assert {tuple(x) for x in np.argwhere(E)} == seen_states
    assert {tuple(x) for x in np.argwhere(W)} == seen_trans
    assert not B.any()
    full = crfsuite_mask(seq, A, K, possible_states=True, possible_transitions=True, bias=True)
    assert is_full(full) and is_full(None) and not is_full(mask)


def test_the_duality_identity_holds_on_the_restricted_model():
    """P(w_hat(mu)) - D(mu) = mean block gap, with w_hat restricted to the features."""
    p = restricted_problem()
    rng = np.random.default_rng(0)
    s = make_solver("sdca", p, seed=0)
    s.run(int(rng.integers(5, 3 * p.n)))
    mu_u, mu_p = s.marginals
    w = weights_from_marginals(mu_u, mu_p, p.train, p.n_attributes, p.n_labels, p.lam,
                               p.feature_mask)
    np.testing.assert_allclose(s.weights(), w, atol=1e-12)
    assert not w[p.feature_mask == 0].any()
    P = primal(w, p.train, p.n_attributes, p.n_labels, p.lam)
    D = dual_objective(mu_u, mu_p, p.train, p.n_attributes, p.n_labels, p.lam,
                       p.feature_mask)
    gaps = block_gaps(w, mu_u, mu_p, p.train, p.n_attributes, p.n_labels)
    assert P - D == pytest.approx(gaps.mean(), rel=1e-10, abs=1e-12)
    assert s.dual() == pytest.approx(D, rel=1e-12)


def test_the_restricted_gradient_is_zero_off_the_features():
    p = restricted_problem()
    w = np.random.default_rng(2).normal(size=p.dim) * p.feature_mask
    _, g = primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam, p.feature_mask)
    _, g_full = primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam)
    keep = p.feature_mask.astype(bool)
    assert not g[~keep].any() and g_full[~keep].any()
    np.testing.assert_array_equal(g[keep], g_full[keep])


@pytest.mark.parametrize("solver", [n for n, s in SOLVERS.items() if s.converges])
def test_every_solver_reaches_the_restricted_optimum(solver):
    """Real-valued attributes, CRFsuite's feature set: the optimum of scipy's L-BFGS-B over
    the features only, and weights off the features exactly 0 all along."""
    p = restricted_problem()
    w_star, p_star = lbfgs_optimum(p)
    s = make_solver(solver, p, seed=1)
    steps = 5 * s.steps_per_epoch if solver != "lbfgs" else 20
    for _ in range(60):
        s.run(steps)
        w = np.asarray(s.weights())
        assert not w[p.feature_mask == 0].any()
        value = primal(w, p.train, p.n_attributes, p.n_labels, p.lam)
        if value - p_star < 1e-11:
            break
    assert value == pytest.approx(p_star, abs=1e-10)
    np.testing.assert_allclose(w, w_star, atol=1e-4)
