"""A dataset of ``config.yaml`` as python-crfsuite items, as CRFsuite's example scripts
(``example/chunking.py``, ``example/ner.py``) make them: each token's attributes are the
template strings (``w[0]=the``...) plus ``__BOS__`` on the first token and ``__EOS__`` on
the last. The CRFsuite-format files of the command-line example
(``docs/guide/command-line.md``) and of the benchmarks are written from these
(``benchmarks/crfsuite_files.py``)."""

from __future__ import annotations

from pathlib import Path

from .featurize import parse_spec, spec_from_config, take_subset
from .readers import READERS
from .templates import Extractor, parse_templates


def corpus_items(config: dict, name: str, raw_dir: str | Path | None = None):
    """``(X_train, y_train, X_test, y_test)``: items are lists of attribute strings."""
    sp = parse_spec(name, spec_from_config(config, name),
                    raw_dir if raw_dir is not None else config.get("raw_dir"))
    corpus = READERS[sp.reader](sp.source, **sp.options)
    extractor = Extractor(parse_templates(sp.templates))

    def items(sentences):
        X, y = [], []
        for s in sentences:
            attrs = extractor(s.fields, len(s))
            attrs[0].append("__BOS__")
            attrs[-1].append("__EOS__")
            X.append(attrs)
            y.append(list(s.labels))
        return X, y

    train = items(take_subset(corpus.train, sp.subset_train))
    test = items(take_subset(corpus.test, sp.subset_test)) if corpus.test else ([], [])
    return (*train, *test)
