"""Bad input to ``crfsdca.CRF``, as users try it: parameters, items, output paths,
divergence, threads. Each case checks the exception (a standard kind: ValueError,
TypeError, OSError subclasses) and its message, and that nothing is left behind."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.inputs import X, Y

from crfsdca import CRF
from crfsdca.errors import ConfigError, DivergedError, OutputError
from crfsdca.model_file import load_model

# ------------------------------------------------------------------------- the estimator

@pytest.mark.parametrize("params, kind, message", [
    ({"c2": -1}, ValueError, "c2 must be a finite number >= 0"),
    ({"c2": float("nan")}, ValueError, "c2 must be a finite number >= 0"),
    ({"c1": -1}, ValueError, "c1 must be a finite number >= 0"),
    ({"c1": float("nan")}, ValueError, "c1 must be a finite number >= 0, got nan"),
    ({"c2": "abc"}, ValueError, "c2 must be a finite number >= 0, got 'abc'"),
    ({"min_freq": float("nan")}, ValueError, "min_freq must be a finite number >= 0"),
    ({"epsilon": "a"}, ValueError, "epsilon must be a number or None, got 'a'"),
    ({"max_iterations": "10"}, ValueError, "max_iterations must be a number or None"),
    ({"max_seconds": "5"}, ValueError, "max_seconds must be a number or None"),
    ({"random_state": "x"}, ValueError, "random_state must be an int, a numpy RandomState"),
    ({"c2": 0}, ConfigError, "sdca needs an L2 term"),
    ({"algorithm": "oeg", "c1": 0.5}, ConfigError, "oeg does not handle an L1 term"),
    ({"algorithm": "nope"}, ConfigError, "unknown algorithm 'nope'"),
    ({"threads": 0}, ConfigError, "threads must be a positive integer"),
    ({"epsilon": -1}, ConfigError, "epsilon must be >= 0"),
    ({"max_iterations": 0}, ConfigError, "max_iterations must be a finite number > 0"),
    ({"max_iterations": float("inf")}, ConfigError, "max_iterations must be a finite number"),
    ({"algorithm": "lbfgs", "max_iterations": float("inf")}, ConfigError,
     "max_iterations must be a finite number"),
    ({"algorithm": "lbfgs", "max_iterations": 2.5}, ConfigError,
     "max_iterations counts lbfgs's iterations: a whole number, got 2.5"),
    ({"num_memories": 3}, ConfigError, "num_memories is a parameter of lbfgs"),
    ({"algorithm": "lbfgs", "linesearch": "Fast"}, ConfigError, "linesearch: expected one of"),
    ({"algorithm": "lbfgs", "num_memories": 0}, ConfigError, "num_memories: expected a value"),
    ({"trainer_cls": object}, ConfigError, "trainer_cls"),
    ({"model_format": "xml", "model_filename": "m"}, ConfigError, "unknown model format"),
    ({"save_dual": True}, ConfigError, "save_dual writes the dual state beside the model"),
])
def test_estimator_parameters(params, kind, message):
    with pytest.raises(kind, match=message):
        CRF(**params).fit(X, Y)


@pytest.mark.parametrize("X_bad, message", [
    ([[{"w": float("nan")}]], r"sequence 0, item 0: attribute 'w' has weight nan"),
    ([[{"w": 1.0}, {"v": float("inf")}]], r"sequence 0, item 1: attribute 'v' has weight inf"),
    ([[{"w": "x\udcff"}]], "is not valid Unicode"),
    ([[{"w": None}]], "a value must be a str"),
    ([[["ok", 3]]], "an attribute name must be a str"),
    ([[]], "sequence 0 has 0 items but 1 labels"),
    (["not a list of items"], "expected a list of items"),
])
def test_estimator_data(X_bad, message):
    y = [["L"] * max(len(x), 1) if isinstance(x, list) else ["L"] for x in X_bad]
    with pytest.raises(ValueError, match=message):
        CRF().fit(X_bad, y)


def test_names_end_at_a_nul_as_in_crfsuite(tmp_path):
    """python-crfsuite hands every name to CRFsuite as a C string, which ends at its first
    NUL: ``a\\0b`` and ``a\\0c`` are the attribute ``a``, ``\\0z`` the empty one, ``L\\0x``
    the label ``L``, in training and in tagging alike (sklearn-crfsuite trains on them and
    predicts ``L``). The same names as python-crfsuite's model, where it is installed."""
    X = [[{"a\0b": 1.0, "w": 1.0}, {"a\0c": 1.0}], [{"x\0": 1.0}, {"\0z": 1.0}],
         [["a\0d", "w"], ["q\0"]]]
    y = [["A", "L\0x"], ["L\0y", "A"], ["A", "L"]]
    crf = CRF(c2=0.1, max_iterations=20).fit(X, y)
    assert crf.classes_ == ["A", "L"]
    assert crf.model_.attributes == ["a", "w", "x", "", "q"]
    for xseq in ([{"a\0zzz": 1.0}, {"w\0": 2.0}], [["a\0", "w\0w"], ["\0"]]):
        plain = [{k.partition("\0")[0]: v for k, v in item.items()} if isinstance(item, dict)
                 else [k.partition("\0")[0] for k in item] for item in xseq]
        assert crf.predict([xseq]) == crf.predict([plain]) == [crf.predict_single(plain)]
        assert crf.predict_single(xseq) == crf.predict_single(plain)
        np.testing.assert_allclose(
            [[m[k] for k in crf.classes_] for m in crf.predict_marginals_single(xseq)],
            [[m[k] for k in crf.classes_] for m in crf.predict_marginals_single(plain)])
    pycrfsuite = pytest.importorskip("pycrfsuite")
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    trainer.set_params({"c2": 0.1, "max_iterations": 20, "feature.possible_states": True})
    trainer.train(str(tmp_path / "nul.crfsuite"))
    theirs = load_model(tmp_path / "nul.crfsuite")
    assert sorted(theirs.labels) == crf.classes_
    assert sorted(theirs.attributes) == sorted(crf.model_.attributes)


