"""sklearn-crfsuite's tutorial as users copy it: CoNLL-2002 sentences and its word features.

The tutorial (sklearn-crfsuite's docs, "Tutorial") reads ``nltk.corpus.conll2002``'s
``iob_sents``; :func:`iob_sents` reads the same sentences from NLTK's copy of the corpus
(the repository vendors it as ``data/raw/conll2002.zip``), as (word, POS, tag) triples.
``word2features``, ``sent2features``, ``sent2labels`` are the tutorial's functions,
unchanged. The drop-in's tests, the benchmark suite and the studies all take their items
from here, so that each measures the items a user of the tutorial has.

Nothing of the package is imported: a process with sklearn-crfsuite alone can load this
file by its path (``benchmarks/studies/tutorial.py`` does).
"""

from __future__ import annotations

import zipfile
from pathlib import Path


def iob_sents(member: str, source: str | Path, limit: int | None = None,
              encoding: str = "utf-8") -> list[list[tuple[str, str, str]]]:
    """The sentences of ``member`` (``esp.train``, ``ned.testb``...) of the zip ``source``
    as NLTK's ``conll2002.iob_sents`` gives them: lists of (word, POS, IOB tag);
    -DOCSTART- lines are left out, as NLTK does. ``limit``: the first sentences only."""
    source = Path(source)
    with zipfile.ZipFile(source) as z:
        text = z.read(f"{source.stem}/{member}").decode(encoding)
    sents, cur = [], []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            if cur:
                sents.append(cur)
                cur = []
                if limit is not None and len(sents) >= limit:
                    return sents
            continue
        if parts[0] == "-DOCSTART-":
            continue
        cur.append((parts[0], parts[1], parts[-1]))
    if cur:
        sents.append(cur)
    return sents[:limit] if limit is not None else sents


def word2features(sent, i):
    word = sent[i][0]
    postag = sent[i][1]

    features = {
        'bias': 1.0,
        'word.lower()': word.lower(),
        'word[-3:]': word[-3:],
        'word[-2:]': word[-2:],
        'word.isupper()': word.isupper(),
        'word.istitle()': word.istitle(),
        'word.isdigit()': word.isdigit(),
        'postag': postag,
        'postag[:2]': postag[:2],
    }
    if i > 0:
        word1 = sent[i-1][0]
        postag1 = sent[i-1][1]
        features.update({
            '-1:word.lower()': word1.lower(),
            '-1:word.istitle()': word1.istitle(),
            '-1:word.isupper()': word1.isupper(),
            '-1:postag': postag1,
            '-1:postag[:2]': postag1[:2],
        })
    else:
        features['BOS'] = True

    if i < len(sent)-1:
        word1 = sent[i+1][0]
        postag1 = sent[i+1][1]
        features.update({
            '+1:word.lower()': word1.lower(),
            '+1:word.istitle()': word1.istitle(),
            '+1:word.isupper()': word1.isupper(),
            '+1:postag': postag1,
            '+1:postag[:2]': postag1[:2],
        })
    else:
        features['EOS'] = True

    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def sent2labels(sent):
    return [label for token, postag, label in sent]


def sent2tokens(sent):
    return [token for token, postag, label in sent]
