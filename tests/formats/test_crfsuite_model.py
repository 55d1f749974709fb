"""CRFsuite's binary model file, read and written by crfsdca.formats.crfsuite_model, against
python-crfsuite (and CRFsuite's own ``crfsuite`` program when it can be built).

Both directions: a model CRFsuite trained is read and tags, scores and marginalizes as
CRFsuite's tagger does; a model crfsdca writes is opened by CRFsuite's tagger, which sees
exactly its nonzero weights and tags as crfsdca does. Damaged files raise DataFormatError.

The ``crfsuite`` program test needs gcc and python-crfsuite's sdist, which bundles
CRFsuite's sources (``pip download --no-binary python-crfsuite --no-deps
python-crfsuite==0.9.12``): set CRFSUITE_SDIST to the .tar.gz (or to its unpacked
directory), or CRFSUITE_BIN to a built ``crfsuite``. Nothing is downloaded at test time.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.paths import RAW, ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crfsdca.data.items import Vocabulary, encode
from crfsdca.errors import ConfigError, DataFormatError
from crfsdca.formats.cqdb import build_cqdb, cqdb_lookup, hash_keys, hashlittle
from crfsdca.formats.crfsuite_model import (
    is_crfsuite_model,
    read_crfsuite_model,
    write_crfsuite_model,
)
from crfsdca.model.objective import predict
from crfsdca.model.oracle import labeling_score, sequence_marginals, unary_scores
from crfsdca.model_file import Model, save_model

pycrfsuite = pytest.importorskip("pycrfsuite")

TOL = 1e-6
NAME_CHARS = "abcxyzABZ019=:|[]_-.é日"


# ---------------------------------------------------------------------------------------
# Helpers


def dumped(value: float) -> float:
    """A weight as CRFsuite's dump (and so ``Tagger.info()``) shows it: ``%f``."""
    return float(f"{value:f}")


def ours(model: Model, X):
    """crfsdca's Viterbi labels, unary marginals (T, K) and probability of the Viterbi
    labeling of every sequence of X (python-crfsuite items): exp(score - log Z)."""
    A, K = len(model.attributes), len(model.labels)
    seq = encode(X, None, Vocabulary(model.attributes), Vocabulary(model.labels),
                 grow=False).seq
    pred = predict(model.weights, seq, A, K)
    out = []
    for i in range(seq.n_sequences):
        logz, unary, _ = sequence_marginals(model.weights, A, K, seq, i)
        start, T = int(seq.offsets[i]), len(unary)
        scores = np.empty(T * K)
        unary_scores(model.weights, A, K, seq, i, scores)
        score = labeling_score(scores, T, K, model.weights, A, pred, start)
        labels = [model.labels[k] for k in pred[start:start + T]]
        out.append((labels, unary, math.exp(score - logz)))
    return out


def crfsuite_tagging(path: Path, labels: list[str], X):
    """CRFsuite's labels, marginals (T, K, ``labels`` order) and probability of its
    labeling, by python-crfsuite's Tagger on the model file at ``path``."""
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    out = []
    try:
        for xseq in X:
            tags = tagger.tag(xseq)
            marg = np.array([[tagger.marginal(lab, t) for lab in labels]
                             for t in range(len(xseq))])
            out.append((tags, marg, tagger.probability(tags)))
    finally:
        tagger.close()
    return out


def assert_same_tagging(model: Model, path: Path, X) -> None:
    """Labels equal, marginals and sequence probabilities within 1e-6."""
    for (ours_tags, ours_marg, ours_p), (tags, marg, p) in zip(
            ours(model, X), crfsuite_tagging(path, model.labels, X), strict=True):
        assert ours_tags == tags
        np.testing.assert_allclose(ours_marg, marg, rtol=0, atol=TOL)
        assert ours_p == pytest.approx(p, rel=0, abs=TOL)


def crfsuite_info(path: Path):
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    try:
        return tagger.info()
    finally:
        tagger.close()


