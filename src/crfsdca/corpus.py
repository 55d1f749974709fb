"""A training corpus encoded once, in a folder the user names, for any number of fits.

``CRF.fit`` encodes its items every time: for a corpus read from a generator or files
larger than memory, and for the many fits of a search or of continued experiments, the
encoding is a large share of each fit (CoNLL-2000's 211,727 tokens: about 1.7 s of a
16 s fit). [`Corpus.create`][crfsdca.corpus.Corpus.create] reads the sequences once, a
chunk at a time as ``fit`` reads a stream (never all as Python objects), and writes them
encoded into ``folder/corpus.h5`` (the processed dataset format of
``crfsdca.data.hdf5``, its training split and vocabularies, plus the (attribute, token)
pairs given with weight 0, which CRFsuite's feature set counts); ``Corpus(folder)``
opens it again, in this process or a later one, and ``CRF().fit(corpus)`` trains on it
without encoding anything: the same model, to the last bit, as ``fit`` on the sequences
themselves.

    corpus = crfsdca.Corpus.create("conll_train", X_train, y_train)   # or (x, y) pairs
    for c2 in (0.01, 0.1, 1.0):
        crfsdca.CRF(c2=c2).fit(corpus)
    crfsdca.Corpus("conll_train")   # later, in another process
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .data.items import Vocabulary
from .data.radii import squared_radii
from .data.sequences import Sequences
from .data.stream import encode_stream, labeled_pairs
from .errors import DataFormatError

if TYPE_CHECKING:
    from .data.hdf5 import Dataset

FILE = "corpus.h5"
"""The corpus's file in its folder."""


def read_corpus_file(path: Path) -> Dataset:
    """The corpus file at ``path``: a sealed dataset file (its checksum checked before
    libhdf5 reads it; one written before files had a seal read in a child process) with a
    training split alone."""
    from .data.hdf5 import load_dataset  # lazy: h5py is 13 MiB that a fit on lists never needs

    ds = load_dataset(path)
    if ds.test is not None or ds.n_labels != len(ds.labels):
        raise DataFormatError(path, "a corpus has a training split alone")
    return ds


class Corpus:
    """An encoded training corpus in ``folder`` (made by ``Corpus.create``): its split, the
    attribute and label vocabularies, and the weight-0 entries."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        path = self.folder / FILE
        if not self.folder.is_dir():
            raise FileNotFoundError(f"{self.folder}: no such folder (Corpus.create makes one)")
        if not path.is_file():
            raise FileNotFoundError(f"{self.folder}: no {FILE} in it (Corpus.create writes "
                                    "one)")
        self._dataset = read_corpus_file(path)

    @classmethod
    def create(cls, folder: str | os.PathLike, X, y=None) -> Corpus:
        """Encode the sequences ``X`` with labels ``y`` (as ``CRF.fit`` takes them: lists,
        any iterables read once, or ``y`` None and ``X`` (xseq, yseq) pairs) into
        ``folder`` (made if missing; an earlier corpus there is replaced, atomically).
        Sequences without items are left out, as ``CRF.fit`` leaves them out."""
        from .data.hdf5 import Dataset, write_dataset  # lazy, as in read_corpus_file

        attributes, labels = Vocabulary(), Vocabulary()
        seq, _, zero_entries = encode_stream(labeled_pairs(X, y), attributes, labels,
                                             skipped=[])
        if seq.n_dense:
            raise ValueError("a corpus holds no array attributes (vector values) yet: fit "
                             "on the sequences themselves")
        if len(labels) < 2:
            raise ValueError(f"a corpus needs two labels or more, got {labels.strings()}")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        A, K = len(attributes), len(labels)
        write_dataset(folder / FILE, Dataset(
            name=folder.name, train=seq, test=None, labels=labels.strings(),
            attributes=attributes.strings(), radii=squared_radii(seq, K, A),
            zero_entries=zero_entries))
        return cls(folder)

    @property
    def sequences(self) -> Sequences:
        """The encoded training split."""
        return self._dataset.train

    @property
    def attributes(self) -> list[str]:
        """Attribute id -> name, in order of first occurrence."""
        return self._dataset.attributes

    @property
    def labels(self) -> list[str]:
        """Label id -> name, in order of first occurrence."""
        return self._dataset.labels

    @property
    def zero_entries(self) -> np.ndarray:
        """The (attribute, token) pairs given with weight 0 (int64, shape (m, 2))."""
        return self._dataset.zero_entries

    def digests(self) -> list[bytes]:
        """A 16-byte digest of each sequence, by which continued training (``warm_start``,
        ``partial_fit``, a saved dual state) knows the sequences it has seen: of its
        labels' and attributes' names and values, so that two corpora that number them
        differently agree. A corpus's digests are not those of the same sequences given
        as items (whose attributes keep their order and weight-0 entries): a fit that
        continues on the items starts their dual blocks afresh."""
        seq = self.sequences
        attr_hash, label_hash = _name_hashes(self.attributes), _name_hashes(self.labels)
        values = (np.ones(len(seq.attr_indices)) if seq.binary
                  else np.asarray(seq.attr_values, dtype=np.float64))
        counts = np.diff(np.asarray(seq.attr_indptr, dtype=np.int64))
        names = attr_hash[seq.attr_indices]  # a token's entries in the order of their names
        order = np.lexsort((names[:, :8].copy().view(np.uint64).ravel(),
                            np.repeat(np.arange(len(counts)), counts)))
        entries = np.concatenate([names[order], values[order].view(np.uint8).reshape(-1, 8)],
                                 axis=1)
        tokens = label_hash[seq.labels]
        off, ptr = seq.offsets, seq.attr_indptr
        out = []
        for i in range(seq.n_sequences):
            s, e = off[i], off[i + 1]
            h = hashlib.blake2b(b"crfsdca.Corpus", digest_size=16)
            h.update(tokens[s:e].tobytes())
            h.update(counts[s:e].tobytes())
            h.update(entries[ptr[s]:ptr[e]].tobytes())
            out.append(h.digest())
        return out

    def __len__(self) -> int:
        return self.sequences.n_sequences

    def __reduce__(self):
        """Pickled as its folder (a search's worker process opens the file again rather
        than receiving its arrays)."""
        return Corpus, (str(self.folder.resolve()),)

    def __repr__(self) -> str:
        return (f"Corpus({str(self.folder)!r}: {len(self)} sequences, "
                f"{self.sequences.n_tokens} tokens, {len(self.attributes)} attributes, "
                f"{len(self.labels)} labels)")


def _name_hashes(names: list[str]) -> np.ndarray:
    """A 16-byte digest of each name (uint8, shape (len(names), 16))."""
    joined = b"".join(hashlib.blake2b(name.encode("utf-8"), digest_size=16).digest()
                      for name in names)
    return np.frombuffer(joined, dtype=np.uint8).reshape(-1, 16)


__all__ = ["Corpus"]
