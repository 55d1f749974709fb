"""``crfsdca.CRFCV``: the same choice as ``GridSearchCV`` over the same grid and folds, a
path's warm starts reaching the objective of cold fits within their certificates, folds
as views of one encoding, bad input refused whole, the scikit-learn protocol (clone,
pickle, parameters), the search on a Dask cluster, and ``shared_encoding`` leaving a
search's results unchanged."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from helpers.interrupts import ctrl_c_at_run
from helpers.paths import RAW
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold
from sklearn.utils.validation import check_is_fitted

import crfsdca
from crfsdca import CRF, CRFCV, metrics, scorers
from crfsdca import cv as cv_module
from crfsdca.cv import DEFAULT_C1S, DEFAULT_C2S, shared_encoding, tutorial_range
from crfsdca.data import shared_encoding as shared_module
from crfsdca.data.items import Vocabulary, encode, item_attributes
from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels
from crfsdca.estimator import SOLVER_PARAMETERS
from crfsdca.training.folds import make_fold
from crfsdca.training.path import PathRun, fit_path, path_order, point_costs, split_path


@pytest.fixture(scope="module")
def corpus():
    sents = iob_sents("esp.train", RAW / "conll2002.zip", limit=90)
    return [sent2features(s) for s in sents], [sent2labels(s) for s in sents]


def _f1(y):
    labels = [lab for lab in dict.fromkeys(t for s in y for t in s) if lab != "O"]
    return make_scorer(metrics.flat_f1_score, average="weighted", labels=labels,
                       zero_division=0)


def _decided(crf: CRF, xseq, d: float) -> bool:
    """Whether every weight vector within d (Euclidean) of ``crf``'s predicts what it
    does for ``xseq``. For w' = w + e, ||e|| <= d, and a labeling y, <w', F(y^) - F(y)>
    >= s(y^) - s(y) - d ||F(y^) - F(y)||_1, and the l1 norm is at most 2 sum_a |v_ta|
    at each position t where y differs from y^ plus 2 at each transition that differs:
    a cost that adds up along the chain. So y^ stays the prediction if no other labeling
    has s(y) + d cost(y) >= s(y^): the best such labeling is found by max-product on the
    chain with the cost added (through each (t, k) with k not y^_t, from the forward and
    backward maxima)."""
    model = crf.model_
    E, W = model.layout.emission(model.weights), model.layout.transition(model.weights)
    ids = {a: i for i, a in enumerate(model.attributes)}
    label = {lab: k for k, lab in enumerate(model.labels)}
    best = np.array([label[lab] for lab in crf.predict([xseq])[0]])
    T, K = len(xseq), len(model.labels)
    U, L = np.zeros((T, K)), np.zeros(T)
    for t, item in enumerate(xseq):
        for name, v in item_attributes(item):
            if name in ids:
                U[t] += v * E[ids[name]]
                L[t] += abs(v)
    off = np.ones((T, K), dtype=bool)
    off[np.arange(T), best] = False
    U = U + 2 * d * L[:, None] * off
    trans = W[None] + 2 * d * np.ones((T, K, K))
    trans[np.arange(1, T), best[:-1], best[1:]] -= 2 * d
    fwd, bwd = np.empty((T, K)), np.zeros((T, K))
    fwd[0] = U[0]
    for t in range(1, T):
        fwd[t] = U[t] + (fwd[t - 1][:, None] + trans[t]).max(axis=0)
    for t in range(T - 2, -1, -1):
        bwd[t] = (trans[t + 1] + (U[t + 1] + bwd[t + 1])[None]).max(axis=1)
    own = U[np.arange(T), best].sum() + W[best[:-1], best[1:]].sum()
    assert np.isclose(fwd[-1].max(), own) or fwd[-1].max() > own  # the unperturbed argmax
    return bool((fwd + bwd)[off].max(initial=-np.inf) < own)


def test_the_choice_is_grid_search_cv_s(corpus):
    """Same grid, folds and scorer (token accuracy, the CRF's score) as
    GridSearchCV(CRF()). Each point of CRFCV's paths and each of GridSearchCV's fits is
    certified to a relative gap of 1e-12, which puts their weights within d =
    sqrt(g / c2) + sqrt(g' / c2) of each other (c2 ||w||^2 makes the objective 2 c2-strongly
    convex). A test sequence's prediction can differ between them only where
    :func:`_decided` cannot rule it out; each split score may differ by those sequences'
    share of the tokens, no more. The chosen point must be GridSearchCV's."""
    X, y = corpus
    c1s, c2s = [0.0, 0.3], [0.1, 1.0]
    tight = 1e-12
    search = CRFCV(c1s=c1s, c2s=c2s, cv=3, epsilon=tight, path_epsilon=tight).fit(X, y)
    grid = GridSearchCV(CRF(epsilon=tight), {"c1": c1s, "c2": c2s}, cv=3).fit(X, y)
    r = search.cv_results_
    assert r["params"] == list(grid.cv_results_["params"])
    tolerance = np.zeros((len(r["params"]), 3))
    for k, (train, test) in enumerate(KFold(3).split(X)):
        n_tokens = sum(len(X[j]) for j in test)
        for i, point in enumerate(r["params"]):
            assert r[f"split{k}_status"][i] == "converged"
            assert r[f"split{k}_relative_gap"][i] <= tight
            cold = CRF(epsilon=tight, **point).fit([X[j] for j in train],
                                                   [y[j] for j in train])
            gap = cold.training_log_.last_iteration["gap"]
            d = math.sqrt(gap / point["c2"]) + math.sqrt(r[f"split{k}_gap"][i] / point["c2"])
            undecided = [j for j in test if not _decided(cold, X[j], d)]
            tolerance[i, k] = sum(len(X[j]) for j in undecided) / n_tokens
            assert abs(r[f"split{k}_test_score"][i]
                       - grid.cv_results_[f"split{k}_test_score"][i]) <= tolerance[i, k]
    assert np.mean(tolerance == 0) >= 0.75  # most cells certified equal outright
    assert (search.c1_, search.c2_) == (grid.best_params_["c1"], grid.best_params_["c2"])
    assert search.predict(X[:5]) == grid.predict(X[:5])


def _fold(X, y, k=0):
    attributes, labels = Vocabulary(), Vocabulary()
    enc = encode(X, y, attributes, labels, grow=True)
    train, test = list(KFold(3).split(X))[k]
    return make_fold(enc.seq, enc.zero_entries, attributes.strings(), labels.strings(),
                     train, test), train, test


def test_warm_and_cold_fits_of_a_point_reach_the_same_objective(corpus):
    """The second point of a path starts from the first's solution and stops at its
    certificate; a cold fit of it too. Both objectives are within their gaps of the
    optimum, hence of each other; the warm start begins nearer to it."""
    X, y = corpus
    fold, _, _ = _fold(X, y)
    config = CRF()._run_settings("sdca").config
    run = PathRun(config, 1000, 1e-6)

    def score(c1, c2, w):
        return 0.0

    for c1 in (0.0, 0.1):
        warm = fit_path(fold, [(c1, 0.3), (c1, 0.1)], run, score)[1]
        cold = fit_path(fold, [(c1, 0.1)], run, score)[0]
        assert warm.status == cold.status == "converged"
        assert abs(warm.loss - cold.loss) <= max(warm.gap, cold.gap)
        assert warm.start_gap < cold.start_gap


def test_a_fold_is_its_items_encoded_alone(corpus):
    """A fold's training split holds what encoding its items alone gives (the same
    attribute names and values per token, the same labels, the same zero-valued pairs),
    numbered otherwise; its test split keeps the attributes the training split knows."""
    X, y = corpus
    fold, train, test = _fold(X, y, k=1)
    alone_attrs, alone_labels = Vocabulary(), Vocabulary()
    alone = encode([X[i] for i in train], [y[i] for i in train], alone_attrs, alone_labels,
                   grow=True)
    assert sorted(fold.attributes) == sorted(alone_attrs.strings())
    assert sorted(fold.labels) == sorted(alone_labels.strings())

    def tokens(seq, names, label_names):
        out = []
        for t in range(seq.n_tokens):
            a, b = seq.attr_indptr[t], seq.attr_indptr[t + 1]
            values = seq.attr_values[a:b] if len(seq.attr_values) else np.ones(b - a)
            out.append((label_names[seq.labels[t]],
                        sorted(zip([names[i] for i in seq.attr_indices[a:b]],
                                   values.tolist(), strict=True))))
        return out

    assert tokens(fold.train, fold.attributes, fold.labels) == \
        tokens(alone.seq, alone_attrs.strings(), alone_labels.strings())
    assert sorted((fold.attributes[a], t) for a, t in fold.zero_entries.tolist()) == \
        sorted((alone_attrs.strings()[a], t) for a, t in alone.zero_entries.tolist())
    known = set(fold.attributes)
    enc_test = Vocabulary()
    seq_test = encode([X[i] for i in test], None, enc_test, Vocabulary(), grow=True).seq
    names = enc_test.strings()
    for t in range(seq_test.n_tokens):
        a, b = seq_test.attr_indptr[t], seq_test.attr_indptr[t + 1]
        want = sorted(n for n in (names[i] for i in seq_test.attr_indices[a:b]) if n in known)
        c, e = fold.test.attr_indptr[t], fold.test.attr_indptr[t + 1]
        assert sorted(fold.attributes[i] for i in fold.test.attr_indices[c:e]) == want


def test_the_path_order_steps_one_grid_step_at_a_time():
    order = path_order([0.5, 0.0, 0.1], [0.01, 1.0, 0.1])
    assert order[0] == (0.0, 1.0)
    assert sorted(order) == sorted((a, b) for a in (0.0, 0.1, 0.5) for b in (0.01, 0.1, 1.0))
    c1_rank = {v: i for i, v in enumerate((0.0, 0.1, 0.5))}
    c2_rank = {v: i for i, v in enumerate((1.0, 0.1, 0.01))}
    for (a, b), (c, d) in zip(order, order[1:], strict=False):
        assert abs(c1_rank[a] - c1_rank[c]) + abs(c2_rank[b] - c2_rank[d]) == 1
    for count in (1, 2, 3, 9, 20):
        pieces = split_path(order, count)
        assert sum(pieces, []) == order and all(pieces) and len(pieces) <= count


@given(st.lists(st.floats(1e-4, 10.0), min_size=1, max_size=8, unique=True),
       st.integers(1, 6))
@settings(max_examples=50, deadline=None)
def test_path_pieces_are_of_about_equal_expected_work(c2s, count):
    order = path_order([0.0, 0.1, 1.0], c2s)
    pieces = split_path(order, count)
    assert sum(pieces, []) == order and all(pieces)
    costs = [point_costs(piece).sum() for piece in pieces]
    dearest = point_costs(order).max()
    share = point_costs(order).sum() / min(count, len(order))
    # each cut is at the point boundary nearest its target, half a point off at most (a
    # point dearer than a share can merge two cuts: fewer pieces)
    if len(pieces) == min(count, len(order)):
        assert all(abs(c - share) <= dearest * (1 + 1e-9) for c in costs)


def test_a_point_costs_one_over_the_root_of_c2_and_c2_0_the_dearest():
    assert point_costs([(0.0, 0.01)])[0] == 10.0 and point_costs([(0.0, 0.0), (0.0, 0.25)]
                                                                  ).tolist() == [2.0, 2.0]


def test_default_grid_covers_the_tutorial_s_range():
    low, high = tutorial_range(0.05)
    assert math.isclose(low, 0.05 * -math.log(0.95)) and math.isclose(high,
                                                                      0.05 * -math.log(0.05))
    assert len(DEFAULT_C2S) == 7 and math.isclose(min(DEFAULT_C2S), low)
    assert math.isclose(max(DEFAULT_C2S), high)
    assert DEFAULT_C1S[0] == 0.0 and len(DEFAULT_C1S) == 8
    assert math.isclose(DEFAULT_C1S[1], 0.5 * -math.log(0.95))


def test_cv_results_carry_every_point_s_certificate(corpus):
    X, y = corpus
    search = CRFCV(c1s=[0.0, 0.2], c2s=[0.05, 0.5], cv=3, path_epsilon=1e-2).fit(X, y)
    r = search.cv_results_
    for k in range(3):
        assert list(r[f"split{k}_status"]) == ["converged"] * 4
        assert np.all(r[f"split{k}_relative_gap"] <= 1e-2)
        assert np.all(r[f"split{k}_gap"] > 0) and np.all(r[f"split{k}_epochs"] > 0)
    for key in ("mean_fit_time", "std_fit_time", "mean_score_time", "std_score_time",
                "mean_test_score", "std_test_score", "rank_test_score"):
        assert r[key].shape == (4,)
    assert list(r["param_c1"]) == [0.0, 0.0, 0.2, 0.2]
    assert list(r["param_c2"]) == [0.05, 0.5, 0.05, 0.5]
    assert search.best_score_ == r["mean_test_score"].max()
    assert r["rank_test_score"][search.best_index_] == 1
    assert search.best_estimator_.training_log_.last_iteration["relative_gap"] <= 3e-4


def test_coarse_to_fine_chooses_the_converged_search_s_point(corpus):
    """Every point to a loose path_epsilon, the 3 best fitted again to refine_epsilon:
    the choice is that of a search whose every point is converged, the refined
    candidates rank first with their tight fits' scores and certificates, the others keep
    their loose ones."""
    X, y = corpus
    grid = {"c1s": [0.0, 0.3], "c2s": [0.01, 0.1, 1.0], "cv": 3, "scoring": _f1(y)}
    converged = CRFCV(**grid, path_epsilon=1e-8, refine=0).fit(X, y)
    coarse = CRFCV(**grid, path_epsilon=0.3, refine=3, refine_epsilon=1e-8).fit(X, y)
    assert coarse.best_params_ == converged.best_params_
    r, full = coarse.cv_results_, converged.cv_results_
    refined = r["refined"]
    assert refined.sum() == 3 and not full["refined"].any()
    assert sorted(r["rank_test_score"][refined]) == [1, 2, 3]
    assert np.all(r["rank_test_score"][~refined] > 3)
    for k in range(3):
        assert np.all(r[f"split{k}_relative_gap"][refined] <= 1e-8)
        assert np.all(r[f"split{k}_relative_gap"][~refined] <= 0.3)
        assert np.any(r[f"split{k}_relative_gap"][~refined] > 1e-8)  # loose indeed
    # the refined scores are the converged search's (both certified to 1e-8)
    assert np.allclose(r["mean_test_score"][refined], full["mean_test_score"][refined],
                       atol=1e-3)
    assert coarse.best_score_ == r["mean_test_score"][refined].max()


@pytest.mark.parametrize("swap", [False, True])
def test_the_refit_beside_the_refined_fits_is_the_refit(corpus, monkeypatch, swap):
    """With two workers the loose leader is refitted beside the refined fits: kept when
    chosen (no refit after), else the choice is refitted after them; either way
    best_estimator_ is the plain fit at the chosen point, to the bit, with its params.
    ``swap`` makes the loose ranking put the second candidate first (the refined one
    then chooses another)."""
    X, y = corpus
    after = []
    real_refit, real_results = cv_module._refit, cv_module._results
    monkeypatch.setattr(cv_module, "_refit", lambda *a: after.append(a[0]) or real_refit(*a))
    calls = []

    def results(*args, **kwargs):
        out = real_results(*args, **kwargs)
        calls.append(out)
        if swap and len(calls) == 1:  # the loose ranking
            rank = out["rank_test_score"]
            first, second = np.argsort(rank, kind="stable")[:2]
            rank[first], rank[second] = rank[second], rank[first]
        return out

    monkeypatch.setattr(cv_module, "_results", results)
    search = CRFCV(c1s=[0.0, 0.3], c2s=[0.01, 0.1, 1.0], cv=3, scoring=_f1(y), n_jobs=2,
                   refine=2).fit(X, y)
    loose, final = calls[0], calls[-1]
    guess = search.cv_results_["params"][int(np.argmin(loose["rank_test_score"]))]
    assert len(after) == (0 if guess == search.best_params_ else 1)
    plain = CRF(**search.best_params_).fit(X, y)
    np.testing.assert_array_equal(search.best_estimator_.model_.weights, plain.model_.weights)
    assert search.best_estimator_.get_params() == plain.get_params()
    assert search.refit_time_ > 0 and final["refined"].sum() == 2


@pytest.mark.parametrize("name, value", [("refine", -1), ("refine", 1.5), ("refine", True),
                                         ("refine", "3"), ("refine_epsilon", -0.1),
                                         ("refine_epsilon", math.inf),
                                         ("path_epsilon", "0.1")])
def test_bad_refine_settings_are_refused(corpus, name, value):
    X, y = corpus
    with pytest.raises(ValueError, match=name):
        CRFCV(c1s=[0.0], c2s=[1.0], cv=2, **{name: value}).fit(X, y)


def test_delegation_clone_pickle_and_metrics(corpus, tmp_path):
    X, y = corpus
    search = CRFCV(c1s=[0.0], c2s=[0.1, 1.0], cv=3, scoring=scorers.flat_accuracy,
                   all_possible_transitions=True).fit(X, y)
    best = search.best_estimator_
    assert best.c2 == search.c2_ and best.all_possible_transitions is True
    assert search.predict(X[:3]) == best.predict(X[:3])
    assert search.predict_marginals(X[:2]) == best.predict_marginals(X[:2])
    assert search.predict_single(X[0]) == best.predict_single(X[0])
    assert search.classes_ == best.classes_
    assert search.score(X, y) == metrics.flat_accuracy_score(y, best.predict(X))
    again = pickle.loads(pickle.dumps(search))
    assert again.predict(X[:3]) == search.predict(X[:3])
    assert again.best_params_ == search.best_params_
    twin = clone(search)  # clone copies the scorer object: the same scorer, not it
    mine, its = twin.get_params(), search.get_params()
    assert repr(mine.pop("scoring")) == repr(its.pop("scoring"))
    assert mine == its
    with pytest.raises(NotFittedError):
        check_is_fitted(twin)
    for method in (twin.predict, twin.predict_marginals):  # its own message, not sklearn's
        with pytest.raises(NotFittedError, match="this CRFCV is not fitted yet: call fit"):
            method(X[:1])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        twin.score(X[:2], y[:2])
    assert twin.set_params(c2s=[0.5], min_freq=1.0).min_freq == 1.0
    params = CRFCV().get_params()
    assert set(params) == {"c1s", "c2s", "cv", "scoring", "refit", "n_jobs",
                           "path_epsilon", "refine", "refine_epsilon"} | (
        set(CRF().get_params()) - {"c1", "c2"})
    assert set(SOLVER_PARAMETERS) <= set(params)
    assert crfsdca.CRFCV is CRFCV


def test_unknown_parameters_are_refused():
    with pytest.raises(TypeError, match="c1s and c2s"):
        CRFCV(c2=0.1)
    with pytest.raises(TypeError, match="colour"):
        CRFCV(colour=1)


def test_refit_false_keeps_the_choice_and_predicts_nothing(corpus):
    X, y = corpus
    search = CRFCV(c1s=[0.0], c2s=[0.1, 1.0], cv=3, refit=False).fit(X, y)
    assert search.best_params_ == {"c1": search.c1_, "c2": search.c2_}
    assert not hasattr(search, "best_estimator_")
    with pytest.raises(AttributeError) as raised:
        search.predict(X[:1])
    # scikit-learn >= 1.4 raises its own error from ours (the traceback shows both);
    # 1.3 raises ours
    assert "refit=False" in f"{raised.value} {raised.value.__cause__}"
    assert not hasattr(search, "predict_marginals")


def test_splitters_groups_and_iterables(corpus):
    X, y = corpus
    groups = np.arange(len(X)) % 4
    by_group = CRFCV(c1s=[0.0], c2s=[0.3], cv=GroupKFold(4), refit=False)
    r = by_group.fit(X, y, groups=groups).cv_results_
    assert by_group.n_splits_ == 4 and "split3_test_score" in r
    splits = list(KFold(3).split(X))
    a = CRFCV(c1s=[0.0], c2s=[0.3], cv=splits, refit=False).fit(X, y).cv_results_
    b = CRFCV(c1s=[0.0], c2s=[0.3], cv=3, refit=False).fit(X, y).cv_results_
    np.testing.assert_array_equal(a["mean_test_score"], b["mean_test_score"])


@pytest.mark.parametrize("grid, message", [
    ({"c1s": [0.0, -0.1]}, "c1s holds -0.1"),
    ({"c2s": [0.1, float("nan")]}, "c2s holds nan"),
    ({"c2s": [0.1, float("inf")]}, "c2s holds inf"),
    ({"c2s": []}, "c2s is empty"),
    ({"c1s": []}, "c1s is empty"),
    ({"c2s": [0.0]}, "c2s holds 0.0"),
    ({"c2s": [0.1, 0.1]}, "c2s holds 0.1 twice"),
    ({"c2s": "0.1"}, "c2s must be a sequence"),
    ({"c1s": ["a"]}, "c1s must hold numbers"),
    ({"c1s": [0.1], "algorithm": "sag-nus"}, "sag-nus does not handle"),
    ({"path_epsilon": -1.0}, "path_epsilon must be"),
])
def test_bad_grids_are_refused_whole(corpus, grid, message):
    X, y = corpus
    search = CRFCV(c1s=[0.0], c2s=[0.1], cv=3).fit(X[:30], y[:30])
    with pytest.raises(ValueError, match=message):
        search.set_params(**grid).fit(X, y)
    _assert_unfitted(search)


def _assert_unfitted(search):
    with pytest.raises(NotFittedError):
        check_is_fitted(search)
    for name in ("cv_results_", "best_estimator_", "c1_", "c2_", "best_score_"):
        assert not hasattr(search, name)


def test_more_folds_than_sequences_is_one_error(corpus):
    X, y = corpus
    search = CRFCV(c1s=[0.0], c2s=[0.1], cv=5)
    with pytest.raises(ValueError, match="cv=5 folds need at least 5 sequences; X has 4"):
        search.fit(X[:4], y[:4])
    _assert_unfitted(search)
    with pytest.raises(ValueError, match="split 0 has 0 training"):
        search.set_params(cv=[(np.array([], dtype=int), np.arange(4))]).fit(X[:4], y[:4])
    _assert_unfitted(search)


def test_a_scorer_that_raises_is_one_error(corpus):
    X, y = corpus

    def broken(estimator, X, y):
        raise RuntimeError("no score today")

    search = CRFCV(c1s=[0.0], c2s=[0.1, 1.0], cv=3)
    with pytest.raises(ValueError, match=r"scoring raised RuntimeError on split 0 at "
                                         r"c1=0, c2=1: no score today"):
        search.set_params(scoring=broken).fit(X, y)
    _assert_unfitted(search)
    with pytest.raises(ValueError, match="one metric"):
        search.set_params(scoring={"a": scorers.flat_accuracy}).fit(X, y)


def test_shared_encoding_leaves_a_search_unchanged(corpus, monkeypatch):
    """Inside ``shared_encoding``, GridSearchCV's clones of a fold take the fold's
    encoding made once: 3 encodings instead of 12 (and the refit's), and the same
    results to the last bit."""
    X, y = corpus
    grid = {"c2": [0.1, 1.0], "c1": [0.0, 0.1]}
    plain = GridSearchCV(CRF(), grid, cv=3).fit(X, y)
    calls = []
    real = shared_module.encode

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(shared_module, "encode", counted)
    with shared_encoding():
        shared = GridSearchCV(CRF(), grid, cv=3).fit(X, y)
    assert sorted(calls) == [60, 60, 60, 90]
    for key in ("mean_test_score", "split0_test_score", "split2_test_score"):
        np.testing.assert_array_equal(shared.cv_results_[key], plain.cv_results_[key])
    np.testing.assert_array_equal(shared.best_estimator_.model_.weights,
                                  plain.best_estimator_.model_.weights)
    calls.clear()
    CRF().fit(X, y)  # outside the block: encoded every time, as always
    CRF().fit(X, y)
    assert calls == [90, 90]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_search_over_a_corpus_is_the_search_over_its_items(corpus, tmp_path, n_jobs):
    """``CRFCV().fit(corpus)`` cuts its folds from the corpus's encoding and refits on the
    corpus: every score, certificate and the refit to the bit those of the search over
    the items (with two workers, the refit beside the refined fits gets the corpus by
    its folder); a scorer sees the corpus's labels; y with a corpus is refused."""
    X, y = corpus
    stored = crfsdca.Corpus.create(tmp_path / "c", X, y)
    params = {"c1s": [0.0, 0.3], "c2s": [0.01, 0.1, 1.0], "cv": 3, "scoring": _f1(y),
              "n_jobs": n_jobs, "refine": 2}
    items = CRFCV(**params).fit(X, y)
    encoded = CRFCV(**params).fit(stored)
    for key in ("mean_test_score", "split1_test_score", "split2_gap", "split0_epochs",
                "rank_test_score", "refined"):
        np.testing.assert_array_equal(encoded.cv_results_[key], items.cv_results_[key])
    assert encoded.best_params_ == items.best_params_
    np.testing.assert_array_equal(encoded.best_estimator_.model_.weights,
                                  items.best_estimator_.model_.weights)
    assert encoded.predict(X[:3]) == items.predict(X[:3])
    seen = []
    CRFCV(c1s=[0.0], c2s=[0.1], cv=2, refit=False, refine=0,
          scoring=lambda est, X_test, y_test: seen.append((X_test, y_test)) or 0.0
          ).fit(stored)
    assert [i for X_test, _ in seen for i in X_test] == list(range(len(X)))
    assert [s for _, y_test in seen for s in y_test] == y
    with pytest.raises(ValueError, match="the labels are the corpus's own"):
        CRFCV(c1s=[0.0], c2s=[0.1], cv=2).fit(stored, y)
    assert pickle.loads(pickle.dumps(stored)).sequences.n_tokens == stored.sequences.n_tokens


@pytest.mark.slow
def test_paths_on_a_dask_cluster_equal_the_local_ones(corpus):
    """Paths through joblib's Dask backend on a LocalCluster of two process workers give
    the local run's results (both with two workers, so the same paths)."""
    distributed = pytest.importorskip("distributed")
    joblib = pytest.importorskip("joblib")
    X, y = corpus
    params = {"c1s": [0.0, 0.1], "c2s": [0.05, 0.5], "cv": 3, "scoring": _f1(y)}
    local = CRFCV(n_jobs=2, **params).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster), joblib.parallel_backend("dask"):
        remote = CRFCV(n_jobs=-1, **params).fit(X, y)
    assert remote.best_params_ == local.best_params_
    for k in range(3):
        np.testing.assert_array_equal(remote.cv_results_[f"split{k}_test_score"],
                                      local.cv_results_[f"split{k}_test_score"])
        np.testing.assert_array_equal(remote.cv_results_[f"split{k}_gap"],
                                      local.cv_results_[f"split{k}_gap"])
    assert remote.predict(X[:5]) == local.predict(X[:5])