def expected_info(model: Model):
    """What CRFsuite's dump should list for ``model`` written by crfsdca: labels, active
    attributes (renumbered), nonzero state features and transitions (``%f``)."""
    layout = model.layout
    E, W = layout.emission(model.weights), layout.transition(model.weights)
    active = [a for a in range(len(model.attributes)) if np.any(E[a] != 0)]
    labels = {lab: str(k) for k, lab in enumerate(model.labels)}
    attributes = {model.attributes[a]: str(i) for i, a in enumerate(active)}
    states = {(model.attributes[a], model.labels[k]): dumped(E[a, k])
              for a, k in zip(*np.nonzero(E), strict=True)}
    trans = {(model.labels[i], model.labels[j]): dumped(W[i, j])
             for i, j in zip(*np.nonzero(W), strict=True)}
    return labels, attributes, states, trans, active


def random_model(rng: np.random.Generator, A: int, K: int, names=None) -> Model:
    """Random weights, about a third of them 0, and every third attribute all 0."""
    names = names or [f"a{a}" for a in range(A)]
    labels = [f"L{k}" for k in range(K)]
    model = Model(labels, names, np.zeros(A * K + 3 * K + K * K))
    layout = model.layout
    E, W = layout.emission(model.weights), layout.transition(model.weights)
    E[:] = rng.normal(size=(A, K)) * (rng.random((A, K)) < 0.65)
    E[::3] = 0.0
    W[:] = rng.normal(size=(K, K)) * (rng.random((K, K)) < 0.7)
    return model


def random_items(rng: np.random.Generator, names: list[str], n: int, max_len: int = 7):
    """n sequences of items {attribute: value}, unknown attributes included."""
    pool = [*names, "unknown", "other:unknown"]
    X = []
    for _ in range(n):
        xseq = []
        for _ in range(int(rng.integers(1, max_len + 1))):
            picked = rng.choice(len(pool), size=int(rng.integers(0, min(5, len(pool)) + 1)),
                                replace=False)
            xseq.append({pool[p]: float(rng.choice([1.0, rng.normal()])) for p in picked})
        X.append(xseq)
    return X


# ---------------------------------------------------------------------------------------
# A model trained by CRFsuite on CoNLL-2000 (a subset)


@pytest.fixture(scope="module")
def conll():
    """(X_train, y_train, X_test) of CoNLL-2000 with CRFsuite's example/chunking.py
    attributes, 300 training and 60 test sentences."""
    from crfsdca.data.corpus_items import corpus_items

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["datasets"]["conll"]["subset"] = {"train": 300, "test": 60}
    X, y, Xt, _ = corpus_items(config, "conll", RAW)
    return X, y, Xt


@pytest.fixture(scope="module")
def crfsuite_trained(conll, tmp_path_factory):
    """A CRFsuite model of the CoNLL subset (L-BFGS with c1 = 0.5: many zero weights)."""
    X, y, _ = conll
    path = tmp_path_factory.mktemp("crfsuite") / "conll.crfsuite"
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    trainer.set_params({"c1": 0.5, "c2": 1e-3, "max_iterations": 60})
    trainer.train(str(path))
    return path


def test_reads_crfsuite_trained_model(crfsuite_trained, conll):
    model = read_crfsuite_model(crfsuite_trained)
    info = crfsuite_info(crfsuite_trained)
    assert model.labels == sorted(info.labels, key=lambda lab: int(info.labels[lab]))
    assert model.attributes == sorted(info.attributes,
                                      key=lambda a: int(info.attributes[a]))
    assert int(info.header["num_attrs"]) == len(model.attributes)
    labels, attributes, states, trans, active = expected_info(model)
    assert len(active) == len(model.attributes)  # CRFsuite keeps only active attributes
    assert states == info.state_features
    assert trans == info.transitions
    assert len(states) < 0.5 * len(model.attributes) * len(model.labels)  # sparse
    assert not np.any(model.layout.bias(model.weights))
    assert model.options["format"] == "crfsuite" and model.training == {}
    assert_same_tagging(model, crfsuite_trained, conll[2])


