"""The numba core against brute-force enumeration and against the duality identities."""

import numpy as np
import pytest
from helpers.bruteforce import entropy, features, joint, kl, marginals_of, random_split
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.data.sequences import make_sequences
from crfsdca.model.chain import chain_divergence, chain_entropy
from crfsdca.model.layout import WeightLayout
from crfsdca.model.objective import (
    block_gaps,
    dirac_marginals,
    dirac_start,
    dual_objective,
    predict,
    primal,
    primal_and_gradient,
    sequence_entropies,
    store_sizes,
    weights_from_marginals,
)
from crfsdca.model.oracle import sequence_marginals
from crfsdca.model.stats import add_label_stats, add_marginal_stats

problems = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "n": st.integers(1, 3),
    "max_len": st.integers(1, 5),
    "K": st.integers(1, 4),
    "A": st.integers(1, 5),
    "scale": st.sampled_from([0.1, 1.0, 5.0]),
    "real": st.booleans(),  # real-valued attributes (python-crfsuite's weights)
})


def make_problem(p):
    rng = np.random.default_rng(p["seed"])
    # cap K^T so enumeration stays small
    max_len = min(p["max_len"], 4 if p["K"] == 4 else 5)
    seq = random_split(rng, p["n"], max_len, p["K"], p["A"], real=p["real"])
    d = WeightLayout(p["A"], p["K"]).dim
    w = rng.normal(scale=p["scale"], size=d)
    return rng, seq, w


def oracle_marginals_store(w, seq, A, K):
    """The marginal store filled with the oracle marginals nu_i(w) of every sequence."""
    nu, npair = store_sizes(seq, K)
    mu_u, mu_p = np.empty(nu), np.empty(npair)
    for i in range(seq.n_sequences):
        _, un, pa = sequence_marginals(w, A, K, seq, i)
        o = seq.offsets[i]
        mu_u[o * K:(o + un.shape[0]) * K] = un.ravel()
        mu_p[(o - i) * K * K:(o - i) * K * K + pa.size] = pa.ravel()
    return mu_u, mu_p


