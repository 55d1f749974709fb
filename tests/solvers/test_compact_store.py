"""SDCA's compact dual store: its entropy bound against brute force, the certificate it
gives, the identities the solver keeps, and what it refuses."""

import numpy as np
import pytest
from helpers.bruteforce import entropy, joint, marginals_of
from helpers.corpora import small_corpus
from helpers.scipy_reference import lbfgs_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

import crfsdca
from crfsdca.data.sequences import make_sequences
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import ConfigError
from crfsdca.model.objective import primal
from crfsdca.model_file import dual_path, load_dual
from crfsdca.solvers.base import Problem
from crfsdca.solvers.compact_store import compact_sizes
from crfsdca.solvers.sdca import SDCA


def small_problem(n=60, K=3, A=12, seed=3, max_len=6):
    seq = synthetic_sequences(n, 1, max_len, K, A, 3, seed=seed)
    return Problem(seq, A, K, 1.0 / n)


def _position_entropy(p):
    return entropy(np.asarray(p, dtype=np.float64))


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**31), T=st.integers(1, 4), K=st.integers(2, 3),
       gamma=st.floats(0.0, 1.0), slack=st.floats(0.0, 1.0))
def test_the_bound_is_below_the_entropy_of_every_mixture_of_chains(seed, T, K, gamma, slack):
    """(1 - g) h + g H(q) + JS_g(a_t, q_t) <= H(mixture) <= H~(its marginals) for two
    random chains a and q, any position t and any h <= H(a): the three entropies by
    enumerating the K^T labelings."""
    rng = np.random.default_rng(seed)
    A = 2
    seq = make_sequences([0, T], rng.integers(0, K, T), np.arange(T + 1) * 1,
                         rng.integers(0, A, T))
    d = A * K + 3 * K + K * K
    ys, _, p1, _ = joint(rng.normal(scale=2.0, size=d), seq, 0, A, K)
    _, _, p2, _ = joint(rng.normal(scale=2.0, size=d), seq, 0, A, K)
    mix = (1 - gamma) * p1 + gamma * p2
    h_mix = entropy(mix)
    u_mix, pa_mix = marginals_of(ys, mix, T, K)
    h_tilde = (entropy(pa_mix.ravel()) - entropy(u_mix[1:T - 1].ravel()) if T > 1
               else entropy(u_mix[0]))  # the chain with those marginals
    a, _ = marginals_of(ys, p1, T, K)
    q, _ = marginals_of(ys, p2, T, K)
    h = entropy(p1) - slack  # a lower bound of H(a), as the store keeps one
    for t in range(T):
        js = (_position_entropy((1 - gamma) * a[t] + gamma * q[t])
              - (1 - gamma) * _position_entropy(a[t]) - gamma * _position_entropy(q[t]))
        bound = (1 - gamma) * h + gamma * entropy(p2) + js
        assert bound <= h_mix + 1e-12 <= h_tilde + 2e-12


def test_compact_sdca_converges_with_a_certificate_at_every_epoch():
    """The duality gap of the compact store bounds P(w) - P* from above all the way, and
    closes to the L-BFGS optimum."""
    p = small_problem()
    _, p_star = lbfgs_optimum(p)
    s = SDCA(p, sampler="gap", subprecision=1e-8, seed=1, dual_store="compact")
    assert (len(s.state.mu_unary), len(s.state.mu_pair)) == compact_sizes(p.train, 3)
    previous = -np.inf
    for _ in range(60):
        s.run(p.n)
        value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
        dual = s.dual()
        assert dual <= p_star + 1e-12 and value >= p_star - 1e-12
        assert dual >= previous - 1e-12  # each step raises the dual's bound
        previous = dual
    assert value - dual < 1e-10
    assert value == pytest.approx(p_star, abs=1e-10)


