"""crfsdca.CRF, modelled on sklearn-crfsuite's own test suite (tests/test_crf.py there):
the same toy sequence with real-valued and string attributes, for every algorithm."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from helpers.corpora import small_corpus
from helpers.interrupts import ctrl_c_at_run
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score

from crfsdca import CRF
from crfsdca.errors import ConfigError, CrfsdcaError
from crfsdca.solvers.registry import ALGORITHMS, SOLVERS, canonical_algorithm


@pytest.fixture
def xseq():
    return [
        {"walk": 1, "shop": 0.5},
        {"walk": 1},
        {"walk": 1, "clean": 0.5},
        {"shop": 0.5, "clean": 0.5},
        {"walk": 0.5, "clean": 1},
        {"clean": 1, "shop": 0.1},
        {"walk": 1, "shop": 0.5},
        {},
        {"clean": 1},
        {"солнце": "не светит".encode(), "clean": 1},
    ]


@pytest.fixture
def yseq():
    return ["sunny", "sunny", "sunny", "rainy", "rainy", "rainy", "sunny", "sunny", "rainy",
            "rainy"]


def expected(algorithm, X, y):
    """What a fit on (X, y) should predict on X: y for the solvers that run to the
    optimum; for CRFsuite's online trainers, what CRFsuite's own trainer predicts (its
    averaged perceptron mislabels the toy sequence, and so must ours)."""
    if SOLVERS[algorithm].converges:
        return y
    pycrfsuite = pytest.importorskip("pycrfsuite")
    import tempfile

    trainer = pycrfsuite.Trainer(algorithm=canonical_algorithm(algorithm), verbose=False)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    with tempfile.TemporaryDirectory() as tmp:
        trainer.train(f"{tmp}/m")
        tagger = pycrfsuite.Tagger()
        tagger.open(f"{tmp}/m")
        return [tagger.tag(xseq) for xseq in X]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_crf(xseq, yseq, algorithm):
    crf = CRF(algorithm=algorithm)
    crf.fit([xseq], [yseq])
    assert crf.predict([xseq]) == expected(algorithm, [xseq], [yseq])
    assert crf.predict_single(xseq) == expected(algorithm, [xseq], [yseq])[0]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("use_dev", [True, False])
def test_crf_verbose(xseq, yseq, algorithm, use_dev, capsys):
    crf = CRF(algorithm=algorithm, verbose=True)
    dev = ([xseq], [yseq]) if use_dev else (None, None)
    crf.fit([xseq, xseq], [yseq, yseq], *dev)
    assert crf.predict([xseq]) == expected(algorithm, [xseq, xseq], [yseq, yseq])[:1]
    out = capsys.readouterr().out
    assert "solver state" in out and "loss" in out
    rows = crf.training_log_.iterations
    assert len(rows) >= 2 and all("loss" in r and "gap" in r for r in rows)
    assert ("dev_accuracy" in rows[-1]) == use_dev
    if use_dev:
        accuracy = np.mean(np.array(crf.predict([xseq])[0]) == np.array(yseq))
        assert "dev accuracy" in out and rows[-1]["dev_accuracy"] == accuracy


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_crf_marginals(xseq, yseq, algorithm):
    crf = CRF(algorithm=algorithm)
    crf.fit([xseq], [yseq])
    marginals = crf.predict_marginals([xseq])
    assert len(marginals) == 1 and len(marginals[0]) == len(yseq)
    for m in marginals[0]:
        assert set(m) == set(crf.classes_)
        assert abs(sum(m.values()) - 1.0) < 1e-9
    assert crf.predict_marginals_single(xseq) == marginals[0]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_predict_without_fit(xseq, algorithm):
    crf = CRF(algorithm=algorithm)
    with pytest.raises(NotFittedError):
        crf.predict([xseq])
    assert not hasattr(crf, "classes_")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_crf_score(xseq, yseq, algorithm):
    crf = CRF(algorithm=algorithm)
    crf.fit([xseq], [yseq])
    pred = expected(algorithm, [xseq], [yseq])[0]
    assert crf.score([xseq], [yseq]) == np.mean(np.array(pred) == np.array(yseq))
    wrong = [["rainy"] * len(yseq)]
    assert crf.score([xseq], wrong) == pred.count("rainy") / len(yseq)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_crf_pickling(xseq, yseq, algorithm):
    crf = CRF(algorithm=algorithm)
    crf.fit([xseq], [yseq])
    crf2 = pickle.loads(pickle.dumps(crf, protocol=pickle.HIGHEST_PROTOCOL))
    assert crf2.predict([xseq]) == expected(algorithm, [xseq], [yseq])
    assert crf2.algorithm == algorithm
    np.testing.assert_array_equal(crf2.model_.weights, crf.model_.weights)


def test_crf_model_filename(xseq, yseq, tmp_path):
    path = tmp_path / "foo.model"
    crf = CRF(model_filename=str(path))
    crf.fit([xseq], [yseq])
    assert path.exists()
    crf2 = CRF(model_filename=str(path))  # loads the model from the file
    assert crf2.score([xseq], [yseq]) == 1.0
    np.testing.assert_array_equal(crf2.model_.weights, crf.model_.weights)
    crf3 = pickle.loads(pickle.dumps(crf, protocol=pickle.HIGHEST_PROTOCOL))
    assert crf3.score([xseq], [yseq]) == 1.0
    assert crf2.classes_ == crf.classes_ == ["sunny", "rainy"]


def test_cross_validation(xseq, yseq):
    scores = cross_val_score(CRF(), [xseq] * 20, [yseq] * 20, n_jobs=2, cv=5)
    assert scores.mean() == 1.0


def test_grid_search_and_clone(xseq, yseq):
    """clone keeps the parameters set and those left unset; a search fits in two worker
    processes (with the float64 store: a float32 one would make both workers compile its
    kernels, a minute of ``make test``, for what clone alone checks of it)."""
    crf = CRF(sampler="uniform", store_dtype="float32")
    assert clone(crf).get_params() == crf.get_params()
    assert crf.get_params()["sampler"] == "uniform" and crf.get_params()["lbfgs_memory"] is None
    crf = CRF(sampler="uniform", init_c=5.0)
    search = GridSearchCV(crf, {"c2": [0.1, 1.0], "non_uniformity": [0.5, None]}, cv=2,
                          n_jobs=2)
    search.fit([xseq] * 4, [yseq] * 4)
    assert search.best_score_ == 1.0
    assert search.best_estimator_.score([xseq], [yseq]) == 1.0
    assert search.best_estimator_.get_params()["init_c"] == 5.0


def test_crf_dev_bad_arguments(xseq, yseq):
    crf = CRF()
    X, y = [xseq] * 20, [yseq] * 20
    with pytest.raises(ValueError, match="both X_dev and y_dev"):
        crf.fit(X, y, X)
    with pytest.raises(ValueError, match="both X_dev and y_dev"):
        crf.fit(X, y, y_dev=y)
    with pytest.raises(ValueError, match="20 sequences but y has 19"):
        crf.fit(X, y[:-1])
    with pytest.raises(ValueError, match="items but"):
        crf.fit([xseq], [yseq[:-1]])


def test_bad_parameters(xseq, yseq):
    with pytest.raises(ConfigError, match="oeg does not handle an L1 term .* use sdca or lbfgs"):
        CRF(algorithm="oeg", c1=0.1).fit([xseq], [yseq])
    with pytest.raises(ValueError, match="c1 must be a finite number >= 0"):
        CRF(c1=-1).fit([xseq], [yseq])
    with pytest.raises(ValueError, match="unknown algorithm 'sag'"):
        CRF(algorithm="sag").fit([xseq], [yseq])
    with pytest.raises(ConfigError, match="parameter of sdca, not of algorithm 'lbfgs'"):
        CRF(algorithm="lbfgs", sampler="gap").fit([xseq], [yseq])
    with pytest.raises(ConfigError, match="non_uniformity"):
        CRF(non_uniformity=2.0).fit([xseq], [yseq])
    with pytest.raises(TypeError, match="unexpected"):
        CRF(no_such_option=1)


def test_fitted_attributes(xseq, yseq):
    crf = CRF(c2=0.01)
    crf.fit([xseq], [yseq])
    assert crf.classes_ == ["sunny", "rainy"]
    # every attribute occurs at a token of each label, so each has nonzero state weights
    assert set(crf.attributes_) == {"walk", "shop", "clean", "солнце:не светит"}
    assert crf.num_attributes_ == 4
    assert crf.state_features_[("walk", "sunny")] > 0
    assert set(crf.transition_features_) == {("sunny", "sunny"), ("sunny", "rainy"),
                                             ("rainy", "rainy"), ("rainy", "sunny")}
    assert crf.size_ > 0
    # CRFsuite's default feature set: no (attribute, label) pair unseen in training
    assert ("солнце:не светит", "sunny") not in crf.state_features_


def test_memory_is_checked_before_allocating(xseq, yseq, monkeypatch):
    from crfsdca.runtime import memory

    monkeypatch.setattr(memory, "available", lambda: (100, "test limit"))
    with pytest.raises(CrfsdcaError, match="training sdca needs about .* more than the .* "
                                           "left .test limit.; store_dtype='float32'"):
        CRF().fit([xseq], [yseq])


def test_interrupt_keeps_the_last_weights(xseq, yseq, monkeypatch):
    ctrl_c_at_run(monkeypatch, 3)
    crf = CRF(max_iterations=50)
    with pytest.raises(KeyboardInterrupt):  # raised again, as sklearn-crfsuite's fit does
        crf.fit([xseq] * 3, [yseq] * 3)
    assert crf.model_.training["status"] == "interrupted"  # the weights reached, kept
    assert np.any(crf.model_.weights != 0)
    assert crf.predict([xseq]) == crf.predict([xseq])


def test_budget_and_time_limit(xseq, yseq):
    crf = CRF(epsilon=0, max_iterations=2).fit([xseq] * 5, [yseq] * 5)
    assert crf.training_log_.last_iteration["epoch"] == 2.0
    assert crf.model_.training["status"] == "budget"
    crf = CRF(epsilon=0, max_iterations=100, max_seconds=1e-9).fit([xseq] * 5, [yseq] * 5)
    assert crf.model_.training["status"] == "time_limit"


def test_every_algorithm_reaches_the_same_certified_optimum():
    X, y = small_corpus(12)
    fits = {a: CRF(algorithm=a, epsilon=1e-8).fit(X, y) for a in ALGORITHMS
            if SOLVERS[a].converges}
    losses = {a: crf.training_log_.last_iteration["loss"] for a, crf in fits.items()}
    best = min(losses.values())
    for a, crf in fits.items():
        assert crf.model_.training["status"] == "converged", a
        assert losses[a] == pytest.approx(best, rel=2e-8), a
        np.testing.assert_allclose(crf.model_.weights, fits["sdca"].model_.weights, atol=1e-3)


def test_elastic_net_matches_python_crfsuite_owlqn():
    """c1 > 0: the same objective as CRFsuite's OWL-QN, at both solutions."""
    from crfsdca.reproduction.crfsuite_baseline import tracing_trainer

    X, y = small_corpus(12)
    c1, c2 = 0.5, 0.1
    crf = CRF(c1=c1, c2=c2, epsilon=1e-10, max_iterations=2000).fit(X, y)
    assert crf.model_.training["status"] == "converged"
    rows: list[dict] = []
    trainer = tracing_trainer(rows)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    trainer.set_params({"c1": c1, "c2": c2, "epsilon": 1e-12, "delta": 0.0,
                        "max_iterations": 1000})
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        trainer.train(f"{tmp}/m.crfsuite")
    ours = crf.training_log_.last_iteration["loss"]
    assert ours == pytest.approx(rows[-1]["loss"], rel=1e-6)
    assert ours <= rows[-1]["loss"] + 5e-7  # CRFsuite logs its loss with 6 decimals
    assert 0 < np.count_nonzero(crf.model_.weights) < np.count_nonzero(
        CRF(c2=c2).fit(X, y).model_.weights)


