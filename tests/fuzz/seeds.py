"""Seeds of the fuzzer: real files, made from the vendored corpora by the package's own
writers (and by CRFsuite's, through python-crfsuite, where it is installed).

``make_seeds(directory)`` writes them and returns, per kind of file, their paths:

- ``data``: CRFsuite data files of CoNLL-2000 sentences (attribute names with escaped
  colons and backslashes, weighted attributes, ``@weight`` declarations, CRLF endings);
- ``crfsuite``: CRFsuite model files of a fit on those sentences (this package's writer,
  and CRFsuite's own);
- ``hdf5``, ``dual``: crfsdca's model file of a fit with bias weights, and its dual state;
  ``hdf5-legacy``, ``dual-legacy``: the same without the header (as written before it);
- ``corpus``: the file of a ``crfsdca.Corpus`` of those sentences (with weight-0
  entries), and ``corpus-legacy``: the same without the header;
- ``config``: the workflow's config with one dataset (the templates of config.yaml's
  conll, ner and pos entries).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import h5py
import yaml

from crfsdca import CRF, Corpus
from crfsdca.corpus import FILE
from crfsdca.data.crfsuite_format import write_sequences

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "data" / "raw"
SENTENCES = 5
"""Sentences of the seeds: files of a few kilobytes, read in a millisecond or two."""


def conll_sentences(k: int = SENTENCES) -> list[list[tuple[str, str, str]]]:
    """The first ``k`` sentences of CoNLL-2000's training file: (word, POS, chunk)."""
    text = zipfile.ZipFile(RAW / "conll2000.zip").read("conll2000/train.txt").decode()
    out: list[list[tuple[str, str, str]]] = [[]]
    for line in io.StringIO(text):
        if len(out) > k:
            break
        if line.strip():
            out[-1].append(tuple(line.split()))
        elif out[-1]:
            out.append([])
    return [s for s in out[:k] if s]


def features(sentence) -> list[dict]:
    """sklearn-crfsuite's tutorial features, a few of them: str values give ``key:value``
    names, numbers weights."""
    out = []
    for t, (word, pos, _) in enumerate(sentence):
        f = {"bias": 1.0, "w": word.lower(), "pos": pos, "upper": word.isupper(),
             "len": len(word) / 10}
        if t:
            f["-1:w"] = sentence[t - 1][0].lower()
        out.append(f)
    return out


def data_files(directory: Path, sentences) -> list[Path]:
    """Three CRFsuite data files of the sentences."""
    X = [[[f"w={w}", f"pos:{p}", f"w\\p={w}\\{p}"] for w, p, _ in s] for s in sentences]
    weighted = [[[(f"w={w}", 0.5), f"pos={p}", ("len", len(w) / 3)] for w, p, _ in s]
                for s in sentences]
    y = [[c for _, _, c in s] for s in sentences]
    paths = []
    for name, items in (("plain", X), ("weighted", weighted)):
        out = io.StringIO()
        write_sequences(out, items, y)
        paths.append(directory / f"{name}.txt")
        paths[-1].write_text(out.getvalue(), encoding="utf-8")
    declared = "".join(f"@weight:1\r\n{block}\r\n\r\n" for block in (
        "\r\n".join(f"{c}\tw={w}\tpos={p}" for w, p, c in s) for s in sentences[:4]))
    paths.append(directory / "declared.txt")
    paths[-1].write_text(declared, encoding="utf-8", newline="")
    return paths


def model_files(directory: Path, sentences) -> dict[str, list[Path]]:
    """The model files of fits on the sentences: HDF5 with bias weights and its dual
    state, CRFsuite's format by this package's writer and by CRFsuite's own."""
    X = [features(s) for s in sentences]
    y = [[c for _, _, c in s] for s in sentences]
    h5 = directory / "model.h5"  # a dual state of two sentences: 30 kB, not 400
    CRF(c2=1.0, max_iterations=3, bias=True, save_dual=True,
        model_filename=str(h5)).fit(X[:2], y[:2])
    ours = directory / "ours.crfsuite"
    CRF(c1=0.05, c2=1.0, max_iterations=3, model_filename=str(ours)).fit(X, y)
    crfsuite = [ours]
    try:
        import pycrfsuite  # optional: python-crfsuite is the bench extra's
    except ImportError:  # CRFsuite's own files where it is there
        pass
    else:
        trainer = pycrfsuite.Trainer(verbose=False)
        for xseq, yseq in zip(X, y, strict=True):
            trainer.append(xseq, yseq)
        trainer.set_params({"c1": 0.05, "c2": 1.0, "max_iterations": 5})
        theirs = directory / "theirs.crfsuite"
        trainer.train(str(theirs))
        crfsuite.append(theirs)
    dual = Path(f"{h5}.dual")
    return {"hdf5": [h5], "dual": [dual], "crfsuite": crfsuite,
            "hdf5-legacy": [legacy_copy(h5, directory / "legacy.h5")],
            "dual-legacy": [legacy_copy(dual, directory / "legacy.h5.dual")]}


def corpus_files(directory: Path, sentences) -> dict[str, list[Path]]:
    """The file of a corpus of the sentences (tutorial features: weighted attributes,
    weight-0 entries), and its copy without the header."""
    X = [features(s) for s in sentences]
    y = [[c for _, _, c in s] for s in sentences]
    path = Corpus.create(directory / "corpus", X, y).folder / FILE
    return {"corpus": [path],
            "corpus-legacy": [legacy_copy(path, directory / "legacy-corpus.h5")]}


def legacy_copy(path: Path, to: Path) -> Path:
    """The HDF5 file at ``path`` as crfsdca wrote it before files had a header: the same
    groups, datasets and attributes, HDF5 from the first byte, no checksum."""
    with h5py.File(path, "r") as src, h5py.File(to, "w") as dst:
        dst.attrs.update(src.attrs)
        for name in src:
            src.copy(src[name], dst, name=name)
    return to


def config_files(directory: Path) -> list[Path]:
    """Configs of one dataset ``d`` each: config.yaml's conll, ner and pos entries."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    paths = []
    for name in ("conll", "ner", "pos"):
        paths.append(directory / f"{name}.yaml")
        paths[-1].write_text(yaml.safe_dump({"datasets": {"d": config["datasets"][name]}},
                                            default_flow_style=None), encoding="utf-8")
    return paths


def make_seeds(directory: str | Path) -> dict[str, list[Path]]:
    """Write the seeds under ``directory``; their paths by kind."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    sentences = conll_sentences()
    return {"data": data_files(directory, sentences), "config": config_files(directory),
            **model_files(directory, sentences), **corpus_files(directory, sentences)}
