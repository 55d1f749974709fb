"""Decoding beyond Viterbi against brute force, every labeling of short sequences listed:
the n best labelings (order, scores, probabilities), constrained Viterbi, the marginals
and probabilities of the constrained distribution, the pairwise marginals; at the
kernels (``crfsdca.model.decoding``) on drawn chains, then through ``CRF``, ``Tagger``
and ``crfsdca tag`` on drawn models with crfsdca's bias weights, with and without
transition attributes (a table per edge)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crfsdca import CRF
from crfsdca.model.constraints import Masks, constraint_masks, forced_of_one
from crfsdca.model.decoding import (
    feasible,
    make_chain,
    mask_scores,
    n_best,
    n_best_buffers,
)
from crfsdca.model.layout import WeightLayout
from crfsdca.model.oracle import viterbi
from crfsdca.model_file import Model, save_model

# ------------------------------------------------------------------ brute force


def chain_score(S, W, y):
    """score of labeling y in the kernels' order: ((s_0 + W) + s_1) + W ... (exact ties)."""
    v = S[0, y[0]]
    for t in range(1, len(y)):
        v = v + W[y[t - 1], y[t]]
        v = v + S[t, y[t]]
    return v


def allowed(y, masks: Masks | None, forced: dict) -> bool:
    if any(y[t] != k for t, k in forced.items()):
        return False
    if masks is None:
        return True
    return bool(masks.first[y[0]] and masks.last[y[-1]]
                and all(masks.allowed[a, b] for a, b in itertools.pairwise(y)))


def listing(S, W, masks=None, forced=None):
    """Every allowed labeling with its score (the kernels' order), best first."""
    T, K = S.shape
    ys = [y for y in itertools.product(range(K), repeat=T) if allowed(y, masks, forced or {})]
    return sorted(((chain_score(S, W, y), y) for y in ys), key=lambda p: -p[0])


def distribution(S, W, masks=None, forced=None):
    """(labelings, probabilities) of the allowed labelings, and the unary (T, K) and
    pairwise (T-1, K, K) marginals."""
    T, K = S.shape
    rows = listing(S, W, masks, forced)
    scores = np.array([s for s, _ in rows])
    p = np.exp(scores - np.logaddexp.reduce(scores))
    unary, pair = np.zeros((T, K)), np.zeros((max(T - 1, 0), K, K))
    for (_, y), q in zip(rows, p, strict=True):
        unary[np.arange(T), list(y)] += q
        for t in range(T - 1):
            pair[t, y[t], y[t + 1]] += q
    return [y for _, y in rows], p, unary, pair


def weights_of(W, K):
    """A weight vector of no attributes, zero bias and transitions W."""
    w = np.zeros(WeightLayout(0, K).dim)
    WeightLayout(0, K).transition(w)[:] = W
    return w


# ------------------------------------------------------------------ the kernels

SMALL_INTEGERS = st.integers(-2, 2).map(float)  # many ties
FLOATS = st.floats(-20, 20, allow_nan=False, width=64)


@st.composite
def chains(draw, values):
    K = draw(st.integers(1, 4))
    T = draw(st.integers(1, 5 if K <= 3 else 4))
    S = np.array(draw(st.lists(values, min_size=T * K, max_size=T * K))).reshape(T, K)
    W = np.array(draw(st.lists(values, min_size=K * K, max_size=K * K))).reshape(K, K)
    return S, W


@st.composite
def masks_of(draw, K, T):
    """Random masks (or None) and forced labels of a chain with K labels and T items."""
    masks = None
    if draw(st.booleans()):
        allowed = np.array(draw(st.lists(st.booleans(), min_size=K * K, max_size=K * K)))
        if not allowed.any():
            allowed[0] = True
        first = np.array(draw(st.lists(st.booleans(), min_size=K, max_size=K)))
        last = np.array(draw(st.lists(st.booleans(), min_size=K, max_size=K)))
        masks = Masks(allowed.reshape(K, K), first, last)
    forced = draw(st.dictionaries(st.integers(0, T - 1), st.integers(0, K - 1), max_size=2))
    return masks, forced


