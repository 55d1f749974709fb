"""sklearn-crfsuite's tutorial, as users copy it: CoNLL-2002 sentences and its word features.

The tutorial (sklearn-crfsuite's docs, "Tutorial") reads ``nltk.corpus.conll2002``'s
``iob_sents``; here the same sentences come from the vendored ``data/raw/conll2002.zip``
(NLTK's own copy of the corpus), as (word, POS, tag) triples. ``word2features``,
``sent2features``, ``sent2labels`` are the tutorial's functions, unchanged. The test of
the drop-in (``tests/test_tutorial.py``) and the practitioner's benchmark import them.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONLL2002 = ROOT / "data" / "raw" / "conll2002.zip"
CONLL2000 = ROOT / "data" / "raw" / "conll2000.zip"


def iob_sents(member: str, source: Path = CONLL2002, limit: int | None = None,
              encoding: str = "utf-8") -> list[list[tuple[str, str, str]]]:
    """The sentences of ``member`` (``esp.train``, ``ned.testb``...) as NLTK's
    ``conll2002.iob_sents`` gives them: lists of (word, POS, IOB tag); -DOCSTART- lines
    are left out, as NLTK does."""
    import zipfile

    name = f"{source.stem}/{member}"
    with zipfile.ZipFile(source) as z:
        text = z.read(name).decode(encoding)
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
