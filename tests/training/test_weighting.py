"""Sequence weights (issue 48, item 3): the objective sum_i c_i NLL_i + regularizer, its
dual and gaps against enumeration, weighted SDCA's certificate, a weight k as the
sequence written k times, class weights, the other solvers, bad input, CRFsuite's
``@weight`` files."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.bruteforce import entropy, features, joint, kl, random_split
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca import CRF
from crfsdca.data.sequences import with_weights
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import ConfigError
from crfsdca.model.layout import WeightLayout
from crfsdca.model.objective import (
    block_gaps,
    dual_objective,
    primal,
    primal_and_gradient,
    weights_from_marginals,
)
from crfsdca.model.oracle import sequence_marginals
from crfsdca.solvers.base import Problem
from crfsdca.solvers.sdca import SDCA
from crfsdca.training.weighting import class_factors, label_weights

WEIGHTS = st.sampled_from([0.0, 0.25, 1.0, 2.0, 3.5])

problems = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "n": st.integers(1, 4),
    "max_len": st.integers(1, 4),
    "K": st.integers(1, 3),
    "A": st.integers(1, 5),
    "real": st.booleans(),
    "weights": st.lists(WEIGHTS, min_size=4, max_size=4),
})


def weighted_problem(p):
    """A tiny random split with the drawn weights (one of them at least 1), and weights w."""
    rng = np.random.default_rng(p["seed"])
    seq = random_split(rng, p["n"], p["max_len"], p["K"], p["A"], real=p["real"])
    c = np.array(p["weights"][:p["n"]])
    c[rng.integers(p["n"])] = max(c.max(), 1.0)
    w = rng.normal(size=WeightLayout(p["A"], p["K"]).dim)
    return rng, with_weights(seq, c), c, w


@settings(max_examples=50, deadline=None)
@given(problems)
def test_weighted_primal_and_gradient_by_enumeration(p):
    rng, seq, c, w = weighted_problem(p)
    A, K, n = p["A"], p["K"], seq.n_sequences
    lam = 0.7 / n
    loss, grad = 0.0, lam * w
    for i in range(n):
        ys, F, prob, logz = joint(w, seq, i, A, K)
        gold = features(seq, i, seq.labels[seq.offsets[i]:seq.offsets[i + 1]], A, K)
        loss += c[i] * (logz - gold @ w)
        grad = grad + c[i] * (prob @ F - gold) / n
    expected = 0.5 * lam * w @ w + loss / n
    value, g = primal_and_gradient(w, seq, A, K, lam)
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert primal(w, seq, A, K, lam) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(g, grad, atol=1e-11)
    h, v = 1e-6, rng.normal(size=w.size)  # and by finite differences
    fd = (primal(w + h * v, seq, A, K, lam) - primal(w - h * v, seq, A, K, lam)) / (2 * h)
    assert fd == pytest.approx(g @ v, rel=1e-5, abs=1e-7)


@settings(max_examples=50, deadline=None)
@given(problems)
def test_weighted_dual_and_its_certified_gap_by_enumeration(p):
    """With mu_i the marginals of some chain's joint alpha_i: w_hat(mu) = (1/(lam n))
    sum_i c_i (F(y_i) - E_alpha_i F), D(mu) = -lam/2 ||w_hat||^2 + (1/n) sum_i c_i H(alpha_i),
    and P(w_hat) - D(mu) = (1/n) sum_i c_i KL(alpha_i || p(. | x_i; w_hat)): block_gaps."""
    rng, seq, c, w = weighted_problem(p)
    A, K, n = p["A"], p["K"], seq.n_sequences
    lam = 0.5 / n
    mu_u, mu_p, alphas = [], [], []
    for i in range(n):  # the oracle's marginals at another w for each sequence
        w_i = rng.normal(size=w.size)
        ys, F, alpha, _ = joint(w_i, seq, i, A, K)
        _, un, pa = sequence_marginals(w_i, A, K, seq, i)
        mu_u.append(un.ravel())
        mu_p.append(pa.ravel())
        alphas.append((ys, F, alpha))
    mu_u, mu_p = np.concatenate(mu_u), np.concatenate(mu_p)
    w_hat = np.zeros(w.size)
    for i, (_, F, alpha) in enumerate(alphas):
        gold = features(seq, i, seq.labels[seq.offsets[i]:seq.offsets[i + 1]], A, K)
        w_hat += c[i] * (gold - alpha @ F)
    w_hat /= lam * n
    np.testing.assert_allclose(weights_from_marginals(mu_u, mu_p, seq, A, K, lam), w_hat,
                               atol=1e-10)
    dual = -0.5 * lam * w_hat @ w_hat + sum(
        c[i] * entropy(alpha) for i, (_, _, alpha) in enumerate(alphas)) / n
    assert dual_objective(mu_u, mu_p, seq, A, K, lam) == pytest.approx(dual, abs=1e-10)
    gaps = [c[i] * kl(alpha, joint(w_hat, seq, i, A, K)[2])
            for i, (_, _, alpha) in enumerate(alphas)]
    np.testing.assert_allclose(block_gaps(w_hat, mu_u, mu_p, seq, A, K), gaps, atol=1e-9)
    assert primal(w_hat, seq, A, K, lam) - dual == pytest.approx(np.mean(gaps), abs=1e-9)


def weighted_synthetic(n=40, K=3, A=12, seed=5, zeros=True):
    seq = synthetic_sequences(n, 1, 6, K, A, 3, seed=seed)
    rng = np.random.default_rng(seed)
    c = rng.choice([0.5, 1.0, 2.0, 4.0], size=n)
    if zeros:
        c[::7] = 0.0
    return with_weights(seq, c), rng


def recomputed_gap(s: SDCA) -> float:
    """P(w) - D(mu) of the original problem, from the store in full."""
    p = s.problem
    args = (p.train, p.n_attributes, p.n_labels, p.lam)
    return primal(s.weights(), *args, p.l1) - dual_objective(*s.marginals, *args,
                                                             p.feature_mask, p.l1)


@pytest.mark.parametrize("options", [
    {"sampler": "gap"}, {"sampler": "uniform", "line_search": "golden"},
    {"sampler": "gap", "catalyst": 3.0}, {"sampler": "importance"},
])
@pytest.mark.parametrize("l1", [0.0, 0.01])
def test_weighted_sdca_reports_the_gap_recomputed_in_full(options, l1):
    """After steps: w = S(w_hat(mu)) of the weighted dual, the solver's dual is D(mu)
    recomputed from the store, and the stored block gaps refreshed at w average to P - D;
    the steps never visit a sequence of weight 0 (its block stays at the Dirac start)."""
    seq, rng = weighted_synthetic()
    p = Problem(seq, 12, 3, 1.0 / seq.n_sequences, radii=rng.uniform(1, 20, seq.n_sequences),
                l1=l1)
    s = SDCA(p, seed=4, **options)
    start = s.marginals[0].copy()
    for _ in range(4):
        s.run(p.n)
        s.refresh_gaps()
        s.resync()
        assert s.gap_estimate() == pytest.approx(recomputed_gap(s), rel=1e-9, abs=1e-12)
        assert s.dual() == pytest.approx(
            dual_objective(*s.marginals, p.train, 12, 3, p.lam, None, l1), abs=1e-12)
    if not options.get("catalyst"):
        w_hat = weights_from_marginals(*s.marginals, p.train, 12, 3, p.lam)
        from crfsdca.model.features import soft_threshold
        np.testing.assert_allclose(s.weights(), soft_threshold(w_hat, l1 / p.lam),
                                   atol=1e-12)
    zero = np.flatnonzero(seq.weights == 0)
    for i in zero:
        lo, hi = seq.offsets[i] * 3, seq.offsets[i + 1] * 3
        np.testing.assert_array_equal(s.marginals[0][lo:hi], start[lo:hi])
    assert len(s.members) == p.n - len(zero)


def test_each_step_reports_the_weighted_block_gap_at_the_weights_it_saw():
    """The gap a step stores for its sequence is c_i D~(mu_i || nu_i(w)) at the w and mu
    before the step (cyclic order: step j visits the j-th sequence of positive weight)."""
    seq, rng = weighted_synthetic(n=20)
    p = Problem(seq, 12, 3, 1.0 / seq.n_sequences)
    s = SDCA(p, seed=0, sampler="cyclic")
    members = s.members
    for step in range(2 * len(members)):
        w = s.weights().copy()
        mu = tuple(m.copy() for m in s.marginals)
        s.run(1)
        j = step % len(members)
        expected = block_gaps(w, *mu, p.train, 12, 3)[members[j]]
        assert s.sampler.gaps[j] == pytest.approx(expected, rel=1e-9, abs=1e-13)


def test_weighted_minibatch_sdca_keeps_the_certificate():
    seq, rng = weighted_synthetic(n=60)
    p = Problem(seq, 12, 3, 1.0 / seq.n_sequences)
    s = SDCA(p, seed=1, threads=2, batch_size=2)
    s.run(5 * p.n)
    s.refresh_gaps()
    s.resync()
    assert s.gap_estimate() == pytest.approx(recomputed_gap(s), rel=1e-8, abs=1e-12)


def duplicated(X, y, counts):
    """Each sequence written counts[i] times (0: left out)."""
    Xd = [x for x, k in zip(X, counts, strict=True) for _ in range(k)]
    yd = [t for t, k in zip(y, counts, strict=True) for _ in range(k)]
    return Xd, yd


def tiny_corpus(seed: int, n: int):
    rng = np.random.default_rng(seed)
    words, tags = ["the", "a", "cat", "dog", "ran", "sat", "on", "mat"], ["D", "N", "V", "P"]
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(1, 6))
        X.append([{"w": words[j], "suffix": words[j][-1:]} for j in rng.integers(8, size=T)])
        y.append([tags[j] for j in rng.integers(4, size=T)])
    return X, y


def distance_bound(crf: CRF, c2: float) -> float:
    """sqrt(certified gap / c2) >= ||w - w*||: the objective in CRFsuite's scale is
    2 c2-strongly convex, F(w) - F* >= c2 ||w - w*||^2."""
    return float(np.sqrt(max(crf.training_log_.last_iteration["gap"], 0.0) / c2))


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**16), st.lists(st.integers(1, 3), min_size=6, max_size=6))
def test_a_weight_k_trains_as_the_sequence_written_k_times(seed, counts):
    X, y = tiny_corpus(seed, 6)
    c2 = 0.3
    kw = dict(c2=c2, epsilon=1e-11, max_iterations=3000, all_possible_states=True,
              all_possible_transitions=True)
    weighted = CRF(**kw).fit(X, y, sample_weight=np.array(counts, dtype=float))
    written = CRF(**kw).fit(*duplicated(X, y, counts))
    a, b = weighted.model_, written.model_
    assert (a.labels, a.attributes) == (b.labels, b.attributes)
    bound = distance_bound(weighted, c2) + distance_bound(written, c2)
    assert np.linalg.norm(a.weights - b.weights) <= bound + 1e-12
    assert bound < 1e-4
    assert weighted.training_log_.last_iteration["loss"] == pytest.approx(
        written.training_log_.last_iteration["loss"], rel=1e-9)


def test_a_weight_of_zero_leaves_the_sequence_out():
    """The same optimum as without the sequence (same model size; F = n P is 2 c2-strongly
    convex), to the two runs' certified gaps."""
    seq, _ = weighted_synthetic(n=30, zeros=True)
    keep = seq.weights > 0
    from crfsdca.data.sequences import make_sequences

    lengths = np.diff(seq.offsets)
    tok = np.repeat(keep, lengths)
    counts = np.diff(seq.attr_indptr)[tok]
    entries = np.repeat(tok, np.diff(seq.attr_indptr))
    kept = make_sequences(np.concatenate([[0], np.cumsum(lengths[keep])]), seq.labels[tok],
                          np.concatenate([[0], np.cumsum(counts)]), seq.attr_indices[entries],
                          None, seq.weights[keep])
    c2 = 0.5
    runs = []
    for train in (seq, kept):
        s = SDCA(Problem(train, 12, 3, 2 * c2 / train.n_sequences), seed=0,
                 subprecision=1e-9)
        for _ in range(300):
            s.run(train.n_sequences)
            if recomputed_gap(s) < 1e-13:
                break
        runs.append((s.weights().copy(), train.n_sequences * recomputed_gap(s)))
    (w1, g1), (w2, g2) = runs
    assert np.linalg.norm(w1 - w2) <= np.sqrt(max(g1, 0) / c2) + np.sqrt(max(g2, 0) / c2) + 1e-12


