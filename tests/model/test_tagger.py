"""crfsdca.tagger.Tagger against pycrfsuite.Tagger: the same model (CRFsuite's weights read
exactly from its file into crfsdca's layout, bias 0) tags, scores and marginalizes the same
(to 1e-6 relative), on CoNLL-2000 chunking and on random small cases with every item
format; the same exceptions; and crfsdca's bias weights checked by enumeration."""

from __future__ import annotations

import contextlib
import itertools
import math
import struct

import numpy as np
import pytest
import yaml
from helpers.paths import RAW, ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crfsdca.model.layout import WeightLayout
from crfsdca.model_file import Model, save_model
from crfsdca.tagger import Tagger, UnknownLabelError

pycrfsuite = pytest.importorskip("pycrfsuite")

REL = 1e-6


# ------------------------------------------------------------------ helpers

def exact_model(path) -> Model:
    """The crfsdca Model of a CRFsuite model file: names and ids from pycrfsuite's
    ``info()``, weights exactly from the file's feature chunk (``info()`` rounds them to
    6 decimals). The chunk: "FEAT", size, count, then (type, src, dst: uint32, weight:
    float64) per feature; type 0 is a state feature (attribute, label), 1 a transition."""
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    info = tagger.info()
    tagger.close()
    labels = sorted(info.labels, key=lambda s: int(info.labels[s]))
    attributes = sorted(info.attributes, key=lambda s: int(info.attributes[s]))
    data = open(path, "rb").read()
    off_features = struct.unpack_from("<4sI4s9I", data, 0)[7]
    chunk, _, n = struct.unpack_from("<4sII", data, off_features)
    assert chunk == b"FEAT"
    layout = WeightLayout(len(attributes), len(labels))
    w = layout.zeros()
    E, W = layout.emission(w), layout.transition(w)
    for j in range(n):
        kind, src, dst, value = struct.unpack_from("<IIId", data, off_features + 12 + 20 * j)
        (E if kind == 0 else W)[src, dst] = value
    return Model(labels, attributes, w)


def train_crfsuite(X, y, path, iterations=50, c2=0.1):
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    trainer.set_params({"c1": 0.0, "c2": c2, "max_iterations": iterations})
    trainer.train(str(path))
    theirs = pycrfsuite.Tagger()
    theirs.open(str(path))
    return theirs


def call(f, *args):
    """f(*args), or the type of the exception it raised."""
    try:
        return f(*args)
    except Exception as e:  # noqa: BLE001 (the type is compared)
        return type(e)


def agree(ours, theirs) -> bool:
    """The same result (floats to REL), or an exception of the same type (or a subclass:
    UnknownLabelError is pycrfsuite's RuntimeError)."""
    if isinstance(theirs, type):
        return isinstance(ours, type) and issubclass(ours, theirs)
    if isinstance(theirs, float):
        return ours == pytest.approx(theirs, rel=REL, abs=1e-300)
    return ours == theirs


def assert_same_sequence(ours: Tagger, theirs, xseq, labels, yseqs=()):
    """Tags, probabilities (of the tags and of ``yseqs``) and all marginals agree."""
    ours.set(xseq)
    theirs.set(xseq)
    tag_o, tag_t = ours.tag(), theirs.tag()
    if tag_o != tag_t:  # only a tie may differ
        assert ours.probability(tag_o) == pytest.approx(ours.probability(tag_t), rel=1e-9)
    for yseq in (tag_t, *yseqs):
        assert agree(call(ours.probability, yseq), call(theirs.probability, yseq))
    for t in range(len(tag_t)):
        for lab in labels:
            assert ours.marginal(lab, t) == pytest.approx(theirs.marginal(lab, t), rel=REL,
                                                          abs=1e-12)


# ------------------------------------------------------------------ CoNLL-2000

