"""CRFsuite's other training algorithms (l2sgd, ap, pa, arow) against python-crfsuite.

python-crfsuite and crfsdca.CRF train the same data with the same parameters:

- in the same instance order (CRFsuite shuffles with C's ``rand()`` before every epoch,
  and before L2SGD's calibration; here our shuffle is made to draw from ``rand()`` too,
  after the same ``srand``), the weights are CRFsuite's to 1e-9, epoch for epoch, and
  the runs stop at the same epoch;
- each with its own order (ours from the seed), on CoNLL-2000 (2,000 training sentences
  with the features of CRFsuite's example/chunking.py, the first 500 test sentences), the
  held-out token accuracies are within 0.3 points.

Then every CRFsuite parameter reaches the solver from ``CRF(...)`` and ``crfsdca learn -p``,
and a bad value is an error that names it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import struct
import sys

import numpy as np
import pytest
import yaml
from helpers.paths import RAW, ROOT

from crfsdca import CRF
from crfsdca.cli import main
from crfsdca.data.corpus_items import corpus_items
from crfsdca.data.crfsuite_format import write_sequences
from crfsdca.errors import ConfigError
from crfsdca.model.features import crfsuite_mask
from crfsdca.solvers import online
from crfsdca.solvers.base import Problem
from crfsdca.solvers.registry import ALGORITHMS, SOLVERS, make_solver

pycrfsuite = pytest.importorskip("pycrfsuite")

ONLINE = ("l2sgd", "ap", "pa", "arow")
SEED = 20240611
"""The ``srand`` seed of the runs in CRFsuite's order (any would do)."""


# ------------------------------------------------------------------------------ data

@pytest.fixture(scope="module")
def conll():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    X, y, X_test, y_test = corpus_items(config, "conll", RAW)
    return X[:2000], y[:2000], X_test[:500], y_test[:500]


def _valued(X):
    """The items with real values (1, 1.25 or 1.5 by the attribute's length), so that
    the updates weigh the attributes."""
    return [[{a: 1.0 + 0.25 * (len(a) % 3) for a in item} for item in xseq] for xseq in X]


# ------------------------------------------------------------------------------ CRFsuite

class _LoggingTrainer(pycrfsuite.Trainer):
    """Keeps CRFsuite's log (epochs, calibration) instead of printing it."""

    def message(self, text):
        self.log.append(text)


def crfsuite_train(algorithm, X, y, params, path, seed=None):
    """Train python-crfsuite; returns (epochs run, its log). ``seed``: ``srand`` first."""
    trainer = _LoggingTrainer(algorithm=algorithm, verbose=True)
    trainer.log = []
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    trainer.set_params(params)
    libc = _libc()
    if seed is not None and libc is not None:
        libc.srand(seed)
    trainer.train(str(path))
    log = "".join(trainer.log)
    return len(re.findall(r"\*\*\*\*\* (?:Iteration|Epoch) #", log)), log


def _cqdb_strings(buf: bytes, at: int) -> list[str]:
    """The strings of a CQDB chunk by id (its backward links: id -> record)."""
    assert buf[at:at + 4] == b"CQDB"
    _, _, _, count, back = struct.unpack_from("<5I", buf, at + 4)
    out = []
    for j in range(count):
        (record,) = struct.unpack_from("<I", buf, at + back + 4 * j)
        (size,) = struct.unpack_from("<I", buf, at + record + 4)
        out.append(buf[at + record + 8:at + record + 7 + size].decode("utf-8"))
    return out


def crfsuite_weights(path) -> tuple[dict, dict]:
    """{(attribute, label): w}, {(label, label): w} of a CRFsuite model file, the weights
    as stored (doubles; the Tagger's dump rounds them to 6 decimals)."""
    buf = open(path, "rb").read()
    assert buf[:4] == b"lCRF"
    _, _, _, off_features, off_labels, off_attrs = struct.unpack_from("<6I", buf, 16)
    labels, attrs = _cqdb_strings(buf, off_labels), _cqdb_strings(buf, off_attrs)
    assert buf[off_features:off_features + 4] == b"FEAT"
    (count,) = struct.unpack_from("<I", buf, off_features + 8)
    state, trans = {}, {}
    for k in range(count):
        kind, src, dst, w = struct.unpack_from("<3Id", buf, off_features + 12 + 20 * k)
        if kind == 0:
            state[(attrs[src], labels[dst])] = w
        else:
            trans[(labels[src], labels[dst])] = w
    return state, trans