def run_n_best(S, W, k, masks=None, forced=None):
    """The kernel's k best of the chain (S, W) under masks and forced labels."""
    T, K = S.shape
    chain = make_chain(weights_of(W, K), 0, K, masks)
    scores = S.ravel().copy()
    fixed = forced_of_one({t: str(y) for t, y in (forced or {}).items()}, T,
                          {str(k): k for k in range(K)})
    mask_scores(scores, T, K, chain.first, chain.last, fixed.positions, fixed.labels, 0,
                len(fixed.labels))
    bufs = n_best_buffers(T, K, k)
    found = n_best(scores, T, K, chain.tw, 3 * K, 0, k, *bufs)
    paths = bufs[-2][:found * T].reshape(found, T)
    return [tuple(p) for p in paths.tolist()], bufs[-1][:found].tolist(), chain, scores, fixed


@settings(max_examples=300, deadline=None)
@given(st.one_of(chains(SMALL_INTEGERS), chains(FLOATS)), st.integers(1, 12), st.data())
def test_n_best_is_the_top_of_the_listing(chain, k, data):
    S, W = chain
    T, K = S.shape
    masks, forced = data.draw(masks_of(K, T)) if data.draw(st.booleans()) else (None, {})
    paths, scores, c, masked, fixed = run_n_best(S, W, k, masks, forced)
    rows = listing(S, W, masks, forced)
    assert len(paths) == min(k, len(rows))
    assert scores == [s for s, _ in rows[:k]]  # the top scores, exactly, best first
    assert len(set(paths)) == len(paths)  # distinct labelings
    for path, score in zip(paths, scores, strict=True):
        assert allowed(path, masks, forced)
        assert chain_score(S, W, path) == score
    # the best is Viterbi's labeling (ties included) with its score, bit for bit
    delta, back, path = np.empty(2 * K), np.empty(T * K, np.int32), np.empty(T, np.int32)
    best = viterbi(masked, T, K, c.tw, c.tA, delta, back, path)
    assert feasible(T, K, c.tw, c.tA, c.first, c.last, fixed.positions, fixed.labels, 0,
                    len(fixed.labels)) == bool(rows)
    if rows:
        assert tuple(path.tolist()) == paths[0] and best == scores[0]
    else:
        assert best == -math.inf


def test_n_best_without_ties_is_the_listing_in_order():
    rng = np.random.default_rng(0)
    for _ in range(50):
        K, T = rng.integers(1, 5), rng.integers(1, 5)
        S, W = rng.normal(size=(T, K)), rng.normal(size=(K, K))
        rows = listing(S, W)
        paths, scores, *_ = run_n_best(S, W, 7)
        assert paths == [y for _, y in rows[:7]]


def test_n_best_breaks_ties_as_viterbi():
    """All labelings tie: Viterbi's labeling is all zeros (the smaller label wins), and so
    is the first of the n best; every labeling is listed once."""
    S, W = np.zeros((3, 2)), np.zeros((2, 2))
    paths, scores, *_ = run_n_best(S, W, 10)
    assert paths[0] == (0, 0, 0)
    assert sorted(paths) == list(itertools.product(range(2), repeat=3))
    assert scores == [0.0] * 8


# ------------------------------------------------------------------ the estimator and the tagger

LABELS = ["O", "B-X", "I-X", "B-Y", "I-Y", "E-X", "S-Y"]
ATTRS = ["a", "b", "c"]
EDGE_ATTRS = ["B~p", "B~q"]
"""The transition attributes of the second model (``transition_prefix`` "B~")."""


def model_score(model, xseq, y):
    """score(x, y) with crfsdca's bias weights (every, first, last position) and the
    transition attributes of the tokens after the first (W_B of the pair into them)."""
    layout, w = model.layout, model.weights
    E, B, W, WB = (f(w) for f in (layout.emission, layout.bias, layout.transition,
                                  layout.edges))
    T = len(y)
    s = sum(E[ATTRS.index(a), y[t]] for t in range(T) for a in xseq[t] if a in ATTRS)
    s += sum(B[y[t], 0] for t in range(T)) + B[y[0], 1] + B[y[-1], 2]
    s += sum(WB[model.transition_attributes.index(a), y[t - 1], y[t]]
             for t in range(1, T) for a in xseq[t] if a in model.transition_attributes)
    return s + sum(W[y[t], y[t + 1]] for t in range(T - 1))


def model_distribution(model, xseq, masks, forced):
    T, K = len(xseq), len(model.labels)
    ys = [y for y in itertools.product(range(K), repeat=T) if allowed(y, masks, forced)]
    scores = np.array([model_score(model, xseq, y) for y in ys])
    if not ys:
        return [], scores, None, None, None
    logz = np.logaddexp.reduce(scores)
    p = np.exp(scores - logz)
    unary, pair = np.zeros((T, K)), np.zeros((max(T - 1, 0), K, K))
    for y, q in zip(ys, p, strict=True):
        unary[np.arange(T), list(y)] += q
        for t in range(T - 1):
            pair[t, y[t], y[t + 1]] += q
    return ys, p, unary, pair, logz