@pytest.mark.parametrize("where", ["under_file", "directory", "unwritable"])
def test_output_paths_are_checked_before_training(tmp_path, where, unwritable_dir,
                                                  monkeypatch):
    target = {"under_file": tmp_path / "file.txt" / "m.model", "directory": tmp_path,
              "unwritable": unwritable_dir / "m.model"}[where]
    (tmp_path / "file.txt").write_text("x")
    calls = []
    import crfsdca.training.learn

    monkeypatch.setattr(crfsdca.training.learn, "learn", lambda *a, **k: calls.append(1))
    with pytest.raises(OutputError):
        CRF(model_filename=str(target)).fit(X, Y)
    assert not calls  # refused before any training


def test_divergence_raises_and_writes_nothing(tmp_path):
    model = tmp_path / "m.model"
    X_big = [[{"w": 1e100}, {"v": -1e100}]] * 4  # taken (<= 1e150), but scores overflow
    with pytest.raises(DivergedError, match="diverged .*scale them to about 1"):
        CRF(model_filename=str(model)).fit(X_big, [["A", "B"]] * 4)
    assert not model.exists() and not list(tmp_path.iterdir())


def test_threads_above_the_cores_are_capped_with_a_warning():
    with pytest.warns(RuntimeWarning, match="threads=1000 is more than the"):
        crf = CRF(threads=1000, max_iterations=3, epsilon=0).fit(X, Y)
    assert crf.predict(X[:1]) == Y[:1]




