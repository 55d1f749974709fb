"""Full-batch functions: primal P and its gradient, dual D, block gaps, predictions.

The dual marginals of all sequences live in two flat arrays (the "marginal
store"): unary marginals of sequence i at ``offsets[i]*K`` (T_i x K) and
pairwise marginals at ``(offsets[i] - i)*K*K`` ((T_i - 1) x K x K). Their sizes
are known before training starts (:func:`store_sizes`).

Every pass over the sequences runs on ``threads`` threads (:mod:`crfsdca.runtime.threads`; the
kernels release the GIL) over chunks fixed by the data, never by the thread count, and
adds partial results in a fixed order (:mod:`crfsdca.model.passes`): P, its gradient,
the block gaps and the predictions are the same bits on any number of threads, and P is
the serial loop's value.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..data.sequences import Sequences
from ..runtime.jit import NJIT, abs_sum, aligned_empty, aligned_zeros, dot, stream_empty
from ..runtime.threads import run_parallel
from .chain import chain_divergence, chain_entropy, smoothed_dirac_marginals
from .features import NO_MASK, soft_threshold
from .oracle import (
    NO_LABELS,
    edge_potentials,
    forward_backward,
    make_decode_workspace,
    prefetch_scores,
    strided_marginals,
    strided_viterbi,
    transition_offset,
    transition_potentials,
    unary_scores,
    viterbi,
)
from .passes import SlotBuffers, chunk_bounds, claim, claims, gradient_pass, sequence_weight
from .passes import tables as _tables
from .passes import workspace as _workspace
from .stats import (
    add_dense_label_stats,
    add_dense_marginal_stats,
    add_edge_label_stats,
    add_edge_marginal_stats,
    add_label_stats,
    add_marginal_stats,
    apply_mask,
)


def store_sizes(seq: Sequences, n_labels: int) -> tuple[int, int]:
    """Number of unary and pairwise entries of the marginal store of a split."""
    K = n_labels
    return seq.n_tokens * K, (seq.n_tokens - seq.n_sequences) * K * K


def primal(w: np.ndarray, seq: Sequences, n_attr: int, n_labels: int, lam: float,
           l1: float = 0.0, threads: int = 1) -> float:
    """P(w) = lam/2 ||w||^2 + l1 ||w||_1 + (1/n) sum_i c_i [log Z_i(w) - score(x_i, y_i)],
    c_i the sequence weights (all 1 unless ``seq`` is weighted)."""
    value = gradient_pass(w, seq, n_attr, n_labels, lam, False, NO_MASK, threads, None,
                          None)[0]
    return value + l1 * abs_sum(w) if l1 else value


def primal_and_gradient(w, seq: Sequences, n_attr: int, n_labels: int, lam: float,
                        mask: np.ndarray | None = None, threads: int = 1,
                        buffers: SlotBuffers | None = None, into: np.ndarray | None = None):
    """P(w) and grad P(w) = lam w + (1/n) sum_i c_i (E_nu_i[F] - F(x_i, y_i)), the gradient
    restricted to the features of ``mask`` (uint8, 1 = a feature) when given, in ``into``
    or a new array. A caller that passes many times keeps its ``buffers`` (and its
    ``into``) across calls: fresh arrays fault their pages in again on every call (40 ms
    of CoNLL-2000's 0.3 s pass), and the split's attribute index is built again."""
    return gradient_pass(w, seq, n_attr, n_labels, lam, True, NO_MASK if mask is None else mask,
                         threads, buffers, into)


@njit(inline="always", **NJIT)
def _weight_terms(mu_unary, mu_pair, n_attr, K, seq, scale, out, i):
    """Sequence i's terms of w_hat(mu) into ``out``: scale c_i (F(x_i, y_i) - E_mu_i[F])."""
    start = seq.offsets[i]
    T = seq.offsets[i + 1] - start
    u0 = start * K
    p0 = (start - i) * K * K
    s = scale * sequence_weight(seq, i)
    add_label_stats(out, s, K, n_attr, seq, i)
    add_marginal_stats(out, -s, mu_unary, u0, mu_pair, p0, T, K, n_attr, seq, i, T - 1)
    if len(seq.dense_attr) > 0:
        add_dense_label_stats(out, s, K, seq, i)
        add_dense_marginal_stats(out, -s, mu_unary, u0, T, K, seq, i)
    if len(seq.edge_indptr) > 0:
        oe = transition_offset(n_attr, K) + K * K
        add_edge_label_stats(out, s, K, oe, seq, i)
        add_edge_marginal_stats(out, -s, mu_pair, p0, K, oe, seq, i)


@njit(**NJIT)
def _weights_from_marginals(mu_unary, mu_pair, n_attr, K, seq, scale, out):
    """w_hat(mu)'s terms of every sequence into ``out``, in sequence order."""
    for i in range(len(seq.offsets) - 1):
        _weight_terms(mu_unary, mu_pair, n_attr, K, seq, scale, out, i)


def weights_from_marginals(mu_unary, mu_pair, seq: Sequences, n_attr: int, n_labels: int,
                           lam: float, mask: np.ndarray | None = None,
                           n_edges: int = 0) -> np.ndarray:
    """w_hat(mu) = (1/(lam n)) sum_i c_i (F(x_i, y_i) - E_mu_i[F(x_i, .)])  (eq. 16), c_i
    the sequence weights, restricted to the features of ``mask`` when given (``n_edges``:
    the model's transition attributes, W_B's rows)."""
    K = n_labels
    out = aligned_zeros(n_attr * K + 3 * K + K * K + n_edges * K * K)
    _weights_from_marginals(mu_unary, mu_pair, n_attr, K, seq, 1.0 / (lam * seq.n_sequences),
                            out)
    if mask is not None:
        apply_mask(out, mask)
    return out


@njit(**NJIT)
def sequence_entropies(mu_unary, mu_pair, K, offsets, out):
    """out[i] = H~(mu_i) for every sequence."""
    n = len(offsets) - 1
    for i in range(n):
        T = offsets[i + 1] - offsets[i]
        out[i] = chain_entropy(mu_unary, offsets[i] * K, mu_pair, (offsets[i] - i) * K * K, T, K)
    return out


def dual_objective(mu_unary, mu_pair, seq: Sequences, n_attr: int, n_labels: int,
                   lam: float, mask: np.ndarray | None = None, l1: float = 0.0,
                   n_edges: int = 0) -> float:
    """D(mu) = -lam/2 ||w||^2 + (1/n) sum_i c_i H~(mu_i), w = S_kappa(w_hat(mu)) the
    weights of the dual point (kappa = l1 / lam; w = w_hat(mu) without L1; ``math.md``
    sections 4 and 8)."""
    w = weights_from_marginals(mu_unary, mu_pair, seq, n_attr, n_labels, lam, mask, n_edges)
    if l1:
        w = soft_threshold(w, l1 / lam)
    ent = sequence_entropies(mu_unary, mu_pair, n_labels, seq.offsets,
                             np.empty(seq.n_sequences))
    return -0.5 * lam * dot(w, w) + weighted_sum(ent, seq) / seq.n_sequences


def weighted_sum(values: np.ndarray, seq: Sequences) -> float:
    """sum_i c_i values[i] over the sequences of ``seq`` (numpy's sum when unweighted)."""
    return float(dot(seq.weights, values)) if seq.weighted else float(values.sum())


@njit(**NJIT)
def _block_gaps(w, mu_unary, mu_pair, n_attr, K, seq, out, ws, G, bounds, counter, locks):
    offsets = seq.offsets
    tmax = transition_potentials(w, transition_offset(n_attr, K), K, ws.trans)
    while True:
        c = claim(counter, locks)
        if c >= len(bounds) - 1:
            return out
        for i in range(bounds[c], bounds[c + 1]):
            T = unary_scores(w, n_attr, K, seq, i, ws.scores)
            if len(seq.edge_indptr) > 0:
                emax = edge_potentials(w, n_attr, K, seq, i, G, ws.trans)
                strided_marginals(ws, T, K, G, 0, emax, 0.0, NO_LABELS, 0, False,
                                  K * K)
            else:
                forward_backward(ws, T, K, tmax, w, n_attr)
            out[i] = sequence_weight(seq, i) * chain_divergence(
                mu_unary, offsets[i] * K, mu_pair, (offsets[i] - i) * K * K, ws.unary, 0,
                ws.pair, 0, T, K)


def block_gaps(w, mu_unary, mu_pair, seq: Sequences, n_attr: int, n_labels: int,
               threads: int = 1) -> np.ndarray:
    """g_i = c_i D~(mu_i || nu_i(w)) for every sequence (eq. 10-11; c_i its weight): at
    w = w_hat(mu), P(w) - D(mu) is their mean. One oracle call each."""
    out = np.empty(seq.n_sequences)
    bounds = chunk_bounds(seq)
    counter, locks = claims()
    run_parallel([(lambda: _block_gaps(w, mu_unary, mu_pair, n_attr, n_labels, seq, out,
                                       _workspace(seq, n_labels), _tables(seq, n_labels),
                                       bounds, counter, locks))
                  for _ in range(threads)])
    return out


@njit(inline="always", **NJIT)
def _dirac_block(seq, K, c, mu_unary, mu_pair, ws, zeros, i):
    """Sequence i's block of the store at the smoothed Dirac."""
    start = seq.offsets[i]
    T = seq.offsets[i + 1] - start
    smoothed_dirac_marginals(seq.labels, start, T, K, c, ws, zeros)
    m_u = mu_unary[start * K:(start + T) * K]
    for j in range(T * K):
        m_u[j] = ws.unary[j]
    KK = K * K
    p0 = (start - i) * KK
    m_p = mu_pair[p0:p0 + (T - 1) * KK]
    for j in range((T - 1) * KK):
        m_p[j] = ws.pair[j]


@njit(inline="always", **NJIT)
def _block_entropy(seq, K, mu_unary, mu_pair, i):
    """H~(mu_i) of sequence i's block of the store."""
    start = seq.offsets[i]
    return chain_entropy(mu_unary, start * K, mu_pair, (start - i) * K * K,
                         seq.offsets[i + 1] - start, K)


@njit(**NJIT)
def _dirac_store(seq, K, c, mu_unary, mu_pair, ws, n_attr, scale, w_hat, entropies):
    """Each sequence's block at the smoothed Dirac; with ``entropies`` (not empty) also
    H~(mu_i) and w_hat's sums while the block is in cache, rather than in two more passes
    over the whole store."""
    zeros = np.zeros(K * K)
    for i in range(len(seq.offsets) - 1):
        _dirac_block(seq, K, c, mu_unary, mu_pair, ws, zeros, i)
        if len(entropies):
            entropies[i] = _block_entropy(seq, K, mu_unary, mu_pair, i)
            _weight_terms(mu_unary, mu_pair, n_attr, K, seq, scale, w_hat, i)


@njit(**NJIT)
def _dirac_chunks(seq, K, c, mu_unary, mu_pair, ws, entropies, bounds, counter, locks):
    """The blocks and entropies of the chunks of ``bounds`` this thread claims."""
    zeros = np.zeros(K * K)
    while True:
        ch = claim(counter, locks)
        if ch >= len(bounds) - 1:
            return
        for i in range(bounds[ch], bounds[ch + 1]):
            _dirac_block(seq, K, c, mu_unary, mu_pair, ws, zeros, i)
            entropies[i] = _block_entropy(seq, K, mu_unary, mu_pair, i)


def dirac_marginals(seq: Sequences, n_labels: int, c: float = 10.0, dtype=np.float64,
                    directory: str | None = None):
    """Marginal store initialized at the smoothed Dirac on the gold labels
    (``math.md`` section 5.1)."""
    K = n_labels
    nu, npair = store_sizes(seq, K)
    mu_unary = unary_store(nu, dtype, directory)
    mu_pair = stream_empty(npair, dtype, directory)
    _dirac_store(seq, K, float(c), mu_unary, mu_pair, _workspace(seq, K), 0, 1.0,
                 np.zeros(0), np.zeros(0))
    return mu_unary, mu_pair


def unary_store(n: int, dtype, directory: str | None = None) -> np.ndarray:
    """The unary store: cache-line aligned in memory, or in a file of ``directory``."""
    return aligned_empty(n, dtype) if directory is None else stream_empty(n, dtype, directory)


def dirac_start(seq: Sequences, n_attr: int, n_labels: int, lam: float,
                mask: np.ndarray | None = None, c: float = 10.0, dtype=np.float64,
                directory: str | None = None, n_edges: int = 0, threads: int = 1):
    """SDCA's start at the smoothed Dirac: (mu_unary, mu_pair, w_hat(mu), H~(mu_i) of
    every sequence), each as :func:`dirac_marginals`, :func:`weights_from_marginals` and
    :func:`sequence_entropies` give it. One thread makes it in one pass; more make the
    blocks and entropies on ``threads`` threads, then w_hat's sums in a second pass in the
    same order: the same bits."""
    K = n_labels
    nu, npair = store_sizes(seq, K)
    mu_unary = unary_store(nu, dtype, directory)
    mu_pair = stream_empty(npair, dtype, directory)
    w_hat = aligned_zeros(n_attr * K + 3 * K + K * K + n_edges * K * K)
    entropies = aligned_empty(seq.n_sequences)
    scale = 1.0 / (lam * seq.n_sequences)
    if threads == 1:
        _dirac_store(seq, K, float(c), mu_unary, mu_pair, _workspace(seq, K), n_attr, scale,
                     w_hat, entropies)
    else:  # the blocks on every thread, then w_hat's sums in the one thread's order
        bounds = chunk_bounds(seq)
        counter, locks = claims()
        run_parallel([(lambda: _dirac_chunks(seq, K, float(c), mu_unary, mu_pair,
                                             _workspace(seq, K), entropies, bounds,
                                             counter, locks))
                      for _ in range(threads)])
        _weights_from_marginals(mu_unary, mu_pair, n_attr, K, seq, scale, w_hat)
    if mask is not None:
        apply_mask(w_hat, mask)
    return mu_unary, mu_pair, w_hat, entropies


@njit(**NJIT)
def _predict(w, n_attr, K, seq, out, ws, G, bounds, counter, locks):
    while True:
        c = claim(counter, locks)
        if c >= len(bounds) - 1:
            return out
        for i in range(bounds[c], bounds[c + 1]):
            prefetch_scores(w, K, seq, i + 1)
            T = unary_scores(w, n_attr, K, seq, i, ws.scores)
            if len(seq.edge_indptr) > 0:
                edge_potentials(w, n_attr, K, seq, i, G, ws.trans)
                strided_viterbi(ws.scores, T, K, G, 0, K * K, ws.emit, ws.back,
                                ws.path)
            else:
                viterbi(ws.scores, T, K, w, n_attr, ws.emit, ws.back, ws.path)
            start = seq.offsets[i]
            for t in range(T):
                out[start + t] = ws.path[t]


def predict(w, seq: Sequences, n_attr: int, n_labels: int, threads: int = 1) -> np.ndarray:
    """Viterbi labels of every token of the split (int32, length N)."""
    out = np.empty(seq.n_tokens, dtype=np.int32)
    bounds = chunk_bounds(seq)
    counter, locks = claims()
    T = int(np.max(seq.lengths()))
    run_parallel([(lambda: _predict(w, n_attr, n_labels, seq, out,
                                    make_decode_workspace(T, n_labels),
                                    _tables(seq, n_labels), bounds, counter,
                                    locks))
                  for _ in range(threads)])
    return out


@njit(**NJIT)
def _oracle_pass(w, n_attr, K, seq, ws, lo, hi):
    total = 0.0
    for i in range(lo, hi):
        tmax = transition_potentials(w, transition_offset(n_attr, K), K, ws.trans)
        T = unary_scores(w, n_attr, K, seq, i, ws.scores)
        total += forward_backward(ws, T, K, tmax, w, n_attr)
    return total


def oracle_pass(w, seq: Sequences, n_attr: int, n_labels: int) -> float:
    """One bare oracle call per sequence (scores, exp(W), forward-backward with all marginals).

    This is the unit of work of the benchmarks: SDCA's epoch is compared to it. As in a
    stochastic solver, exp(W) is recomputed for every sequence. Returns sum_i log Z_i.
    """
    return _oracle_pass(w, n_attr, n_labels, seq, _workspace(seq, n_labels), 0,
                        seq.n_sequences)
