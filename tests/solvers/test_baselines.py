"""SAG, SAG-NUS, SAG-NUS* and OEG: convergence, exactness of the tricks, counters."""

import numpy as np
import pytest
import scipy.optimize
import scipy.stats
from helpers.bruteforce import expected_features, features, labelings
from helpers.scipy_reference import lbfgs_optimum

from crfsdca.data.sequences import make_sequences
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import ConfigError
from crfsdca.model.objective import (
    dirac_marginals,
    primal,
    primal_and_gradient,
    sequence_entropies,
)
from crfsdca.model.oracle import (
    chain_marginals,
    make_workspace,
    sequence_marginals,
    transition_potentials,
)
from crfsdca.model.stats import add_marginal_stats
from crfsdca.solvers.base import Problem
from crfsdca.solvers.oeg import OEG
from crfsdca.solvers.registry import SOLVER_NAMES, make_solver
from crfsdca.solvers.rng import make_rng, randint, uniform
from crfsdca.solvers.sag import SAGFamily
from crfsdca.solvers.sag_kernel import SEEN_COUNT, draw_nus
from crfsdca.solvers.trees import sum_tree_update

VARIANTS = ("sag", "sag-nus", "sag-nus-star")


def small_problem(n=40, K=3, A=12, seed=3, max_len=6, attrs=3):
    seq = synthetic_sequences(n, 1, max_len, K, A, attrs, seed=seed)
    return Problem(seq, A, K, 1.0 / n)


def gap_bound(p: Problem, w) -> float:
    """||grad P(w)||^2 / (2 lambda) >= P(w) - P* (eq. 7-8)."""
    _, g = primal_and_gradient(w, p.train, p.n_attributes, p.n_labels, p.lam)
    return float(g @ g) / (2 * p.lam)


def toy_problem():
    """One sequence, one token with one attribute, K = 2, label 0, lambda = 1: a logistic loss."""
    seq = make_sequences([0, 1], [0], [0, 1], [0])
    return Problem(seq, 1, 2, 1.0)


# ----------------------------------------------------------------------------- SAG family

@pytest.mark.parametrize("variant", VARIANTS)
def test_sag_family_converges_to_the_lbfgs_optimum(variant):
    p = small_problem()
    w_star, p_star = lbfgs_optimum(p)
    s = SAGFamily(p, variant=variant, seed=1)
    for _ in range(40):
        s.run(5 * p.n)
        if gap_bound(p, s.weights()) < 1e-10:
            break
    assert gap_bound(p, s.weights()) < 1e-10
    value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
    assert value == pytest.approx(p_star, abs=1e-9)
    np.testing.assert_allclose(s.weights(), w_star, atol=1e-4)


