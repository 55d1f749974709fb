"""A trained CRF as every model file holds it: vocabularies, the flat weight vector of
:mod:`crfsdca.model.layout`, the options it was trained with and its training summary."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..model.layout import WeightLayout


@dataclass
class Model:
    """A trained CRF: vocabularies, the flat weight vector, the options it was trained with."""

    labels: list[str]
    attributes: list[str]
    weights: np.ndarray
    options: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)
    transition_attributes: list[str] = field(default_factory=list)  # W_B's rows

    @property
    def layout(self) -> WeightLayout:
        return WeightLayout(len(self.attributes), len(self.labels),
                            len(self.transition_attributes))

    def __post_init__(self):
        self.weights = self.layout.check(self.weights)

    @property
    def checksum(self) -> str:
        """sha256 of the vocabularies and weights: the model's identity (a ``.dual`` file
        names the model it belongs to by it; a damaged weight changes it)."""
        return weights_checksum(self.labels, self.attributes, self.weights,
                                self.transition_attributes)


def weights_checksum(labels, attributes, weights: np.ndarray, transition_attributes=()) -> str:
    h = hashlib.sha256()
    for names in (labels, attributes) + ((transition_attributes,) if transition_attributes
                                         else ()):
        h.update("\x00".join(names).encode("utf-8") + b"\x01")
    h.update((np.asarray(weights, dtype="<f8") + 0.0).tobytes())  # -0.0 is stored as 0.0
    return h.hexdigest()
