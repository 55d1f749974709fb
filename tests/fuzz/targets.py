"""The readers under test, and what each must answer for any input.

A target reads one file. Its answer is right when it returns something whose every index
is in range (checked here, independently of the reader's own checks, and by running the
tagger's kernels on a loaded model), or when it raises one of the package's errors
(:class:`~crfsdca.errors.CrfsdcaError`) whose message is one line naming the file. Any
other answer is a :class:`Finding`: another exception (a traceback for the user), a
message of several lines or without the file, a result out of range.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from crfsdca.cli import main
from crfsdca.corpus import read_corpus_file
from crfsdca.data.crfsuite_format import parse_lines, read_file, write_sequences
from crfsdca.data.featurize import parse_spec, spec_from_config
from crfsdca.data.readers import reader_columns
from crfsdca.data.sequences import make_sequences, validate_sequences
from crfsdca.data.templates import Extractor, parse_templates
from crfsdca.errors import CrfsdcaError
from crfsdca.formats.crfsuite_model import read_crfsuite_model
from crfsdca.formats.hdf5_model import _read_model, read_hdf5_model
from crfsdca.formats.model import Model
from crfsdca.model.numpy_tagger import predict
from crfsdca.model.oracle import sequence_marginals
from crfsdca.model_file import load_dual, load_model
from crfsdca.reproduction.config import load_config
from crfsdca.training.warm_start import state_sequences


class Finding(Exception):
    """An answer that is not one of the two right ones: ``kind`` says which."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind


@dataclass(frozen=True)
class Target:
    """One reader: ``read(path, context)`` returns its result, ``check(result, context)``
    raises AssertionError where the result is out of range. ``seeds`` names the kind of
    seed files (:func:`fuzz.seeds.make_seeds`) that its inputs start from."""

    name: str
    seeds: str
    read: Callable
    check: Callable
    names_file: bool = True
    block: int = 40  # inputs in a row, each turn of the worker
    every: int = 1  # the worker's turns at this target: one in ``every``


class Context:
    """What the targets share in a process: the seed files, the model that the dual state
    belongs to, the model that ``tag`` tags with."""

    def __init__(self, seeds: dict[str, list[Path]]):
        self.seeds = seeds
        self.model_path = seeds["hdf5"][0]
        self.model = load_model(self.model_path)


# --------------------------------------------------------------------------- CRFsuite data

def read_data(path: Path, context: Context):

    return read_file(str(path))


def check_data(inst, context: Context) -> None:
    """Sequences of items: names and labels non-empty strings without NUL, weights finite
    (those of the sequences too, >= 0); written back in CRFsuite's format, they read the
    same."""

    assert len(inst.X) == len(inst.y) == len(inst.groups) == len(inst.weights)
    assert all(math.isfinite(w) and w >= 0 for w in inst.weights), inst.weights
    for xseq, yseq in zip(inst.X, inst.y, strict=True):
        assert len(xseq) == len(yseq) > 0
        for label in yseq:
            assert isinstance(label, str) and label and "\0" not in label, label
        for item in xseq:
            for entry in item:
                name, weight = entry if isinstance(entry, tuple) else (entry, 1.0)
                assert isinstance(name, str) and name and "\0" not in name, entry
                assert isinstance(weight, float) and math.isfinite(weight), entry
    out = io.StringIO()
    try:
        write_sequences(out, inst.X, inst.y, inst.weights)
    except ValueError as e:  # a blank label without attributes: the format cannot say it
        blank = [not label.strip() and not item for xseq, yseq in zip(inst.X, inst.y,
                                                                       strict=True)
                 for item, label in zip(xseq, yseq, strict=True)]
        assert any(blank), e
        return
    again = parse_lines(out.getvalue().split("\n"), "round trip")
    assert (again.X, again.y, again.weights) == (inst.X, inst.y, inst.weights), \
        "written back, it reads otherwise"


# --------------------------------------------------------------------------- model files

def read_crfsuite(path: Path, context: Context):

    return read_crfsuite_model(path)


def read_hdf5(path: Path, context: Context):

    return read_hdf5_model(path)


