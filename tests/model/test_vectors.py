"""Vector attributes (issue 48, item 4): numpy arrays in items, encoded as a dense block
that the kernels read as a matrix. Its scores, objective, gradient, dual and gaps against
enumeration and against the same features written as sparse entries; SDCA and L-BFGS on
it; the estimator, the tagger and the model files; bad arrays; the solvers that refuse."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.bruteforce import features, joint, random_split
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca import CRF
from crfsdca.data.radii import squared_radii
from crfsdca.data.sequences import make_sequences, with_weights
from crfsdca.errors import ConfigError
from crfsdca.model.layout import WeightLayout
from crfsdca.model.objective import (
    block_gaps,
    dual_objective,
    primal,
    primal_and_gradient,
    weights_from_marginals,
)
from crfsdca.model.oracle import sequence_marginals, unary_scores
from crfsdca.solvers.base import Problem
from crfsdca.solvers.lbfgs import LBFGS
from crfsdca.solvers.sdca import SDCA


def with_dense(rng, seq, A: int, D: int, scale: float = 1.0):
    """``seq`` (attributes 0..A-1) with a dense block of D columns, attributes A..A+D-1
    in a random order, values N(0, scale^2) (a few rows all zeros)."""
    dense = rng.normal(scale=scale, size=(seq.n_tokens, D))
    dense[rng.random(seq.n_tokens) < 0.2] = 0.0
    cols = A + rng.permutation(D)
    return make_sequences(*seq[:5], seq.weights if seq.weighted else None, dense, cols)


def as_entries(seq):
    """The same split with the dense block written as sparse entries (each token's
    columns among its attributes, ids sorted, as the encoder writes them)."""
    indptr, indices, values = [0], [], []
    for tok in range(seq.n_tokens):
        lo, hi = seq.attr_indptr[tok], seq.attr_indptr[tok + 1]
        ids = list(seq.attr_indices[lo:hi]) + list(seq.dense_attr)
        vals = list(np.ones(hi - lo) if seq.binary else seq.attr_values[lo:hi]) + list(
            seq.dense[tok])
        order = np.argsort(ids, kind="stable")
        indices += [ids[j] for j in order]
        values += [vals[j] for j in order]
        indptr.append(len(indices))
    return make_sequences(seq.offsets, seq.labels, indptr, np.array(indices, dtype=np.int64),
                          np.array(values), seq.weights if seq.weighted else None)


problems = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "n": st.integers(1, 3),
    "max_len": st.integers(1, 4),
    "K": st.integers(1, 3),
    "A": st.integers(1, 4),
    "D": st.integers(1, 5),
    "real": st.booleans(),
    "weighted": st.booleans(),
})


def dense_problem(p):
    rng = np.random.default_rng(p["seed"])
    seq = random_split(rng, p["n"], p["max_len"], p["K"], p["A"], real=p["real"])
    if p["weighted"]:
        seq = with_weights(seq, rng.choice([0.0, 0.5, 2.0], size=p["n"]))
    seq = with_dense(rng, seq, p["A"], p["D"])
    A = p["A"] + p["D"]
    w = rng.normal(size=WeightLayout(A, p["K"]).dim)
    return rng, seq, A, w


@settings(max_examples=60, deadline=None)
@given(problems)
def test_dense_scores_and_marginals_by_enumeration(p):
    """log Z, the marginals and every labeling's score read the dense block as the
    features x_t[d] on the rows of its attributes (bruteforce.features)."""
    _, seq, A, w = dense_problem(p)
    K = p["K"]
    for i in range(seq.n_sequences):
        ys, F, prob, logz = joint(w, seq, i, A, K)
        logz_c, un, _ = sequence_marginals(w, A, K, seq, i)
        assert logz_c == pytest.approx(logz, rel=1e-12, abs=1e-12)
        T = len(ys[0])
        expected = np.zeros((T, K))
        for y, pr in zip(ys, prob, strict=True):
            expected[np.arange(T), y] += pr
        np.testing.assert_allclose(un, expected, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(problems)
def test_dense_block_equals_the_same_features_as_entries(p):
    """Scores, P, grad P, w_hat, D and the block gaps of a dense split are those of the
    same values written as sparse entries (the order of the sums aside)."""
    rng, seq, A, w = dense_problem(p)
    K = p["K"]
    flat = as_entries(seq)
    out_d, out_s = np.zeros(8 * K), np.zeros(8 * K)
    for i in range(seq.n_sequences):
        T = unary_scores(w, A, K, seq, i, out_d)
        unary_scores(w, A, K, flat, i, out_s)
        np.testing.assert_allclose(out_d[:T * K], out_s[:T * K], rtol=1e-13, atol=1e-13)
    lam = 0.4 / seq.n_sequences
    (v_d, g_d), (v_s, g_s) = (primal_and_gradient(w, s, A, K, lam) for s in (seq, flat))
    assert v_d == pytest.approx(v_s, rel=1e-13, abs=1e-13)
    np.testing.assert_allclose(g_d, g_s, atol=1e-12)
    mu_u, mu_p = [], []
    for i in range(seq.n_sequences):
        _, un, pa = sequence_marginals(rng.normal(size=w.size), A, K, seq, i)
        mu_u.append(un.ravel())
        mu_p.append(pa.ravel())
    mu_u, mu_p = np.concatenate(mu_u), np.concatenate(mu_p)
    w_hat = weights_from_marginals(mu_u, mu_p, seq, A, K, lam)
    np.testing.assert_allclose(w_hat, weights_from_marginals(mu_u, mu_p, flat, A, K, lam),
                               atol=1e-10)
    assert dual_objective(mu_u, mu_p, seq, A, K, lam) == pytest.approx(
        dual_objective(mu_u, mu_p, flat, A, K, lam), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(block_gaps(w_hat, mu_u, mu_p, seq, A, K),
                               block_gaps(w_hat, mu_u, mu_p, flat, A, K), atol=1e-9)
    # and the gradient against finite differences
    h, v = 1e-6, rng.normal(size=w.size)
    fd = (primal(w + h * v, seq, A, K, lam) - primal(w - h * v, seq, A, K, lam)) / (2 * h)
    assert fd == pytest.approx(g_d @ v, rel=1e-5, abs=1e-7)


@settings(max_examples=40, deadline=None)
@given(problems)
def test_radii_with_a_dense_block_by_enumeration(p):
    """R_i = ||F(x_i, y_i) - F(x_i, y')||^2 at the constant labeling y' of data/radii.py,
    the dense columns counted as attributes."""
    _, seq, A, _ = dense_problem(p)
    K = p["K"]
    radii = squared_radii(seq, K, A)
    flat = squared_radii(as_entries(seq), K, A)
    np.testing.assert_allclose(radii, flat, rtol=1e-10, atol=1e-10)
    from crfsdca.data.radii import constant_labels

    c = constant_labels(seq, K)
    for i in range(seq.n_sequences):
        gold = seq.labels[seq.offsets[i]:seq.offsets[i + 1]]
        diff = features(seq, i, gold, A, K) - features(seq, i, np.full(len(gold), c[i]), A, K)
        assert radii[i] == pytest.approx(diff @ diff, rel=1e-10, abs=1e-10)


def synthetic_dense(n=40, K=3, A=10, D=6, seed=2, weighted=False):
    from crfsdca.data.synthetic import synthetic_sequences

    rng = np.random.default_rng(seed)
    seq = synthetic_sequences(n, 1, 6, K, A, 3, seed=seed)
    if weighted:
        seq = with_weights(seq, rng.choice([0.0, 0.5, 1.0, 3.0], size=n))
    return with_dense(rng, seq, A, D, scale=0.5), A + D


@pytest.mark.parametrize("options", [{"sampler": "gap"}, {"sampler": "importance"},
                                     {"catalyst": 3.0}, {"line_search": "fixed"}])
@pytest.mark.parametrize("weighted", [False, True])
def test_sdca_on_a_dense_block_keeps_the_certificate(options, weighted):
    """w = w_hat(mu) (the dense rows included), and the stored gaps refreshed at w average
    to P - D recomputed in full."""
    seq, A = synthetic_dense(weighted=weighted)
    p = Problem(seq, A, 3, 1.0 / seq.n_sequences,
                radii=squared_radii(seq, 3, A), l1=0.002)
    s = SDCA(p, seed=1, **options)
    for _ in range(3):
        s.run(p.n)
        s.refresh_gaps()
        s.resync()
        full = (primal(s.weights(), seq, A, 3, p.lam, p.l1)
                - dual_objective(*s.marginals, seq, A, 3, p.lam, None, p.l1))
        assert s.gap_estimate() == pytest.approx(full, rel=1e-9, abs=1e-12)


def test_sdca_and_lbfgs_reach_the_optimum_of_the_same_features_as_entries():
    seq, A = synthetic_dense(n=30)
    flat = as_entries(seq)
    lam = 2.0 / seq.n_sequences
    ends = []
    for train in (seq, flat):
        p = Problem(train, A, 3, lam)
        s = SDCA(p, seed=0, subprecision=1e-9)
        for _ in range(200):
            s.run(p.n)
            gap = primal(s.weights(), train, A, 3, lam) - dual_objective(*s.marginals, train,
                                                                          A, 3, lam)
            if gap < 1e-12:
                break
        ends.append((s.weights().copy(), gap))
        solver = LBFGS(p, gtol=0.0, epsilon=1e-14, delta=0.0)
        solver.run(300)
        ends.append((solver.weights().copy(), 0.0))
    (w1, g1), (w2, _), (w3, g3), (w4, _) = ends
    bound = np.sqrt(2 * g1 / lam) + np.sqrt(2 * g3 / lam)  # lambda-strong convexity of P
    assert np.linalg.norm(w1 - w3) <= bound + 1e-12
    np.testing.assert_allclose(w2, w4, atol=1e-6)
    np.testing.assert_allclose(w1, w2, atol=1e-5)


# ---------------------------------------------------------------------- the estimator

WORDS = ["the", "a", "cat", "dog", "ran", "sat", "on", "mat"]


def corpus(seed: int, n: int, d: int = 5, positive: bool = False):
    """Items with a word and a vector per word (one per word: an embedding table)."""
    rng = np.random.default_rng(seed)
    table = {w: (rng.uniform(0.1, 1.0, d) if positive else rng.normal(size=d))
             for w in WORDS}
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(1, 6))
        ws = [WORDS[j] for j in rng.integers(8, size=T)]
        X.append([{"w": w, "emb": table[w]} for w in ws])
        y.append([["D", "N", "V"][j] for j in rng.integers(3, size=T)])
    return X, y


def as_dicts(X):
    return [[{k: v for k, v in item.items() if k != "emb"}
             | {f"emb[{j}]": float(x) for j, x in enumerate(item["emb"])} for item in xs]
            for xs in X]


@pytest.mark.parametrize("algorithm", ["sdca", "lbfgs"])
def test_arrays_train_as_the_same_values_written_as_dict_entries(algorithm):
    """With every (column, label) pair a feature in both (all_possible_states; positive
    values, which CRFsuite's feature set keeps), the fits reach the same model."""
    X, y = corpus(0, 40, positive=True)
    kw = dict(algorithm=algorithm, c2=0.5, all_possible_states=True,
              epsilon=1e-11 if algorithm == "sdca" else 1e-12, max_iterations=2000)
    a, b = CRF(**kw).fit(X, y), CRF(**kw).fit(as_dicts(X), y)
    assert sorted(a.model_.attributes) == sorted(b.model_.attributes)
    assert a.model_.attributes[-5:] == [f"emb[{j}]" for j in range(5)]
    sa, sb = a.state_features_, b.state_features_
    assert sa.keys() == sb.keys()
    assert max(abs(sa[k] - sb[k]) for k in sa) < 1e-5
    assert a.training_log_.last_iteration["loss"] == pytest.approx(
        b.training_log_.last_iteration["loss"], rel=1e-9)
    assert a.predict(X) == b.predict(as_dicts(X))


def test_the_dense_block_is_a_feature_whatever_min_freq():
    X, y = corpus(1, 30)
    crf = CRF(min_freq=1e9, max_iterations=3).fit(X, y)
    E = crf.model_.layout.emission(crf.model_.weights)
    rows = [crf.model_.attributes.index(f"emb[{j}]") for j in range(5)]
    assert np.all(E[rows] != 0) and not np.any(np.delete(E, rows, axis=0))


def test_prediction_the_tagger_and_the_model_files_read_arrays(tmp_path):
    """predict, predict_marginals, the tagger and a reloaded model (crfsdca's HDF5, and
    CRFsuite's format, where the columns are the attributes emb[j]) agree, on arrays and
    on their dict entries; unknown columns are ignored, as unknown attributes are."""
    from crfsdca.model_file import load_model, save_model
    from crfsdca.tagger import Tagger

    X, y = corpus(2, 30)
    crf = CRF(c2=0.3).fit(X, y)
    labels = crf.predict(X)
    assert crf.predict(as_dicts(X)) == labels
    assert [crf.tagger_.tag(xs) for xs in X] == labels
    assert [crf.predict_single(xs) for xs in X] == labels
    m1, m2 = crf.predict_marginals(X[:3]), crf.predict_marginals(as_dicts(X[:3]))
    for a, b in zip(m1, m2, strict=True):
        for pa, pb in zip(a, b, strict=True):
            assert pa == pytest.approx(pb, rel=1e-12)
    for name in ("m.h5", "m.crfsuite"):
        save_model(tmp_path / name, crf.model_)
        tagger = Tagger.from_model(load_model(tmp_path / name))
        assert [tagger.tag(xs) for xs in X] == labels
    wider = [[{**item, "emb": np.append(item["emb"], 7.0)} for item in xs] for xs in X]
    assert crf.predict(wider) == labels  # emb[5] is not in the model


def test_dump_and_eli5_name_the_columns(tmp_path):
    import subprocess
    import sys

    X, y = corpus(3, 20)
    path = tmp_path / "m.crfsuite"
    CRF(max_iterations=5, model_filename=str(path)).fit(X, y)
    out = subprocess.run([sys.executable, "-m", "crfsdca", "dump", str(path)],
                         capture_output=True, text=True, check=True).stdout
    assert "emb[0] --> N" in out and "emb[4] --> V" in out
    eli5 = pytest.importorskip("eli5")
    crf = CRF(max_iterations=5).fit(X, y)
    weights = eli5.explain_weights(crf, top=1000)
    names = {f.feature for t in weights.targets for f in t.feature_weights.pos
             + t.feature_weights.neg}
    assert "emb[2]" in names


def test_continued_training_with_arrays():
    """partial_fit keeps the dense rows of the sequences it has seen (a new array name in
    the new data adds columns); save_dual refuses a dense block before anything is
    trained or written."""
    X, y = corpus(4, 20)
    kw = dict(c2=0.5, epsilon=1e-10)
    part = CRF(**kw).partial_fit(X[:12], y[:12])
    extra = [[{**item, "pos": np.array([len(item["w"]), 1.0])} for item in xs]
             for xs in X[12:]]
    part.partial_fit(extra, y[12:])
    once = CRF(**kw).fit(X[:12] + extra, y)
    assert part.training_log_.last_iteration["loss"] == pytest.approx(
        once.training_log_.last_iteration["loss"], rel=1e-8)


def test_save_dual_refuses_a_dense_block(tmp_path):
    X, y = corpus(5, 10)
    path = tmp_path / "m.h5"
    with pytest.raises(ConfigError, match="dual file does not hold array attributes"):
        CRF(model_filename=str(path), save_dual=True).fit(X, y)
    assert not path.exists()


GOOD = np.ones(5)


@pytest.mark.parametrize("value, message", [
    (np.ones((5, 1)), r"'emb': an array attribute must have one dimension, got shape \(5, 1\)"),
    (np.array(["a"] * 5), "'emb': an array attribute must hold real numbers .* dtype <U1"),
    (np.ones(5, dtype=complex), "must hold real numbers .* dtype complex128"),
    (np.array([1.0, np.nan, 0, 0, 0]), r"'emb': value nan at \[1\]"),
    (np.array([1.0, 0, np.inf, 0, 0]), r"'emb': value inf at \[2\]"),
    (np.ones(4), r"sequence 1, item 0: attribute 'emb' has 4 values, 5 in sequence 0, "
                 r"item 0"),
])
def test_bad_arrays_are_refused_and_nothing_is_written(tmp_path, value, message):
    X = [[{"w": "a", "emb": GOOD}], [{"w": "b", "emb": value}, {"w": "c", "emb": GOOD}]]
    y = [["N"], ["V", "N"]]
    path = tmp_path / "m.h5"
    with pytest.raises(ValueError, match=message):
        CRF(model_filename=str(path)).fit(X, y)
    assert not path.exists()


def test_a_column_name_taken_by_another_attribute_is_refused():
    X = [[{"emb": GOOD, "emb[1]": 2.0}], [{"emb": GOOD}]]
    with pytest.raises(ValueError, match=r"'emb\[1\]' is both a value of an array "
                                         "attribute and an attribute of its own"):
        CRF().fit(X, [["N"], ["V"]])


@pytest.mark.parametrize("algorithm", ["sag-nus", "oeg", "l2sgd", "ap", "pa", "arow"])
def test_solvers_without_the_dense_block_refuse_it_by_name(algorithm):
    X, y = corpus(6, 5)
    with pytest.raises(ConfigError, match=f"{algorithm} does not read array attributes"
                                          ".*use sdca or lbfgs"):
        CRF(algorithm=algorithm).fit(X, y)


@pytest.mark.parametrize("algorithm", ["sdca", "lbfgs"])
def test_two_threads_and_a_dev_set_with_arrays(algorithm):
    """SDCA's batches of two and L-BFGS's passes on a dense block: the same weights bit for bit
    on one thread and on two; the dev set's arrays are scored by the model's columns."""
    X, y = corpus(7, 40)
    kw = dict(algorithm=algorithm, c2=0.5, epsilon=1e-10 if algorithm == "sdca" else 1e-12,
              max_iterations=1000, **({"batch_size": 2} if algorithm == "sdca" else {}))
    one = CRF(threads=1, **kw).fit(X[:30], y[:30], X_dev=X[30:], y_dev=y[30:])
    two = CRF(threads=2, **kw).fit(X[:30], y[:30], X_dev=X[30:], y_dev=y[30:])
    np.testing.assert_array_equal(two.model_.weights, one.model_.weights)
    accuracy = np.mean([a == b for p, g in zip(one.predict(X[30:]), y[30:], strict=True)
                        for a, b in zip(p, g, strict=True)])
    assert one.training_log_.last_iteration["dev_accuracy"] == pytest.approx(accuracy)