def test_a_weight_of_two_equals_the_sequence_twice_by_lbfgs():
    X, y = tiny_corpus(7, 8)
    kw = dict(algorithm="lbfgs", c2=0.5, epsilon=1e-12, delta=0.0, max_iterations=500)
    weighted = CRF(**kw).fit(X, y, sample_weight=[2.0] + [1.0] * 7)
    twice = CRF(**kw).fit([X[0]] + X, [y[0]] + y)
    np.testing.assert_allclose(weighted.model_.weights, twice.model_.weights, atol=1e-7)


def test_unit_weights_change_nothing_bit_for_bit():
    X, y = tiny_corpus(3, 30)
    for kw in ({}, {"c1": 0.1}, {"algorithm": "lbfgs"}, {"algorithm": "ap"},
               {"algorithm": "l2sgd", "max_iterations": 5}, {"algorithm": "arow"}):
        plain = CRF(**kw).fit(X, y)
        ones = CRF(**kw).fit(X, y, sample_weight=np.ones(len(X)))
        same_class = CRF(class_weight={"N": 1.0}, **kw).fit(X, y, sample_weight=1.0)
        assert np.array_equal(plain.model_.weights, ones.model_.weights), kw
        assert np.array_equal(plain.model_.weights, same_class.model_.weights), kw


