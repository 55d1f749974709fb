"""The weight c_i of each training sequence in the objective sum_i c_i NLL_i + c1 ||w||_1 +
c2 ||w||^2: scikit-learn's ``sample_weight`` (one per sequence) times the factor that
``class_weight`` gives it (``docs/guide/weights.md``).

A CRF's loss is one per sequence, not one per token, so a weight per label has to be
carried to the sequences. The factor of sequence i is the mean class weight of its gold
labels,

    f_i = (1/T_i) sum_t kappa(y_{i,t}),

which is what weighting each token's share of the sequence's loss gives when the loss is
spread equally over its tokens: sum_t kappa(y_{i,t}) NLL_i / T_i = f_i NLL_i. The objective
stays a weighted sum of sequence losses, so SDCA's duality gap stays an exact certificate
(a token-weighted pseudo-likelihood would train another model, one without the chain's
dual). With ``"balanced"``, kappa(k) = N / (L N_k) over the N training tokens, N_k of them
labeled k and L labels present (scikit-learn's formula, with tokens as its samples): the
mean weight of a token is 1.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np

from ..data.sequences import Sequences, check_sequence_weights, with_weights


def check_sample_weight(sample_weight, n: int) -> np.ndarray | None:
    """``sample_weight`` (None, one number for every sequence, or one per sequence) as n
    float64 weights, or None; ValueError naming it otherwise (:func:`~crfsdca.data.
    sequences.check_sequence_weights`)."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        sample_weight = np.full(n, float(sample_weight))
    return check_sequence_weights(sample_weight, n, "sample_weight")


def label_weights(class_weight, labels: np.ndarray, label_names: list[str]) -> np.ndarray | None:
    """kappa, the weight of every label id (``label_names``), from ``class_weight``: None
    (no weights), ``"balanced"`` (over the gold ``labels`` of the training tokens) or a
    dict {label: weight} (labels not in it weigh 1). ValueError naming a key that is not
    a training label, or a weight that is not a finite number >= 0."""
    if class_weight is None:
        return None
    K = len(label_names)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be None, 'balanced' or a dict {{label: "
                             f"weight}}, got {class_weight!r}")
        counts = np.bincount(labels, minlength=K).astype(np.float64)
        present = counts > 0
        kappa = np.ones(K)
        kappa[present] = len(labels) / (np.count_nonzero(present) * counts[present])
        return kappa
    if not isinstance(class_weight, Mapping):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict {{label: weight}}, "
                         f"got {type(class_weight).__name__}")
    ids = {name: k for k, name in enumerate(label_names)}
    kappa = np.ones(K)
    for label, weight in class_weight.items():
        if label not in ids:
            raise ValueError(f"class_weight: {label!r} is not a label of the training data "
                             f"(labels: {', '.join(map(repr, label_names))})")
        ok = isinstance(weight, numbers.Real) and not isinstance(weight, bool)
        if not ok or not (math.isfinite(float(weight)) and float(weight) >= 0):
            raise ValueError(f"class_weight[{label!r}] = {weight!r}: a class weight must be a "
                             "finite number >= 0")
        kappa[ids[label]] = float(weight)
    return kappa


def class_factors(train: Sequences, kappa: np.ndarray) -> np.ndarray:
    """f_i = mean of kappa over the gold labels of sequence i."""
    sums = np.add.reduceat(kappa[train.labels], train.offsets[:-1])
    return sums / train.lengths()


def fit_weights(train: Sequences, label_names: list[str], class_weight) -> Sequences:
    """``train`` (whose weights are the sample weights) with the weights c_i of the
    objective: the sample weights times the class factors; unchanged without
    ``class_weight``. ValueError when every c_i is 0."""
    kappa = label_weights(class_weight, train.labels, label_names)
    if kappa is None:
        return train
    weights = train.sequence_weights() * class_factors(train, kappa)
    check_sequence_weights(weights, train.n_sequences, "sample_weight x class_weight")
    return with_weights(train, weights)