def weight_difference(crf, path) -> float:
    """max |ours - CRFsuite's| over every state and transition weight."""
    state, trans = crfsuite_weights(path)
    worst = 0.0
    for ours, theirs in ((crf.state_features_, state), (crf.transition_features_, trans)):
        for key in set(ours) | set(theirs):
            worst = max(worst, abs(ours.get(key, 0.0) - theirs.get(key, 0.0)))
    return worst


def _libc():
    """The C library whose rand() CRFsuite shuffles with (None if it cannot be found)."""
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name is not None else None


@pytest.fixture
def crfsuite_order(monkeypatch):
    """Our shuffle draws its swaps from C's rand(), as CRFsuite's dataset_shuffle."""
    libc = _libc()
    if libc is None:
        pytest.skip("no C library to draw CRFsuite's rand() from")

    def shuffle(order, rng):
        n = len(order)
        for i in range(n):
            j = libc.rand() % n
            order[i], order[j] = order[j], order[i]

    monkeypatch.setattr(online, "shuffle_order", shuffle)
    return libc


# ------------------------------------------------------------------------------ same order

STRICT_CASES = [
    ("ap", {}),
    ("ap", {"epsilon": 0.05}),  # stops by its test, at the third epoch
    ("pa", {}),
    ("pa", {"type": 0}),
    ("pa", {"type": 1, "c": 0.05}),
    ("pa", {"type": 2, "c": 0.5, "averaging": False, "error_sensitive": False}),
    ("pa", {"epsilon": 1.0}),
    ("arow", {}),
    ("arow", {"variance": 0.5, "gamma": 3.0}),
    ("arow", {"epsilon": 0.5}),
    ("l2sgd", {"calibration.samples": 150}),
    ("l2sgd", {"c2": 0.1, "calibration.samples": 150, "calibration.eta": 0.02,
               "calibration.rate": 3.0, "calibration.candidates": 3,
               "calibration.max_trials": 6}),
    ("l2sgd", {"calibration.samples": 150, "period": 1, "delta": 0.3}),  # stops by delta
]

CRF_NAMES = {"type": "pa_type", "calibration.eta": "calibration_eta",
             "calibration.rate": "calibration_rate",
             "calibration.samples": "calibration_samples",
             "calibration.candidates": "calibration_candidates",
             "calibration.max_trials": "calibration_max_trials"}
"""sklearn-crfsuite's (and our) names of CRFsuite's parameters that are not identifiers."""
CRFSUITE_KEY = {v: k for k, v in CRF_NAMES.items()}
"""CRFsuite's names of those."""


@pytest.mark.parametrize("valued", [False, True], ids=["binary", "real"])
@pytest.mark.parametrize("algorithm, params", STRICT_CASES,
                         ids=[f"{a}-{'-'.join(map(str, p.values())) or 'defaults'}"
                              for a, p in STRICT_CASES])
def test_same_weights_as_crfsuite_in_the_same_order(conll, crfsuite_order, tmp_path,
                                                    algorithm, params, valued):
    X, y = conll[0][:300], conll[1][:300]
    if valued:
        X = _valued(X)
    epochs = 4
    path = tmp_path / "crfsuite.model"
    ran, log = crfsuite_train(algorithm, X, y, {"max_iterations": epochs, **params}, path,
                              seed=SEED)
    crfsuite_order.srand(SEED)
    given = {CRF_NAMES.get(k, k): v for k, v in params.items()}
    crf = CRF(algorithm=algorithm, max_iterations=epochs, **{"epsilon": None, **given})
    crf.fit(X, y)
    epochs_done = crf.training_log_.last_iteration["epoch"]
    assert epochs_done == ran, log
    stopped = re.search(r"Terminated with the stopping criterion|SGD terminated with the "
                        r"stopping criteria", log) is not None
    assert stopped == ("epsilon" in params or "delta" in params)
    assert crf.model_.training["status"] == ("converged" if stopped else "budget")
    assert weight_difference(crf, path) <= 1e-9
    if algorithm == "ap" and not valued:  # integer updates: the same bits
        assert weight_difference(crf, path) == 0.0


