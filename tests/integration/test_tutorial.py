"""sklearn-crfsuite's tutorial runs with its imports pointed at crfsdca, and sklearn-crfsuite
made unimportable: CoNLL-2002 Spanish (a subset), the word features, ``lbfgs`` with c1 and
c2, the metrics, ``RandomizedSearchCV`` with ``n_jobs``, the inspection of transition and
state features, eli5. Its F1 is sklearn-crfsuite's, run on the same subset."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from helpers.paths import RAW, ROOT

pytestmark = pytest.mark.slow

PRELUDE = f"""
from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels
train_sents = iob_sents("esp.train", {str(RAW / 'conll2002.zip')!r}, limit=600)
test_sents = iob_sents("esp.testb", {str(RAW / 'conll2002.zip')!r}, limit=300)
"""

# The tutorial's cells (sklearn-crfsuite's docs/CoNLL2002.ipynb), with the imports swapped.
TUTORIAL = """
import json
from collections import Counter

import scipy.stats
from sklearn.metrics import make_scorer
from sklearn.model_selection import RandomizedSearchCV

import crfsdca as sklearn_crfsuite
from crfsdca import scorers
from crfsdca import metrics

X_train = [sent2features(s) for s in train_sents]
y_train = [sent2labels(s) for s in train_sents]
X_test = [sent2features(s) for s in test_sents]
y_test = [sent2labels(s) for s in test_sents]

crf = sklearn_crfsuite.CRF(
    algorithm='lbfgs',
    c1=0.1,
    c2=0.1,
    max_iterations=100,
    all_possible_transitions=True
)
crf.fit(X_train, y_train)

labels = list(crf.classes_)
labels.remove('O')
y_pred = crf.predict(X_test)
f1 = metrics.flat_f1_score(y_test, y_pred, average='weighted', labels=labels)
sorted_labels = sorted(labels, key=lambda name: (name[1:], name[0]))
report = metrics.flat_classification_report(y_test, y_pred, labels=sorted_labels, digits=3)

crf = sklearn_crfsuite.CRF(algorithm='lbfgs', max_iterations=100,
                           all_possible_transitions=True)
params_space = {'c1': scipy.stats.expon(scale=0.5), 'c2': scipy.stats.expon(scale=0.05)}
f1_scorer = make_scorer(metrics.flat_f1_score, average='weighted', labels=labels)
rs = RandomizedSearchCV(crf, params_space, cv=3, verbose=1, n_jobs=-1, n_iter=4,
                        scoring=f1_scorer, random_state=0)
rs.fit(X_train, y_train)
crf = rs.best_estimator_
y_pred = crf.predict(X_test)
best_f1 = metrics.flat_f1_score(y_test, y_pred, average='weighted', labels=labels)
accuracy = scorers.flat_accuracy(crf, X_test, y_test)

transitions = Counter(crf.transition_features_).most_common(20)
states = Counter(crf.state_features_).most_common(30)

import eli5
explained = eli5.format_as_text(eli5.explain_weights(crf, top=10))
html = eli5.format_as_html(eli5.explain_weights(crf, top=10, targets=['O', 'B-ORG']))
"""

SKLEARN_CRFSUITE = """
import sklearn_crfsuite
from sklearn_crfsuite import metrics
X_train = [sent2features(s) for s in train_sents]
y_train = [sent2labels(s) for s in train_sents]
X_test = [sent2features(s) for s in test_sents]
y_test = [sent2labels(s) for s in test_sents]
crf = sklearn_crfsuite.CRF(algorithm='lbfgs', c1=0.1, c2=0.1, max_iterations=100,
                           all_possible_transitions=True)
crf.fit(X_train, y_train)
labels = list(crf.classes_)
labels.remove('O')
y_pred = crf.predict(X_test)
f1 = metrics.flat_f1_score(y_test, y_pred, average='weighted', labels=labels)
"""


def _run(code: str, block: bool) -> dict:
    blocker = "import sys; sys.modules['sklearn_crfsuite'] = None\n" if block else ""
    script = blocker + PRELUDE + textwrap.dedent(code) + (
        "\nimport json as _j\nprint('RESULT', _j.dumps({k: v for k, v in dict(globals())"
        ".items() if k in ('f1', 'best_f1', 'accuracy', 'report', 'explained', 'html', "
        "'transitions', 'states')}, default=str))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=1200, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def test_the_tutorial_runs_without_sklearn_crfsuite():
    out = _run(TUTORIAL, block=True)
    assert 0.5 < out["f1"] <= 1 and 0.3 < out["best_f1"] <= 1 and out["accuracy"] > 0.8
    assert "B-LOC" in out["report"] and "weighted avg" in out["report"]
    assert len(out["transitions"]) == 20 and len(out["states"]) == 30
    assert "Transition features" in out["explained"] and "y='B-LOC' top features" in \
        out["explained"]
    assert "y=B-ORG" in out["html"] and "eli5-weights" in out["html"]
    pytest.importorskip("sklearn_crfsuite")
    theirs = _run(SKLEARN_CRFSUITE, block=False)
    assert out["f1"] == pytest.approx(theirs["f1"], abs=0.003)
