"""Prediction against sklearn-crfsuite's: ``predict``, ``predict_single`` and
``predict_marginals`` over the Dutch test set, the models of one fit each (crfsdca's
default, sklearn-crfsuite's tutorial call), alternated. The taggers are warm (a served
model's): one call of each path before the rounds.
"""

from __future__ import annotations

import pytest
import workload

ROUNDS = 7
PATHS = {
    "predict": lambda crf, X: crf.predict(X),
    "predict_single": lambda crf, X: [crf.predict_single(x) for x in X],
    "predict_marginals": lambda crf, X: crf.predict_marginals(X),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_predict(benchmark, fitted, dutch, path):
    ours, theirs = fitted
    X_test = dutch[2]
    call = PATHS[path]
    for crf in fitted:
        call(crf, X_test[:1])
    workload.alternate(benchmark, lambda: call(ours, X_test), lambda: call(theirs, X_test),
                       f"sklearn-crfsuite's {path}", ROUNDS)
    benchmark.extra_info.update(sentences=len(X_test), tokens=sum(len(x) for x in X_test))