@pytest.fixture(scope="module")
def conll(tmp_path_factory):
    """CRFsuite trained on 400 CoNLL-2000 sentences (example/chunking.py's attributes):
    (our tagger, pycrfsuite's, the model file, test sentences and their labels)."""
    from crfsdca.data.corpus_items import corpus_items

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["subset"] = {"train": 400, "test": 150}
    X, y, Xt, yt = corpus_items(config, "conll", RAW)
    path = tmp_path_factory.mktemp("conll") / "conll.crfsuite"
    theirs = train_crfsuite(X, y, path)
    return Tagger.from_model(exact_model(path)), theirs, path, Xt, yt


def test_conll_same_labels_tags_probabilities_marginals(conll):
    ours, theirs, _, Xt, yt = conll
    labels = theirs.labels()
    assert ours.labels() == labels
    assert [ours.tag(x) for x in Xt] == [theirs.tag(x) for x in Xt]
    unknown = 0
    for i, (xseq, yseq) in enumerate(zip(Xt, yt, strict=True)):
        ours.set(xseq)
        theirs.set(xseq)
        p = call(theirs.probability, yseq)
        if p is RuntimeError:  # a gold label the 400 training sentences lack
            unknown += 1
            with pytest.raises(UnknownLabelError, match="Failed to convert"):
                ours.probability(yseq)
        else:
            assert ours.probability(yseq) == pytest.approx(p, rel=REL, abs=1e-300)
        if i < 15:
            assert_same_sequence(ours, theirs, xseq, labels)
    assert unknown < len(Xt)


def test_conll_info_equals_pycrfsuite(conll):
    ours, theirs, *_ = conll
    a, b = ours.info(), theirs.info()
    assert a.labels == b.labels and a.attributes == b.attributes
    assert a.transitions.keys() == b.transitions.keys()
    assert a.state_features.keys() == b.state_features.keys()
    for mine, dumped in ((a.transitions, b.transitions), (a.state_features, b.state_features)):
        assert all(abs(mine[k] - dumped[k]) <= 5e-7 + 1e-12 for k in dumped)
    assert a.bias == {}
    assert a.header["num_labels"] == b.header["num_labels"]
    assert a.header["num_attrs"] == b.header["num_attrs"]


def test_conll_crfsuite_file_opens_directly(conll, tmp_path):
    """open() reads CRFsuite's own model file (crfsdca.formats.crfsuite_model), and a crfsdca
    model file of the same weights; both tag as pycrfsuite."""
    _, theirs, path, Xt, _ = conll
    ours = Tagger()
    assert isinstance(ours.open(str(path)), contextlib.closing)
    save_model(tmp_path / "conll.model", exact_model(path))
    own = Tagger()
    own.open(tmp_path / "conll.model")
    for xseq in Xt[:40]:
        assert ours.tag(xseq) == own.tag(xseq) == theirs.tag(xseq)
    assert ours.labels() == own.labels() == theirs.labels()


def test_tag_is_not_slower_than_pycrfsuite(conll):
    """One sentence at a time, as a service tags: within 1.5x of pycrfsuite's time (it is
    about 0.8x here; the best of 5 rounds, interleaved, so that a busy machine counts
    for both)."""
    import time

    ours, theirs, _, Xt, _ = conll
    best = {ours: math.inf, theirs: math.inf}
    for _ in range(5):
        for tagger in best:
            start = time.perf_counter()
            for xseq in Xt:
                tagger.tag(xseq)
            best[tagger] = min(best[tagger], time.perf_counter() - start)
    assert best[ours] <= 1.5 * best[theirs]


# ------------------------------------------------------------------ random small cases

NAMES = ["a", "b", "c", "d", "é"]
UNSEEN = ["zz", "y"]
LABELS = ["X", "Y", "Z"]
WEIGHT = st.floats(-2, 2, allow_nan=False).filter(lambda v: abs(v) > 1e-3)