class DenseSAG:
    """SAG / SAG-NUS / SAG-NUS* written plainly: dense w, dense stored gradients, f_i by
    recomputing the oracle at w - g/L. Same random stream as the numba solver."""

    def __init__(self, p: Problem, variant: str, seed: int):
        self.p, self.variant = p, variant
        n, d = p.n, p.dim
        self.w, self.dvec, self.grads = np.zeros(d), np.zeros(d), np.zeros((n, d))
        self.seen = np.zeros(n, dtype=bool)
        self.L, self.lip, self.Lmax = 1.0, np.zeros(n), 1.0
        self.streak, self.skip = np.zeros(n, dtype=int), np.zeros(n, dtype=int)
        self.order = np.arange(n)
        self.rng = make_rng(seed)
        A, K, seq = p.n_attributes, p.n_labels, p.train
        self.phi_y = [features(seq, i, seq.labels[seq.offsets[i]:seq.offsets[i + 1]], A, K)
                      for i in range(n)]

    def f(self, i, w):
        p = self.p
        return sequence_marginals(w, p.n_attributes, p.n_labels, p.train, i)[0] - self.phi_y[i] @ w

    def f_and_grad(self, i, w):
        p, seq = self.p, self.p.train
        logz, un, pa = sequence_marginals(w, p.n_attributes, p.n_labels, seq, i)
        phi = np.zeros(p.dim)
        add_marginal_stats(phi, 1.0, un.ravel(), 0, pa.ravel(), 0, un.shape[0], p.n_labels,
                           p.n_attributes, seq, i, un.shape[0] - 1)
        return logz - self.phi_y[i] @ w, phi - self.phi_y[i]

    def search(self, i, L, f0, g):
        doublings = 0
        while not self.f(i, self.w - g / L) <= f0 - (g @ g) / (2 * L):
            L *= 2
            doublings += 1
        return L, doublings

    def draw(self):
        n, m = self.p.n, int(self.seen.sum())
        if self.variant == "sag":
            return randint(self.rng, n)
        if uniform(self.rng) * n < n - m:
            pos = m + randint(self.rng, n - m)
            self.order[[pos, m]] = self.order[[m, pos]]
            return self.order[m]
        u = uniform(self.rng)
        if u < 0.5:
            return self.order[min(int(2 * u * m), m - 1)]
        cum = np.cumsum(np.where(self.seen, self.lip, 0.0))
        return int(np.searchsorted(cum, (2 * u - 1) * cum[-1], side="right"))

    def step(self):
        n, lam = self.p.n, self.p.lam
        i = self.draw()
        first = not self.seen[i]
        f0, g = self.f_and_grad(i, self.w)
        prev_sum = float(np.sum(self.lip[self.seen]))
        self.dvec += g - self.grads[i]
        self.grads[i] = g
        self.seen[i] = True
        m = int(self.seen.sum())
        big = g @ g > 1e-8
        if self.variant == "sag":
            if big:
                self.L = self.search(i, self.L, f0, g)[0]
            alpha = 1 / (self.L + lam)
        else:
            if self.variant == "sag-nus-star" and not first and self.skip[i] > 0:
                self.skip[i] -= 1
                L = self.lip[i]
            else:
                if first:
                    L = 0.5 * prev_sum / (m - 1) if m > 1 else 1.0
                else:  # decreased only when a search is run (not under the gradient guard)
                    L = 0.9 * self.lip[i] if big else self.lip[i]
                if big:
                    L, doublings = self.search(i, L, f0, g)
                    if self.variant == "sag-nus-star":
                        self.streak[i] = self.streak[i] + 1 if doublings == 0 else 0
                        self.skip[i] = 2 ** (self.streak[i] - 1) if doublings == 0 else 0
                self.lip[i] = L
            lmean = self.lip[self.seen].sum() / m
            self.Lmax = max(self.Lmax, L)
            alpha = ((n - m) / n) / (self.Lmax + lam) + (m / n) * (
                0.5 / (self.Lmax + lam) + 0.5 / (lmean + lam))
        self.w = (1 - alpha * lam) * self.w - (alpha / m) * self.dvec
        if self.variant == "sag":
            self.L *= 2 ** (-1 / n)
        else:
            self.Lmax *= 2 ** (-1 / n)


