"""The weight vector: one flat float64 array with three named blocks, and a fourth for
the transition attributes of a model that has them.

``w = [emission E (A x K) | bias B (K x 3) | transition W (K x K) | W_B (E x K x K)]``,
row-major, so that the emission row of attribute a is the contiguous slice
``w[a*K:(a+1)*K]``. Bias column 0 fires on every token, column 1 on the first
token, column 2 on the last (``math.md`` section 1). W_B[e] adds to W on the edges into
the tokens that have transition attribute e (:mod:`crfsdca.data.transitions`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class WeightLayout(NamedTuple):
    """Sizes and offsets of the weight blocks for A attributes and K labels."""

    n_attributes: int
    n_labels: int
    n_transition_attributes: int = 0

    @property
    def bias_offset(self) -> int:
        return self.n_attributes * self.n_labels

    @property
    def transition_offset(self) -> int:
        return self.bias_offset + 3 * self.n_labels

    @property
    def edge_offset(self) -> int:
        """Where W_B starts (the end of the chain's own weights)."""
        return self.transition_offset + self.n_labels * self.n_labels

    @property
    def dim(self) -> int:
        return self.edge_offset + self.n_transition_attributes * self.n_labels ** 2

    def zeros(self) -> np.ndarray:
        return np.zeros(self.dim)

    def emission(self, w: np.ndarray) -> np.ndarray:
        """View of E, shape (A, K)."""
        return w[: self.bias_offset].reshape(self.n_attributes, self.n_labels)

    def bias(self, w: np.ndarray) -> np.ndarray:
        """View of B, shape (K, 3)."""
        return w[self.bias_offset : self.transition_offset].reshape(self.n_labels, 3)

    def transition(self, w: np.ndarray) -> np.ndarray:
        """View of W, shape (K, K); W[k, l] scores label k followed by l."""
        return w[self.transition_offset : self.edge_offset].reshape(self.n_labels,
                                                                     self.n_labels)

    def edges(self, w: np.ndarray) -> np.ndarray:
        """View of W_B, shape (E, K, K); W_B[e, k, l] scores k followed by l on an edge
        into a token with transition attribute e."""
        K = self.n_labels
        return w[self.edge_offset :].reshape(self.n_transition_attributes, K, K)

    def check(self, w: np.ndarray) -> np.ndarray:
        """Return w as a contiguous float64 vector, or raise if its size is wrong."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.dim,):
            raise ValueError(
                f"weight vector has shape {w.shape}, expected ({self.dim},) for "
                f"A = {self.n_attributes}, K = {self.n_labels}"
                + (f", E = {self.n_transition_attributes}"
                   if self.n_transition_attributes else "")
            )
        return w