@settings(max_examples=60, deadline=None)
@given(problems)
def test_oracle_matches_enumeration(p):
    _, seq, w = make_problem(p)
    A, K = p["A"], p["K"]
    for i in range(seq.n_sequences):
        ys, _, prob, logz = joint(w, seq, i, A, K)
        T = len(ys[0])
        un, pa = marginals_of(ys, prob, T, K)
        logz_c, un_c, pa_c = sequence_marginals(w, A, K, seq, i)
        assert logz_c == pytest.approx(logz, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(un_c, un, atol=1e-12)
        np.testing.assert_allclose(pa_c, pa, atol=1e-12)
        # the chain entropy of exact marginals is the entropy of the joint
        h = chain_entropy(un_c.ravel(), 0, pa_c.ravel(), 0, T, K)
        assert h == pytest.approx(entropy(prob), abs=1e-10)


@settings(max_examples=60, deadline=None)
@given(problems)
def test_divergence_is_kl_of_joints(p):
    rng, seq, w = make_problem(p)
    A, K = p["A"], p["K"]
    w2 = w + rng.normal(scale=p["scale"], size=w.size)
    for i in range(seq.n_sequences):
        _, _, p1, _ = joint(w, seq, i, A, K)
        _, _, p2, _ = joint(w2, seq, i, A, K)
        _, u1, q1 = sequence_marginals(w, A, K, seq, i)
        _, u2, q2 = sequence_marginals(w2, A, K, seq, i)
        T = u1.shape[0]
        d = chain_divergence(u1.ravel(), 0, q1.ravel(), 0, u2.ravel(), 0, q2.ravel(), 0, T, K)
        assert d == pytest.approx(kl(p1, p2), rel=1e-9, abs=1e-11)


@settings(max_examples=60, deadline=None)
@given(problems)
def test_viterbi_is_the_best_labeling(p):
    _, seq, w = make_problem(p)
    A, K = p["A"], p["K"]
    pred = predict(w, seq, A, K)
    for i in range(seq.n_sequences):
        ys, F, _, _ = joint(w, seq, i, A, K)
        s = F @ w
        y_hat = pred[seq.offsets[i]:seq.offsets[i + 1]]
        assert features(seq, i, y_hat, A, K) @ w == pytest.approx(s.max(), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(problems)
def test_statistics_match_enumeration(p):
    _, seq, w = make_problem(p)
    A, K = p["A"], p["K"]
    for i in range(seq.n_sequences):
        ys, F, prob, _ = joint(w, seq, i, A, K)
        T = len(ys[0])
        gold = seq.labels[seq.offsets[i]:seq.offsets[i + 1]]
        out = np.zeros(w.size)
        add_label_stats(out, 2.0, K, A, seq, i)
        np.testing.assert_allclose(out, 2.0 * features(seq, i, gold, A, K))
        _, un, pa = sequence_marginals(w, A, K, seq, i)
        out[:] = 0.0
        add_marginal_stats(out, -1.5, un.ravel(), 0, pa.ravel(), 0, T, K, A, seq, i, T - 1)
        np.testing.assert_allclose(out, -1.5 * prob @ F, atol=1e-11)
        # the same from the pairwise marginals summed over the edges (the gradient pass)
        out[:] = 0.0
        summed = pa.reshape(-1, K * K).sum(axis=0)
        add_marginal_stats(out, -1.5, un.ravel(), 0, summed, 0, T, K, A, seq, i,
                           min(T - 1, 1))
        np.testing.assert_allclose(out, -1.5 * prob @ F, atol=1e-11)


@settings(max_examples=40, deadline=None)
@given(problems)
def test_primal_and_gradient(p):
    rng, seq, w = make_problem(p)
    A, K = p["A"], p["K"]
    lam = 1.0 / seq.n_sequences
    loss = 0.0
    for i in range(seq.n_sequences):
        _, _, _, logz = joint(w, seq, i, A, K)
        gold = seq.labels[seq.offsets[i]:seq.offsets[i + 1]]
        loss += logz - features(seq, i, gold, A, K) @ w
    expected = 0.5 * lam * w @ w + loss / seq.n_sequences
    value, grad = primal_and_gradient(w, seq, A, K, lam)
    assert value == pytest.approx(expected, rel=1e-12)
    assert primal(w, seq, A, K, lam) == pytest.approx(expected, rel=1e-12)
    # central finite differences along random directions and coordinates
    h = 1e-5
    for _ in range(3):
        v = rng.normal(size=w.size)
        fd = (primal(w + h * v, seq, A, K, lam) - primal(w - h * v, seq, A, K, lam)) / (2 * h)
        assert fd == pytest.approx(grad @ v, rel=1e-6, abs=1e-7)


@settings(max_examples=40, deadline=None)
@given(problems)
def test_duality_gap_is_mean_of_block_gaps(p):
    """P(w_hat(mu)) - D(mu) = (1/n) sum_i D~(mu_i || nu_i(w_hat(mu))), and P >= D."""
    rng, seq, w = make_problem(p)
    A, K = p["A"], p["K"]
    lam = 1.0 / seq.n_sequences
    mu_u, mu_p = oracle_marginals_store(w, seq, A, K)  # consistent marginals of some chains
    w_hat = weights_from_marginals(mu_u, mu_p, seq, A, K, lam)
    gap = primal(w_hat, seq, A, K, lam) - dual_objective(mu_u, mu_p, seq, A, K, lam)
    g = block_gaps(w_hat, mu_u, mu_p, seq, A, K)
    assert gap == pytest.approx(g.mean(), rel=1e-8, abs=1e-10)
    assert np.all(g >= -1e-12)
    # weak duality at an unrelated primal point
    w_other = rng.normal(scale=p["scale"], size=w.size)
    assert primal(w_other, seq, A, K, lam) >= dual_objective(mu_u, mu_p, seq, A, K, lam) - 1e-12


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 4))
def test_dirac_initialization(seed, max_len, K):
    """Eq. 21: marginals of the chain scoring c = 10 on the gold labels and transitions."""
    rng = np.random.default_rng(seed)
    seq = random_split(rng, 2, min(max_len, 4), K, 2)
    mu_u, mu_p = dirac_marginals(seq, K, c=10.0)
    for i in range(seq.n_sequences):
        T = int(seq.offsets[i + 1] - seq.offsets[i])
        gold = seq.labels[seq.offsets[i]:seq.offsets[i + 1]]
        from helpers.bruteforce import labelings
        ys = labelings(T, K)
        s = np.array([10.0 * (np.sum(y == gold) + np.sum((y[:-1] == gold[:-1])
                                                         & (y[1:] == gold[1:]))) for y in ys])
        prob = np.exp(s - np.logaddexp.reduce(s))
        un, pa = marginals_of(ys, prob, T, K)
        o = seq.offsets[i]
        np.testing.assert_allclose(mu_u[o * K:(o + T) * K], un.ravel(), atol=1e-13)
        np.testing.assert_allclose(mu_p[(o - i) * K * K:(o - i + T - 1) * K * K], pa.ravel(),
                                   atol=1e-13)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.booleans(),
       st.sampled_from(["float64", "float32"]))