@pytest.mark.parametrize("algorithm", ["ap", "pa"])
def test_online_updates_scale_with_the_weight_as_crfsuite_s(algorithm):
    """CRFsuite's perceptron and PA add c_i times the unweighted update: from w = 0, one
    epoch on one sequence gives exactly twice the weights with c_i = 2."""
    X, y = tiny_corpus(5, 1)
    X, y = [X[0] + X[0]], [["D"] * len(X[0]) + ["N"] * len(X[0])]
    one = CRF(algorithm=algorithm, max_iterations=1).fit(X, y)
    two = CRF(algorithm=algorithm, max_iterations=1).fit(X, y, sample_weight=[2.0])
    assert np.any(one.model_.weights != 0)
    assert np.array_equal(two.model_.weights, 2.0 * one.model_.weights)


def test_class_factors_are_the_mean_label_weight_by_enumeration():
    X, y = tiny_corpus(11, 9)
    crf = CRF(c2=1.0, class_weight={"N": 3.0, "V": 0.0}, epsilon=1e-10).fit(X, y)
    names = crf.model_.labels
    from crfsdca.data.items import Vocabulary, encode

    seq = encode(X, y, Vocabulary(crf.model_.attributes), Vocabulary(names), grow=False).seq
    kappa = label_weights({"N": 3.0, "V": 0.0}, seq.labels, names)
    expected = [np.mean([{"N": 3.0, "V": 0.0}.get(t, 1.0) for t in ys]) for ys in y]
    np.testing.assert_allclose(class_factors(seq, kappa), expected)
    # the fit's objective is sum_i c_i NLL_i + c2 ||w||^2 with those c_i
    weighted = with_weights(seq, expected)
    n = seq.n_sequences
    loss = n * primal(crf.model_.weights, weighted, len(crf.model_.attributes), len(names),
                      2.0 / n)
    assert crf.training_log_.last_iteration["loss"] == pytest.approx(loss, rel=1e-12)


