"""scikit-learn scorers of label sequences, as ``sklearn_crfsuite.scorers``: for
``cross_val_score``, ``GridSearchCV``, ``RandomizedSearchCV`` and the like.

    from sklearn.model_selection import cross_val_score
    cross_val_score(crfsdca.CRF(), X, y, scoring=scorers.sequence_accuracy, cv=3)

For other scores, ``make_scorer`` over [`crfsdca.metrics`][crfsdca.metrics] (the
tutorial's weighted F1 without ``O``:
``make_scorer(metrics.flat_f1_score, average="weighted", labels=labels)``).
"""

from sklearn.metrics import make_scorer

from . import metrics

flat_accuracy = make_scorer(metrics.flat_accuracy_score)
"""The fraction of labels predicted right, over every item of every sequence
([`flat_accuracy_score`][crfsdca.metrics.flat_accuracy_score])."""

sequence_accuracy = make_scorer(metrics.sequence_accuracy_score)
"""The fraction of sequences whose every label is right
([`sequence_accuracy_score`][crfsdca.metrics.sequence_accuracy_score])."""