@pytest.mark.parametrize("variant", VARIANTS)
def test_lazy_updates_equal_a_dense_reference(variant):
    """Just-in-time emission updates, flushes, dvec and the line search match plain SAG."""
    p = small_problem(n=15, K=3, A=8, max_len=5, attrs=3)  # attributes repeat in sequences
    lazy = SAGFamily(p, variant=variant, seed=5)
    ref = DenseSAG(p, variant, seed=5)
    done = 0
    for chunk in (7, 8, 15, 4, 26, 15):  # reads mid-epoch and at epoch ends (flushes)
        lazy.run(chunk)
        for _ in range(chunk):
            ref.step()
        done += chunk
        scale = max(1.0, np.abs(ref.w).max())
        np.testing.assert_allclose(lazy.weights(), ref.w, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(lazy.state.dvec, ref.dvec, rtol=0, atol=1e-12)
    assert done == 5 * p.n
    if variant != "sag":
        np.testing.assert_allclose(lazy.state.lip, ref.lip, rtol=1e-12)
    assert lazy.seen_count == int(ref.seen.sum())


def stored_gradient_sum(s: SAGFamily) -> np.ndarray:
    """sum over seen i of Phi_i(stored marginals) - Phi_i(y_i), recomputed from the store."""
    p = s.problem
    seq, K, A = p.train, p.n_labels, p.n_attributes
    out = np.zeros(p.dim)
    for i in np.flatnonzero(s.state.seen):
        o, T = seq.offsets[i], int(seq.lengths()[i])
        un = s.state.store_unary[o * K:(o + T) * K].astype(np.float64).reshape(T, K)
        out += expected_features(seq, i, un, s.state.store_pair[i * K * K:(i + 1) * K * K], A, K)
        out -= features(seq, i, seq.labels[o:o + T], A, K)
    return out


@pytest.mark.parametrize("store_dtype", ["float64", "float32"])
def test_running_gradient_sum_equals_full_recomputation(store_dtype):
    p = small_problem(n=30, K=4, A=15)
    s = SAGFamily(p, variant="sag-nus-star", store_dtype=store_dtype, seed=2)
    s.run(int(12.5 * p.n))
    assert s.seen_count == p.n
    full = stored_gradient_sum(s)
    np.testing.assert_allclose(s.state.dvec, full, rtol=0, atol=1e-11)
    # near the optimum the average gradient is -lambda w (the data term balances the regularizer)
    s.run(60 * p.n)
    np.testing.assert_allclose(s.average_gradient(), -p.lam * s.weights(), atol=1e-6)


def test_gradient_and_trial_direction_match_finite_differences():
    """After one step on a single sequence, the kernel's g_i (sparse) is grad f_i at w = 0."""
    seq = synthetic_sequences(1, 5, 5, 3, 6, 3, seed=9)
    p = Problem(seq, 6, 3, 1.0)
    s = SAGFamily(p, variant="sag", seed=0)
    s.run(1)
    K, A = 3, 6
    g = np.zeros(p.dim)
    idx, buf = s.index, s.buffers
    for r, a in enumerate(idx.uniq_attr[idx.uniq_ptr[0]:idx.uniq_ptr[1]]):
        g[a * K:(a + 1) * K] = buf.g_em[r * K:(r + 1) * K]
    g[A * K:A * K + 3 * K] = buf.g_bias
    g[A * K + 3 * K:] = buf.g_trans
    ref = DenseSAG(p, "sag", seed=0)
    eps = 1e-6
    fd = np.array([(ref.f(0, eps * e) - ref.f(0, -eps * e)) / (2 * eps) for e in np.eye(p.dim)])
    np.testing.assert_allclose(g, fd, atol=1e-8)
    np.testing.assert_allclose(g, ref.f_and_grad(0, np.zeros(p.dim))[1], atol=1e-14)
    # the trial direction of the unary scores: delta_t(k) = u_t(k; g), scores are linear in w
    from crfsdca.model.oracle import unary_scores

    delta = np.zeros(5 * K)
    unary_scores(g, A, K, seq, 0, delta)
    np.testing.assert_allclose(buf.tok_a[:5 * K], delta, atol=1e-14)


def test_sag_nus_sampling_frequencies():
    n, m = 12, 8
    p = small_problem(n=n)
    s = SAGFamily(p, variant="sag-nus", seed=0)
    st = s.state
    rng = np.random.default_rng(0)
    perm = rng.permutation(n)
    st.order[:] = perm
    lip = rng.uniform(0.5, 6.0, n)
    for pos in range(m):
        i = perm[pos]
        st.seen[i] = 1
        st.lip[i] = lip[i]
        sum_tree_update(st.tree, i, lip[i])
    st.ints[SEEN_COUNT] = m
    seen = perm[:m]
    expected = np.zeros(n)
    expected[perm[m:]] = 1.0 / n  # (n - m)/n spread uniformly over the n - m unseen
    expected[seen] = (m / n) * (0.5 / m + 0.5 * lip[seen] / lip[seen].sum())
    state = make_rng(7)
    draws = 60_000
    counts = np.zeros(n)
    for _ in range(draws):
        counts[draw_nus(st, state, n)] += 1  # seen flags are not changed: a fixed law
    _, pvalue = scipy.stats.chisquare(counts, expected * draws)
    assert pvalue > 1e-4
    assert sorted(st.order[:m]) == sorted(seen)  # unseen draws only permute positions >= m


def test_sag_counters_on_a_scripted_run():
    """Toy logistic loss at w = 0: g = (-1/2, +1/2) on 4 features per label, ||g||^2 = 2,
    f(w - g/L) = log(1 + exp(-4/L)). From L = 1/8 the condition
    log(1 + e^{-4/L}) <= log 2 - 1/L fails at 1/8, 1/4, 1/2, 1 and holds at 2:
    4 doublings, 5 forward passes; alpha = 1/(2 + 1) and w = -g/3."""
    p = toy_problem()
    s = SAGFamily(p, variant="sag", lipschitz_init=1 / 8, seed=0)
    s.run(1)
    assert s.counters() == {"oracle_fb": 1, "oracle_fwd": 5, "updates": 1, "ls_evals": 5}
    diag = s.diagnostics()
    assert diag["doublings"] == 4 and diag["mean_step"] == pytest.approx(1 / 3)
    assert s.lipschitz() == pytest.approx(2 * 2 ** -1)  # decayed by 2^(-1/n), n = 1
    w = s.weights()
    np.testing.assert_allclose(w[[0, 2, 3, 4]], 1 / 6)  # E[0, 0], B[0, :]: label 0
    np.testing.assert_allclose(w[[1, 5, 6, 7]], -1 / 6)  # E[0, 1], B[1, :]: label 1
    assert not np.any(w[8:])  # transitions: a single token has none
    # SAG-NUS from L = 1: one doubling (L = 1 fails, L = 2 holds)
    s = SAGFamily(p, variant="sag-nus", seed=0)
    s.run(1)
    assert s.counters() == {"oracle_fb": 1, "oracle_fwd": 2, "updates": 1, "ls_evals": 2}


@pytest.mark.parametrize("variant,fwd", [("sag-nus", 11), ("sag-nus-star", 4)])
def test_line_search_skipping_schedule(variant, fwd):
    """With a huge L every search passes at once. SAG-NUS* then searches at visits 1, 3, 6
    and 11 (skipping 1, 2 and 4 visits in between); SAG-NUS searches at every visit."""
    p = toy_problem()
    s = SAGFamily(p, variant=variant, lipschitz_init=1e6, seed=0)
    s.run(11)
    c = s.counters()
    assert c == {"oracle_fb": 11, "oracle_fwd": fwd, "updates": 11, "ls_evals": fwd}
    if variant == "sag-nus-star":
        assert s.state.streak[0] == 4 and s.state.skip[0] == 8
        assert s.diagnostics()["skip_share"] == pytest.approx(7 / 11)
        assert s.state.lip[0] == pytest.approx(1e6 * 0.9**3)


def test_sag_runs_are_reproducible():
    p = small_problem(n=25)
    a = SAGFamily(p, variant="sag-nus-star", seed=4)
    b = SAGFamily(p, variant="sag-nus-star", seed=4)
    c = SAGFamily(p, variant="sag-nus-star", seed=5)
    for s in (a, b, c):
        s.run(3 * p.n + 7)
    assert np.array_equal(a.weights(), b.weights())
    assert a.counters() == b.counters()
    assert not np.array_equal(a.weights(), c.weights())


# ----------------------------------------------------------------------------- OEG

def chain_by_enumeration(theta, q, bonus, y):
    """log Z, unary and summed pairwise marginals, entropy and mass on the true transitions
    of the OEG chain, by enumeration."""
    T, K = theta.shape
    ys = labelings(T, K)

    def log_potential(lab):
        pair = sum(q[lab[t], lab[t + 1]] + bonus * (lab[t] == y[t] and lab[t + 1] == y[t + 1])
                   for t in range(T - 1))
        return theta[np.arange(T), lab].sum() + pair

    logp = np.array([log_potential(lab) for lab in ys])
    logz = np.logaddexp.reduce(logp)
    prob = np.exp(logp - logz)
    un = np.zeros((T, K))
    pi = np.zeros((K, K))
    true_mass = 0.0
    for lab, pr in zip(ys, prob, strict=True):
        un[np.arange(T), lab] += pr
        for t in range(T - 1):
            pi[lab[t], lab[t + 1]] += pr
            true_mass += pr * (lab[t] == y[t] and lab[t + 1] == y[t + 1])
    ent = -float(np.sum(prob[prob > 0] * np.log(prob[prob > 0])))
    return logz, un, pi, ent, true_mass


@pytest.mark.parametrize("case", ["random", "extreme"])
@pytest.mark.parametrize("sum_pairs", [True, False])
def test_the_chain_with_a_gold_bonus_matches_enumeration(case, sum_pairs):
    """The oracle's recursion with a bonus on the gold transitions (OEG's chains and the
    smoothed Dirac), pairwise marginals summed over edges or per edge."""
    rng = np.random.default_rng(1)
    K = 3
    for T in (1, 2, 4):
        y = rng.integers(0, K, T).astype(np.int32)
        theta = rng.normal(size=(T, K)) * 3
        q = rng.normal(size=(K, K))
        bonus = 7.0
        if case == "extreme":  # a scale factor underflows: the log-space path takes over
            q = np.full((K, K), -800.0)
            q[0, 0] = 0.0
            theta[:, 0] = -800.0
        ws = make_workspace(T, K)
        ws.scores[:T * K] = theta.ravel()
        tmax = transition_potentials(q.ravel(), 0, K, ws.trans)
        logz, true_mass = chain_marginals(ws, T, K, q.ravel(), 0, tmax, bonus, y, 0, sum_pairs)
        pi = ws.pair[:K * K] if sum_pairs else ws.pair[:(T - 1) * K * K].reshape(
            max(T - 1, 0), K * K).sum(axis=0)
        ref_logz, ref_un, ref_pi, _, ref_true = chain_by_enumeration(theta, q, bonus, y)
        assert logz == pytest.approx(ref_logz, rel=1e-12)
        np.testing.assert_allclose(ws.unary[:T * K].reshape(T, K), ref_un, atol=1e-12)
        np.testing.assert_allclose(pi.reshape(K, K), ref_pi, atol=1e-12)
        assert true_mass == pytest.approx(ref_true, abs=1e-12)


def test_oeg_starts_at_the_smoothed_dirac_and_w_hat():
    p = small_problem(n=20)
    s = OEG(p, seed=0)
    mu_u, mu_p = dirac_marginals(p.train, p.n_labels)
    np.testing.assert_allclose(s.state.mu_unary, mu_u, atol=1e-14)
    ent = sequence_entropies(mu_u, mu_p, p.n_labels, p.train.offsets, np.empty(p.n))
    np.testing.assert_allclose(s.state.entropy, ent, rtol=1e-6, atol=1e-12)
    assert s.counters()["oracle_fb"] == p.n
    assert s.counters()["updates"] == 0


def w_hat_from_store(s: OEG) -> np.ndarray:
    p = s.problem
    seq, K, A = p.train, p.n_labels, p.n_attributes
    out = np.zeros(p.dim)
    for i in range(p.n):
        o, T = seq.offsets[i], int(seq.lengths()[i])
        un = s.state.mu_unary[o * K:(o + T) * K].reshape(T, K)
        phi = expected_features(seq, i, un, s.state.mu_pair[i * K * K:(i + 1) * K * K], A, K)
        out += features(seq, i, seq.labels[o:o + T], A, K) - phi
    return out / (p.lam * p.n)


def test_oeg_state_is_exact_and_the_dual_increases():
    """Stored marginals and entropies are those of the stored potentials (enumeration),
    w = w_hat(mu), D increases at every accepted step and stays below P(w)."""
    seq = synthetic_sequences(8, 1, 4, 3, 7, 2, seed=5)
    p = Problem(seq, 7, 3, 1.0 / 8)
    s = OEG(p, seed=3)
    K = 3
    prev = s.dual()
    for _ in range(5 * p.n):
        before = s.counters()["updates"]
        s.run(1)
        cur = s.dual()
        if s.counters()["updates"] > before:
            assert cur > prev - 1e-14
        else:
            assert cur == prev
        assert cur <= primal(s.weights(), seq, 7, K, p.lam) + 1e-12
        prev = cur
    np.testing.assert_allclose(s.weights(), w_hat_from_store(s), atol=1e-12)
    for i in range(p.n):
        o, T = seq.offsets[i], int(seq.lengths()[i])
        theta = s.state.theta_unary[o * K:(o + T) * K].reshape(T, K)
        q = s.state.theta_pair[i * K * K:(i + 1) * K * K].reshape(K, K)
        _, un, pi, ent, _ = chain_by_enumeration(theta, q, s.state.theta_scale[i] * s.opts["c0"],
                                                 seq.labels[o:o + T])
        np.testing.assert_allclose(s.state.mu_unary[o * K:(o + T) * K], un.ravel(), atol=1e-12)
        np.testing.assert_allclose(s.state.mu_pair[i * K * K:(i + 1) * K * K], pi.ravel(),
                                   atol=1e-12)
        assert s.state.entropy[i] == pytest.approx(ent, abs=1e-12)


def test_oeg_marginals_stay_consistent_and_in_the_simplex():
    p = small_problem(n=25, K=4)
    s = OEG(p, seed=1)
    s.run(15 * p.n)
    K = p.n_labels
    mu_u, mu_p = s.marginals
    assert mu_u.min() > 0 and mu_p.min() >= 0
    for i in range(p.n):
        o, T = p.train.offsets[i], int(p.train.lengths()[i])
        un = mu_u[o * K:(o + T) * K].reshape(T, K)
        pi = mu_p[i * K * K:(i + 1) * K * K].reshape(K, K)
        np.testing.assert_allclose(un.sum(axis=1), 1.0, atol=1e-12)
        assert pi.sum() == pytest.approx(T - 1, abs=1e-12)
        np.testing.assert_allclose(pi.sum(axis=1), un[:-1].sum(axis=0), atol=1e-12)
        np.testing.assert_allclose(pi.sum(axis=0), un[1:].sum(axis=0), atol=1e-12)


def test_oeg_converges_to_the_lbfgs_optimum():
    p = small_problem()
    w_star, p_star = lbfgs_optimum(p)
    s = OEG(p, seed=2)
    for _ in range(30):
        s.run(5 * p.n)
        gap = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam) - s.dual()
        if gap < 1e-9:
            break
    assert 0 <= gap < 1e-9
    value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
    assert value == pytest.approx(p_star, abs=1e-9)
    np.testing.assert_allclose(s.weights(), w_star, atol=1e-4)