def test_crfsuite_model_rewritten_is_crfsuite_s_file(crfsuite_trained, conll, tmp_path):
    """CRFsuite orders its features by (type, src, dst), as the writer does: reading its
    model and writing it again gives its file byte for byte."""
    model = read_crfsuite_model(crfsuite_trained)
    out = write_crfsuite_model(tmp_path / "again.crfsuite", model)
    assert out.read_bytes() == crfsuite_trained.read_bytes()
    info, info0 = crfsuite_info(out), crfsuite_info(crfsuite_trained)
    assert (info.labels, info.attributes) == (info0.labels, info0.attributes)
    assert (info.state_features, info.transitions) == (info0.state_features, info0.transitions)
    assert_same_tagging(model, out, conll[2])
    again = read_crfsuite_model(out)
    assert again.labels == model.labels and again.attributes == model.attributes
    np.testing.assert_array_equal(again.weights, model.weights)


def test_cqdb_chunks_are_crfsuite_s_bytes(crfsuite_trained):
    """CRFsuite's own label and attribute databases, rebuilt from their strings in the
    order CRFsuite put them, byte for byte: the hash, the 256 tables, linear probing,
    the backward array."""
    data = crfsuite_trained.read_bytes()
    header = np.frombuffer(data[:48], dtype="<u4")
    for start, end in ((header[8], header[9]), (header[9], header[10])):
        chunk = data[start:start + int.from_bytes(data[start + 4:start + 8], "little")]
        assert start + len(chunk) <= end
        count = int.from_bytes(chunk[16:20], "little")
        bwd = int.from_bytes(chunk[20:24], "little")
        offsets = np.frombuffer(chunk[bwd:bwd + 4 * count], dtype="<u4")
        put = np.argsort(offsets)  # records lie in the order they were put
        strings = [chunk[o + 8:chunk.index(b"\0", o + 8)].decode() for o in offsets]
        assert build_cqdb([strings[i] for i in put], put) == chunk
        for i in range(0, count, max(1, count // 50)):
            assert cqdb_lookup(chunk, strings[i]) == i
        assert cqdb_lookup(chunk, "no such string") == -1


# ---------------------------------------------------------------------------------------
# Models written by crfsdca, opened by CRFsuite


@pytest.mark.parametrize("seed, A, K", [(0, 40, 5), (1, 7, 1), (2, 1, 3), (3, 200, 12)])
def test_written_model_opens_in_crfsuite(tmp_path, seed, A, K):
    rng = np.random.default_rng(seed)
    model = random_model(rng, A, K)
    path = write_crfsuite_model(tmp_path / "m.crfsuite", model)
    assert is_crfsuite_model(path)
    info = crfsuite_info(path)
    labels, attributes, states, trans, _ = expected_info(model)
    assert info.labels == labels
    assert info.attributes == attributes
    assert info.state_features == states
    assert info.transitions == trans
    assert int(info.header["size"]) == path.stat().st_size
    assert_same_tagging(model, path, random_items(rng, model.attributes, 25))


names = st.text(alphabet=NAME_CHARS, min_size=1, max_size=12)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), A=st.integers(0, 12), K=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1))
def test_random_models_agree_with_crfsuite(tmp_path, data, A, K, seed):
    attrs = data.draw(st.lists(names, min_size=A, max_size=A, unique=True))
    rng = np.random.default_rng(seed)
    model = random_model(rng, A, K, attrs)
    path = write_crfsuite_model(tmp_path / "h.crfsuite", model)
    info = crfsuite_info(path)
    labels, attributes, states, trans, active = expected_info(model)
    assert (info.labels, info.attributes) == (labels, attributes)
    assert (info.state_features, info.transitions) == (states, trans)
    assert_same_tagging(model, path, random_items(rng, model.attributes, 6))
    check_round_trip(model, path, active)