def test_balanced_class_weights_are_scikit_learn_s_over_the_tokens():
    from sklearn.utils.class_weight import compute_class_weight

    X, y = tiny_corpus(2, 20)
    crf = CRF(class_weight="balanced", max_iterations=2).fit(X, y)
    names = crf.model_.labels
    tokens = np.array([names.index(t) for ys in y for t in ys])
    kappa = label_weights("balanced", tokens, names)
    sk = compute_class_weight("balanced", classes=np.unique(tokens), y=tokens)
    np.testing.assert_allclose(kappa[np.unique(tokens)], sk)
    assert np.mean(kappa[tokens]) == pytest.approx(1.0)


X_OK, Y_OK = tiny_corpus(1, 4)


@pytest.mark.parametrize("kwargs, message", [
    ({"sample_weight": [1.0, -1.0, 1.0, 1.0]}, r"sample_weight\[1\] = -1.0"),
    ({"sample_weight": [1.0, 1.0, float("nan"), 1.0]}, r"sample_weight\[2\] = nan"),
    ({"sample_weight": [1.0, float("inf"), 1.0, 1.0]}, r"sample_weight\[1\] = inf"),
    ({"sample_weight": [1.0, 2.0]}, r"sample_weight has shape \(2,\), expected \(4,\)"),
    ({"sample_weight": [[1.0] * 4]}, r"sample_weight has shape \(1, 4\)"),
    ({"sample_weight": ["a", "b", "c", "d"]}, "sample_weight must be numbers"),
    ({"sample_weight": [0.0] * 4}, "sample_weight is 0 for every sequence"),
])
def test_bad_sample_weights_are_refused_and_nothing_is_written(tmp_path, kwargs, message):
    path = tmp_path / "m.h5"
    with pytest.raises(ValueError, match=message):
        CRF(model_filename=str(path)).fit(X_OK, Y_OK, **kwargs)
    assert not path.exists()


