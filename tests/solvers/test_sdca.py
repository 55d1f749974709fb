"""SDCA: convergence, exact line search, dual bookkeeping, samplers, reproducibility."""

import numpy as np
import pytest
import scipy.optimize
import scipy.stats
from helpers.scipy_reference import lbfgs_optimum

from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.model.objective import (
    dual_objective,
    primal,
    sequence_entropies,
    weights_from_marginals,
)
from crfsdca.solvers.base import Problem
from crfsdca.solvers.rng import make_rng
from crfsdca.solvers.sampling import (
    draw,
    make_sampler,
    probabilities,
    record_gap,
    window_size,
)
from crfsdca.solvers.sdca import SDCA, theoretical_step


def small_problem(n=60, K=3, A=12, seed=3, max_len=6):
    seq = synthetic_sequences(n, 1, max_len, K, A, 3, seed=seed)
    rng = np.random.default_rng(seed)
    return Problem(seq, A, K, 1.0 / n, radii=rng.uniform(1, 20, n))


def full_gap(solver: SDCA) -> float:
    p = solver.problem
    return (primal(solver.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
            - dual_objective(*solver.marginals, p.train, p.n_attributes, p.n_labels, p.lam))


@pytest.mark.parametrize("sampler", ["uniform", "gap", "importance", "perm"])
def test_sdca_converges_to_the_lbfgs_optimum(sampler):
    p = small_problem()
    _, p_star = lbfgs_optimum(p)
    s = SDCA(p, sampler=sampler, subprecision=1e-8, seed=1)
    for _ in range(400):
        s.run(p.n)
        if full_gap(s) < 1e-9:
            break
    assert full_gap(s) < 1e-8
    value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
    assert value == pytest.approx(p_star, abs=1e-8)
    assert value >= p_star - 1e-10


@pytest.mark.parametrize("line_search", ["newton", "single-newton", "golden"])
def test_dual_never_decreases_and_bookkeeping_is_exact(line_search):
    p = small_problem(n=30)
    s = SDCA(p, sampler="gap", line_search=line_search, subprecision=1e-6, seed=2)
    prev = s.dual()
    for _ in range(600):
        s.run(1)
        cur = s.dual()
        assert cur >= prev - 1e-13 * max(1.0, abs(prev))
        prev = cur
    s.run(3 * p.n)  # without re-anchoring: the kernel's running sums alone
    sc = s.state.scalars
    incremental = -0.5 * p.lam * sc[0] + sc[1] / p.n
    mu_u, mu_p = s.marginals
    full = dual_objective(mu_u, mu_p, p.train, p.n_attributes, p.n_labels, p.lam)
    assert incremental == pytest.approx(full, abs=1e-11)
    assert s.dual() == pytest.approx(full, abs=1e-12)
    ent = sequence_entropies(mu_u, mu_p, p.n_labels, p.train.offsets, np.empty(p.n))
    np.testing.assert_allclose(s.state.entropies, ent, atol=1e-12)
    # the maintained gap estimate is the mean of the stored gaps
    assert s.state.scalars[2] / p.n == pytest.approx(s.sampler.gaps.mean(), rel=1e-6)
    assert s.gap_estimate() == pytest.approx(s.sampler.gaps.mean(), rel=1e-12)


def test_weights_stay_equal_to_w_hat_of_the_marginals():
    p = small_problem(n=40, K=4, A=20)
    s = SDCA(p, sampler="gap", seed=3)
    s.run(40 * p.n)
    w_hat = weights_from_marginals(*s.marginals, p.train, p.n_attributes, p.n_labels, p.lam)
    drift = np.linalg.norm(s.weights() - w_hat) / np.linalg.norm(w_hat)
    assert drift < 1e-10


def test_float32_store_keeps_w_consistent_and_converges():
    p = small_problem(n=40, K=4, A=20)
    s = SDCA(p, sampler="gap", store_dtype="float32", seed=3)
    s.run(60 * p.n)
    mu_u, mu_p = s.marginals
    assert mu_p.dtype == np.float32
    w_hat = weights_from_marginals(mu_u, mu_p, p.train, p.n_attributes, p.n_labels, p.lam)
    assert np.linalg.norm(s.weights() - w_hat) / np.linalg.norm(w_hat) < 1e-10
    _, p_star = lbfgs_optimum(p)
    value = primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
    assert value - p_star < 1e-6


def test_marginals_stay_consistent_and_in_the_simplex():
    p = small_problem(n=20, K=3)
    s = SDCA(p, sampler="uniform", seed=4)
    s.run(30 * p.n)
    K = p.n_labels
    mu_u, mu_p = s.marginals
    assert mu_u.min() > 0 and mu_p.min() > 0
    for i in range(p.n):
        o, T = p.train.offsets[i], p.train.lengths()[i]
        un = mu_u[o * K:(o + T) * K].reshape(T, K)
        pa = mu_p[(o - i) * K * K:(o - i + T - 1) * K * K].reshape(T - 1, K, K)
        np.testing.assert_allclose(un.sum(axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(pa.sum(axis=2), un[:-1], atol=1e-12)
        np.testing.assert_allclose(pa.sum(axis=1), un[1:], atol=1e-12)


def test_fixed_theoretical_step_makes_progress():
    p = small_problem(n=30)
    step = theoretical_step(p)
    assert 0 < step < 1
    s = SDCA(p, sampler="uniform", line_search="fixed", seed=5)
    g0 = full_gap(s)
    s.run(20 * p.n)
    assert full_gap(s) < 0.5 * g0
    assert s.diagnostics()["mean_step"] == pytest.approx(step)


def test_phase_cycles_count_every_phase_and_only_grow():
    p = small_problem(n=20)
    s = SDCA(p, sampler="perm", seed=1)
    s.run(p.n)
    first = s.phase_cycles()
    s.run(p.n)
    second = s.phase_cycles()
    assert set(first) == {"oracle", "gap", "direction", "line_search", "update"}
    assert all(first[k] > 0 and second[k] > first[k] for k in first)


def test_runs_are_bitwise_reproducible():
    p = small_problem(n=30)
    runs = []
    for _ in range(2):
        s = SDCA(p, sampler="gap-importance", non_uniformity=0.5, seed=11)
        s.run(7 * p.n)
        runs.append((s.weights().copy(), s.marginals[1].copy(), s.sampler.gaps.copy()))
    for a, b in zip(runs[0], runs[1], strict=True):
        assert np.array_equal(a, b)
    s = SDCA(p, sampler="gap-importance", non_uniformity=0.5, seed=12)
    s.run(7 * p.n)
    assert not np.array_equal(runs[0][0], s.weights())


def test_refresh_recomputes_every_gap():
    p = small_problem(n=30)
    s = SDCA(p, sampler="gap", refresh_every=2.0, seed=6)
    s.run(2 * p.n)  # the refresh happens at the end of epoch 2
    from crfsdca.model.objective import block_gaps

    g = block_gaps(s.weights(), *s.marginals, p.train, p.n_attributes, p.n_labels)
    np.testing.assert_allclose(s.sampler.gaps, g, rtol=1e-9, atol=1e-13)
    assert s.counters()["oracle_fb"] == 3 * p.n


def joint_of_marginals(mu_u, mu_p, offsets, i, K, ys):
    """The probabilities of the labelings ``ys`` of sequence i under the chain joint that
    its stored unary and pairwise marginals represent."""
    a, b = offsets[i], offsets[i + 1]
    T = b - a
    un = mu_u[a * K:b * K].reshape(T, K)
    pa = mu_p[(a - i) * K * K:(b - i - 1) * K * K].reshape(T - 1, K, K)
    return np.array([(np.prod([pa[t, y[t], y[t + 1]] for t in range(T - 1)])
                      / np.prod([un[t, y[t]] for t in range(1, T - 1)])) if T > 1
                     else un[0, y[0]] for y in ys])


@pytest.mark.parametrize("store_dtype", ["float64", "float32"])
def test_fresh_gaps_are_the_divergences_of_the_joints(store_dtype):
    """The step's gap (log Z - E_mu[score] - H~(mu), no log of nu) against brute force: the
    KL between the joint that mu_i represents and p(. | x_i; w), over all labelings."""
    from helpers.bruteforce import joint, kl

    p = small_problem(n=12, max_len=5)
    s = SDCA(p, sampler="uniform", refresh_every=3.0, seed=2, store_dtype=store_dtype)
    s.run(3 * p.n)  # ends with a refresh: every stored gap is fresh at the current w
    mu_u, mu_p = (np.asarray(m, dtype=np.float64) for m in s.marginals)
    K = p.n_labels
    for i in range(p.n):
        ys, _, q, _ = joint(s.weights(), p.train, i, p.n_attributes, K)
        alpha = joint_of_marginals(mu_u, mu_p, p.train.offsets, i, K, ys)
        assert s.sampler.gaps[i] == pytest.approx(max(kl(alpha, q), 0.0), rel=1e-6,
                                                  abs=1e-12 if store_dtype == "float64"
                                                  else 1e-6)


def test_refreshed_gaps_hold_where_the_scaled_forward_pass_gives_up():
    """A refresh takes log Z from the forward pass alone; with transition weights of
    -1000 but on one pair and every token pushed to label 0, the scaled recursion's
    factors underflow (checked) and log Z comes from the log-space recursion: the gaps
    are still KL(joint of mu_i || p(. | x_i; w)), by brute force."""
    from helpers.bruteforce import features, labelings

    from crfsdca.model.oracle import (
        NO_LABELS,
        _forward,
        forward_logz,
        make_workspace,
        transition_offset,
        transition_potentials,
        unary_scores,
    )
    from crfsdca.solvers.index import sequence_index

    p = small_problem(n=10, max_len=5)
    K, A = p.n_labels, p.n_attributes
    s = SDCA(p, sampler="uniform", seed=4)
    s.run(2 * p.n)
    w = s.state.w
    w[:A * K].reshape(A, K)[:, 0] += 1000.0
    ow = transition_offset(A, K)
    w[ow:ow + K * K] = -1000.0
    w[ow + K * K - 1] = 0.0
    s.refresh_gaps()
    mu_u, mu_p = (np.asarray(m, dtype=np.float64) for m in s.marginals)
    for i in range(p.n):
        ys = labelings(int(p.train.offsets[i + 1] - p.train.offsets[i]), K)
        scores = np.array([features(p.train, i, y, A, K) for y in ys]) @ w
        log_q = scores - np.logaddexp.reduce(scores)
        alpha = joint_of_marginals(mu_u, mu_p, p.train.offsets, i, K, ys)
        expected = float((alpha * (np.log(alpha) - log_q)).sum())
        assert s.sampler.gaps[i] == pytest.approx(expected, rel=1e-9)
    # the scaled forward pass did give up on the longer sequences (NaN), not only on paper
    ws = make_workspace(int(np.diff(p.train.offsets).max()), K)
    index = sequence_index(p.train, A)
    tmax = transition_potentials(w, ow, K, ws.trans)
    gave_up = 0
    for i in range(p.n):
        T = p.train.offsets[i + 1] - p.train.offsets[i]
        unary_scores(w, A, K, index, i, ws.scores)
        logz = forward_logz(ws, T, K, tmax, w, ow)
        assert np.isfinite(logz)
        gave_up += np.isnan(_forward(ws.scores, T, K, ws.trans, tmax, ws.emit, ws.alpha,
                                     ws.scale, 0.0, NO_LABELS, 0))
    assert gave_up > 0


@pytest.mark.parametrize("scheme", ["uniform", "importance", "gap", "gap-importance", "max"])
@pytest.mark.parametrize("theta", [0.0, 0.5, 1.0])
def test_sampler_frequencies_match_probabilities(scheme, theta):
    n = 50
    rng = np.random.default_rng(0)
    lip = rng.uniform(0.5, 5.0, n)
    s = make_sampler(scheme, theta, n, lip)
    for i, g in enumerate(rng.exponential(size=n) * (rng.random(n) < 0.8)):
        record_gap(s, i, g)  # frozen gaps, some exactly zero
    probs = probabilities(s)
    assert probs.sum() == pytest.approx(1.0)
    state = make_rng(123)
    draws = 100_000
    counts = np.bincount([draw(s, state) for _ in range(draws)], minlength=n)
    support = probs > 0
    assert counts[~support].sum() == 0
    expected = probs[support] * draws
    if support.sum() > 1:
        _, pvalue = scipy.stats.chisquare(counts[support], expected)
        assert pvalue > 1e-4


def test_permutation_and_cyclic_orders_visit_everyone_once_per_epoch():
    n = 17
    for scheme in ("perm", "cyclic"):
        s = make_sampler(scheme, 0.0, n)
        state = make_rng(1)
        for _ in range(3):
            assert sorted(draw(s, state) for _ in range(n)) == list(range(n))
    s = make_sampler("cyclic", 0.0, n)
    assert [draw(s, state) for _ in range(n)] == list(range(n))


def _window_probabilities(s, first: int, m: int) -> np.ndarray:
    """The scheme's probabilities restricted to sequences first..first + m - 1."""
    uni = np.full(m, 1.0 / m)
    if s.scheme == make_sampler("max", 0.0, 1).scheme:
        scheme = np.zeros(m)
        scheme[int(np.argmax(s.gaps[first:first + m]))] = 1.0
    else:
        weights = s.tree[len(s.tree) // 2:][first:first + m]
        scheme = weights / weights.sum() if weights.sum() > 0 else uni
    return (1.0 - s.theta) * uni + s.theta * scheme


@pytest.mark.parametrize("scheme", ["uniform", "importance", "gap", "gap-importance", "max"])
@pytest.mark.parametrize("theta", [0.0, 0.8])
def test_windowed_draws_follow_the_scheme_within_each_window(scheme, theta):
    """With a window of B, the draws come B at a time from each window in turn (a last,
    shorter one: as many as it holds), by the scheme restricted to the window."""
    n, window = 50, 16
    rng = np.random.default_rng(1)
    s = make_sampler(scheme, theta, n, rng.uniform(0.5, 5.0, n), window=window)
    for i, g in enumerate(rng.exponential(size=n) * (rng.random(n) < 0.8)):
        record_gap(s, i, g)
    state = make_rng(5)
    spans = [(first, min(first + window, n) - first) for first in range(0, n, window)]
    counts = np.zeros(n, dtype=np.int64)
    for _ in range(2000):  # 2000 cycles through the windows
        for first, m in spans:
            got = np.array([draw(s, state) for _ in range(m)])
            assert ((got >= first) & (got < first + m)).all()
            np.add.at(counts, got, 1)
    for first, m in spans:
        probs = _window_probabilities(s, first, m)
        observed, expected = counts[first:first + m], probs * 2000 * m
        assert observed[probs == 0].sum() == 0
        if (probs > 0).sum() > 1:
            _, pvalue = scipy.stats.chisquare(observed[probs > 0], expected[probs > 0])
            assert pvalue > 1e-4


def test_spilled_draws_follow_the_scheme_over_all_sequences():
    """A window's share ``spill`` of draws is made over all n as without a window: with
    spill 1, every draw."""
    n = 40
    rng = np.random.default_rng(2)
    s = make_sampler("gap", 0.8, n, window=8, spill=1.0)
    for i, g in enumerate(rng.exponential(size=n)):
        record_gap(s, i, g)
    state = make_rng(7)
    counts = np.bincount([draw(s, state) for _ in range(100_000)], minlength=n)
    _, pvalue = scipy.stats.chisquare(counts, probabilities(s) * 100_000)
    assert pvalue > 1e-4


def test_windowed_orders_visit_each_window_once_in_turn():
    n, window = 19, 8
    for scheme in ("perm", "cyclic"):
        s = make_sampler(scheme, 0.0, n, window=window, spill=0.5)  # no spill: no draw
        state = make_rng(3)
        for _ in range(3):
            for first in range(0, n, window):
                got = [draw(s, state) for _ in range(min(window, n - first))]
                assert sorted(got) == list(range(first, min(first + window, n)))
                if scheme == "cyclic":
                    assert got == sorted(got)


def test_a_window_is_the_largest_power_of_two_of_sequences_in_the_budget():
    assert window_size(1000, 1024.0, 100 * 1024) == 64
    assert window_size(1000, 1024.0, 128 * 1024) == 128
    assert window_size(1000, 1024.0, 2000 * 1024) == 0  # the whole store fits
    assert window_size(1000, 1024.0, 0) == 0
    assert window_size(1000, 1024.0, 100) == 1
    with pytest.raises(ValueError, match="power of two"):
        make_sampler("gap", 0.8, 10, window=6)


def test_windowed_sdca_converges_and_its_store_in_a_file_changes_nothing(tmp_path):
    """Windows over the store (store_window; the default with store_dir) change the
    draws, not what SDCA converges to; the store in a file gives the same bits as in
    memory with the same window."""
    p = small_problem()
    _, p_star = lbfgs_optimum(p)
    window = 3 * 3 * 6 * 8 * 8 / 2**20  # MiB: about 8 sequences' marginals, K = 3
    runs = {}
    for where in (None, str(tmp_path)):
        s = SDCA(p, subprecision=1e-8, seed=1, store_window=window, store_dir=where)
        assert s.window == 8
        for _ in range(400):
            s.run(p.n)
            if full_gap(s) < 1e-9:
                break
        runs[where] = s.weights().copy()
    assert full_gap(s) < 1e-8
    assert primal(s.weights(), p.train, p.n_attributes, p.n_labels,
                  p.lam) == pytest.approx(p_star, abs=1e-8)
    assert np.array_equal(runs[None], runs[str(tmp_path)])
    assert SDCA(p, store_dir=str(tmp_path)).window == 0  # 64 MiB: all of this store
    assert SDCA(p, store_dir=str(tmp_path), store_window=0.0).window == 0
    with pytest.raises(ValueError, match="store_window"):
        SDCA(p, store_window=-1.0)
    with pytest.raises(ValueError, match="window_spill"):
        SDCA(p, store_window=1.0, window_spill=1.5)


def test_bad_options_are_rejected():
    p = small_problem(n=10)
    with pytest.raises(ValueError, match="sampler: expected one of uniform, gap"):
        SDCA(p, sampler="greedy")
    with pytest.raises(ValueError, match=r"non_uniformity: expected a value in \[0, 1\]"):
        SDCA(p, non_uniformity=1.5)
    with pytest.raises(ValueError, match="line_search: expected one of newton"):
        SDCA(p, line_search="armijo")
    with pytest.raises(ValueError, match="has no option 'theta'"):
        SDCA(p, theta=0.5)
    with pytest.raises(ValueError, match="radii"):
        SDCA(Problem(p.train, p.n_attributes, p.n_labels, p.lam), sampler="importance")


@pytest.mark.parametrize("line_search,tol,start", [
    ("newton", 1e-10, "regula-falsi"), ("newton", 1e-10, "midpoint"), ("golden", 1e-8, None)])
def test_line_search_finds_the_best_step_along_the_block(line_search, tol, start):
    """The accepted step maximizes D(mu + gamma (nu_i - mu_i) e_i), recomputed in full."""
    from crfsdca.model.oracle import sequence_marginals

    p = small_problem(n=25, K=4)
    K = p.n_labels
    extra = {"line_search_start": start} if start else {}
    s = SDCA(p, sampler="cyclic", line_search=line_search, subprecision=tol, seed=0, **extra)
    for _ in range(5):
        s.run(p.n + 3)
        i = int(s.sampler.cursor[0] % p.n)
        o, T = p.train.offsets[i], int(p.train.lengths()[i])
        mu_u, mu_p = (m.copy() for m in s.marginals)
        _, nu_u, nu_p = sequence_marginals(s.weights(), p.n_attributes, K, p.train, i)
        su, sp = slice(o * K, (o + T) * K), slice((o - i) * K * K, (o - i + T - 1) * K * K)

        def dual_along(gamma, mu_u=mu_u, mu_p=mu_p, nu_u=nu_u, nu_p=nu_p, su=su, sp=sp):
            u, q = mu_u.copy(), mu_p.copy()
            u[su] += gamma * (nu_u.ravel() - mu_u[su])
            q[sp] += gamma * (nu_p.ravel() - mu_p[sp])
            return dual_objective(u, q, p.train, p.n_attributes, K, p.lam)

        best = scipy.optimize.minimize_scalar(lambda g: -dual_along(g), bounds=(0.0, 1.0),
                                              method="bounded", options={"xatol": 1e-12})
        step_before = s.state.sums[0]
        s.run(1)
        gamma = s.state.sums[0] - step_before
        # a 1-d search on function values locates the maximum to ~sqrt(machine epsilon)
        assert gamma == pytest.approx(best.x, abs=max(10 * tol, 1e-6))
        assert s.dual() == pytest.approx(-best.fun, abs=1e-12)


def reference_safe_newton(fp, fpp, tol, max_iter=100):
    """Numerical Recipes' rtsafe on f' over [0, 1] as the paper's code runs it, written
    out from its description (the issue 18 text): f'(1) >= 0 gives 1; start at 0.5 with
    dx_old = dx = 1; keep the Newton step f'/f'' when it lands in the bracket (ends
    included) and is at most half of dx_old, else bisect; stop when |dx| < tol; else
    evaluate the new point (even when it is the old one) and only then shrink the
    bracket. Returns (gamma, evaluations, evaluations at an already evaluated point)."""
    if fp(1.0) >= 0:
        return 1.0, 0, 0
    xl, xh = 1.0, 0.0  # f'(xl) < 0 < f'(xh)
    rts, dx_old, dx = 0.5, 1.0, 1.0
    u, newton = fp(rts), fp(rts) / fpp(rts)
    evals, repeats, seen = 1, 0, {rts}
    for _ in range(max_iter):
        rts -= newton
        if (rts - xh) * (rts - xl) <= 0 and abs(newton) <= abs(dx_old) / 2:
            dx_old, dx = dx, newton
        else:
            dx_old, dx = dx, (xh - xl) / 2
            rts = xl + dx
        if abs(dx) < tol:
            return rts, evals, repeats
        u, newton = fp(rts), fp(rts) / fpp(rts)
        evals += 1
        repeats += rts in seen
        seen.add(rts)
        if u < 0:
            xl = rts
        else:
            xh = rts
    raise RuntimeError("no convergence")


def line_search_derivatives(p, mu_u, mu_p, nu_u, nu_p, i):
    """f'(gamma) and f''(gamma) of f(gamma) = D(mu + gamma (nu_i - mu_i) e_i), in closed
    form: (1/n) H~ of block i (pairwise entropies less those of the inner nodes) plus the
    quadratic -lam/2 ||w(gamma)||^2, w linear in gamma. Also f itself up to a constant,
    to check them against the dual."""
    K, n = p.n_labels, p.n
    o, T = p.train.offsets[i], int(p.train.lengths()[i])
    su, sp = slice(o * K, (o + T) * K), slice((o - i) * K * K, (o - i + T - 1) * K * K)
    w0 = weights_from_marginals(mu_u, mu_p, p.train, p.n_attributes, K, p.lam)
    u1, q1 = mu_u.copy(), mu_p.copy()
    u1[su], q1[sp] = nu_u.ravel(), nu_p.ravel()
    v = weights_from_marginals(u1, q1, p.train, p.n_attributes, K, p.lam) - w0
    blocks = [(q1[sp] - mu_p[sp], mu_p[sp], 1.0)]  # (delta, mu, sign in H~)
    if T == 1:
        blocks = [(u1[su] - mu_u[su], mu_u[su], 1.0)]
    elif T > 2:
        inner = slice((o + 1) * K, (o + T - 1) * K)
        blocks.append((u1[inner] - mu_u[inner], mu_u[inner], -1.0))

    def f(g):
        h = sum(-sign * float(np.sum((m + g * d) * np.log(m + g * d))) for d, m, sign in blocks)
        return h / n - 0.5 * p.lam * float((w0 + g * v) @ (w0 + g * v))

    def fp(g):
        h = sum(-sign * float(np.sum(d * np.log(m + g * d))) for d, m, sign in blocks)
        return h / n - p.lam * float(w0 @ v + g * (v @ v))

    def fpp(g):
        h = sum(-sign * float(np.sum(d * d / (m + g * d))) for d, m, sign in blocks)
        return h / n - p.lam * float(v @ v)

    return f, fp, fpp


@pytest.mark.parametrize("tol,lam_scale", [(0.5, 1.0), (1e-3, 1.0), (0.5, 10.0),
                                           (1e-3, 10.0)])
def test_midpoint_start_is_the_paper_s_rtsafe_step_for_step(tol, lam_scale):
    """The kernel's midpoint search against :func:`reference_safe_newton` on the same
    line-search function (closed-form derivatives, checked against the full dual): the
    same step, and the same evaluations less the repeated ones the kernel skips. With
    lambda = 10 / n the root is often near 1, the Newton step from 0.5 leaves [0, 1] and
    the first round bisects."""
    from crfsdca.model.oracle import sequence_marginals

    q = small_problem(n=25, K=4)
    p = Problem(q.train, q.n_attributes, q.n_labels, lam_scale * q.lam)
    K = p.n_labels
    s = SDCA(p, sampler="cyclic", line_search="newton", line_search_start="midpoint",
             subprecision=tol, seed=0)
    bisected = 0
    for _ in range(2 * p.n):  # the first epoch from the smoothed-Dirac start, then one
        i = int(s.sampler.cursor[0] % p.n)
        mu_u, mu_p = (m.copy() for m in s.marginals)
        _, nu_u, nu_p = sequence_marginals(s.weights(), p.n_attributes, K, p.train, i)
        f, fp, fpp = line_search_derivatives(p, mu_u, mu_p, nu_u, nu_p, i)
        d0 = dual_objective(mu_u, mu_p, p.train, p.n_attributes, K, p.lam)
        want, evals, repeats = reference_safe_newton(fp, fpp, tol)
        bisected += repeats
        ls_before, step_before = s.counters()["ls_evals"], s.state.sums[0]
        s.run(1)
        gamma = s.state.sums[0] - step_before
        assert gamma == pytest.approx(want, abs=1e-9)
        assert s.counters()["ls_evals"] - ls_before == evals - repeats
        if tol == 0.5:
            assert evals - repeats == 1
        assert s.dual() - d0 == pytest.approx(f(gamma) - f(0.0), abs=1e-12)
    assert bisected > 0 if lam_scale > 1 else True


def test_the_paper_s_one_step_search_evaluates_once_from_the_midpoint():
    """Sub-precision 0.5 with the midpoint start (the paper's Figure 8 variant): one
    evaluation per step, at gamma = 0.5, whether rtsafe then takes Newton or bisects; the
    result is the first rtsafe move from 0.5, so it lies in [0, 1]."""
    p = small_problem(n=20, K=3)
    s = SDCA(p, sampler="cyclic", line_search="newton", line_search_start="midpoint",
             subprecision=0.5, seed=0)
    steps = []
    for _ in range(3 * p.n):
        ls_before, step_before = s.counters()["ls_evals"], s.state.sums[0]
        s.run(1)
        steps.append((s.counters()["ls_evals"] - ls_before, s.state.sums[0] - step_before))
    assert all(e in (0, 1) for e, _ in steps) and sum(e for e, _ in steps) > 2 * p.n
    assert all(0.0 <= g <= 1.0 for _, g in steps)
    full = SDCA(p, sampler="cyclic", line_search="newton", line_search_start="midpoint",
                subprecision=1e-3, seed=0)
    full.run(3 * p.n)
    assert full.counters()["ls_evals"] > s.counters()["ls_evals"]


def test_training_loop_stops_on_a_confirmed_gap_and_writes_a_run(tmp_path):
    import json

    from crfsdca.reproduction.rundir import read_weights, save_run
    from crfsdca.solvers.monitor import Monitor
    from crfsdca.training.run import train

    p = small_problem(n=40)
    s = SDCA(p, sampler="gap", seed=0)
    result = train(s, Monitor(p), epochs=200, gap_tol=1e-6)
    assert result.status == "converged"
    last = result.rows[-1]
    assert last["true_gap"] < 1e-6 and last["epoch"] < 200
    epochs = [r["epoch"] for r in result.rows]
    assert epochs == sorted(epochs) and epochs[:4] == [0.0, 0.1, 0.25, 0.5]
    save_run(tmp_path / "run", result, s, {"command": "test"})
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["status"] == "converged" and meta["solver"]["sampler"] == "gap"
    w, wmeta = read_weights(tmp_path / "run" / "weights.h5")
    np.testing.assert_array_equal(w, s.weights())
    header = (tmp_path / "run" / "trace.csv").read_text().splitlines()[0].split(",")
    from crfsdca.solvers.monitor import TRACE_COLUMNS

    assert header[:len(TRACE_COLUMNS)] == list(TRACE_COLUMNS)


def test_an_interrupted_run_keeps_its_trace(tmp_path):
    """Ctrl-C during training: the rows so far and the weights are saved, status says so."""
    import json

    from crfsdca.reproduction.rundir import save_run
    from crfsdca.solvers.monitor import Monitor
    from crfsdca.training.run import train

    class Interrupted(SDCA):
        calls = 0

        def run(self, n_steps):
            Interrupted.calls += 1
            if Interrupted.calls == 12:
                raise KeyboardInterrupt
            super().run(n_steps)

    p = small_problem(n=30)
    s = Interrupted(p, seed=0)
    result = train(s, Monitor(p), epochs=10)
    assert result.status == "interrupted"
    assert 2 <= len(result.rows) < 10 and result.rows[-1]["epoch"] < 10
    # the steps run since the last checkpoint are recorded too
    assert result.rows[-1]["updates"] == s.counters()["updates"]
    save_run(tmp_path / "run", result, s, {})
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["status"] == "interrupted"
    assert len((tmp_path / "run" / "trace.csv").read_text().splitlines()) == len(result.rows) + 1
