"""L-BFGS: the optimum stage (ours, scipy's), the step-by-step solver, the optimum file."""

import argparse
import dataclasses
import math

import numpy as np
import pytest
from helpers.scipy_reference import lbfgs_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.cli import optimum as cli_optimum
from crfsdca.data.hdf5 import Dataset, write_dataset
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import DataFormatError
from crfsdca.model.objective import primal, primal_and_gradient
from crfsdca.reproduction.optimum import compute_optimum, read_optimum, write_optimum
from crfsdca.solvers import lbfgs as lbfgs_module
from crfsdca.solvers.base import Problem
from crfsdca.solvers.lbfgs import LBFGS


def small_problem(n=40, K=3, A=12, seed=3, max_len=6):
    seq = synthetic_sequences(n, 1, max_len, K, A, 3, seed=seed)
    return Problem(seq, A, K, 1.0 / n)


def test_compute_optimum_is_certified_and_matches_an_independent_run():
    p = small_problem()
    r = compute_optimum(p)
    _, g = primal_and_gradient(r.w_star, p.train, p.n_attributes, p.n_labels, p.lam)
    assert r.grad_norm == pytest.approx(np.linalg.norm(g), rel=1e-12)
    assert r.gap_bound == pytest.approx(r.grad_norm**2 / (2 * p.lam), rel=1e-12)
    assert r.relative_bound < 1e-12
    assert r.p_star == primal(r.w_star, p.train, p.n_attributes, p.n_labels, p.lam)
    # an independent run from another start lands on the same P* within the bound
    rng = np.random.default_rng(0)
    _, p_ref = lbfgs_optimum(p, rng.normal(size=p.dim), maxcor=20)
    assert abs(p_ref - r.p_star) <= max(r.gap_bound, 1e-15) + 1e-14
    assert r.iterations >= 1 and r.evaluations >= r.iterations


def test_compute_optimum_restarts_while_the_bound_is_too_loose():
    """With a loose ftol scipy stops early; the restarts carry on to the target accuracy."""
    p = small_problem(n=30)
    one = compute_optimum(p, ftol=1e-4, gtol=1e-12, rel_tol=1e-12, max_rounds=1, polish_iters=0,
                          method="scipy")
    r = compute_optimum(p, ftol=1e-4, gtol=1e-12, rel_tol=1e-12, max_rounds=30, polish_iters=0,
                        method="scipy")
    assert one.relative_bound > 1e-8  # scipy alone stopped far from the target
    assert len(r.rounds) >= 2
    assert r.gap_bound < 1e-3 * one.gap_bound
    assert r.iterations == sum(x["iterations"] for x in r.rounds)
    assert [x["primal"] for x in r.rounds] == sorted(x["primal"] for x in r.rounds)[::-1]


def test_compute_optimum_polishes_with_its_own_lbfgs():
    """When scipy's rounds stop above the target, the LBFGS polish reaches it."""
    p = small_problem(n=30)
    r = compute_optimum(p, ftol=1e-3, rel_tol=1e-13, max_rounds=1, polish_iters=300,
                        method="scipy")
    assert r.rounds[-1]["message"].startswith("polish")
    assert r.rounds[0]["gap_bound"] > 1e-6
    assert r.relative_bound <= 1e-13
    assert r.iterations == sum(x["iterations"] for x in r.rounds)
    _, g = primal_and_gradient(r.w_star, p.train, p.n_attributes, p.n_labels, p.lam)
    assert r.grad_norm == pytest.approx(np.linalg.norm(g), rel=1e-12)