def items(names):
    """Items in every format python-crfsuite reads: lists of names, {name: weight},
    {name: str}, {name: bool}, {prefix: {name: weight}}, {prefix: [names]}."""
    name = st.sampled_from(names)
    value = st.one_of(WEIGHT, st.sampled_from(["p", "q"]), st.booleans())
    nested = st.dictionaries(name, st.one_of(WEIGHT, st.lists(name, max_size=2)), max_size=2)
    return st.one_of(st.lists(name, max_size=4), st.dictionaries(name, value, max_size=4),
                     st.dictionaries(name, nested, min_size=1, max_size=1))


@st.composite
def training_data(draw):
    n = draw(st.integers(2, 5))
    X, y = [], []
    for _ in range(n):
        T = draw(st.integers(1, 5))
        X.append(draw(st.lists(items(NAMES), min_size=T, max_size=T)))
        y.append(draw(st.lists(st.sampled_from(LABELS), min_size=T, max_size=T)))
    queries = draw(st.lists(st.lists(items(NAMES + UNSEEN), min_size=1, max_size=6),
                            min_size=1, max_size=3))
    return X, y, queries


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(training_data())
def test_random_models_and_items_equal_pycrfsuite(tmp_path, data):
    X, y, queries = data
    path = tmp_path / "random.crfsuite"
    theirs = train_crfsuite(X, y, path, iterations=30, c2=0.01)
    ours = Tagger.from_model(exact_model(path))
    labels = theirs.labels()
    assert ours.labels() == labels
    for xseq in queries + X:
        others = [list(p) for p in itertools.product(labels, repeat=len(xseq))][:20]
        assert_same_sequence(ours, theirs, xseq, labels, others + [["W"] * len(xseq)])
        # an ItemSequence is read through its items(), {name: weight} dicts (which keep
        # one of the repeats of an attribute: ['a', 'a'] becomes {'a': 1.0})
        seq = pycrfsuite.ItemSequence(xseq)
        assert ours.tag(seq) == ours.tag(seq.items())


def test_weighted_pairs_are_an_extension():
    """Lists of (name, weight) pairs (CRFsuite's data files) read as {name: weight}."""
    w = WeightLayout(2, 2).zeros()
    WeightLayout(2, 2).emission(w)[:] = [[1.0, -1.0], [0.5, 2.0]]
    ours = Tagger.from_model(Model(["P", "N"], ["a", "b"], w))
    for xseq, as_dicts in (([[("a", 2.0), "b"]], [{"a": 2.0, "b": 1.0}]),
                           ([[("a", -3.0)], []], [{"a": -3.0}, {}])):
        ours.set(xseq)
        tags, p = ours.tag(), ours.marginal("P", 0)
        ours.set(as_dicts)
        assert (ours.tag(), ours.marginal("P", 0)) == (tags, p)


# ------------------------------------------------------------------ crfsdca's bias weights

def brute_force(model: Model, xseq):
    """(log Z, {labeling: score}) by enumerating every labeling (items: {name: weight})."""
    layout, w = model.layout, model.weights
    E, B, W = layout.emission(w), layout.bias(w), layout.transition(w)
    a = {name: i for i, name in enumerate(model.attributes)}
    K, T = len(model.labels), len(xseq)
    unary = np.array([[sum(v * E[a[n], k] for n, v in item.items() if n in a) + B[k, 0]
                       for k in range(K)] for item in xseq])
    scores = {}
    for ys in itertools.product(range(K), repeat=T):
        s = sum(unary[t, k] for t, k in enumerate(ys)) + B[ys[0], 1] + B[ys[-1], 2]
        scores[ys] = s + sum(W[ys[t], ys[t + 1]] for t in range(T - 1))
    logz = np.logaddexp.reduce(list(scores.values()))
    return logz, scores


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 3))
def test_bias_weights_by_enumeration(seed, T, K):
    rng = np.random.default_rng(seed)
    names = ["a", "b", "c"]
    model = Model(LABELS[:K], names, rng.normal(size=WeightLayout(3, K).dim))
    xseq = [{n: float(rng.normal()) for n in names if rng.random() < 0.6} for _ in range(T)]
    xseq[0]["unseen"] = 5.0
    ours = Tagger.from_model(model)
    logz, scores = brute_force(model, xseq)
    best = max(scores, key=scores.get)
    assert ours.tag(xseq) == [LABELS[k] for k in best]
    for ys, s in scores.items():
        p = ours.probability([LABELS[k] for k in ys])
        assert p == pytest.approx(math.exp(s - logz), rel=1e-9)
    for t in range(T):
        for k in range(K):
            m = sum(math.exp(s - logz) for ys, s in scores.items() if ys[t] == k)
            assert ours.marginal(LABELS[k], t) == pytest.approx(m, rel=1e-9, abs=1e-15)
    info = ours.info()
    assert len(info.bias) == np.count_nonzero(model.layout.bias(model.weights))