def random_model(tmp_path_factory, edges: list[str]):
    """A CRF whose model has random weights (bias included), its labels ``LABELS`` and
    its transition attributes ``edges``."""
    rng = np.random.default_rng(7)
    layout = WeightLayout(len(ATTRS), len(LABELS), len(edges))
    model = Model(LABELS, ATTRS, rng.normal(size=layout.dim), transition_attributes=edges)
    path = tmp_path_factory.mktemp("m") / "random.model"
    save_model(path, model)
    return CRF(model_filename=str(path)), model


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    return random_model(tmp_path_factory, [])


@pytest.fixture(scope="module")
def fitted_edges(tmp_path_factory):
    return random_model(tmp_path_factory, EDGE_ATTRS)


CONSTRAINTS = st.one_of(
    st.none(), st.sampled_from(["BIOES", ["BIOES", ("O", "S-Y")]]),
    st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), max_size=20))
SEQUENCES = st.lists(st.lists(st.sampled_from(ATTRS), max_size=2, unique=True), min_size=1,
                     max_size=4)
EDGE_SEQUENCES = st.lists(st.lists(st.sampled_from(ATTRS + EDGE_ATTRS), max_size=3,
                                   unique=True), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(st.lists(SEQUENCES, min_size=1, max_size=3), CONSTRAINTS, st.data())
def test_estimator_and_tagger_against_brute_force(fitted, X, constraints, data):
    check_against_brute_force(*fitted, X, constraints, data)


@settings(max_examples=30, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(st.lists(EDGE_SEQUENCES, min_size=1, max_size=3), CONSTRAINTS, st.data())
def test_transition_attributes_against_brute_force(fitted_edges, X, constraints, data):
    """The same with a table per edge: transition attributes on the items (on a first
    item they are dropped, as in training)."""
    check_against_brute_force(*fitted_edges, X, constraints, data)


def check_against_brute_force(crf, model, X, constraints, data):
    """predict, the n best, the marginals (unary, pairwise), the tagger's labels, n best,
    probabilities and marginals of the drawn sequences X under the drawn constraints and
    forced labels, against the listing of every allowed labeling."""
    K = len(LABELS)
    forced = [data.draw(st.dictionaries(st.integers(0, len(x) - 1), st.sampled_from(LABELS),
                                        max_size=2)) for x in X]
    masks = constraint_masks(constraints, LABELS)
    truth = [model_distribution(model, x, masks, {t: LABELS.index(lab)
                                                  for t, lab in f.items()})
             for x, f in zip(X, forced, strict=True)]
    if any(not t[0] for t in truth):  # a sequence that no labeling satisfies
        bad = next(i for i, t in enumerate(truth) if not t[0])
        with pytest.raises(ValueError, match=f"sequence {bad}: no labeling"):
            crf.predict(X, constraints=constraints, forced=forced)
        with pytest.raises(ValueError, match="no labeling"):
            crf.tagger_.set(X[bad], constraints=constraints, forced=forced[bad])
        return
    pred = crf.predict(X, constraints=constraints, forced=forced)
    best = crf.predict_n_best(X, 4, constraints=constraints, forced=forced)
    unary = crf.predict_marginals(X, constraints=constraints, forced=forced)
    pairwise = crf.predict_marginals(X, pairwise=True, constraints=constraints, forced=forced)
    tagger = crf.tagger_
    for i, (ys, p, un, pa, _) in enumerate(truth):
        order = np.argsort(-p, kind="stable")
        names = [[LABELS[k] for k in ys[j]] for j in order]
        assert pred[i] == names[0] or (len(ys) > 1 and np.isclose(p[order[0]], p[order[1]]))
        assert len(best[i]) == min(4, len(ys))
        got = [q for _, q in best[i]]
        np.testing.assert_allclose(got, p[order[:4]], rtol=1e-9, atol=1e-12)
        for labels, q in best[i]:
            j = ys.index(tuple(LABELS.index(lab) for lab in labels))
            assert q == pytest.approx(p[j], rel=1e-9, abs=1e-12)
        assert best[i][0][0] == pred[i]
        np.testing.assert_allclose([[m[lab] for lab in LABELS] for m in unary[i]], un,
                                   atol=1e-10)
        assert len(pairwise[i]) == len(X[i]) - 1
        for t, table in enumerate(pairwise[i]):
            np.testing.assert_allclose([[table[a, b] for b in LABELS] for a in LABELS], pa[t],
                                       atol=1e-10)
        tagger.set(X[i], constraints=constraints, forced=forced[i])
        assert tagger.tag() == pred[i]
        assert crf.predict_single(X[i], constraints=constraints, forced=forced[i]) == pred[i]
        for labels, q in tagger.tag(n_best=4):
            assert q == pytest.approx(tagger.probability(labels), rel=1e-9, abs=1e-12)
        y = ys[data.draw(st.integers(0, len(ys) - 1))]
        assert tagger.probability([LABELS[k] for k in y]) == pytest.approx(
            p[ys.index(y)], rel=1e-9)
        outside = next((y for y in itertools.product(range(K), repeat=len(X[i]))
                        if y not in set(ys)), None)
        if outside is not None:  # a labeling the constraints forbid: probability 0
            assert tagger.probability([LABELS[k] for k in outside]) == 0.0
        for t in range(len(X[i])):
            for k, lab in enumerate(LABELS):
                assert tagger.marginal(lab, t) == pytest.approx(un[t, k], abs=1e-10)
        for t in range(len(X[i]) - 1):
            for a, b in itertools.product(range(K), repeat=2):
                assert tagger.pairwise_marginal(LABELS[a], LABELS[b], t) == pytest.approx(
                    pa[t, a, b], abs=1e-10)


def test_unconstrained_paths_are_unchanged(fitted):
    """No constraint: predict, predict_single and predict_marginals give what they gave
    (the same code: objective.predict, the tagger's Viterbi, sequence_marginals); the n
    best begin with predict's labeling and an all-allowed constraint changes nothing."""
    crf, model = fitted
    rng = np.random.default_rng(3)
    X = [[[ATTRS[j] for j in rng.choice(3, size=rng.integers(0, 3), replace=False)]
          for _ in range(rng.integers(1, 9))] for _ in range(40)]
    pred = crf.predict(X)
    assert crf.predict(X, constraints=[]) == pred
    assert crf.predict(X, forced=[None] * len(X)) == pred
    assert [b[0][0] for b in crf.predict_n_best(X, 3)] == pred
    assert [crf.predict_single(x) for x in X] == pred
    plain = crf.predict_marginals(X)
    masked = crf.predict_marginals(X, constraints=[])
    for a, b in zip(masked, plain, strict=True):
        np.testing.assert_allclose([list(m.values()) for m in a],
                                   [list(m.values()) for m in b], rtol=0, atol=1e-15)
    pairwise = crf.predict_marginals(X, pairwise=True)
    for un, pa in zip(plain, pairwise, strict=True):  # the pairwise sum to the unary
        for t, table in enumerate(pa):
            for a in LABELS:
                assert sum(table[a, b] for b in LABELS) == pytest.approx(un[t][a], abs=1e-12)
                assert sum(table[b, a] for b in LABELS) == pytest.approx(un[t + 1][a],
                                                                         abs=1e-12)


def test_empty_sequences(fitted):
    crf, _ = fitted
    X = [[], [["a"]], []]
    assert crf.predict(X, constraints="BIOES") == [
        [], crf.predict([[["a"]]], constraints="BIOES")[0], []]
    assert crf.predict_n_best(X, 2)[0] == [] and crf.predict_n_best(X, 2)[2] == []
    assert crf.predict_marginals(X, pairwise=True) == [[], [], []]
    assert crf.predict_single([], constraints="BIOES") == []
    assert crf.tagger_.tag([], n_best=3) == []
    with pytest.raises(ValueError, match=r"forced\[0\]: position 0 is out of range"):
        crf.predict(X, forced=[{0: "O"}, None, None])


def test_no_workspace_is_shared_between_paths(fitted):
    """n best after marginals after Viterbi on one tagger: each reads the set sequence's
    scores, none is changed by the others."""
    crf, _ = fitted
    tagger = crf.tagger_
    x = [["a"], ["b", "c"], [], ["a", "b"]]
    tagger.set(x, constraints="BIOES", forced={1: "I-X"})
    first = tagger.tag()
    marg = [tagger.marginal(lab, 2) for lab in LABELS]
    many = tagger.tag(n_best=5)
    assert many[0][0] == first == tagger.tag()
    assert [tagger.marginal(lab, 2) for lab in LABELS] == marg
    assert sum(q for _, q in many) <= 1 + 1e-12