def test_a_block_without_mass_on_a_label_still_moves():
    """A block at a chain whose probabilities underflowed to 0 (here every block, at the
    gold labels' exact Dirac) must move where the model gives those labels mass: the
    bound's slope at 0 is infinite there. Summed over the positive entries alone it was
    0 on one-token sequences, which then never moved (46% of steps null, the relative
    gap stuck at 2e-2; the exact store: 5e-4)."""
    p = Problem(synthetic_sequences(60, 1, 4, 3, 12, 3, seed=3), 12, 3, 0.1 / 60)
    _, p_star = lbfgs_optimum(p)
    s = SDCA(p, sampler="gap", seed=1, dual_store="compact", init_c=1000.0)
    assert np.count_nonzero(s.state.mu_unary == 0.0) > 0  # the start has exact zeros
    s.run(100 * p.n)
    value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
    assert (value - s.dual()) / value < 1e-3
    assert value == pytest.approx(p_star, rel=1e-3)
    assert np.count_nonzero(s.state.mu_unary == 0.0) == 0


def test_the_weights_are_w_hat_of_the_compact_store_and_the_gaps_its_mean():
    """w = (1/(lam n)) sum_i (F(x_i, y_i) - E_mu_i[F]) from the unary marginals and the
    pairwise sums alone; after a refresh, P(w) - D = the mean of the stored gaps."""
    p = small_problem(n=40, K=4, A=20)
    s = SDCA(p, sampler="gap", seed=3, dual_store="compact")
    s.run(15 * p.n)
    K, A, seq = p.n_labels, p.n_attributes, p.train
    mu_u = s.state.mu_unary.reshape(-1, K)
    mu_p = s.state.mu_pair.reshape(-1, K, K)
    w_hat = np.zeros(A * K + 3 * K + K * K)
    E = w_hat[:A * K].reshape(A, K)
    B = w_hat[A * K:A * K + 3 * K].reshape(K, 3)
    W = w_hat[A * K + 3 * K:].reshape(K, K)
    for i in range(seq.n_sequences):
        lo, hi = seq.offsets[i], seq.offsets[i + 1]
        q = mu_u[lo:hi].copy()
        q[np.arange(hi - lo), seq.labels[lo:hi]] -= 1.0  # E_mu[F] - F(y) by token
        for t, tok in enumerate(range(lo, hi)):
            np.add.at(E, seq.attr_indices[seq.attr_indptr[tok]:seq.attr_indptr[tok + 1]],
                      q[t])
        B[:, 0] += q.sum(axis=0)
        B[:, 1] += q[0]
        B[:, 2] += q[-1]
        if hi - lo > 1:
            W += mu_p[i]
            for t in range(lo, hi - 1):
                W[seq.labels[t], seq.labels[t + 1]] -= 1.0
    w_hat *= -1.0 / (p.lam * seq.n_sequences)
    np.testing.assert_allclose(s.weights(), w_hat, rtol=1e-10, atol=1e-12)
    s.refresh_gaps()
    value = primal(s.weights(), seq, A, K, p.lam)
    assert value - s.dual() == pytest.approx(np.mean(s.sampler.gaps), rel=1e-9, abs=1e-14)


def test_the_default_fit_on_the_compact_store_reaches_the_same_optimum():
    """The estimator with the elastic net and Catalyst, on one and on two threads: the
    same model on both, the objective of the exact store's fit within their gaps."""
    X, y = small_corpus(n=300, seed=1)
    exact = crfsdca.CRF(c1=0.1, c2=0.1, epsilon=1e-5, threads=1).fit(X, y)
    fits = [crfsdca.CRF(c1=0.1, c2=0.1, epsilon=1e-5, threads=k,
                        dual_store="compact").fit(X, y) for k in (1, 2)]
    assert np.array_equal(fits[0].model_.weights, fits[1].model_.weights)
    a, b = exact.training_log_[-1], fits[0].training_log_[-1]
    assert b["relative_gap"] <= 1e-5
    assert abs(a["loss"] - b["loss"]) <= a["gap"] + b["gap"]
    assert fits[0].training_log_.method["dual_store"] == "compact"