def read_hdf5_unverified(path: Path, context: Context):
    """libhdf5 on a damaged file, in this process: what the header's checksum and the
    child process of :mod:`crfsdca.runtime.isolated` keep a user from meeting."""
    return _read_model(path)


def check_model(model, context: Context) -> None:
    """Vocabularies of distinct strings, a finite weight vector of the layout's size; the
    tagger's kernels (numpy's Viterbi, numba's forward-backward) run on it."""

    assert isinstance(model, Model)
    A, K = len(model.attributes), len(model.labels)
    for names in (model.labels, model.attributes):
        assert all(isinstance(s, str) for s in names) and len(set(names)) == len(names)
    w = model.weights
    assert w.dtype == np.float64 and w.shape == (model.layout.dim,) and np.isfinite(w).all()
    assert K > 0, "a model without labels"
    ids = list(range(min(A, 3)))
    seq = make_sequences([0, 2], [0, 0], [0, len(ids), len(ids)], ids)
    labels = predict(model.layout, w, seq)
    assert ((0 <= labels) & (labels < K)).all(), labels
    logz, unary, _ = sequence_marginals(w, A, K, seq, 0)
    assert np.isfinite(logz) and np.allclose(unary.sum(axis=1), 1.0), (logz, unary)


def check_crfsuite(model, context: Context) -> None:
    """As :func:`check_model`; CRFsuite's format holds no bias weight and no NUL."""
    check_model(model, context)
    assert not np.any(model.layout.bias(model.weights))
    assert "\0" not in "".join(model.labels + model.attributes)


def read_dual(path: Path, context: Context):

    return load_dual(path, context.model)


def check_dual(state, context: Context) -> None:
    """The dual state of the context's model: its sequences' labels and attributes in the
    model's ranges, marginals of the sizes the kernels index, finite."""

    K, A = len(context.model.labels), len(context.model.attributes)
    assert (state["n_labels"], state["n_attributes"]) == (K, A)
    seq = state_sequences(state)
    validate_sequences(seq, n_labels=K, n_attributes=A)
    n, N = seq.n_sequences, seq.n_tokens
    h = state.get("entropies")  # the compact store's: a pairwise sum and a bound a sequence
    pairs = N - n if h is None else n
    assert state["mu_unary"].shape == (N * K,) and state["mu_pair"].shape == (pairs * K * K,)
    assert np.isfinite(state["mu_unary"]).all() and np.isfinite(state["mu_pair"]).all()
    assert h is None or (h.shape == (n,) and np.isfinite(h).all() and (h >= 0).all())
    assert np.asarray(state["digests"]).shape == (n, 16)


# --------------------------------------------------------------------------- corpus files

def read_corpus(path: Path, context: Context):

    return read_corpus_file(path)


def check_corpus(ds, context: Context) -> None:
    """What a fit on the corpus reads: a training split whose every index is in range
    (checked here again), radii finite and >= 0, weight-0 entries that name an attribute
    and a token; the forward-backward kernel runs on its first sequences."""
    K, A, seq = ds.n_labels, ds.n_attributes, ds.train
    assert ds.test is None and K == len(ds.labels) >= 2 and A == len(ds.attributes)
    off, ptr = np.asarray(seq.offsets), np.asarray(seq.attr_indptr)
    n, N = len(off) - 1, len(seq.labels)
    assert n >= 0 and off[0] == 0 and off[-1] == N and (np.diff(off) >= 1).all()
    assert len(ptr) == N + 1 and ptr[0] == 0 and (np.diff(ptr) >= 0).all()
    assert ptr[-1] == len(seq.attr_indices) and ((0 <= seq.labels) & (seq.labels < K)).all()
    assert ((0 <= seq.attr_indices) & (seq.attr_indices < A)).all()
    assert ds.radii.shape == (n,) and np.isfinite(ds.radii).all() and (ds.radii >= 0).all()
    z = ds.zero_entries
    assert z.shape[1:] == (2,) and ((0 <= z) & (z < [A, N])).all()
    w = np.zeros(ds.dim)
    for i in range(min(n, 3)):
        logz, unary, _ = sequence_marginals(w, A, K, seq, i)
        assert np.isfinite(logz) and np.allclose(unary.sum(axis=1), 1.0), (logz, unary)