def test_chunks_and_epochs_do_not_change_the_run():
    """run(k) in any chunks is run(n) epoch after epoch: the epoch's shuffle, averaging
    and end-of-epoch test do not depend on how the monitor cuts the epochs."""
    from crfsdca.data.synthetic import synthetic_sequences

    K, A = 4, 30
    train = synthetic_sequences(37, 2, 9, K, A, 3, seed=11)
    mask = crfsuite_mask(train, A, K)
    problem = Problem(train=train, n_attributes=A, n_labels=K, lam=0.05, feature_mask=mask)
    for name in ONLINE:
        whole = make_solver(name, problem, seed=3)
        whole.run(3 * problem.n)
        cut = make_solver(name, problem, seed=3)
        for k in (1, 5, 30, 2, 40, 33):
            cut.run(k)
        np.testing.assert_array_equal(cut.weights(), whole.weights(), err_msg=name)
        assert cut.counters() == whole.counters(), name
        w = whole.weights()
        assert np.all(w[mask == 0] == 0), name  # a weight outside the feature set stays 0
        assert np.any(w != 0), name
        other = make_solver(name, problem, seed=4)
        other.run(3 * problem.n)
        assert not np.array_equal(other.weights(), w), name  # the seed orders the epochs
        fixed = [make_solver(name, problem, seed=s, shuffle=False) for s in (3, 4)]
        for f in fixed:
            f.run(2 * problem.n)
        np.testing.assert_array_equal(fixed[0].weights(), fixed[1].weights(), err_msg=name)


# ------------------------------------------------------------------------------ CoNLL-2000

def _accuracy(predicted, gold) -> float:
    right = sum(a == b for p, g in zip(predicted, gold, strict=True)
                for a, b in zip(p, g, strict=True))
    return right / sum(map(len, gold))


ACCURACY_EPOCHS = {"ap": 100, "pa": 100, "arow": 100, "l2sgd": 20}
"""CRFsuite's max_iterations for the online trainers, and 20 SGD epochs (its 1000 with
the delta test take minutes)."""


@pytest.mark.parametrize("algorithm", ONLINE)
def test_held_out_accuracy_on_conll_is_crfsuite_s(conll, tmp_path, algorithm):
    X, y, X_test, y_test = conll
    epochs = ACCURACY_EPOCHS[algorithm]
    path = tmp_path / "crfsuite.model"
    crfsuite_train(algorithm, X, y, {"max_iterations": epochs}, path, seed=SEED)
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    theirs = _accuracy([tagger.tag(x) for x in X_test], y_test)
    tagger.close()
    crf = CRF(algorithm=algorithm, max_iterations=epochs, epsilon=None, random_state=0)
    crf.fit(X, y)
    ours = _accuracy(crf.predict(X_test), y_test)
    print(f"{algorithm}: held-out accuracy CRFsuite {theirs:.4f}, crfsdca {ours:.4f}",
          file=sys.stderr)
    assert abs(ours - theirs) <= 0.003
    assert theirs > 0.93


# ------------------------------------------------------------------------------ parameters

XSEQ = [{"walk": 1, "shop": 0.5}, {"walk": 1}, {"walk": 1, "clean": 0.5},
        {"shop": 0.5, "clean": 0.5}, {"walk": 0.5, "clean": 1}, {"clean": 1, "shop": 0.1},
        {"walk": 1, "shop": 0.5}, {}, {"clean": 1}, {"clean": 1}]
YSEQ = ["sunny", "sunny", "sunny", "rainy", "rainy", "rainy", "sunny", "sunny", "rainy",
        "rainy"]

GIVEN = {
    "l2sgd": {"period": 3, "delta": 1e-4, "calibration_eta": 0.05, "calibration_rate": 3.0,
              "calibration_samples": 2, "calibration_candidates": 2,
              "calibration_max_trials": 5, "shuffle": False},
    "ap": {"epsilon": 0.1, "shuffle": False},
    "pa": {"pa_type": 2, "c": 0.5, "error_sensitive": False, "averaging": False,
           "epsilon": 0.1, "shuffle": False},
    "arow": {"variance": 2.0, "gamma": 0.5, "epsilon": 0.1, "shuffle": False},
}
"""A non-default value of every parameter of each algorithm (CRFsuite's names, as
sklearn-crfsuite spells them), and ``shuffle``."""

OPTION_OF = {"pa_type": "type"}


def test_every_algorithm_and_its_crfsuite_parameters_are_offered():
    assert set(ONLINE) <= set(ALGORITHMS)
    crfsuite_names = {"l2sgd": {"period", "delta", "calibration_eta", "calibration_rate",
                                "calibration_samples", "calibration_candidates",
                                "calibration_max_trials"},
                      "ap": {"epsilon"},
                      "pa": {"pa_type", "c", "error_sensitive", "averaging", "epsilon"},
                      "arow": {"variance", "gamma", "epsilon"}}
    for name, names in crfsuite_names.items():
        table = SOLVERS[name].options
        assert {o.crfsuite for o in table if o.crfsuite} == names
        assert set(GIVEN[name]) == names | {"shuffle"}
        trainer = pycrfsuite.Trainer(algorithm=name, verbose=False)
        for o in table:  # CRFsuite's defaults
            if o.crfsuite is not None:
                assert o.default == trainer.get(CRFSUITE_KEY.get(o.crfsuite, o.crfsuite)), \
                    (name, o.name)
                assert o.crfsuite_default == o.default
        assert SOLVERS[name].default_epochs == trainer.get("max_iterations")