def test_the_default_store_and_what_the_compact_one_does_not_run_with():
    """The estimator's default is the compact store, the exact one where a fit needs
    every edge's pairwise marginals (transition attributes), runs mini-batches or asks
    for a float32 store; asked for by name, the compact store refuses them in one
    line."""
    X, y = small_corpus(n=40, seed=2)
    assert crfsdca.CRF(max_iterations=2).fit(X, y).training_log_.method["dual_store"] == \
        "compact"
    for params in ({"batch_size": 4}, {"store_dtype": "float32"}):
        fit = crfsdca.CRF(max_iterations=2, **params).fit(X, y)
        assert fit.training_log_.method["dual_store"] == "exact"
    Xe = [[{**item, "prev:" + str(t % 2): 1.0} for t, item in enumerate(s)] for s in X]
    edges = crfsdca.CRF(max_iterations=2, transition_prefix="prev:").fit(Xe, y)
    assert edges.training_log_.method["dual_store"] == "exact"
    p = small_problem(n=20)
    for options, why in (({"store_dtype": "float32"}, "store_dtype float32"),
                         ({"batch_size": 4}, "batch_size > 1")):
        with pytest.raises(ConfigError, match=f"'compact' does not run with {why}"):
            SDCA(p, dual_store="compact", **options)
    with pytest.raises(ConfigError, match="'compact' does not run with transition attrib"):
        crfsdca.CRF(dual_store="compact", transition_prefix="prev:").fit(Xe, y)
    with pytest.raises(ValueError, match="dual_store"):
        crfsdca.CRF(dual_store="tiny").fit(X, y)


def test_a_store_in_a_file_trains_the_same_model(tmp_path):
    X, y = small_corpus(n=120, seed=4)
    fits = [crfsdca.CRF(c2=0.1, store_dir=where).fit(X, y) for where in (None, str(tmp_path))]
    assert np.array_equal(fits[0].model_.weights, fits[1].model_.weights)
    assert list(tmp_path.iterdir()) == []  # the store's file removed as soon as it is made


def test_a_compact_fit_continues_from_its_dual_state(tmp_path):
    """save_dual keeps the compact store (with its entropy bounds); a fit that continues
    it starts certified where the first one stopped and ends on the optimum; an exact
    state is continued on the compact store too (its blocks summed), not the reverse."""
    X, y = small_corpus(n=200, seed=5)
    model = tmp_path / "m.h5"
    first = crfsdca.CRF(c2=0.1, max_iterations=3, model_filename=str(model),
                        save_dual=True).fit(X, y)
    state = load_dual(dual_path(model), first.model_)
    assert state["entropies"].shape == (len(X),)
    cont = crfsdca.CRF(epsilon=1e-6)
    cont.continue_from(model)
    cont.fit(X, y)
    fresh = crfsdca.CRF(c2=0.1, epsilon=1e-6).fit(X, y)
    a, b = cont.training_log_[-1], fresh.training_log_[-1]
    assert abs(a["loss"] - b["loss"]) <= a["gap"] + b["gap"]
    assert cont.training_log_[0]["gap"] < 0.5 * fresh.training_log_[0]["gap"]
    exact_model = tmp_path / "e.h5"
    crfsdca.CRF(c2=0.1, max_iterations=3, dual_store="exact", model_filename=str(exact_model),
                save_dual=True).fit(X, y)
    on_compact = crfsdca.CRF(max_iterations=1)
    on_compact.continue_from(exact_model)
    on_compact.fit(X, y)
    assert on_compact.training_log_[0]["gap"] < 0.5 * fresh.training_log_[0]["gap"]
    back = crfsdca.CRF(dual_store="exact")
    back.continue_from(model)
    with pytest.raises(ConfigError, match="continue it with dual_store='compact'"):
        back.fit(X, y)


def test_the_compact_start_is_the_same_bits_on_any_number_of_threads():
    """More threads make the compact blocks and entropies by chunks, then w_hat in the
    one thread's order: the same bits as the fused pass on one thread."""
    from helpers.bruteforce import random_split

    from crfsdca.model.layout import WeightLayout
    from crfsdca.model.passes import chunk_bounds
    from crfsdca.solvers.compact_store import compact_dirac_start

    rng = np.random.default_rng(5)
    A, K = 7, 3
    seq = random_split(rng, 900, 9, K, A)
    assert len(chunk_bounds(seq)) > 3  # several chunks to share
    mask = (rng.random(WeightLayout(A, K).dim) < 0.7).astype(np.uint8)
    one = compact_dirac_start(seq, A, K, 0.3, mask)
    for threads in (2, 3):
        many = compact_dirac_start(seq, A, K, 0.3, mask, threads=threads)
        for a, b in zip(one, many, strict=True):
            np.testing.assert_array_equal(a, b)