@pytest.mark.parametrize("class_weight, message", [
    ({"Q": 2.0}, r"class_weight: 'Q' is not a label of the training data"),
    ({"N": -1.0}, r"class_weight\['N'\] = -1.0: a class weight must be a finite number"),
    ({"N": float("nan")}, r"class_weight\['N'\] = nan"),
    ({"N": "2"}, r"class_weight\['N'\] = '2'"),
    ("auto", "class_weight must be None, 'balanced' or a dict"),
    ([1.0, 2.0], "class_weight must be None, 'balanced' or a dict"),
    ({"D": 0.0, "N": 0.0, "V": 0.0, "P": 0.0}, r"sample_weight x class_weight is 0 for "
                                               "every sequence"),
])
def test_bad_class_weights_are_refused_and_nothing_is_written(tmp_path, class_weight,
                                                              message):
    path = tmp_path / "m.h5"
    with pytest.raises(ValueError, match=message):
        CRF(model_filename=str(path), class_weight=class_weight).fit(X_OK, Y_OK)
    assert not path.exists()


@pytest.mark.parametrize("algorithm", ["sag-nus", "sag-nus-star", "oeg"])
def test_solvers_without_weights_refuse_them_by_name(algorithm):
    with pytest.raises(ConfigError, match=f"{algorithm} does not handle sequence weights.*"
                                          "use sdca or lbfgs"):
        CRF(algorithm=algorithm).fit(X_OK, Y_OK, sample_weight=[1.0, 2.0, 1.0, 1.0])
    CRF(algorithm=algorithm, max_iterations=1).fit(X_OK, Y_OK, sample_weight=np.ones(4))


def test_partial_fit_keeps_the_weights_of_the_sequences_it_has_seen():
    X, y = tiny_corpus(4, 10)
    kw = dict(c2=0.5, epsilon=1e-10)
    crf = CRF(**kw).partial_fit(X[:6], y[:6], sample_weight=[2.0, 1.0, 0.0, 1.0, 3.0, 1.0])
    crf.partial_fit(X[6:], y[6:], sample_weight=[1.0, 0.5, 1.0, 1.0])
    once = CRF(**kw).fit(X, y, sample_weight=[2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 1.0, 0.5, 1.0, 1.0])
    assert crf.training_log_.last_iteration["loss"] == pytest.approx(
        once.training_log_.last_iteration["loss"], rel=1e-8)


