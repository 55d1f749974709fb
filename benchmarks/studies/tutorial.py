"""sklearn-crfsuite's tutorial for the studies: ``crfsdca.data.tutorial`` (its one
declaration) loaded by its path, so that a process with sklearn-crfsuite alone
(``benchmarks/first_use.py``'s) has it too, reading the vendored CoNLL-2002 by default."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONLL2002 = ROOT / "data" / "raw" / "conll2002.zip"

_spec = importlib.util.spec_from_file_location(
    "crfsdca_tutorial", ROOT / "src" / "crfsdca" / "data" / "tutorial.py")
_tutorial = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tutorial)

word2features = _tutorial.word2features
sent2features = _tutorial.sent2features
sent2labels = _tutorial.sent2labels
sent2tokens = _tutorial.sent2tokens


def iob_sents(member: str, source: str | Path = CONLL2002, limit: int | None = None,
              encoding: str = "utf-8"):
    """``crfsdca.data.tutorial.iob_sents``, of the vendored corpus unless told otherwise."""
    return _tutorial.iob_sents(member, source, limit, encoding)