def test_both_methods_reach_the_same_certified_optimum():
    """Our L-BFGS and scipy's L-BFGS-B (an independent implementation) certify the same P*,
    each within the other's gap bound, from zero and from a random start, with and without
    a feature mask."""
    p = small_problem(n=50, seed=7)
    masked = dataclasses.replace(p, feature_mask=(np.arange(p.dim) % 3 != 0).astype(np.uint8))
    rng = np.random.default_rng(1)
    for q in (p, masked):
        for w0 in (None, rng.normal(size=q.dim)):
            ours = compute_optimum(q, w0=w0)
            theirs = compute_optimum(q, w0=w0, method="scipy")
            assert ours.relative_bound <= 1e-13 and theirs.relative_bound <= 1e-13
            assert abs(ours.p_star - theirs.p_star) <= ours.gap_bound + theirs.gap_bound + 1e-15
            np.testing.assert_allclose(ours.w_star, theirs.w_star, atol=1e-6)
            if q.feature_mask is not None:
                assert not np.any(ours.w_star[q.feature_mask == 0])
            assert ours.rounds[0]["message"].startswith("LBFGS")
            assert ours.iterations == sum(x["iterations"] for x in ours.rounds)


def test_our_lbfgs_keeps_the_smallest_gradient_and_logs_progress(monkeypatch):
    """An unreachable target: the round goes on until PATIENCE iterations bring no smaller
    gradient and keeps the point of smallest gradient (its P and bound are reported); a
    progress line every PROGRESS_EVERY iterations."""
    from crfsdca.reproduction import optimum as optimum_module

    monkeypatch.setattr(optimum_module, "PROGRESS_EVERY", 5)
    monkeypatch.setattr(optimum_module, "PATIENCE", 8)
    p = small_problem(n=40, seed=2)
    lines = []
    r = compute_optimum(p, rel_tol=1e-300, log=lines.append)
    assert len(r.rounds) == 1
    assert r.rounds[0]["message"] == ("LBFGS (gradient-only line search): no smaller "
                                      "gradient in 8 iterations")
    assert r.iterations == r.rounds[0]["iterations"] and r.evaluations >= r.iterations
    f, g = primal_and_gradient(r.w_star, p.train, p.n_attributes, p.n_labels, p.lam)
    assert r.p_star == f and r.grad_norm == pytest.approx(np.linalg.norm(g), rel=1e-12)
    assert r.relative_bound < 1e-20  # far below the default target all the same
    progress = [x for x in lines if x.lstrip().startswith("iteration")]
    assert len(progress) == r.iterations // 5 >= 4
    budget = compute_optimum(p, rel_tol=1e-300, maxiter=7)
    assert budget.iterations == 7 and budget.rounds[0]["message"].endswith("iteration cap")
    with pytest.raises(ValueError, match="unknown method"):
        compute_optimum(p, method="newton")


@pytest.mark.parametrize("line_search", ["wolfe", "gradient", "more-thuente"])
def test_lbfgs_solver_converges_to_the_optimum(line_search):
    p = small_problem()
    r = compute_optimum(p)
    s = LBFGS(p, memory=10, line_search=line_search)
    values = []
    for _ in range(60):
        s.run(1)
        values.append(primal(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam))
        if s.gradient_norm() ** 2 / (2 * p.lam) < 1e-12:
            break
    assert s.gradient_norm() ** 2 / (2 * p.lam) < 1e-12
    assert values[-1] == pytest.approx(r.p_star, abs=1e-12)
    if line_search != "gradient":
        assert np.all(np.diff(values) <= 1e-15)  # every accepted step decreases P


def test_lbfgs_counters_count_every_evaluation(monkeypatch):
    p = small_problem(n=25)
    calls = []
    real = lbfgs_module.primal_and_gradient

    def counting(w, *args):
        calls.append(1)
        return real(w, *args)

    monkeypatch.setattr(lbfgs_module, "primal_and_gradient", counting)
    s = LBFGS(p, memory=5)
    assert s.counters() == {"oracle_fb": 0, "oracle_fwd": 0, "updates": 0, "ls_evals": 0}
    s.run(4)
    c = s.counters()
    assert c["updates"] == 4
    assert c["oracle_fb"] == p.n * len(calls)  # n forward-backwards per evaluation
    assert c["ls_evals"] == len(calls) - 1  # all but the evaluation at the start
    assert c["oracle_fwd"] == 0
    # the solver's w is the point of the last accepted evaluation
    f, _ = real(s.weights(), p.train, p.n_attributes, p.n_labels, p.lam)
    assert f == s.f


