"""``CRF(algorithm="lbfgs")`` is CRFsuite's L-BFGS: OWL-QN with an L1 term, liblbfgs's
backtracking searches, CRFsuite's stopping tests and defaults, on CRFsuite's feature set
(pairs seen with value 0 included). Checked against python-crfsuite itself on
sklearn-crfsuite's tutorial features (CoNLL-2002 Spanish), iterate by iterate."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.paths import RAW

from crfsdca import CRF
from crfsdca.data.items import Vocabulary, encode
from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels
from crfsdca.model.objective import primal

pycrfsuite = pytest.importorskip("pycrfsuite")


@pytest.fixture(scope="module")
def spanish():
    sents = iob_sents("esp.train", RAW / "conll2002.zip", limit=150)
    return [sent2features(s) for s in sents], [sent2labels(s) for s in sents]


def crfsuite_losses(X, y, path, **params):
    """CRFsuite's loss after each iteration, and its model's weights."""
    from crfsdca.reproduction.crfsuite_baseline import tracing_trainer

    rows: list[dict] = []
    trainer = tracing_trainer(rows)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    trainer.set_params({"feature.possible_transitions": True, **params})
    trainer.train(str(path))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    info = tagger.info()
    tagger.close()
    return np.array([r["loss"] for r in rows]), info


@pytest.mark.parametrize("c1, linesearch", [(0.1, "MoreThuente"), (0.5, "Backtracking"),
                                            (0.0, "MoreThuente"), (0.0, "Backtracking"),
                                            (0.0, "StrongBacktracking")])
def test_iterates_are_crfsuite_s(spanish, tmp_path, c1, linesearch):
    """The same loss after every one of 25 iterations (to CRFsuite's 6 printed decimals):
    with c1 > 0 both run OWL-QN (CRFsuite then always backtracks), else liblbfgs's
    More-Thuente or backtracking searches with its first step."""
    X, y = spanish
    theirs, _ = crfsuite_losses(X, y, tmp_path / "m", c1=c1, c2=0.1, max_iterations=25,
                                linesearch=linesearch)
    crf = CRF(algorithm="lbfgs", c1=c1, c2=0.1, max_iterations=25, linesearch=linesearch,
              all_possible_transitions=True).fit(X, y)
    ours = np.array([r["loss"] for r in crf.training_log_])[1:]  # row 0 is w = 0
    assert len(ours) == len(theirs) == 25
    np.testing.assert_allclose(ours, theirs, rtol=2e-9, atol=2e-6)


def test_crfsuite_s_stopping_tests_and_feature_set(spanish, tmp_path):
    """CRFsuite's defaults (epsilon, period, delta): the same iteration count and loss;
    the same features, zero-valued attributes included (``'word.isupper()': False`` makes
    a state feature whose weight is not 0)."""
    X, y = spanish
    theirs, info = crfsuite_losses(X, y, tmp_path / "m", c1=0.2, c2=0.05)
    crf = CRF(algorithm="lbfgs", c1=0.2, c2=0.05, all_possible_transitions=True).fit(X, y)
    ours = np.array([r["loss"] for r in crf.training_log_])[1:]
    assert crf.model_.training["status"] == "converged"
    assert len(ours) == len(theirs)
    assert ours[-1] == pytest.approx(theirs[-1], rel=1e-8)
    # the same features (CRFsuite's dump prints 6 decimals: compare those above 1e-5)
    weights = crf.state_features_
    assert {k for k, v in weights.items() if abs(v) > 1e-5} == \
        {k for k, v in info.state_features.items() if abs(v) > 1e-5}
    assert any(not v for k, v in X[0][0].items() if isinstance(v, bool))  # False values
    assert max(abs(weights.get(k, 0.0) - v) for k, v in info.state_features.items()) < 1e-5


def test_the_certificate_bounds_the_l1_sub_optimality(spanish):
    """The log's gap, ||pseudo-gradient||^2 / (2 lambda) in CRFsuite's scale, is above
    loss - loss* at every iteration (the objective is lambda-strongly convex)."""
    X, y = spanish
    X, y = X[:60], y[:60]
    best = CRF(algorithm="lbfgs", c1=0.3, c2=0.2, epsilon=1e-9, delta=0.0,
               max_iterations=3000).fit(X, y)
    star = best.training_log_[-1]["loss"]
    assert best.training_log_[-1]["relative_gap"] < 1e-8
    crf = CRF(algorithm="lbfgs", c1=0.3, c2=0.2, max_iterations=40).fit(X, y)
    for row in crf.training_log_:
        assert row["loss"] - star <= row["gap"] * (1 + 1e-9) + 1e-9
    # and the loss is CRFsuite's objective, L1 term included
    model = crf.model_
    seq = encode(X, y, Vocabulary(model.attributes), Vocabulary(model.labels),
                 grow=False).seq
    n = seq.n_sequences
    loss = n * primal(model.weights, seq, len(model.attributes), len(model.labels),
                      2 * 0.2 / n, 0.3 / n)
    assert crf.training_log_[-1]["loss"] == pytest.approx(loss, rel=1e-12)
