"""Partitioned SDCA: what lets SDCA use every core and still give one model per seed.

The sequences are cut into P contiguous parts of about equal tokens (fixed by the data
and P alone). In a round, every part runs plain SDCA steps (:func:`.sdca_kernel.sdca_run`)
on its own local subproblem, against the round's weights plus its own change; then the
changes are added in part order (CoCoA+, Ma et al. 2015, with sigma' = P: ``math.md``
section 9). The local subproblem of part k is

    G_k(dmu) = (1/n) sum_{i in k} c_i H~(mu_i + dmu_i) - (lam / P) g*(v + P dv_k),

dv_k the change of v = w_hat(mu) that dmu makes. Since g* is convex,
g*(v + sum_k dv_k) <= (1/P) sum_k g*(v + P dv_k), so the sum of the parts' gains is a
lower bound on the gain of the dual: every round raises D, the dual stays feasible, and
the duality gap certifies the weights exactly as with one part. G_k is the dual of
part k alone with lambda / P, over the local v_k = v + P dv_k: the kernel runs
unchanged with ``lam_n / P``, and the round ends with v += (v_k - v) / P, part by part.

A part keeps compact copies of the rows of v (and w) that its sequences touch, its
attributes renumbered (:func:`local_split`): its steps read a small, private weight
vector, and the copies cost about the part's distinct attributes x K, not d. Its slice
of the marginal store and of the entropies are views of the solver's arrays. The parts
are independent within a round, so the threads run them in any order and any number:
the model is a function of the seed and P only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..data.sequences import Sequences
from ..model.features import soft_threshold
from ..runtime.jit import NJIT

NO_ROWS = np.zeros(0, dtype=np.int64)


def partition_bounds(seq: Sequences, parts: int) -> np.ndarray:
    """P + 1 sequence indices cutting the split into ``parts`` contiguous parts of about
    equal tokens (each of at least one sequence): fixed by the data and P alone."""
    n = seq.n_sequences
    if not 1 <= parts <= n:
        raise ValueError(f"partitions must be between 1 and the {n} training sequences, "
                         f"got {parts}")
    targets = np.linspace(0, seq.n_tokens, parts + 1)
    bounds = np.searchsorted(seq.offsets, targets).astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    for k in range(1, parts):  # at least one sequence a part
        bounds[k] = min(max(bounds[k], bounds[k - 1] + 1), n - (parts - k))
    return bounds


class LocalSplit(NamedTuple):
    """Sequences lo..hi - 1 of a split with their attributes renumbered 0..A_k - 1, and
    where each local weight lies in the full weight vector."""

    seq: Sequences
    n_attributes: int  # A_k
    rows: np.ndarray  # int64, local weight j is global weight rows[j]


def local_split(seq: Sequences, lo: int, hi: int, n_attr: int, K: int) -> LocalSplit:
    """The part lo..hi - 1 of ``seq`` on its own attributes (the dense block's columns
    among them, in their order), in the weight layout of ``A_k`` attributes."""
    t0, t1 = int(seq.offsets[lo]), int(seq.offsets[hi])
    e0, e1 = int(seq.attr_indptr[t0]), int(seq.attr_indptr[t1])
    indices = seq.attr_indices[e0:e1]
    attrs = np.unique(np.concatenate([seq.dense_attr.astype(np.int64),
                                      indices.astype(np.int64)]))
    dense = seq.dense[t0:t1] if seq.n_dense else seq.dense
    local = Sequences(
        seq.offsets[lo:hi + 1] - t0, seq.labels[t0:t1], seq.attr_indptr[t0:t1 + 1] - e0,
        np.searchsorted(attrs, indices).astype(np.int32),
        seq.attr_values[e0:e1] if len(seq.attr_values) else seq.attr_values,
        seq.weights[lo:hi] if seq.weighted else seq.weights, np.ascontiguousarray(dense),
        np.searchsorted(attrs, seq.dense_attr).astype(np.int32))
    A_k = len(attrs)
    rows = np.concatenate([
        (attrs[:, None] * K + np.arange(K)).ravel(),
        n_attr * K + np.arange(3 * K + K * K)]).astype(np.int64)
    return LocalSplit(local, A_k, rows)


@njit(**NJIT)
def gather(rows, v, v_local, start):
    """v_local = start = v[rows]: a part's copy of the round's v."""
    for j in range(len(rows)):
        x = v[rows[j]]
        v_local[j] = x
        start[j] = x


@njit(**NJIT)
def add_change(rows, v, v_local, start, scale):
    """v[rows] += scale (v_local - start): a part's change, added at the round's end."""
    for j in range(len(rows)):
        r = rows[j]
        v[r] += scale * (v_local[j] - start[j])


def threshold_rows(v: np.ndarray, w: np.ndarray, rows: np.ndarray, kappa: float) -> None:
    """w[rows] = S_kappa(v[rows]): the elastic net's weights where v changed."""
    w[rows] = soft_threshold(v[rows], kappa)


__all__ = ["LocalSplit", "add_change", "gather", "local_split", "partition_bounds",
           "threshold_rows"]