# --------------------------------------------------------------------------- templates

SENTENCE = ("The", "Cat-1", "sat", "ON", "x")
"""The sentence the templates of a config are applied to."""


def read_config(path: Path, context: Context):
    """What ``crfsdca featurize d --config FILE`` does before it reads the corpus: the
    config checked against the workflow's schema, dataset ``d``'s spec, its templates
    applied to a sentence of the reader's columns."""

    spec = parse_spec("d", spec_from_config(load_config(path), "d"))
    if not spec.templates:
        return []
    columns = reader_columns(spec.reader, spec.options) or ("w",)
    extract = Extractor(parse_templates(spec.templates))
    return extract({c: list(SENTENCE) for c in columns}, len(SENTENCE))


def check_config(attributes, context: Context) -> None:
    assert all(isinstance(a, str) for token in attributes for a in token)


# --------------------------------------------------------------------------- crfsdca tag

TAG_OPTIONS = ("-r", "-i", "-p", "-t")
"""Reference labels, marginals, scores and the evaluation: every path of the command."""


def read_tag(path: Path, context: Context):
    """``crfsdca tag -m MODEL -r -i -p -t FILE``: (exit status, standard output, standard
    error)."""

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["tag", "-m", str(context.model_path), *TAG_OPTIONS, str(path)])
    return status, out.getvalue(), err.getvalue()


def check_tag(answer, context: Context) -> None:
    status, out, err = answer
    if status == 0:
        assert not err, err
        return
    assert status == 2 and err.count("\n") == 1 and err.startswith("crfsdca tag: error: "), err


TARGETS = {t.name: t for t in (
    Target("crfsuite-data", "data", read_data, check_data),
    Target("crfsuite-model", "crfsuite", read_crfsuite, check_crfsuite),
    Target("hdf5-model", "hdf5", read_hdf5, check_model),
    Target("hdf5-model-legacy", "hdf5-legacy", read_hdf5, check_model, True, 1, 8),
    Target("dual", "dual", read_dual, check_dual),
    Target("dual-legacy", "dual-legacy", read_dual, check_dual, True, 1, 8),
    Target("corpus", "corpus", read_corpus, check_corpus),
    Target("corpus-legacy", "corpus-legacy", read_corpus, check_corpus, True, 1, 8),
    Target("config-templates", "config", read_config, check_config, names_file=False),
    Target("tag-input", "data", read_tag, check_tag),
)}
"""Every reader fuzzed, by name. A file without the header (``-legacy``) is read in a
child process, 0.4-0.9 s an input: one input every eighth turn."""

LIBHDF5 = Target("libhdf5", "hdf5-legacy", read_hdf5_unverified, check_model)
"""Not a reader of the package: libhdf5 itself on damaged files (``--targets libhdf5``),
the crashes and hangs that the header and the child process are there for."""


def run_one(target: Target, data: bytes, path: Path, context: Context) -> str:
    """Write ``data`` to ``path`` and let ``target`` read it: the outcome's signature (the
    answer with its numbers and quoted names blanked, so that inputs that take a new path
    through the reader have a new one), or a :class:`Finding`."""
    path.write_bytes(data)
    try:
        result = target.read(path, context)
    except CrfsdcaError as e:
        message = str(e)
        if "\n" in message or "\r" in message:
            raise Finding("several lines", message) from e
        if target.names_file and str(path) not in message:
            raise Finding("file not named", message) from e
        if "its reader failed" in message:  # a traceback in the child of runtime.isolated
            raise Finding("traceback in a child", message) from e
        return f"{type(e).__name__}: {_blank(message.replace(str(path), 'FILE'))}"
    except Exception as e:
        raise Finding("traceback", f"{type(e).__name__}: {e}") from e
    try:
        target.check(result, context)
    except AssertionError as e:
        raise Finding("out of range", f"{e}") from e
    except Exception as e:
        raise Finding("traceback in the check", f"{type(e).__name__}: {e}") from e
    if target.name == "tag-input" and result[0]:
        return f"tag error: {_blank(result[2].replace(str(path), 'FILE'))}"
    return "ok"


def _blank(message: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", message))[:160]
