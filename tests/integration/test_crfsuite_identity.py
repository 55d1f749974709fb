"""CRFsuite's model and objective, exactly: python-crfsuite's L-BFGS and crfsdca.CRF train
the same data with the same options (CRFsuite's defaults: features seen in training, no
bias; c1 = 0) and reach the same optimum, on the first 3,000 sentences of CoNLL-2000's
training set (a third: the whole set took 155-205 s of ``make test``; 3,000 sentences
still hold over 150,000 features) with the features of CRFsuite's example/chunking.py."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from helpers.paths import RAW, ROOT

from crfsdca import CRF
from crfsdca.data.corpus_items import corpus_items
from crfsdca.model.objective import primal
from crfsdca.reproduction.crfsuite_baseline import tracing_trainer

pycrfsuite = pytest.importorskip("pycrfsuite")

SENTENCES = 3000

C2 = 10.0
"""Any c2 would do; 10 (lambda = 20 / n) lets CRFsuite reach 1e-9 in about 110 iterations
instead of about 270 at c2 = 1, so that the test takes one or two minutes."""


def crfsuite_fit(X, y, path):
    """CRFsuite's L-BFGS to about 1e-9 relative sub-optimality; its loss (sum NLL + c2 ||w||^2) and
    weights {(attribute, label): w}, {(label, label): w} (6 decimals: its text dump)."""
    rows: list[dict] = []
    trainer = tracing_trainer(rows)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append([dict.fromkeys(item, 1.0) for item in xseq], yseq)
    trainer.set_params({"c1": 0.0, "c2": C2, "epsilon": 1e-9, "delta": 0.0,
                        "max_iterations": 130})
    trainer.train(str(path))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    info = tagger.info()
    tagger.close()
    return rows[-1]["loss"], info.state_features, info.transitions


@pytest.fixture(scope="module")
def conll():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    X, y, _, _ = corpus_items(config, "conll", RAW)
    return X[:SENTENCES], y[:SENTENCES]


def test_objective_and_weights_match_crfsuite_on_conll(conll, tmp_path):
    X, y = conll
    loss_c, states, transitions = crfsuite_fit(X, y, tmp_path / "conll.crfsuite")
    crf = CRF(c2=C2, epsilon=1e-10, max_iterations=100).fit(X, y)
    assert crf.model_.training["status"] == "converged"
    model = crf.model_
    layout = model.layout
    # CRFsuite's weights in our layout
    w_c, in_c = layout.zeros(), layout.zeros()
    attr = {a: i for i, a in enumerate(model.attributes)}
    lab = {k: i for i, k in enumerate(model.labels)}
    for w, mark in ((w_c, False), (in_c, True)):
        E, W = layout.emission(w), layout.transition(w)
        for (a, k), value in states.items():
            E[attr[a], lab[k]] = 1.0 if mark else value
        for (k, j), value in transitions.items():
            W[lab[k], lab[j]] = 1.0 if mark else value
    # the same features: CRFsuite's model lists exactly our nonzero weights
    np.testing.assert_array_equal(in_c != 0, model.weights != 0)
    # the same objective, evaluated by us at both solutions and by CRFsuite at its own
    from crfsdca.data.items import Vocabulary, encode

    train = encode(X, y, Vocabulary(model.attributes), Vocabulary(model.labels),
                   grow=False).seq
    n = train.n_sequences
    lam = 2 * C2 / n
    A, K = len(model.attributes), len(model.labels)
    ours = n * primal(model.weights, train, A, K, lam)
    theirs = n * primal(w_c, train, A, K, lam)
    assert crf.training_log_.last_iteration["loss"] == pytest.approx(ours, rel=1e-12)
    assert ours == pytest.approx(loss_c, rel=1e-7)
    assert theirs == pytest.approx(loss_c, rel=1e-7)
    assert ours <= theirs * (1 + 1e-9)
    assert np.max(np.abs(model.weights - w_c)) <= 1e-4


def test_crfsuite_stops_at_its_relative_decrease_over_ten_iterations(tmp_path):
    """``delta`` (the reproduction's stop for CRFsuite): the run ends at the first
    iteration whose objective is less than ``delta`` (relative) below the one 10
    iterations before, and runs on without it."""
    from crfsdca.data.synthetic import synthetic_sequences
    from crfsdca.reproduction.crfsuite_baseline import train_crfsuite
    from crfsdca.solvers.base import Problem

    seq = synthetic_sequences(80, 2, 9, 4, 25, 4, seed=3)
    p = Problem(seq, 25, 4, 0.1 / 80, label_names=("a", "b", "c", "d"))
    delta = 1e-7
    rows = train_crfsuite(p, tmp_path / "m.crfsuite", max_iterations=2000, epsilon=1e-14,
                          delta=delta)
    loss = np.array([r["loss"] for r in rows])
    rate = (loss[:-10] - loss[10:]) / loss[10:]  # rate[k - 10]: iteration k against k - 10
    assert len(loss) > 20 and rate[-1] < delta and np.all(rate[:-1] >= delta)
    longer = train_crfsuite(p, tmp_path / "n.crfsuite", max_iterations=len(loss) + 20,
                            epsilon=1e-14)
    assert len(longer) > len(loss)
    np.testing.assert_array_equal([r["loss"] for r in longer[:len(loss)]], loss)