def test_oeg_with_eta_one_on_one_sequence_reproduces_the_oracle():
    seq = synthetic_sequences(1, 4, 4, 3, 5, 2, seed=2)
    p = Problem(seq, 5, 3, 20.0)  # strong regularization: w moves little, eta = 1 is accepted
    s = OEG(p, eta0=1.0, seed=0)
    w0 = s.weights().copy()
    s.run(1)
    assert s.counters()["updates"] == 1 and s.counters()["ls_evals"] == 1
    _, nu_u, nu_p = sequence_marginals(w0, 5, 3, seq, 0)
    np.testing.assert_allclose(s.state.mu_unary, nu_u.ravel(), atol=1e-12)
    np.testing.assert_allclose(s.state.mu_pair, nu_p.sum(axis=0).ravel(), atol=1e-12)


def test_oeg_counters_on_a_scripted_run():
    """Toy (n = 1, lambda = 1): D(mu) = h(mu_1) - 4 mu_1^2 with mu_1 the mass on the wrong
    label; the start has logit(mu_1) = -10 and a step with rate eta moves it to about
    -10 + 10 eta. eta = 4, 2, 1 overshoot (D < D_0: rejected), eta = 0.5 is accepted:
    4 trials, 3 rejections."""
    p = toy_problem()
    s = OEG(p, eta0=4.0, seed=0)
    assert s.counters() == {"oracle_fb": 1, "oracle_fwd": 0, "updates": 0, "ls_evals": 0}
    d0 = s.dual()
    s.run(1)
    assert s.counters() == {"oracle_fb": 5, "oracle_fwd": 0, "updates": 1, "ls_evals": 4}
    assert s.state.eta[0] == 0.5
    assert s.dual() > d0
    # accepted potentials: 0.5 (10, 0) + 0.5 (4 eps, -4 eps), eps = mass of label 1 at start
    eps = 1 / (1 + np.exp(10.0))
    assert s.state.mu_unary[1] == pytest.approx(1 / (1 + np.exp(5 + 4 * eps)), rel=1e-12)
    s2 = OEG(p, eta0=4.0, count_init=False, seed=0)
    s2.run(1)
    assert s2.counters()["oracle_fb"] == 4