@pytest.mark.parametrize("algorithm", ONLINE)
def test_crfsuite_parameters_reach_the_solver(algorithm):
    given = GIVEN[algorithm]
    crf = CRF(algorithm=algorithm, max_iterations=7, **given).fit([XSEQ] * 3, [YSEQ] * 3)
    options = crf.model_.options["solver"]
    for key, value in given.items():
        assert options[OPTION_OF.get(key, key)] == value, key
    defaults = CRF(algorithm=algorithm, max_iterations=2, epsilon=None).fit([XSEQ], [YSEQ])
    table = SOLVERS[algorithm].options
    assert defaults.model_.options["solver"] == {
        **defaults.model_.options["solver"], **table.defaults()}


@pytest.mark.parametrize("algorithm", ONLINE)
def test_learn_takes_the_parameters(algorithm, tmp_path, capsys):
    train = tmp_path / "train.txt"
    with open(train, "w", encoding="utf-8") as f:
        write_sequences(f, [[[(a, v) for a, v in item.items()] for item in XSEQ]] * 3,
                        [YSEQ] * 3)
    model = tmp_path / "m.model"
    args = ["learn", "-q", "-m", str(model), "-a", algorithm, "-p", "max_iterations=5"]
    for key, value in GIVEN[algorithm].items():
        args += ["-p", f"{key}={value}"]
    assert main(args + [str(train)]) == 0, capsys.readouterr().err
    from crfsdca.model_file import load_model

    options = load_model(model).options["solver"]
    for key, value in GIVEN[algorithm].items():
        assert options[OPTION_OF.get(key, key)] == value, key


BAD = {
    "l2sgd": [("period", 0), ("delta", -1.0), ("calibration_eta", 0.0),
              ("calibration_rate", -2.0), ("calibration_samples", 0),
              ("calibration_candidates", 1.5), ("calibration_max_trials", "x")],
    "ap": [("epsilon", -0.1), ("shuffle", "maybe")],
    "pa": [("pa_type", 3), ("c", 0.0), ("error_sensitive", "perhaps"), ("averaging", 2)],
    "arow": [("variance", 0.0), ("gamma", -1.0)],
}


@pytest.mark.parametrize("algorithm", ONLINE)
def test_bad_values_name_the_parameter(algorithm, tmp_path, capsys):
    train = tmp_path / "train.txt"
    with open(train, "w", encoding="utf-8") as f:
        write_sequences(f, [[[(a, v) for a, v in item.items()] for item in XSEQ]], [YSEQ])
    for key, value in BAD[algorithm]:
        with pytest.raises(ConfigError, match=rf"^{key}: "):
            CRF(algorithm=algorithm, **{key: value}).fit([XSEQ], [YSEQ])
        assert main(["learn", "-q", "-a", algorithm, "-p", f"{key}={value}", str(train)]) == 2
        assert f"{key}: " in capsys.readouterr().err
    other = "gamma" if algorithm != "arow" else "c"
    with pytest.raises(ConfigError, match=f"{other} is a parameter of"):
        CRF(algorithm=algorithm, **{other: 1.0}).fit([XSEQ], [YSEQ])


def test_crfsuite_s_long_names_and_default_budget():
    crf = CRF(algorithm="averaged-perceptron", epsilon=None).fit([XSEQ] * 2, [YSEQ] * 2)
    assert crf.model_.options["algorithm"] == "ap"
    assert crf.get_params()["algorithm"] == "averaged-perceptron"  # as given (sklearn)
    assert crf.training_log_.last_iteration["epoch"] == 100  # CRFsuite's max_iterations
    crf = CRF(algorithm="passive-aggressive", max_iterations=3).fit([XSEQ], [YSEQ])
    assert crf.model_.options["algorithm"] == "pa"


def test_c2_plays_no_role_in_the_perceptron_family():
    """ap, pa and arow ignore c2 (CRFsuite has no such parameter for them), c2 = 0
    included; l2sgd's lambda = 2 c2 / n must be positive."""
    for algorithm in ("ap", "pa", "arow"):
        fits = [CRF(algorithm=algorithm, c2=c2, max_iterations=5).fit([XSEQ] * 3, [YSEQ] * 3)
                for c2 in (0.0, 5.0)]
        np.testing.assert_array_equal(fits[0].model_.weights, fits[1].model_.weights)
    with pytest.raises(ValueError, match="l2sgd needs an L2 term"):
        CRF(algorithm="l2sgd", c2=0.0).fit([XSEQ], [YSEQ])