def test_the_log_has_no_rows_within_the_first_epoch(xseq, yseq):
    """The library's log starts at epoch 0, then one row per epoch: the rows at 0.1, 0.25
    and 0.5 epochs of the reproduction's traces cost a pass each and are not taken."""
    crf = CRF(max_iterations=3, epsilon=0).fit([xseq] * 20, [yseq] * 20)
    assert [r["epoch"] for r in crf.training_log_] == [0.0, 1.0, 2.0, 3.0]


def test_signature_lists_every_solver_option_once():
    """scikit-learn reads the parameters from the signature: every option of every solver
    table is one keyword-only parameter, None by default (the table holds the default)."""
    import inspect

    from crfsdca.estimator import solver_parameters

    params = inspect.signature(CRF).parameters
    keyword_only = {k: p.default for k, p in params.items() if p.kind is p.KEYWORD_ONLY}
    assert keyword_only == solver_parameters()
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
    assert set(CRF().get_params()) == set(params)


def test_training_log_says_what_ran_and_where_the_time_went():
    """The log names the solver and its resolved options, the seconds of the fit's parts
    (what benchmarks read instead of patching library functions) and the solver's counts."""
    from crfsdca.cli.precompile import tiny_data

    X, y = tiny_data()
    crf = CRF(c2=0.1, sampler="uniform").fit(X, y)
    log = crf.training_log_
    assert log.method["solver"] == "sdca" and log.method["sampler"] == "uniform"
    assert list(log.phases) == ["encode", "feature_set", "problem", "setup", "solver"]
    assert all(v >= 0 for v in log.phases.values())
    assert log.phases["solver"] == crf.model_.training["seconds"] > 0
    assert log.counters["updates"] >= len(X) * (log.last_iteration["epoch"] - 1)
    assert log.counters["oracle_fb"] >= log.counters["updates"]
    lbfgs = CRF(algorithm="lbfgs", c2=0.1, max_iterations=5).fit(X, y).training_log_
    assert lbfgs.method["solver"] == "lbfgs" and "cycles_oracle" not in lbfgs.counters