def test_long_sequences_grow_the_workspace():
    """A sequence longer than any before grows the buffers; the labels are the estimator's
    (crfsdca.model.objective.predict on the whole split)."""
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.model.objective import predict

    rng = np.random.default_rng(0)
    model = Model(["X", "Y"], ["a", "b"], rng.normal(size=WeightLayout(2, 2).dim))
    ours = Tagger.from_model(model)
    short = ours.tag([["a"]] * 3)
    xseq = [["a"], ["b"], ["b", "a"]] * 200
    seq = encode([xseq], None, Vocabulary(model.attributes), Vocabulary(model.labels),
                 grow=False).seq
    expected = predict(model.weights, seq, 2, 2)
    assert ours.tag(xseq) == [model.labels[k] for k in expected]
    assert sum(ours.marginal(k, 599) for k in ("X", "Y")) == pytest.approx(1.0)
    assert ours.tag([["a"]] * 3) == short


# ------------------------------------------------------------------ errors and the model's life

@pytest.fixture
def pair(tmp_path):
    """A small CRFsuite model: (our tagger of it, pycrfsuite's, its path)."""
    path = tmp_path / "m.crfsuite"
    theirs = train_crfsuite([[["a", "b"], ["c"], {"d": 2.0}], [["a"], ["c", "e"]]],
                            [["X", "Y", "X"], ["Y", "X"]], path)
    return Tagger.from_model(exact_model(path)), theirs, path