def check_round_trip(model: Model, path: Path, active: list[int]) -> None:
    """Reading back gives the labels, the active attributes and their weights exactly;
    writing that again gives the same bytes."""
    back = read_crfsuite_model(path)
    assert back.labels == model.labels
    assert back.attributes == [model.attributes[a] for a in active]
    layout, lb = model.layout, back.layout
    np.testing.assert_array_equal(lb.emission(back.weights),
                                  layout.emission(model.weights)[active])
    np.testing.assert_array_equal(lb.transition(back.weights),
                                  layout.transition(model.weights))
    assert not np.any(lb.bias(back.weights))
    again = write_crfsuite_model(path.with_suffix(".again"), back)
    assert again.read_bytes() == path.read_bytes()


def test_round_trip(tmp_path):
    model = random_model(np.random.default_rng(5), 300, 9)
    path = write_crfsuite_model(tmp_path / "m.crfsuite", model)
    E = model.layout.emission(model.weights)
    check_round_trip(model, path, [a for a in range(300) if np.any(E[a])])


def test_empty_model_round_trips(tmp_path):
    model = Model(["only"], ["unused"], np.zeros(1 + 3 + 1))
    path = write_crfsuite_model(tmp_path / "m.crfsuite", model)
    back = read_crfsuite_model(path)
    assert back.labels == ["only"] and back.attributes == []
    info = crfsuite_info(path)
    assert info.labels == {"only": "0"} and info.attributes == {}
    assert crfsuite_tagging(path, ["only"], [[{"unused": 1.0}]])[0][0] == ["only"]


# ---------------------------------------------------------------------------------------
# Refusals and damaged files


def test_bias_weights_refused(tmp_path):
    model = random_model(np.random.default_rng(0), 5, 3)
    model.layout.bias(model.weights)[1, 2] = 0.5
    with pytest.raises(ConfigError, match="no bias features.*bias=False"):
        write_crfsuite_model(tmp_path / "m.crfsuite", model)
    assert list(tmp_path.iterdir()) == []  # nothing left behind


@pytest.mark.parametrize("change", ["nan", "nul", "twice"])
def test_unwritable_models_refused(tmp_path, change):
    model = random_model(np.random.default_rng(0), 5, 3)
    if change == "nan":
        model.weights[-1] = np.nan
    elif change == "nul":
        model.attributes[1] = "a\0b"
    else:
        model.labels[1] = model.labels[0]
    with pytest.raises(ConfigError):
        write_crfsuite_model(tmp_path / "m.crfsuite", model)


@pytest.fixture
def small_model_bytes(tmp_path):
    """A small valid model file's bytes."""
    model = random_model(np.random.default_rng(3), 6, 3)
    return write_crfsuite_model(tmp_path / "valid.crfsuite", model).read_bytes()


def u32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 4], "little")


