"""A corpus encoded once into a folder (``crfsdca.Corpus``): read back as it was written,
the same model as a fit on the sequences themselves, clear errors for what it does not
hold."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crfsdca
from crfsdca.corpus import FILE, Corpus
from crfsdca.data.hdf5 import FORMAT
from crfsdca.data.items import Vocabulary, encode
from crfsdca.errors import DataFormatError
from crfsdca.runtime.sealed import seal

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]


def _corpus(seed: int, n: int = 40):
    """Tutorial-like items: str values, numbers, and booleans (False: a weight-0 entry)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(1, 7))
        words = rng.choice(WORDS, T)
        X.append([{"bias": 1.0, "word": str(w), "len": float(len(w)),
                   "title": bool(rng.random() < 0.3), f"w:{w}": rng.random() < 0.5}
                  for w in words])
        y.append([["N", "V", "D"][WORDS.index(w) % 3] for w in words])
    return X, y


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), pairs=st.booleans())
def test_a_corpus_reads_back_the_encoding_of_its_sequences(seed, pairs, tmp_path_factory):
    X, y = _corpus(seed, 12)
    folder = tmp_path_factory.mktemp("corpus")
    corpus = Corpus.create(folder, iter(list(zip(X, y, strict=True))) if pairs else iter(X),
                           None if pairs else iter(y))
    attributes, labels = Vocabulary(), Vocabulary()
    whole = encode(X, y, attributes, labels, grow=True)
    again = Corpus(folder)
    for c in (corpus, again):
        assert c.attributes == attributes.strings() and c.labels == labels.strings()
        for name in whole.seq._fields:
            a, b = getattr(whole.seq, name), getattr(c.sequences, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        np.testing.assert_array_equal(c.zero_entries, whole.zero_entries.reshape(-1, 2))
    assert len(again) == len(X) and "12 sequences" in repr(again)


@pytest.mark.parametrize("c1", [0.0, 0.1])
def test_a_fit_on_a_corpus_is_the_fit_on_its_sequences(tmp_path, c1):
    X, y = _corpus(1)
    corpus = crfsdca.Corpus.create(tmp_path / "c", (pair for pair in zip(X, y, strict=True)))
    assert len(corpus.zero_entries)  # the False values: CRFsuite's features, weight 0
    on_lists = crfsdca.CRF(c1=c1, c2=0.1, all_possible_transitions=True).fit(X, y)
    on_corpus = crfsdca.CRF(c1=c1, c2=0.1, all_possible_transitions=True).fit(
        Corpus(tmp_path / "c"), sample_weight=1.0)
    a, b = on_lists.model_, on_corpus.model_
    assert a.attributes == b.attributes and a.labels == b.labels
    np.testing.assert_array_equal(a.weights, b.weights)
    assert on_corpus.predict(X) == on_lists.predict(X)
    assert "encode" in on_corpus.training_log_.phases


def test_bad_uses_are_refused_in_one_line(tmp_path):
    X, y = _corpus(2, 8)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        Corpus(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=f"no {FILE}"):
        Corpus(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / FILE).write_bytes(b"not hdf5")
    with pytest.raises(DataFormatError, match="not a crfsdca-dataset file"):
        Corpus(tmp_path / "bad")
    with pytest.raises(ValueError, match="two labels or more"):
        Corpus.create(tmp_path / "one", X, [["N"] * len(s) for s in X])
    with pytest.raises(ValueError, match="no array attributes"):
        Corpus.create(tmp_path / "vec", [[{"v": np.ones(2)}]] * 2, [["N"], ["V"]])
    corpus = Corpus.create(tmp_path / "ok", X, y)
    with pytest.raises(ValueError, match="pass y=None"):
        crfsdca.CRF().fit(corpus, y)


def test_a_fit_on_a_corpus_stopped_early_is_continued_from_its_files(tmp_path, capsys):
    """A corpus fit stopped after two epochs, its model and dual state saved, continues in
    a new estimator from those files (every dual block reused) to the optimum of a fit
    run whole, within the two certificates; ``warm_start`` in the same estimator does the
    same. Digests agree between corpora that number attributes differently, and differ
    between different sequences."""
    X, y = _corpus(4, 30)
    corpus = Corpus.create(tmp_path / "c", X, y)
    model = str(tmp_path / "m.h5")
    whole = crfsdca.CRF(c2=0.1, epsilon=1e-6).fit(corpus)
    stopped = crfsdca.CRF(c2=0.1, max_iterations=2, save_dual=True,
                          model_filename=model).fit(corpus)
    assert stopped.training_log_[-1]["relative_gap"] > 1e-3
    capsys.readouterr()
    later = crfsdca.CRF(epsilon=1e-6, verbose=1).continue_from(model).fit(Corpus(tmp_path / "c"))
    assert f"continuing: {len(X)} of {len(X)} sequences start from their kept dual blocks" \
        in capsys.readouterr().out
    again = crfsdca.CRF(c2=0.1, max_iterations=2, warm_start=True).fit(corpus)
    again.set_params(max_iterations=None, epsilon=1e-6).fit(corpus)
    for fit in (later, again):
        last, ref = fit.training_log_[-1], whole.training_log_[-1]
        assert abs(last["loss"] - ref["loss"]) <= last["gap"] + ref["gap"]
        assert fit.training_log_[0]["loss"] < whole.training_log_[0]["loss"]
    reordered = Corpus.create(tmp_path / "r", X[::-1], y[::-1])  # other attribute ids
    assert reordered.attributes != corpus.attributes
    assert reordered.digests()[::-1] == corpus.digests()
    twice = Corpus.create(tmp_path / "t", X + X[:5], y + y[:5]).digests()
    assert twice[-5:] == twice[:5] and len(set(twice)) > len(X) // 2
    items = [[[f"w={w}"] for w in x] for x in (["a", "b"], ["b", "a"], ["a", "b"])]
    binary = Corpus.create(tmp_path / "b", items, [["N", "V"]] * 3)
    assert binary.sequences.binary
    first, second, third = binary.digests()
    assert first == third != second


def test_a_corpus_file_with_bad_zero_entries_is_refused(tmp_path):
    X, y = _corpus(3, 8)
    corpus = Corpus.create(tmp_path, X, y)
    with h5py.File(tmp_path / FILE, "a") as f:
        del f["train/zero_entries"]
        f["train/zero_entries"] = np.array([[len(corpus.attributes), 0]], dtype=np.int64)
    seal(tmp_path / FILE, FORMAT)
    with pytest.raises(DataFormatError, match="zero_entries: an attribute id outside"):
        Corpus(tmp_path)