CALLS = {
    "labels": lambda t: t.labels(),
    "tag": lambda t: t.tag([["a"]]),
    "tag()": lambda t: t.tag(),
    "set": lambda t: t.set([["a"]]),
    "probability": lambda t: t.probability(["X"]),
    "marginal": lambda t: t.marginal("X", 0),
    "info": lambda t: t.info(),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_no_model_raises_as_pycrfsuite(name):
    ours, theirs = call(CALLS[name], Tagger()), call(CALLS[name], pycrfsuite.Tagger())
    assert ours is theirs and ours in (ValueError, RuntimeError)  # the exact type


@pytest.mark.parametrize("name", list(CALLS))
def test_closed_tagger_raises_as_pycrfsuite(pair, name):
    ours, theirs, _ = pair
    ours.close()
    theirs.close()
    assert agree(call(CALLS[name], ours), call(CALLS[name], theirs))


@pytest.mark.parametrize("setup", [None, [], [[]]])
def test_no_or_empty_sequence_as_pycrfsuite(pair, setup):
    """Nothing set (or an empty sequence): tag() [], probability and marginal 0.0, whatever
    the labels or position; one item without attributes is a sequence like any other."""
    ours, theirs, _ = pair
    for tagger in (ours, theirs):
        if setup is not None:
            tagger.set(setup)
    for f in (lambda t: t.tag(), lambda t: t.probability(["X"]), lambda t: t.probability([]),
              lambda t: t.probability(["Q", "Q"]), lambda t: t.marginal("X", 5),
              lambda t: t.marginal("Q", 0)):
        assert agree(call(f, ours), call(f, theirs))


@pytest.mark.parametrize("f, error", [
    (lambda t: t.probability(["X", "Q", "X"]), RuntimeError),
    (lambda t: t.marginal("Q", 1), RuntimeError),
    (lambda t: t.probability(["X", "Y"]), ValueError),  # wrong length
    (lambda t: t.probability(["Q"]), ValueError),  # the length is checked first
    (lambda t: t.marginal("X", 3), ValueError),
    (lambda t: t.marginal("X", -1), ValueError),
    (lambda t: t.marginal("Q", 7), ValueError),  # the position is checked first
    (lambda t: t.marginal("X", "0"), TypeError),
    (lambda t: t.marginal(None, 0), TypeError),
])
def test_bad_labels_and_positions_raise_as_pycrfsuite(pair, f, error):
    ours, theirs, _ = pair
    for tagger in (ours, theirs):
        tagger.set([["a"], ["c"], ["zzz"]])
    assert call(f, theirs) is error
    with pytest.raises(error):
        f(ours)


def test_unknown_label_is_also_a_value_error(pair):
    ours = pair[0]
    ours.set([["a"]])
    with pytest.raises(ValueError, match="Failed to convert into label identifier: Q"):
        ours.marginal("Q", 0)


def test_what_pycrfsuite_also_takes(pair):
    """bytes labels, float and bool positions, a str as the label sequence of one item."""
    ours, theirs, _ = pair
    for tagger in (ours, theirs):
        tagger.set([["a"], ["c"], ["e"]])
    for f in (lambda t: t.marginal(b"X", 0), lambda t: t.marginal("Y", 1.0),
              lambda t: t.marginal("X", True), lambda t: t.probability([b"X", "Y", b"X"])):
        assert agree(call(f, ours), call(f, theirs))
    item = [{"a": "b", "c": True, "d": 0, "e": {"x": 1.5}}]
    assert ours.tag(item) == theirs.tag(item)
    for tagger in (ours, theirs):
        tagger.set([["a"]])
    assert ours.probability("X") == pytest.approx(theirs.probability("X"), rel=REL)


@pytest.mark.parametrize("xseq", [[5], [None], "ab", {"a": 1}])
def test_bad_items_raise_value_error(pair, xseq):
    """python-crfsuite crashes on these (SystemError) or reads a string as items."""
    with pytest.raises(ValueError):
        pair[0].tag(xseq)


def test_open_returns_closing_and_keeps_the_model_on_failure(pair, tmp_path):
    ours, theirs, path = pair
    model_path = tmp_path / "m.model"
    save_model(model_path, exact_model(path))
    for tagger, name in ((Tagger(), model_path), (pycrfsuite.Tagger(), str(path))):
        with tagger.open(name) as opened:
            assert opened is tagger and tagger.labels() == ["X", "Y"]
        assert call(tagger.labels) is ValueError  # closed by the with statement
        tagger.open(name)
        assert call(tagger.open, str(tmp_path / "missing")) is FileNotFoundError
        (tmp_path / "junk").write_bytes(b"not a model at all, not at all, not at all" * 4)
        assert issubclass(call(tagger.open, str(tmp_path / "junk")), ValueError)
        assert call(tagger.open, str(tmp_path)) is IsADirectoryError
        assert tagger.tag([["a"]]) == theirs.tag([["a"]])  # the first model stays open


def test_open_inmemory_and_context_manager(pair, tmp_path):
    ours, theirs, path = pair
    save_model(tmp_path / "m.model", exact_model(path))
    for data in ((tmp_path / "m.model").read_bytes(), path.read_bytes()):
        tagger = Tagger()
        with tagger.open_inmemory(data):
            assert tagger.tag([["a"], ["c"]]) == theirs.tag([["a"], ["c"]])
        assert call(tagger.labels) is ValueError
    assert issubclass(call(Tagger().open_inmemory, b"lCRF" + b"\0" * 10), ValueError)
    assert call(pycrfsuite.Tagger().open_inmemory, b"lCRF" + b"\0" * 10) is ValueError
    assert call(Tagger().open_inmemory, "text") is TypeError
    with Tagger.from_model(exact_model(path)) as tagger:
        assert tagger.labels() == ["X", "Y"]
    assert call(tagger.labels) is ValueError


_KEYS = st.sampled_from(["a", "b", "w", "a:x", "x:y"])
_VALS = st.one_of(st.sampled_from(["x", "y", "q"]), st.booleans(), st.integers(-2, 2),
                  st.sampled_from([0.0, 0.5, -1.5]),
                  st.sampled_from([np.str_("x"), np.bool_(True), np.float64(0.5),
                                   np.float32(-1.5), np.int64(2)]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.lists(st.dictionaries(_KEYS, _VALS, max_size=4), min_size=1, max_size=4),
    st.lists(st.lists(st.sampled_from(["a", "b", "a:x", "zz"]), max_size=4), min_size=1,
             max_size=4)), min_size=1, max_size=5), st.integers(0, 2**31))