def test_dirac_start_is_its_three_passes_in_one(seed, K, masked, dtype):
    """SDCA's fused start gives bit for bit the store of dirac_marginals, the w_hat of
    weights_from_marginals and the entropies of sequence_entropies."""
    rng = np.random.default_rng(seed)
    A = 5
    seq = random_split(rng, 6, 5, K, A)
    mask = (rng.random(WeightLayout(A, K).dim) < 0.7).astype(np.uint8) if masked else None
    lam = 0.3
    mu_u, mu_p, w_hat, ent = dirac_start(seq, A, K, lam, mask, c=10.0, dtype=dtype)
    ref_u, ref_p = dirac_marginals(seq, K, c=10.0, dtype=dtype)
    np.testing.assert_array_equal(mu_u, ref_u)
    np.testing.assert_array_equal(mu_p, ref_p)
    np.testing.assert_array_equal(w_hat, weights_from_marginals(ref_u, ref_p, seq, A, K, lam,
                                                                mask))
    np.testing.assert_array_equal(ent, sequence_entropies(ref_u, ref_p, K, seq.offsets,
                                                          np.empty(seq.n_sequences)))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dirac_start_is_the_same_bits_on_any_number_of_threads(dtype):
    """More threads make the blocks and entropies by chunks and w_hat in a second pass in
    the one thread's order: the same bits as the fused pass on one thread."""
    from crfsdca.model.passes import chunk_bounds

    rng = np.random.default_rng(5)
    A, K = 7, 3
    seq = random_split(rng, 900, 9, K, A)
    assert len(chunk_bounds(seq)) > 3  # several chunks to share
    mask = (rng.random(WeightLayout(A, K).dim) < 0.7).astype(np.uint8)
    one = dirac_start(seq, A, K, 0.3, mask, c=10.0, dtype=dtype)
    for threads in (2, 3):
        many = dirac_start(seq, A, K, 0.3, mask, c=10.0, dtype=dtype, threads=threads)
        for a, b in zip(one, many, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("scale", [1e3, 3e3])
def test_oracle_is_safe_at_large_scores_and_long_sequences(scale):
    rng = np.random.default_rng(0)
    K, A = 4, 6
    seq = random_split(rng, 3, 500, K, A, min_len=1)
    seq = make_sequences(np.array([0, 1, 501, 1001]), seq.labels[:1001],
                         seq.attr_indptr[:1002], seq.attr_indices[:seq.attr_indptr[1001]])
    w = rng.normal(scale=scale, size=WeightLayout(A, K).dim)
    for i in range(3):
        logz, un, pa = sequence_marginals(w, A, K, seq, i)
        assert np.isfinite(logz)
        np.testing.assert_allclose(un.sum(axis=1), 1.0, atol=1e-9)
        if len(pa):
            np.testing.assert_allclose(pa.sum(axis=(1, 2)), 1.0, atol=1e-9)
            np.testing.assert_allclose(pa.sum(axis=2), un[:-1], atol=1e-9)
        # at huge scale log Z is the Viterbi score up to a tiny entropy term
        path_score = _viterbi_score(w, seq, i, A, K)
        tol = 1e-12 * abs(path_score)
        assert path_score - tol <= logz <= path_score + np.log(K) * un.shape[0] + tol


def _viterbi_score(w, seq, i, A, K):
    from helpers.bruteforce import features as feat
    pred = predict(w, seq, A, K)[seq.offsets[i]:seq.offsets[i + 1]]
    return feat(seq, i, pred, A, K) @ w


def test_long_sequence_moderate_scores_matches_log_space():
    """The scaled recursion and the log-space fallback agree on a length-500 sequence."""
    from crfsdca.model.oracle import NO_LABELS, _chain_log, make_workspace, unary_scores

    rng = np.random.default_rng(1)
    K, A = 5, 7
    seq = random_split(rng, 1, 500, K, A, min_len=500)
    w = rng.normal(scale=2.0, size=WeightLayout(A, K).dim)
    logz, un, pa = sequence_marginals(w, A, K, seq, 0)
    ws = make_workspace(500, K)
    unary_scores(w, A, K, seq, 0, ws.scores)
    logz_log, _ = _chain_log(ws.scores, 500, K, w, A * K + 3 * K, 0.0, NO_LABELS, 0, ws.alpha,
                             ws.beta, ws.emit, ws.unary, ws.pair, False, 0)
    assert logz == pytest.approx(logz_log, rel=1e-12)
    np.testing.assert_allclose(un.ravel(), ws.unary[:500 * K], atol=1e-10)
    np.testing.assert_allclose(pa.ravel(), ws.pair[:499 * K * K], atol=1e-10)