def test_ctrl_c_during_a_point_stops_the_whole_search(corpus, monkeypatch):
    """A point's training keeps its weights on Ctrl-C; the search raises it again and
    fits nothing more (it went on to the next points and folds before)."""
    X, y = corpus
    calls = ctrl_c_at_run(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        CRFCV(c1s=[0.0], c2s=[0.1, 1.0], cv=2, n_jobs=1).fit(X, y)
    assert calls["n"] == 3


def test_fit_takes_pairs_as_crf_fit_does(corpus):
    X, y = corpus
    grid = {"c1s": [0.0], "c2s": [0.3], "cv": 2, "refit": False}
    lists = CRFCV(**grid).fit(X[:40], y[:40]).cv_results_
    pairs = CRFCV(**grid).fit(zip(X[:40], y[:40], strict=True)).cv_results_
    assert pairs["mean_test_score"] == lists["mean_test_score"]
    with pytest.raises(ValueError, match="with y None, X must yield .xseq, yseq. pairs"):
        CRFCV(**grid).fit(X[:40])


def test_ctrl_c_stops_a_scikit_learn_search_over_crf(corpus, monkeypatch):
    """CRF.fit keeps its weights and raises Ctrl-C again, as sklearn-crfsuite's fit
    raises it: GridSearchCV stops there instead of fitting its other points."""
    X, y = corpus
    calls = ctrl_c_at_run(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        GridSearchCV(CRF(), {"c2": [0.1, 1.0]}, cv=2, n_jobs=1).fit(X, y)
    assert calls["n"] == 3


@pytest.mark.parametrize("given_tune", [None, True])
def test_the_paths_run_sequential_sdca_with_kappa_fixed_unless_given(corpus, monkeypatch,
                                                                     given_tune):
    """The paths' fits take pipeline=False and catalyst_tune=False where the user left
    them alone (their warm-started points run a few rounds each); a given value runs."""
    seen = []
    real = cv_module.PathRun

    def spy(config, *args, **kwargs):
        seen.append(dict(config.options))
        return real(config, *args, **kwargs)

    monkeypatch.setattr(cv_module, "PathRun", spy)
    X, y = corpus
    params = {} if given_tune is None else {"catalyst_tune": given_tune}
    search = CRFCV(c1s=[0.0], c2s=[0.1], cv=2, max_iterations=5, **params).fit(X, y)
    assert seen and all(o["pipeline"] is False for o in seen)
    assert all(o["catalyst_tune"] is bool(given_tune) for o in seen)
    refit = search.best_estimator_.model_.options["solver"]  # the estimator's defaults
    assert refit["catalyst_tune"] is True and refit["pipeline"] is True