def patched(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + (value & 0xFFFFFFFF).to_bytes(4, "little") + data[at + 4:]


DAMAGE = {
    "truncated": (lambda d: d[:-1], "truncated"),
    "truncated to 20 bytes": (lambda d: d[:20], "truncated"),
    "empty": (lambda d: b"", "truncated"),
    "flipped magic": (lambda d: b"Lcrf" + d[4:], "not a CRFsuite model"),
    "other version": (lambda d: patched(d, 12, 101), "version 101"),
    "features beyond the end": (lambda d: patched(d, 28, len(d) + 8), "features"),
    "attribute refs beyond the end": (lambda d: patched(d, 44, len(d) + 100),
                                      "attribute refs"),
    "labels beyond the end": (lambda d: patched(d, 32, len(d) - 10), "labels"),
    "label refs at the labels": (lambda d: patched(d, 40, u32(d, 32)), "label refs"),
    "feature with a bad label": (lambda d: patched(d, 48 + 12 + 8, 99), "feature 0"),
    "feature of type 7": (lambda d: patched(d, 48 + 12, 7), "feature 0"),
    "NaN weight": (lambda d: d[:72] + np.array([np.nan]).tobytes() + d[80:], "feature 0"),
    "CQDB byte order": (lambda d: patched(d, u32(d, 32) + 12, 0x71534462), "byte-order"),
    "ref list too long": (lambda d: patched(d, u32(d, u32(d, 44) + 12), 1 << 30),
                          "attribute refs"),
    "feature with an attribute out of range": (lambda d: patched(d, 48 + 12 + 4, 10**6),
                                               "feature 0"),
    "ref to a feature out of range": (lambda d: patched(d, u32(d, u32(d, 44) + 12) + 4, 10**6),
                                      "lists feature 1000000"),
    "CQDB backward array past the chunk": (lambda d: patched(d, u32(d, 36) + 20, 10**6),
                                           "backward array"),
    "CQDB record offset out of range": (
        lambda d: patched(d, u32(d, 36) + u32(d, u32(d, 36) + 20), 10**7), "record offset"),
    "CQDB string length past the chunk": (
        lambda d: patched(d, u32(d, 36) + u32(d, u32(d, 36) + u32(d, u32(d, 36) + 20)) + 4,
                          10**6), "runs past the chunk's end"),
    "ref to another attribute's feature": (
        lambda d: patched(d, u32(d, u32(d, 44) + 12) + 4, u32(d, u32(d, u32(d, 44) + 16) + 4)),
        "attribute refs"),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_files_raise_data_format_error(tmp_path, small_model_bytes, name):
    damage, message = DAMAGE[name]
    path = tmp_path / "damaged.crfsuite"
    data = damage(small_model_bytes)
    if name not in ("truncated", "truncated to 20 bytes", "empty"):
        data = patched(data, 4, len(data))  # keep the size right: reach the deeper checks
    path.write_bytes(data)
    with pytest.raises(DataFormatError, match=message) as e:
        read_crfsuite_model(path)
    assert str(path) in str(e.value)


def test_every_truncation_and_byte_flip_is_caught_or_harmless(tmp_path, small_model_bytes):
    """Cut at any length, or one byte flipped (every third byte, so one in each 4-byte
    field; in the CQDB's 256 table refs, mostly zeros, one in each ref): DataFormatError or
    a model, never another exception."""
    path = tmp_path / "fuzz.crfsuite"
    data = small_model_bytes
    for n in range(0, len(data), 7):
        path.write_bytes(data[:n])
        with pytest.raises(DataFormatError):
            read_crfsuite_model(path)
    table_refs = [range(u32(data, at) + 24, u32(data, at) + 2072) for at in (32, 36)]
    for at in range(0, len(data), 3):
        if at % 12 and any(at in refs for refs in table_refs):
            continue
        path.write_bytes(data[:at] + bytes([data[at] ^ 0xA5]) + data[at + 1:])
        try:
            read_crfsuite_model(path)
        except DataFormatError:
            pass


def test_missing_and_other_files(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        read_crfsuite_model(tmp_path / "absent")
    assert not is_crfsuite_model(tmp_path / "absent")
    assert not is_crfsuite_model(tmp_path)
    ours_h5 = save_model(tmp_path / "model.h5", random_model(np.random.default_rng(0), 3, 2))
    assert not is_crfsuite_model(ours_h5)
    with pytest.raises(DataFormatError, match="not a CRFsuite model"):
        read_crfsuite_model(ours_h5)


# ---------------------------------------------------------------------------------------
# The hash


def test_hashlittle_reference_values():
    """lookup3.c's own self-test values (its driver5)."""
    assert hashlittle(b"") == 0xDEADBEEF
    assert hashlittle(b"", 0xDEADBEEF) == 0xBD5B7DDE
    assert hashlittle(b"Four score and seven years ago") == 0x17770551
    assert hashlittle(b"Four score and seven years ago", 1) == 0xCD628161


@given(st.lists(st.binary(min_size=1, max_size=60), max_size=40))
def test_vectorized_hash_equals_reference(keys):
    assert hash_keys(keys).tolist() == [hashlittle(k) for k in keys]


# ---------------------------------------------------------------------------------------
# CRFsuite's own program


@pytest.fixture(scope="session")
def crfsuite_program(tmp_path_factory) -> Path:
    """CRFsuite's ``crfsuite`` program: $CRFSUITE_BIN, or built with gcc from the sdist
    at $CRFSUITE_SDIST (skipped when neither is there)."""
    if os.environ.get("CRFSUITE_BIN"):
        return Path(os.environ["CRFSUITE_BIN"])
    spec = os.environ.get("CRFSUITE_SDIST")
    cc = shutil.which("gcc") or shutil.which("cc")
    if not spec or not Path(spec).exists():
        pytest.skip("CRFsuite's program needs its sources: set CRFSUITE_SDIST to python-"
                    "crfsuite's sdist (pip download --no-binary python-crfsuite --no-deps "
                    "python-crfsuite==0.9.12) or CRFSUITE_BIN to a crfsuite binary")
    if cc is None:
        pytest.skip("no C compiler (gcc or cc) to build CRFsuite's program")
    from crfsdca.reproduction.crfsuite_baseline import build_program

    return build_program(spec, tmp_path_factory.mktemp("crfsuite-build"), cc)


def crfsuite_tag(program: Path, model: Path, X, y, tmp_path: Path):
    """(labels, probability, marginal of each label) per sequence, from ``crfsuite tag
    -p -i`` (a sequence: ``@score``, ``@probability`` lines, then label:marginal lines)."""
    from crfsdca.data.crfsuite_format import write_sequences

    data = tmp_path / "input.txt"
    with open(data, "w", encoding="utf-8") as f:
        write_sequences(f, [[list(item.items()) for item in xseq] for xseq in X], y)
    done = subprocess.run([str(program), "tag", "-m", str(model), "-p", "-i", str(data)],
                          capture_output=True, text=True, check=True)
    out = []
    for block in done.stdout.strip("\n").split("\n\n"):
        lines = block.split("\n")
        fields = dict(line.split("\t", 1) for line in lines if line.startswith("@"))
        pairs = [line.rsplit(":", 1) for line in lines if not line.startswith("@")]
        out.append(([p[0] for p in pairs], float(fields["@probability"]),
                    [float(p[1]) for p in pairs]))
    return out


def assert_program_agrees(program: Path, model: Model, path: Path, X, tmp_path: Path):
    mine = ours(model, X)
    y = [tags for tags, _, _ in mine]
    theirs = crfsuite_tag(program, path, X, y, tmp_path)
    assert len(theirs) == len(mine)
    for (tags, marg, p), (their_tags, their_p, their_marg) in zip(mine, theirs, strict=True):
        assert their_tags == tags
        assert their_p == pytest.approx(p, rel=0, abs=TOL)
        picked = marg[np.arange(len(tags)), [model.labels.index(t) for t in tags]]
        np.testing.assert_allclose(their_marg, picked, rtol=0, atol=TOL)


def test_crfsuite_program_tags_written_models(crfsuite_program, tmp_path):
    rng = np.random.default_rng(11)
    model = random_model(rng, 60, 6)
    path = write_crfsuite_model(tmp_path / "m.crfsuite", model)
    assert_program_agrees(crfsuite_program, model, path, random_items(rng, model.attributes, 30),
                          tmp_path)


def test_crfsuite_program_tags_rewritten_crfsuite_model(crfsuite_program, crfsuite_trained,
                                                        conll, tmp_path):
    model = read_crfsuite_model(crfsuite_trained)
    path = write_crfsuite_model(tmp_path / "conll.crfsuite", model)
    X = [[dict.fromkeys(item, 1.0) for item in xseq] for xseq in conll[2]]
    assert_program_agrees(crfsuite_program, model, path, X, tmp_path)