def test_what_cannot_train_is_refused_before_training():
    """A c2 so small that SDCA's weights (1/c2) overflow, and an attribute value whose
    squares overflow, get one line before any epoch (CRFsuite trains the first to the
    L-BFGS answer and the second to a model that predicts one label)."""
    from crfsdca.cli.precompile import tiny_data

    X, y = tiny_data(20)
    with pytest.raises(ConfigError, match=r"c2 = 1e-300 is too small for sdca.*'lbfgs'"):
        CRF(c2=1e-300).fit(X, y)
    big = [[{**item, "big": 1e300} for item in xseq] if isinstance(xseq[0], dict) else xseq
           for xseq in X]
    with pytest.raises(ValueError, match=r"sequence 0, item 0, attribute 'big': value "
                                         r"1e\+300 is too large"):
        CRF().fit(big, y)
    assert CRF(algorithm="lbfgs", c2=1e-300, max_iterations=5).fit(X, y).predict(X[:1])
    assert CRF(c2=1e-6, max_iterations=2).fit(X, y).training_log_.last_iteration["epoch"] == 2


def test_none_is_crfsuite_s_default_for_c1_c2_and_min_freq():
    """sklearn-crfsuite leaves a parameter that is None unset: CRFsuite's default then."""
    unset = CRF(c1=None, c2=None, min_freq=None, max_iterations=5).fit(X, Y)
    defaults = CRF(c1=0.0, c2=1.0, min_freq=0.0, max_iterations=5).fit(X, Y)
    assert np.array_equal(unset.model_.weights, defaults.model_.weights)


def test_a_label_that_is_no_string_is_called_a_label():
    with pytest.raises(ValueError, match="sequence 0: a label must be a str or bytes, got int 1"):
        CRF().fit([[{"w": "a"}, {"w": "b"}]], [[1, 2]])


def test_labels_forgotten_on_sequences_of_two_items_say_so():
    """Sequences of two items look like (xseq, yseq) pairs without y."""
    with pytest.raises(ValueError, match="its first element is a dict, an item: pass the "
                                         "labels as y"):
        CRF().fit([[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "d"}]])


def test_empty_training_sequences_are_left_out_as_sklearn_crfsuite_does():
    """CRFsuite leaves sequences without items out of training: sklearn-crfsuite fits
    with them, to the model it fits without them. Here too, from lists and from a stream
    with its weights."""
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    with_empty = [[]] + X + [[]], [[]] + Y + [[]]
    theirs = sklearn_crfsuite.CRF(max_iterations=5).fit(*with_empty)
    assert theirs.state_features_ == sklearn_crfsuite.CRF(max_iterations=5).fit(
        X, Y).state_features_
    plain = CRF(max_iterations=5).fit(X, Y).model_.weights
    assert np.array_equal(CRF(max_iterations=5).fit(*with_empty).model_.weights, plain)
    pairs = iter(list(zip(*with_empty, strict=True)))
    streamed = CRF(max_iterations=5).fit(pairs, sample_weight=[9.0] + [1.0] * len(X) + [9.0])
    assert np.array_equal(streamed.model_.weights, plain)
    with pytest.raises(ValueError, match="no training sequences: every sequence is empty"):
        CRF().fit([[], []], [[], []])


def test_sequences_given_as_iterators_are_read_once_and_empty_ones_left_out():
    """A sequence may be any iterable of items, a generator too: an empty one is left out
    as an empty list is (it was kept, then refused as empty), and the others are read
    once, not consumed by the check before their encoding."""
    plain = CRF(max_iterations=5).fit(X, Y).model_.weights
    for lead in ([], [iter([])]):
        Xi = lead + [iter(x) for x in X]
        Yi = [[]] * len(lead) + [iter(t) for t in Y]
        assert np.array_equal(CRF(max_iterations=5).fit(Xi, Yi).model_.weights, plain)
    with pytest.raises(ValueError, match="sequence 0 has 0 items but 1 labels"):
        CRF(max_iterations=5).fit([iter([])] + X, [iter(["D"])] + Y)
    from crfsdca import CRFCV

    searches = [CRFCV(c1s=[0], c2s=[0.1, 1.0], cv=3, max_iterations=5, random_state=0).fit(
        [wrap(x) for x in X], [wrap(t) for t in Y]) for wrap in (list, iter)]
    assert searches[0].cv_results_["mean_test_score"].tolist() == \
        searches[1].cv_results_["mean_test_score"].tolist()