def _numpy_two_loop(S, Y, g):
    """The textbook two-loop recursion (Nocedal & Wright, Algorithm 7.4), pairs oldest first."""
    q = g.copy()
    rho = [1.0 / (s @ y) for s, y in zip(S, Y, strict=True)]
    a = [0.0] * len(S)
    for j in range(len(S) - 1, -1, -1):
        a[j] = rho[j] * (S[j] @ q)
        q -= a[j] * Y[j]
    q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1])
    for j in range(len(S)):
        q += (a[j] - rho[j] * (Y[j] @ q)) * S[j]
    return -q


@pytest.mark.parametrize("d, m", [(1, 1), (7, 3), (1001, 6), (64, 0)])
def test_the_two_loop_kernel_is_the_textbook_recursion_and_keeps_the_secant_equation(d, m):
    from crfsdca.solvers.lbfgs_kernel import two_loop

    rng = np.random.default_rng(d + m)
    memory = m + 2  # a ring buffer that has wrapped around: slots not in storage order
    S, Y = np.zeros((memory, d)), np.zeros((memory, d))
    order = [(5 + j) % memory for j in range(m)]  # oldest first
    for slot in order:
        S[slot] = rng.normal(size=d)
        Y[slot] = S[slot] * rng.uniform(0.5, 2.0, size=d)  # s'y > 0
    rho = np.array([1.0 / (S[j] @ Y[j]) if S[j] @ Y[j] else 0.0 for j in range(memory)])
    slots = np.array(order[::-1], dtype=np.int64)  # newest first
    gamma = 1.0 / (rho[slots[0]] * (Y[slots[0]] @ Y[slots[0]])) if m else 1.0
    g = rng.normal(size=d)
    q, a = np.empty(d), np.empty(max(m, 1))
    two_loop(S, Y, rho, slots, gamma, g, q, a)
    if m == 0:
        np.testing.assert_array_equal(q, -g)
        return
    ref = _numpy_two_loop(S[order], Y[order], g)
    np.testing.assert_allclose(q, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())
    newest = slots[0]  # H y_newest = s_newest
    two_loop(S, Y, rho, slots, gamma, Y[newest], q, a)
    np.testing.assert_allclose(-q, S[newest], rtol=1e-9, atol=1e-12 * np.abs(S[newest]).max())


def test_lbfgs_is_deterministic():
    p = small_problem(n=20)
    a, b = LBFGS(p, memory=7), LBFGS(p, memory=7)
    a.run(6)
    b.run(3)
    b.run(3)  # resuming gives the same iterates
    assert np.array_equal(a.weights(), b.weights())
    assert a.counters() == b.counters()


def test_optimum_file_round_trip_and_errors(tmp_path):
    p = small_problem(n=15)
    r = compute_optimum(p)
    path = tmp_path / "opt" / "tiny.h5"
    write_optimum(path, dataclasses.replace(r, dataset="tiny", dataset_sha256="ab" * 32,
                                            settings={"maxcor": 50}))
    back = read_optimum(path)
    assert np.array_equal(back.w_star, r.w_star)
    assert back.p_star == r.p_star and back.gap_bound == r.gap_bound
    assert back.iterations == r.iterations and back.evaluations == r.evaluations
    assert back.lam == p.lam and back.settings == {"maxcor": 50}
    assert back.dataset_sha256 == "ab" * 32
    assert [f.name for f in path.parent.iterdir()] == ["tiny.h5"]  # no temporary left
    import h5py

    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.create_dataset("weights", data=np.zeros(3))
    with pytest.raises(DataFormatError, match="not a crfsdca-optimum file"):
        read_optimum(tmp_path / "other.h5")


