"""CRFsuite's feature set with its ``feature.minfreq`` cut-off, as a mask over the layout.

:func:`crfsdca.model.features.crfsuite_mask` gives the features CRFsuite generates; CRFsuite
then keeps those whose frequency is at least ``feature.minfreq``: for a state feature
(a, y) the sum of the weights of attribute a at the training tokens labeled y, for a
transition the number of times it occurs (0 for the pairs that only
``feature.possible_states`` / ``possible_transitions`` add). With ``min_freq`` 0 (the
default) this also drops the state features whose weights sum to a negative number, as
CRFsuite does. A pair seen only with weight 0 (sklearn-crfsuite's tutorial gives
``'word.isupper()': False``) is a feature too, of frequency 0, as in CRFsuite: its weight
is not 0 at the optimum when the attribute occurs with other labels elsewhere. Weighted
sequences count with their weight, as CRFsuite counts an instance's features with its
``@weight`` (a feature seen only in sequences of weight 0 has frequency 0 and is kept at
``min_freq`` 0, as there). A dense block's weights are all features, whatever
``min_freq``. Transition attributes (:mod:`crfsdca.data.transitions`) have every pair of
labels, as CRF++'s and Wapiti's ``B`` templates do.
"""

from __future__ import annotations

import numpy as np

from ..data.sequences import Sequences
from ..model.features import crfsuite_mask, state_pairs
from ..model.layout import WeightLayout


def crfsuite_feature_mask(train: Sequences, n_attributes: int, n_labels: int,
                          possible_states: bool = False, possible_transitions: bool = False,
                          min_freq: float = 0.0, bias: bool = False,
                          zero_entries: np.ndarray | None = None,
                          n_transition_attributes: int = 0) -> np.ndarray:
    """uint8 mask of length d (1: the weight is a feature) for the training split
    (``zero_entries``: its (attribute, token) pairs of weight 0, from
    :func:`crfsdca.data.items.encode`), with ``n_transition_attributes`` rows of W_B
    (all features) after the transitions."""
    A, K = int(n_attributes), int(n_labels)
    layout = WeightLayout(A, K)
    mask = crfsuite_mask(train, A, K, possible_states, possible_transitions, bias,
                         zero_entries)
    labels = train.labels.astype(np.int64)
    token_weight = np.repeat(train.weights, train.lengths()) if train.weighted else None
    freq = np.zeros(A * K)
    state_pairs(train, K, freq=freq, token_weight=token_weight)
    mask[: A * K] &= freq >= min_freq
    layout.emission(mask)[train.dense_attr] = 1
    inner = np.ones(train.n_tokens, dtype=bool)
    inner[train.offsets[1:] - 1] = False
    t = np.flatnonzero(inner)
    count = np.bincount(labels[t] * K + labels[t + 1],
                        weights=None if token_weight is None else token_weight[t],
                        minlength=K * K)
    mask[layout.transition_offset:] &= count >= min_freq
    if n_transition_attributes:
        mask = np.concatenate([mask, np.ones(n_transition_attributes * K * K, dtype=np.uint8)])
    return mask