def test_empty_sequences_are_left_out_of_dev_sets_corpora_and_searches(tmp_path):
    """sklearn-crfsuite takes an X_dev with empty sequences (they hold no token to score),
    and scikit-learn's searches over it take empty training sequences: the dev scores, a
    corpus and CRFCV's choice are here those of the data without them."""
    from sklearn.model_selection import GroupKFold

    from crfsdca import CRFCV, Corpus

    empty_at = [0, 3, len(X)]
    Xe, Ye = list(X), list(Y)
    for i in empty_at:
        Xe.insert(i, [])
        Ye.insert(i, [])
    plain = CRF(max_iterations=5, random_state=0).fit(X, Y, X_dev=X, y_dev=Y)
    with_dev = CRF(max_iterations=5, random_state=0).fit(X, Y, X_dev=Xe, y_dev=Ye)
    scores = [{k: v for k, v in row.items() if k.startswith("dev_")}
              for row in (plain.training_log_.last_iteration,
                          with_dev.training_log_.last_iteration)]
    assert scores[0] and scores[0] == scores[1]
    with pytest.raises(ValueError, match="no dev sequences: every sequence is empty"):
        CRF(max_iterations=5).fit(X, Y, X_dev=[[]], y_dev=[[]])
    corpus = Corpus.create(tmp_path / "c", Xe, Ye)
    assert corpus.sequences.n_sequences == len(X)
    assert np.array_equal(CRF(max_iterations=5, random_state=0).fit(corpus).model_.weights,
                          CRF(max_iterations=5, random_state=0).fit(X, Y).model_.weights)
    groups = np.arange(len(X)) % 3
    groups_e = np.insert(groups, [0, 3, len(X)], 7)  # their groups go with them
    weights = np.linspace(1, 2, len(X))
    weights_e = np.insert(weights, [0, 3, len(X)], 5.0)
    searches = [CRFCV(c1s=[0], c2s=[0.1, 1.0], cv=GroupKFold(3), max_iterations=5,
                      random_state=0).fit(*data, groups=g, sample_weight=w)
                for data, g, w in (((X, Y), groups, weights), ((Xe, Ye), groups_e, weights_e))]
    assert searches[0].cv_results_["mean_test_score"].tolist() == \
        searches[1].cv_results_["mean_test_score"].tolist()


def test_errors_after_left_out_sequences_name_their_place_in_the_data():
    """An error names a sequence by its position in what the user passed, empty
    sequences before it counted: in X (lists), in X_dev and in CRFCV's X."""
    from crfsdca import CRFCV

    bad = [{"a": None}]
    with pytest.raises(ValueError, match=rf"^sequence {len(X) + 1}, item 0"):
        CRF(max_iterations=2).fit([[]] + X + [bad], [[]] + Y + [["D"]])
    with pytest.raises(ValueError, match=r"^sequence 2, item 0"):
        CRF(max_iterations=2).fit(X, Y, X_dev=[[], X[0], bad], y_dev=[[], Y[0], ["D"]])
    with pytest.raises(ValueError, match=r"^sequence 1 has 2 items but 1 labels"):
        CRF(max_iterations=2).fit(X, Y, X_dev=[[], X[0]], y_dev=[[], ["D"]])
    with pytest.raises(ValueError, match=rf"^sequence {len(X) + 1}, item 0"):
        CRFCV(cv=2).fit([[]] + X + [bad], [[]] + Y + [["D"]])
    with pytest.raises(ValueError, match=rf"expected \({len(X) + 1},\)"):
        CRFCV(cv=2).fit([[]] + X, [[]] + Y, sample_weight=[1.0] * len(X))
    with pytest.raises(ValueError, match=rf"groups has {len(X)} entries but X has"):
        CRFCV(cv=2).fit([[]] + X, [[]] + Y, groups=[1] * len(X))