def test_optimum_command_writes_the_certified_optimum(tmp_path):
    seq = synthetic_sequences(30, 1, 5, 3, 10, 3, seed=1)
    ds = Dataset("tiny", seq, None, ["a", "b", "c"], [f"x{j}" for j in range(10)],
                 np.ones(30))
    data = write_dataset(tmp_path / "tiny.h5", ds)
    parser = argparse.ArgumentParser()
    cli_optimum.add_arguments(parser)
    args = parser.parse_args(["--data", str(data), "--out", str(tmp_path / "o" / "tiny.h5"),
                              "--maxiter", "500"])
    assert cli_optimum.run(args) == 0
    opt = read_optimum(tmp_path / "o" / "tiny.h5")
    p = Problem(seq, 10, 3, 1.0 / 30)
    assert opt.p_star == pytest.approx(compute_optimum(p).p_star, abs=1e-13)
    assert opt.gap_bound / opt.p_star < 1e-10
    assert opt.dataset == "tiny" and len(opt.dataset_sha256) == 64
    assert opt.settings["maxiter"] == 500 and opt.settings["method"] == "lbfgs"
    assert opt.rounds[0]["message"].startswith("LBFGS")


finite_or_special = st.floats(-3.0, 3.0) | st.sampled_from([0.0, -0.0, 0.1, -0.1, math.nan])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(finite_or_special, finite_or_special, finite_or_special),
                min_size=1, max_size=40),
       st.sampled_from([0.0, 0.1, 1.0]), st.floats(0.0, 4.0))
def test_the_one_pass_kernels_are_numpy_s_formulas_bit_for_bit(entries, l1, t):
    """OWL-QN's pseudo-gradient and orthant-projected trial point, one numba pass each,
    give numpy's formulas' bits (signed zeros, NaN and the |g| = l1 ties included)."""
    from crfsdca.model.features import pseudo_gradient
    from crfsdca.solvers.lbfgs_kernel import orthant_point

    w, g, d = (np.array(c) for c in zip(*entries, strict=True))
    ref = g + l1 * np.sign(w)
    zero = w == 0
    ref[zero] = np.where(g[zero] < -l1, g[zero] + l1, np.where(g[zero] > l1, g[zero] - l1,
                                                               0.0))
    pg = pseudo_gradient(w, g, l1)
    np.testing.assert_array_equal(pg, ref)
    assert np.array_equal(np.signbit(pg), np.signbit(ref))
    pg = np.nan_to_num(pg)
    xt, step = np.empty_like(w), np.empty_like(w)
    orthant_point(w, d, t, pg, xt, step)
    expect = w + t * d
    with np.errstate(invalid="ignore"):
        expect[expect * np.where(w == 0, -pg, w) <= 0] = 0.0
    np.testing.assert_array_equal(xt, expect)
    np.testing.assert_array_equal(step, expect - w)


@pytest.mark.parametrize("l1", [0.0, 0.02])
def test_lbfgs_on_the_feature_set_takes_the_dense_run_s_iterates(l1):
    """With a feature set, L-BFGS works on its weights alone: the iterates of a run over
    all the weights whose gradient is masked, to rounding (OWL-QN with an L1 term)."""
    from crfsdca.model.features import crfsuite_mask

    n, K, A = 30, 3, 12
    seq = synthetic_sequences(n, 1, 6, K, A, 3, seed=5)
    mask = crfsuite_mask(seq, A, K)
    assert 0 < mask.sum() < len(mask)
    on_set = Problem(seq, A, K, 1.0 / n, feature_mask=mask, l1=l1)
    everywhere = Problem(seq, A, K, 1.0 / n, l1=l1)

    def masked(w):
        return primal_and_gradient(w, seq, A, K, 1.0 / n, mask)

    a, b = LBFGS(on_set, memory=5), LBFGS(everywhere, memory=5, fun=masked)
    assert a.x.shape == (mask.sum(),) and b.x.shape == (len(mask),)
    for _ in range(4):
        a.run(3)
        b.run(3)
        np.testing.assert_allclose(a.weights(), b.weights(), rtol=1e-9, atol=1e-12)
        assert a.objective() == pytest.approx(b.objective(), rel=1e-12)
        assert a.subgradient_sq_norm() == pytest.approx(b.subgradient_sq_norm(), rel=1e-8)
    assert np.count_nonzero(a.weights()) > 3 and not np.any(a.weights()[mask == 0])
    assert a.counters() == b.counters()
