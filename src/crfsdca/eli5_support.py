"""eli5's ``explain_weights`` / ``show_weights`` for ``crfsdca.CRF``, as for sklearn-crfsuite.

eli5 registers its explanation of ``sklearn_crfsuite.CRF`` only when sklearn-crfsuite is
installed, so a user who swapped the import would get "estimator is not supported". This
module registers an explanation of :class:`crfsdca.CRF` with eli5's dispatch: the state
weights of each label (top features per label, with eli5's ``top``, ``targets``,
``target_names``, ``feature_re``, ``feature_filter``) and the transition matrix, labels
ordered for NER (B-X, I-X grouped). A model's transition attributes (W_B[e, k, l]) have no
table of their own in eli5: each (e, k) is a feature ``"<e> prev=<k>"`` of every label l
it leads into, ranked with the state features. :mod:`crfsdca.estimator` calls :func:`install` with
its class so that registration happens when eli5 is imported, before or after crfsdca, without
importing eli5 (a second of start-up) when the user does not.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

import numpy as np


def explain_crf_weights(crf, top=20, target_names=None, targets=None, feature_re=None,
                        feature_filter=None):
    """eli5's Explanation of a fitted :class:`crfsdca.CRF`: per label its top state
    features, and the transition weights between the labels shown."""
    # optional dependency: eli5 (this runs from eli5; every crfsdca.CRF imports this module)
    from eli5._feature_names import FeatureNames
    from eli5._feature_weights import get_top_features
    from eli5.base import Explanation, TargetExplanation, TransitionFeatureWeights
    from eli5.utils import get_target_display_names

    model = crf.model_
    layout = model.layout
    classes = list(model.labels)
    active = np.flatnonzero(np.any(layout.emission(model.weights) != 0, axis=1))
    names = np.array([model.attributes[a] for a in active], dtype=object)
    state = layout.emission(model.weights)[active].T  # labels x active attributes
    WB = layout.edges(model.weights)
    if WB.size:  # transition attributes: (e, previous label) as features of the next label
        e, k = np.nonzero(np.any(WB != 0, axis=2))
        edge_names = [f"{model.transition_attributes[a]} prev={classes[b]}"
                      for a, b in zip(e.tolist(), k.tolist(), strict=True)]
        names = np.concatenate([names, np.array(edge_names, dtype=object)])
        state = np.hstack([state, WB[e, k, :].T])
    if feature_filter is not None or feature_re is not None:
        kept, indices = FeatureNames(names).handle_filter(feature_filter, feature_re)
        names, state = np.array(kept.feature_names, dtype=object), state[:, indices]
    display = get_target_display_names(classes, target_names,
                                       targets if targets is not None else ner_order(classes))
    indices, shown = zip(*display, strict=True)
    transition = layout.transition(model.weights)[np.ix_(indices, indices)]
    return Explanation(
        targets=[TargetExplanation(target=name,
                                   feature_weights=get_top_features(names, state[k], top))
                 for k, name in zip(indices, shown, strict=True)],
        transition_features=TransitionFeatureWeights(class_names=list(shown),
                                                     coef=transition),
        estimator=repr(crf), method="CRF")


def ner_order(labels: list[str]) -> list[str]:
    """Labels with the chunk types grouped (``O`` first, then B-X, I-X of each type)."""
    def key(label):
        return (label.split("-", 1)[1], label) if label[1:2] == "-" else ("", label)

    return sorted(labels, key=key)


def register(estimator: type) -> None:
    """Register :func:`explain_crf_weights` with eli5's ``explain_weights`` for the class
    ``estimator``."""
    from eli5.explain import explain_weights  # optional dependency

    explain_weights.register(estimator)(explain_crf_weights)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Registers with eli5 right after eli5 itself is imported."""

    def __init__(self, estimator: type):
        self.estimator = estimator

    def find_spec(self, name, path=None, target=None):
        if name != "eli5":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            register(self.estimator)

        spec.loader.exec_module = exec_module
        return spec


def install(estimator: type) -> None:
    """Register the class ``estimator`` now if eli5 is loaded, else when it is (nothing if
    it is not installed)."""
    if "eli5" in sys.modules:
        register(estimator)
    elif not any(isinstance(f, _RegisterOnImport) for f in sys.meta_path) \
            and importlib.util.find_spec("eli5") is not None:
        sys.meta_path.insert(0, _RegisterOnImport(estimator))