def test_the_tagger_s_common_items_score_as_the_general_encoder(xseqs, seed):
    """Dict items through the pairs met before (misses, then hits, and after the table is
    emptied) and string lists score every token as the general encoder does, bit for
    bit, and so decode the same."""
    from crfsdca.model.oracle import unary_scores
    from crfsdca.tagger import PairIds, encode_sequence

    rng = np.random.default_rng(seed)
    names = ["a:x", "a:y", "b", "w", "x:y:x", "a", "b:q"]
    K = 3
    model = Model(LABELS[:K], names, rng.normal(size=WeightLayout(len(names), K).dim))
    tagger = Tagger.from_model(model)
    d, s = tagger._d, tagger._sequence()  # the model's decoder, this thread's sequence
    for limit in (PairIds.limit, 3):
        s.pairs.limit = limit
        for xseq in xseqs + xseqs:
            tagger.set(xseq)
            T = len(xseq)
            got = s.ws.scores[:T * K].copy()
            want = np.empty(T * K)
            unary_scores(model.weights, len(names), K, encode_sequence(xseq, d.attribute_ids),
                         0, want)
            assert got.tobytes() == want.tobytes()
            assert d.entries(xseq, s.pairs) is not None


def test_a_failed_set_keeps_the_sequence_set_before():
    """A bad item (in a sequence longer than the tagger's workspace) raises before the
    workspace is touched: tag() and probability() still describe the sequence set last."""
    rng = np.random.default_rng(3)
    model = Model(["X", "Y"], ["a", "b"], rng.normal(size=WeightLayout(2, 2).dim))
    tagger = Tagger.from_model(model)
    tagger.set([["a"], ["b"], ["a", "b"]])
    want = tagger.tag()
    p = tagger.probability(want)
    for bad in ([["a"]] * 50 + [[3]], [{"a": "x"}] * 50 + [{"a": 1 + 0j}]):
        with pytest.raises(ValueError):
            tagger.set(bad)
        assert tagger.tag() == want and tagger.probability(want) == p


def test_a_value_equal_to_one_met_before_is_still_checked():
    """1 + 0j equals 1 (and hashes alike): the pairs met before must not let it through
    where the item-by-item reading refuses it, in the tagger and in the encoder."""
    from crfsdca.data.items import Vocabulary, encode

    model = Model(["X", "Y"], ["a", "b"], np.zeros(WeightLayout(2, 2).dim))
    tagger = Tagger.from_model(model)
    tagger.set([{"a": 1}])
    with pytest.raises(ValueError):
        tagger.set([{"a": 1 + 0j}])
    with pytest.raises(ValueError, match="sequence 0, item 1"):
        encode([[{"a": 1}, {"a": 1 + 0j}]], None, Vocabulary(), Vocabulary(), grow=True)
