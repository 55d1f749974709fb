"""The Tagger shared by threads, each with its own sequence, and pickled: every thread
gets the results of its own sequence (all set before any reads, so that one state for
all would fail), and an unpickled tagger gives what the original gives."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

from crfsdca import CRF
from crfsdca.model.layout import WeightLayout
from crfsdca.model_file import Model, save_model
from crfsdca.tagger import Tagger

LABELS = ["O", "B-X", "I-X", "B-Y", "I-Y"]
ATTRS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(5)
    return Model(LABELS, ATTRS, 2 * rng.normal(size=WeightLayout(4, 5).dim))


def sequences(n, seed):
    rng = np.random.default_rng(seed)
    return [[{a: float(rng.normal()) for a in rng.choice(ATTRS, size=2, replace=False)}
             for _ in range(rng.integers(1, 40))] for _ in range(n)]


def results(tagger: Tagger, xseq, constraints=None):
    """Everything the tagger says of the sequence it has set."""
    labels = tagger.tag()
    T = len(labels)
    return (labels, tagger.probability(labels), tagger.tag(n_best=3),
            [[tagger.marginal(lab, t) for lab in LABELS] for t in range(T)],
            [tagger.pairwise_marginal(a, b, t) for t in range(T - 1) for a in LABELS[:2]
             for b in LABELS[:2]])


@pytest.mark.parametrize("constraints", [None, "BIO"])
def test_threads_each_with_its_own_sequence(model, constraints):
    tagger = Tagger.from_model(model)
    n_threads, rounds = 4, 25
    work = [sequences(rounds, seed) for seed in range(n_threads)]
    expected = []
    for xs in work:
        rows = []
        for x in xs:
            tagger.set(x, constraints=constraints)
            rows.append(results(tagger, x))
        expected.append(rows)
    barrier = threading.Barrier(n_threads)
    got = [[] for _ in range(n_threads)]
    errors = []

    def run(j):
        try:
            for x in work[j]:
                tagger.set(x, constraints=constraints)
                barrier.wait()  # every thread has set its sequence before any reads
                got[j].append(results(tagger, x))
                barrier.wait()
        except Exception as e:  # reported below, with the thread
            errors.append((j, e))
            barrier.abort()

    threads = [threading.Thread(target=run, args=(j,)) for j in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert got == expected


def test_threads_tag_at_once(model):
    """No barrier: the threads tag as fast as they can, the kernels without the GIL."""
    tagger = Tagger.from_model(model)
    work = [sequences(200, 10 + j) for j in range(3)]
    expected = [[tagger.tag(x) for x in xs]
                for xs in work]
    got = [None] * 3

    def run(j):
        got[j] = [tagger.tag(x) for x in work[j]]

    threads = [threading.Thread(target=run, args=(j,)) for j in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_a_tagger_pickles(model, tmp_path):
    xs = sequences(5, 99)
    for tagger in (Tagger.from_model(model), _opened(model, tmp_path)):
        tagger.set(xs[0], constraints="BIO", forced={0: "B-Y"})
        tagger.tag()
        copy = pickle.loads(pickle.dumps(tagger))
        assert copy.labels() == LABELS
        assert copy.tag() == []  # the set sequence stays with the original
        for x in xs:
            for t in (tagger, copy):
                t.set(x, constraints="BIO")
            assert results(copy, x) == results(tagger, x)
    closed = pickle.loads(pickle.dumps(Tagger()))
    with pytest.raises(ValueError, match="The tagger is not opened"):
        closed.tag([["a"]])


def test_the_estimator_s_tagger_pickles_with_it(model, tmp_path):
    path = tmp_path / "m.model"
    save_model(path, model)
    crf = CRF(model_filename=str(path))
    x = sequences(1, 3)[0]
    before = crf.predict_single(x, constraints="BIO")
    tagger = pickle.loads(pickle.dumps(crf.tagger_))
    assert tagger.tag(x, constraints="BIO") == before
    assert pickle.loads(pickle.dumps(crf)).predict_single(x, constraints="BIO") == before


def _opened(model, tmp_path) -> Tagger:
    path = tmp_path / "opened.model"
    save_model(path, model)
    tagger = Tagger()
    tagger.open(str(path))
    return tagger
