"""Synthetic sequence-labeling data of any size, for tests and benchmarks.

Labels follow a random first-order Markov chain; each token carries a fixed
number of binary attributes, each drawn with probability ``signal`` from a pool
specific to the token's label (so the problem is learnable) and otherwise
uniformly. Fully vectorized, deterministic given the seed.
"""

from __future__ import annotations

import numpy as np

from .sequences import Sequences, make_sequences

POS_SCALE = dict(n=38_219, min_len=4, max_len=44, n_labels=45, n_attributes=190_000,
                 attrs_per_token=13)
"""The paper's POS task dimensions (Table 1): N ~ 9.1e5 tokens, K = 45, A = 1.9e5, a = 13."""


def synthetic_sequences(n: int, min_len: int, max_len: int, n_labels: int, n_attributes: int,
                        attrs_per_token: int, seed: int = 0, signal: float = 0.5) -> Sequences:
    """A split of n sequences with lengths uniform in [min_len, max_len]."""
    if not (1 <= min_len <= max_len):
        raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
    if n < 1 or n_labels < 1 or n_attributes < 1 or attrs_per_token < 0:
        raise ValueError("n, n_labels, n_attributes must be >= 1 and attrs_per_token >= 0")
    rng = np.random.default_rng(seed)
    K, A = n_labels, n_attributes
    lengths = rng.integers(min_len, max_len + 1, size=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    N = int(offsets[-1])

    trans = rng.dirichlet(np.full(K, 0.3), size=K)
    cum = np.cumsum(trans, axis=1)
    grid = np.full((n, max_len), -1, dtype=np.int64)
    grid[:, 0] = rng.integers(0, K, size=n)
    for t in range(1, max_len):
        u = rng.random(n)[:, None]
        grid[:, t] = np.minimum((u > cum[grid[:, t - 1]]).sum(axis=1), K - 1)
    mask = np.arange(max_len)[None, :] < lengths[:, None]
    labels = grid[mask]

    a = attrs_per_token
    pool = max(A // K, 1)
    from_pool = rng.random((N, a)) < signal
    pooled = (labels[:, None] * pool + rng.integers(0, pool, size=(N, a))) % A
    attrs = np.where(from_pool, pooled, rng.integers(0, A, size=(N, a)))
    attrs.sort(axis=1)
    keep = np.ones_like(attrs, dtype=bool)
    keep[:, 1:] = attrs[:, 1:] != attrs[:, :-1]
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    return make_sequences(offsets, labels, indptr, attrs[keep])


def pos_scale(seed: int = 0) -> Sequences:
    """A synthetic training split at the paper's POS scale (for memory planning)."""
    return synthetic_sequences(seed=seed, **POS_SCALE)
