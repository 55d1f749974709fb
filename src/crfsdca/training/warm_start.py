"""Continued training: what a new fit starts from, by what its solver continues from.

A solver's registry entry says what it can continue from (``continues_from``): SDCA from
its dual state, L-BFGS from a model's weights (:func:`start_point`).

The dual state is the encoded training sequences, a digest of each, and SDCA's dual
marginals (on the compact store: the unary ones, each sequence's pairwise sums and its
entropy bound; a fit on the compact store continues an exact state too, its blocks
summed). A new fit on a training set starts every sequence seen before (same digest:
same attributes, weights and labels; each old sequence used at most once) from its kept
dual block, and every new one from the smoothed Dirac of its gold labels; with CRFsuite's
scale lambda n = 2 c2 does not depend on n, so the kept blocks stay valid when sequences
are added, and the duality gap still certifies the result. If the label set changed, every
sequence restarts from the Dirac. A kept block is a feasible dual point whatever the
weight of its sequence, so the weights of a new fit may differ from the last one's; the
state keeps the weights of its sequences for ``partial_fit``, which trains on them again.
"""

from __future__ import annotations

import numpy as np

from ..data.sequences import Sequences, make_sequences
from ..errors import ConfigError
from ..model.chain import chain_entropy
from ..model.layout import WeightLayout
from ..model.objective import dirac_marginals
from ..solvers.compact_store import compact_dirac
from ..solvers.registry import DualStart, SolverConfig


def dual_state(train: Sequences, digests: list[bytes], marginals, n_attributes: int,
               n_labels: int, c2: float) -> dict:
    """The dual state of a finished SDCA fit (see :mod:`crfsdca.model_file`): its
    marginals, and on the compact store the entropy bounds too."""
    mu_unary, mu_pair = marginals[:2]
    entropies = np.array(marginals[2], copy=True) if len(marginals) == 3 else None
    return {"offsets": train.offsets, "labels": train.labels, "entropies": entropies,
            "attr_indptr": train.attr_indptr, "attr_indices": train.attr_indices,
            "attr_values": train.attr_values, "mu_unary": np.array(mu_unary, copy=True),
            "mu_pair": np.array(mu_pair, copy=True),
            "digests": np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, 16),
            "n_attributes": n_attributes, "n_labels": n_labels, "c2": c2,
            "weights": train.weights, "dense": train.dense, "dense_attr": train.dense_attr}


def state_sequences(state: dict) -> Sequences:
    """The training sequences of a dual state, as a split."""
    weights = state.get("weights")  # a dual file keeps none: every weight 1, no dense block
    return make_sequences(state["offsets"], state["labels"], state["attr_indptr"],
                          state["attr_indices"], state["attr_values"],
                          weights if weights is not None and len(weights) else None,
                          state.get("dense"), state.get("dense_attr"))


def state_digests(state: dict) -> list[bytes]:
    return [bytes(row) for row in np.asarray(state["digests"], dtype=np.uint8)]


def _kept_blocks(digests: list[bytes], state: dict):
    """(j, i) for each sequence j of a new fit that continues the kept block i (the same
    digest, each kept block used once)."""
    free: dict[bytes, list[int]] = {}
    for i, d in enumerate(state_digests(state)):
        free.setdefault(d, []).append(i)
    for j, d in enumerate(digests):
        slots = free.get(d)
        if slots:
            yield j, slots.pop()