# ----------------------------------------------------------------------------- registry

@pytest.mark.parametrize("name", [n for n in SOLVER_NAMES if n != "sdca"])
def test_registry_builds_every_baseline(name):
    p = small_problem(n=10)
    s = make_solver(name, p, seed=0)
    s.run(2)
    c = s.counters()
    assert set(c) == {"oracle_fb", "oracle_fwd", "updates", "ls_evals"}
    assert c["updates"] >= 1 and c["oracle_fb"] + c["oracle_fwd"] >= 2
    assert s.weights().shape == (p.dim,)
    assert s.config()["solver"] == name
    with pytest.raises(ConfigError, match="has no option 'no_such_option'"):
        make_solver(name, p, no_such_option=1)


@pytest.mark.parametrize("solver", ["sag", "sag-nus-star", "oeg", "lbfgs"])
def test_train_command_runs_every_baseline(tmp_path, solver):
    import argparse
    import csv
    import json

    from crfsdca.cli import train as cli_train
    from crfsdca.data.hdf5 import Dataset, write_dataset
    from crfsdca.solvers.monitor import TRACE_COLUMNS

    seq = synthetic_sequences(30, 1, 5, 3, 10, 3, seed=1)
    test = synthetic_sequences(10, 1, 5, 3, 10, 3, seed=2)
    ds = Dataset("tiny", seq, test, ["a", "b", "c"], [f"x{j}" for j in range(10)], np.ones(30))
    data = write_dataset(tmp_path / "tiny.h5", ds)
    parser = argparse.ArgumentParser()
    cli_train.add_arguments(parser)
    out = tmp_path / "run"
    args = parser.parse_args(["--data", str(data), "--solver", solver, "--out", str(out),
                              "--epochs", "3", "--progress", "off", "--seed", "3"])
    assert cli_train.run(args) == 0
    with open(out / "trace.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:len(TRACE_COLUMNS)] == list(TRACE_COLUMNS)
    for key in ("oracle_fb", "oracle_fwd", "updates", "ls_evals"):
        values = [int(r[key]) for r in rows]
        assert values == sorted(values)
    assert float(rows[-1]["primal"]) < float(rows[0]["primal"])
    assert float(rows[-1]["epoch"]) == 3.0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["solver"]["solver"] == solver and meta["status"] == "budget"
    if solver == "oeg":  # a dual method: the trace has its true duality gap
        assert 0 <= float(rows[-1]["true_gap"]) < float(rows[0]["true_gap"])