@pytest.mark.parametrize("algorithm", ["sdca", "lbfgs"])
def test_a_stream_trains_the_model_of_the_lists(algorithm, monkeypatch):
    import crfsdca.data.stream as stream  # the chunk size, made small for this corpus

    monkeypatch.setattr(stream, "CHUNK_TOKENS", 7)
    X, y = small_corpus(n=40, seed=3)
    weights = np.linspace(0.5, 2.0, len(X))
    fit = dict(c1=0.01, c2=0.1, algorithm=algorithm, random_state=2)
    lists = CRF(**fit).fit(X, y, sample_weight=weights)
    for streamed in (CRF(**fit).fit(iter(X), (lab for lab in y), sample_weight=weights),
                     CRF(**fit).fit(zip(X, y, strict=True), sample_weight=weights)):
        assert streamed.model_.attributes == lists.model_.attributes
        assert streamed.model_.labels == lists.model_.labels
        assert np.array_equal(streamed.model_.weights, lists.model_.weights)
        assert [(r["epoch"], r["loss"], r.get("gap")) for r in streamed.training_log_] == \
            [(r["epoch"], r["loss"], r.get("gap")) for r in lists.training_log_]


def test_a_stream_continues_and_is_checked():
    X, y = small_corpus(n=20, seed=4)
    crf = CRF(c2=0.1).fit(iter(X[:10]), iter(y[:10]))
    crf.partial_fit(zip(X[10:], y[10:], strict=True))
    whole = CRF(c2=0.1).fit(X[:10], y[:10]).partial_fit(X[10:], y[10:])
    assert np.array_equal(crf.model_.weights, whole.model_.weights)
    with pytest.raises(ValueError, match="y has more than 3"):
        CRF().fit(iter(X[:3]), iter(y[:4]))
    with pytest.raises(ValueError, match="sample_weight"):
        CRF().fit(zip(X, y, strict=True), sample_weight=[1.0] * 3)
    with pytest.raises(ValueError, match="no training sequences"):
        CRF().fit(iter(()), iter(()))


def test_verbose_prints_each_epoch_once(xseq, yseq, capsys):
    """The last row, made again where the run ends (Catalyst's x_k), is not printed twice
    when it says the same."""
    CRF(verbose=True, max_iterations=2).fit([xseq] * 5, [yseq] * 5)
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.startswith("epoch")]
    assert [line.split()[1] for line in lines] == ["0.00", "1.00", "2.00"], lines