def initial_compact_store(train: Sequences, digests: list[bytes], state: dict | None,
                          n_labels: int, init_c: float):
    """The compact store (unary, pairwise sums, entropy bounds) a fit on ``train`` starts
    from, and how many blocks it reused (from a compact state, or an exact one's blocks
    summed, with their exact entropies)."""
    K, KK = n_labels, n_labels * n_labels
    mu_unary, mu_pair, entropies = compact_dirac(train, K, c=init_c)
    if state is None or int(state["n_labels"]) != K:
        return (mu_unary, mu_pair, entropies), 0
    old_off = np.asarray(state["offsets"])
    old_u, old_p, old_h = state["mu_unary"], state["mu_pair"], state.get("entropies")
    reused = 0
    for j, i in _kept_blocks(digests, state):
        s, t = int(old_off[i]), int(old_off[i + 1])
        u, v = int(train.offsets[j]), int(train.offsets[j + 1])
        mu_unary[u * K: v * K] = old_u[s * K: t * K]
        if old_h is not None:
            mu_pair[j * KK:(j + 1) * KK] = old_p[i * KK:(i + 1) * KK]
            entropies[j] = old_h[i]
        else:
            pairs = np.asarray(old_p[(s - i) * KK: (t - i - 1) * KK], np.float64)
            mu_pair[j * KK:(j + 1) * KK] = pairs.reshape(-1, KK).sum(axis=0)
            entropies[j] = chain_entropy(np.asarray(old_u[s * K: t * K], np.float64), 0,
                                         pairs, 0, t - s, K)
        reused += 1
    return (mu_unary, mu_pair, entropies), reused


def initial_store(train: Sequences, digests: list[bytes], state: dict, n_labels: int,
                  init_c: float, dtype) -> tuple[tuple[np.ndarray, np.ndarray], int]:
    """The dual store a fit on ``train`` starts from, and how many blocks it reused."""
    K = n_labels
    if state is not None and state.get("entropies") is not None:
        raise ConfigError("this dual state was kept by a fit on the compact store, which "
                          "keeps no pairwise marginals per edge: continue it with "
                          "dual_store='compact'")
    mu_unary, mu_pair = dirac_marginals(train, K, c=init_c, dtype=np.dtype(dtype))
    if state is None or int(state["n_labels"]) != K:
        return (mu_unary, mu_pair), 0
    old_off = np.asarray(state["offsets"])
    old_u, old_p = state["mu_unary"], state["mu_pair"]
    reused = 0
    KK = K * K
    for j, i in _kept_blocks(digests, state):
        s, t = int(old_off[i]), int(old_off[i + 1])
        u, v = int(train.offsets[j]), int(train.offsets[j + 1])
        mu_unary[u * K: v * K] = old_u[s * K: t * K]
        mu_pair[(u - j) * KK: (v - j - 1) * KK] = old_p[(s - i) * KK: (t - i - 1) * KK]
        reused += 1
    return (mu_unary, mu_pair), reused


def grow_weights(model, n_attributes: int, n_labels: int) -> np.ndarray:
    """The weights of ``model`` in the layout of A attributes and K labels (new ones 0)."""
    old, new = model.layout, WeightLayout(n_attributes, n_labels)
    w = new.zeros()
    a, k = old.n_attributes, old.n_labels
    new.emission(w)[:a, :k] = old.emission(model.weights)
    new.bias(w)[:k] = old.bias(model.weights)
    new.transition(w)[:k, :k] = old.transition(model.weights)
    return w


def start_point(config: SolverConfig, previous, state: dict | None,
                train: Sequences, digests: list[bytes], n_attributes: int, n_labels: int,
                mask: np.ndarray, say=None):
    """What a fit by ``config``'s solver continues from, given the model of the previous
    fit (``previous``) and its dual state (``state``): the dual store of a solver that
    continues from its dual state (kept blocks for the sequences seen before, with the
    previous model's weights), the grown weights of one that continues from weights, or
    None (a fresh start)."""
    kind = config.spec.continues_from
    weights = (None if previous is None or kind is None
               else grow_weights(previous, n_attributes, n_labels) * mask)
    if kind == "dual" and state is not None:
        opts = config.options
        if opts.get("dual_store") == "compact":
            start, reused = initial_compact_store(train, digests, state, n_labels,
                                                  opts["init_c"])
        else:
            start, reused = initial_store(train, digests, state, n_labels, opts["init_c"],
                                          opts["store_dtype"])
        if say is not None:
            say(f"continuing: {reused} of {train.n_sequences} sequences start from their "
                f"kept dual blocks")
        return DualStart(start, weights)
    return weights if kind == "weights" else None