@pytest.fixture(scope="module")
def crfsuite_exe(tmp_path_factory):
    """CRFsuite's own program ($CRFSUITE_BIN, or built from $CRFSUITE_SDIST; skipped
    without either), as tests/formats/test_crfsuite_model.py builds it."""
    import os
    import shutil
    from pathlib import Path

    if os.environ.get("CRFSUITE_BIN"):
        return Path(os.environ["CRFSUITE_BIN"])
    sdist = os.environ.get("CRFSUITE_SDIST")
    cc = shutil.which("gcc") or shutil.which("cc")
    if not sdist or not Path(sdist).exists() or cc is None:
        pytest.skip("CRFsuite's program: set CRFSUITE_SDIST (and have a C compiler) or "
                    "CRFSUITE_BIN")
    from crfsdca.reproduction.crfsuite_baseline import build_program

    return build_program(sdist, tmp_path_factory.mktemp("crfsuite"), cc)


def test_learn_trains_a_weighted_file_as_crfsuite_does(crfsuite_exe, tmp_path):
    """CRFsuite's L-BFGS and ``crfsdca learn`` (its L-BFGS and SDCA) on a file with
    ``@weight`` lines reach one objective, sum_i c_i NLL_i + c2 ||w||^2 evaluated by us at
    every model, which is also the loss CRFsuite prints; ``crfsdca tag`` reads the file."""
    import re
    import subprocess
    import sys

    from crfsdca.data.crfsuite_format import read_file, write_sequences
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.model_file import load_model

    X, y = tiny_corpus(9, 60)
    weights = np.random.default_rng(0).choice([0.0, 0.5, 1.0, 2.0, 3.0], size=60)
    data = tmp_path / "train.txt"
    with open(data, "w", encoding="utf-8") as f:
        write_sequences(f, [[[f"{k}={v}" for k, v in item.items()] for item in xs]
                            for xs in X], y, weights)
    assert read_file(str(data)).weights == weights.tolist()

    def objective(path):
        m = load_model(path)
        inst = read_file(str(data))
        seq = with_weights(encode(inst.X, inst.y, Vocabulary(m.attributes),
                                  Vocabulary(m.labels), grow=False).seq, inst.weights)
        n = seq.n_sequences
        return n * primal(m.weights, seq, len(m.attributes), len(m.labels), 2.0 / n)

    done = subprocess.run([str(crfsuite_exe), "learn", "-a", "lbfgs", "-p", "c2=1", "-p",
                           "epsilon=1e-10", "-p", "delta=0", "-m", str(tmp_path / "c.m"),
                           str(data)], capture_output=True, text=True, check=True)
    printed = float(re.findall(r"Loss: ([0-9.e+-]+)", done.stdout)[-1])
    theirs = objective(tmp_path / "c.m")
    assert theirs == pytest.approx(printed, rel=1e-7)
    cli = [sys.executable, "-m", "crfsdca"]
    for algorithm, tol in (("lbfgs", ["-p", "epsilon=1e-10", "-p", "delta=0"]),
                           ("sdca", ["-p", "epsilon=1e-11"])):
        out = tmp_path / f"{algorithm}.crfsuite"
        subprocess.run([*cli, "learn", "-q", "-a", algorithm, "-p", "c2=1", *tol, "-m",
                        str(out), str(data)], check=True, capture_output=True)
        assert objective(out) == pytest.approx(theirs, rel=1e-9), algorithm
    tagged = subprocess.run([*cli, "tag", "-m", str(tmp_path / "sdca.crfsuite"), str(data)],
                            check=True, capture_output=True, text=True).stdout
    assert len([line for line in tagged.splitlines() if line]) == sum(map(len, y))


def test_learn_refuses_weights_for_a_solver_without_them(tmp_path):
    import subprocess
    import sys

    data = tmp_path / "train.txt"
    data.write_text("@weight:2\nA\tx\nB\ty\n\nA\tz\n\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "crfsdca", "learn", "-a", "oeg", "-m",
                           str(tmp_path / "m"), str(data)], capture_output=True, text=True)
    assert done.returncode != 0
    assert "oeg does not handle sequence weights" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "m").exists()
