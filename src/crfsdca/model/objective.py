"""Full-batch functions: primal P and its gradient, dual D, block gaps, predictions.

The dual marginals of all sequences live in two flat arrays (the "marginal
store"): unary marginals of sequence i at ``offsets[i]*K`` (T_i x K) and
pairwise marginals at ``(offsets[i] - i)*K*K`` ((T_i - 1) x K x K). Their sizes
are known before training starts (:func:`store_sizes`).

Every pass over the sequences runs on ``threads`` threads (:mod:`crfsdca.runtime.threads`; the
kernels release the GIL): the split is cut into chunks of about equal tokens, dealt to
the threads' slots in turn (:func:`slot_chunks`), each slot sums its own partial results
with its own workspace, and the partial results are added in slot order. So a result
does not depend on how the threads are scheduled (bitwise the same for a given thread
count), and only rounding depends on the thread count; one thread runs the serial loop.
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
    chain_marginals,
    forward_backward,
    forward_logz,
    labeling_score,
    make_decode_workspace,
    make_workspace,
    transition_offset,
    transition_potentials,
    unary_scores,
    viterbi,
)
from .stats import (
    add_dense_label_stats,
    add_dense_marginal_stats,
    add_label_stats,
    add_marginal_stats,
    apply_mask,
)


def store_sizes(seq: Sequences, n_labels: int) -> tuple[int, int]:
    """Number of unary and pairwise entries of the marginal store of a split."""
    K = n_labels
    return seq.n_tokens * K, (seq.n_tokens - seq.n_sequences) * K * K


def _workspace(seq: Sequences, n_labels: int):
    return make_workspace(int(np.max(seq.lengths())), n_labels)


CHUNKS_PER_SLOT = 64


def slot_chunks(seq: Sequences, slots: int) -> np.ndarray:
    """Sequence indices cutting the split into ``slots * CHUNKS_PER_SLOT`` chunks of about
    equal numbers of tokens (a pass's work is about proportional to them); chunk c (from
    ``bounds[c]`` to ``bounds[c + 1]``) belongs to slot ``c % slots``.

    Dealt in turn rather than cut into ``slots`` contiguous parts: a split's sequences
    are not alike along its length (NER's later sentences carry rarer attributes, whose
    weight rows miss the cache), and a contiguous cut left one of two threads 16% slower
    than the other."""
    if slots == 1:  # what the cut below gives, without its numpy calls (a predict_single)
        return np.array([0, seq.n_sequences], dtype=np.int64)
    chunks = slots * CHUNKS_PER_SLOT
    targets = np.linspace(0, seq.n_tokens, chunks + 1)
    bounds = np.searchsorted(seq.offsets, targets).astype(np.int64)
    bounds[0], bounds[-1] = 0, seq.n_sequences
    return np.maximum.accumulate(bounds)


@njit(inline="always", **NJIT)
def sequence_weight(seq, i):
    """c_i, the weight of sequence i (1.0 when ``seq`` is unweighted: a product with it is
    exact, so the unweighted arithmetic is unchanged)."""
    return seq.weights[i] if len(seq.weights) > 0 else 1.0


@njit(**NJIT)
def _primal_pass(w, n_attr, K, seq, grad, want_grad, ws, bounds, first, stride):
    """Sum of the NLLs of the sequences of chunks first, first + stride, ... of ``bounds``
    (:func:`slot_chunks`), each times its weight c_i, and their gradients added into
    ``grad``.

    The gradient needs the pairwise marginals only summed over the edges, so the chain
    sums them as it computes them (one K x K table in cache instead of T - 1 of them
    written and read back: 1.2-1.35x faster passes on CONLL and POS)."""
    ow = transition_offset(n_attr, K)
    tmax = transition_potentials(w, ow, K, ws.trans)
    dense = len(seq.dense_attr) > 0
    loss = 0.0
    for c in range(first, len(bounds) - 1, stride):
        for i in range(bounds[c], bounds[c + 1]):
            weight = sequence_weight(seq, i)
            if weight == 0.0:  # out of the objective
                continue
            T = unary_scores(w, n_attr, K, seq, i, ws.scores)
            if want_grad:
                logz = chain_marginals(ws, T, K, w, ow, tmax, 0.0, NO_LABELS, 0, True)[0]
                add_marginal_stats(grad, weight, ws.unary, 0, ws.pair, 0, T, K, n_attr, seq,
                                   i, min(T - 1, 1))
                add_label_stats(grad, -weight, K, n_attr, seq, i)
                if dense:
                    add_dense_marginal_stats(grad, weight, ws.unary, 0, T, K, seq, i)
                    add_dense_label_stats(grad, -weight, K, seq, i)
            else:
                logz = forward_logz(ws, T, K, tmax, w, ow)
            loss += weight * (logz - labeling_score(ws.scores, T, K, w, n_attr, seq.labels,
                                                    seq.offsets[i]))
    return loss


@njit(**NJIT)
def _zero(a):
    """a[:] = 0, on the calling thread (so that threads fault in their own pages)."""
    for j in range(len(a)):
        a[j] = 0.0


@njit(**NJIT)
def _finish_gradient(parts, out, w, lam, n, mask, lo, hi, norm):
    """out[j] = (sum over the slots s of parts[s, j], in slot order) / n + lam w[j],
    times mask[j] when a mask is given, for lo <= j < hi (``out`` may be parts[0]);
    returns sum w[j]^2 there if ``norm`` (else 0). ``parts`` is one 2-d array, so that
    one compiled kernel serves every thread count.

    One pass over memory instead of numpy's four (sum, divide, lam w, add), on the
    threads: with one slot the arithmetic is numpy's, operation for operation."""
    first = parts[0]
    masked = len(mask) > 0
    ww = 0.0
    for jj in range(hi - lo):
        j = np.uint64(lo + jj)  # unsigned: no wrap-around select (oracle.py)
        acc = first[j]
        for s in range(1, parts.shape[0]):
            acc += parts[s, j]
        x = acc / n + lam * w[j]
        out[j] = x * mask[j] if masked else x
    if norm:
        wj = w[lo:hi]
        for j in range(hi - lo):  # a reduction in a loop that stores nothing (jit.py)
            ww += wj[j] * wj[j]
    return ww


class SlotBuffers:
    """The per-slot gradients and workspaces of multi-threaded passes, kept from one call
    to the next by one caller (an L-BFGS run): fresh ones would fault their pages in
    again on every call (CONLL's 7e6 weights on 2 threads: 8 to 46 ms of a 140 ms
    pass). The gradient returned is a new array each call unless the caller gives its
    own (``into``)."""

    def __init__(self):
        self._key = self._seq = self._one = None
        self.grads = np.zeros((0, 0))
        self.workspaces: list = []

    def get(self, seq: Sequences, K: int, size: int, threads: int):
        """(gradients, workspaces) of ``threads`` slots for a split and a weight size: the
        gradients are the rows of one 2-d array, each row's first ``size`` entries, its
        length rounded up to whole cache lines (so that each row starts on one)."""
        key = (K, size, threads)
        if key != self._key or seq is not self._seq:
            row = -(-size // 8) * 8
            self.grads = aligned_empty(threads * row).reshape(threads, row)
            self.workspaces = [_workspace(seq, K) for _ in range(threads)]
            self._key, self._seq = key, seq
        return self.grads, self.workspaces

    def workspace(self, seq: Sequences, K: int):
        """The workspace of a one-thread pass over a split."""
        if self._one is None or self._one[0] is not seq or self._one[1] != K:
            self._one = (seq, K, _workspace(seq, K))
        return self._one[2]


def _pass(w, seq, n_attr, K, lam, want_grad, mask=None, threads=1, buffers=None, into=None):
    n = seq.n_sequences
    mask = NO_MASK if mask is None else mask
    bounds = slot_chunks(seq, threads)
    if threads == 1:
        if not want_grad:
            grad = np.zeros(1)
        elif into is None:
            grad = aligned_zeros(len(w))
        else:
            grad = into
            _zero(grad)
        ws = _workspace(seq, K) if buffers is None else buffers.workspace(seq, K)
        loss = _primal_pass(w, n_attr, K, seq, grad, want_grad, ws, bounds, 0, 1)
        value = 0.5 * lam * dot(w, w) + loss / n
        if want_grad:
            _finish_gradient(grad.reshape(1, -1), grad, w, lam, n, mask, 0, len(w), False)
        return value, grad
    if want_grad:
        parts, workspaces = (buffers or SlotBuffers()).get(seq, K, len(w), threads)
        grads = [parts[s, :len(w)] for s in range(threads)]
    else:
        grads = [np.zeros(1)] * threads
        workspaces = [_workspace(seq, K) for _ in range(threads)]

    def slot(s):
        if want_grad:
            _zero(grads[s])
        return _primal_pass(w, n_attr, K, seq, grads[s], want_grad, workspaces[s], bounds,
                            s, threads)

    loss = 0.0
    for part in run_parallel([(lambda s=s: slot(s)) for s in range(threads)]):
        loss += part
    if not want_grad:
        return 0.5 * lam * dot(w, w) + loss / n, grads[0]
    cuts = np.linspace(0, len(w), threads + 1).astype(np.int64)
    out = aligned_empty(len(w)) if into is None else into  # faulted in by the threads
    ww = 0.0
    for part in run_parallel([
            (lambda s=s: _finish_gradient(parts, out, w, lam, n, mask, cuts[s],
                                           cuts[s + 1], True))
            for s in range(threads)]):
        ww += part
    return 0.5 * lam * ww + loss / n, out


def primal(w: np.ndarray, seq: Sequences, n_attr: int, n_labels: int, lam: float,
           l1: float = 0.0, threads: int = 1) -> float:
    """P(w) = lam/2 ||w||^2 + l1 ||w||_1 + (1/n) sum_i c_i [log Z_i(w) - score(x_i, y_i)],
    c_i the sequence weights (all 1 unless ``seq`` is weighted)."""
    value = _pass(w, seq, n_attr, n_labels, lam, False, threads=threads)[0]
    return value + l1 * abs_sum(w) if l1 else value


def primal_and_gradient(w, seq: Sequences, n_attr: int, n_labels: int, lam: float,
                        mask: np.ndarray | None = None, threads: int = 1,
                        buffers: SlotBuffers | None = None, into: np.ndarray | None = None):
    """P(w) and grad P(w) = lam w + (1/n) sum_i c_i (E_nu_i[F] - F(x_i, y_i)), the gradient
    restricted to the features of ``mask`` (uint8, 1 = a feature) when given, in ``into``
    or a new array. A caller that passes many times keeps its ``buffers`` (and its
    ``into``) across calls: fresh arrays of the weights' size fault their pages in again
    on every call (40 ms of CoNLL-2000's 0.3 s pass)."""
    return _pass(w, seq, n_attr, n_labels, lam, True, mask, threads, buffers, into)


@njit(**NJIT)
def _weights_from_marginals(mu_unary, mu_pair, n_attr, K, seq, scale, out):
    offsets = seq.offsets
    n = len(offsets) - 1
    dense = len(seq.dense_attr) > 0
    for i in range(n):
        T = offsets[i + 1] - offsets[i]
        s = scale * sequence_weight(seq, i)
        add_label_stats(out, s, K, n_attr, seq, i)
        add_marginal_stats(out, -s, mu_unary, offsets[i] * K, mu_pair,
                           (offsets[i] - i) * K * K, T, K, n_attr, seq, i, T - 1)
        if dense:
            add_dense_label_stats(out, s, K, seq, i)
            add_dense_marginal_stats(out, -s, mu_unary, offsets[i] * K, T, K, seq, i)


def weights_from_marginals(mu_unary, mu_pair, seq: Sequences, n_attr: int, n_labels: int,
                           lam: float, mask: np.ndarray | None = None) -> np.ndarray:
    """w_hat(mu) = (1/(lam n)) sum_i c_i (F(x_i, y_i) - E_mu_i[F(x_i, .)])  (eq. 16), c_i
    the sequence weights, restricted to the features of ``mask`` when given."""
    K = n_labels
    out = aligned_zeros(n_attr * K + 3 * K + K * K)
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
                   lam: float, mask: np.ndarray | None = None, l1: float = 0.0) -> float:
    """D(mu) = -lam/2 ||w||^2 + (1/n) sum_i c_i H~(mu_i), w = S_kappa(w_hat(mu)) the
    weights of the dual point (kappa = l1 / lam; w = w_hat(mu) without L1; ``math.md``
    sections 4 and 8)."""
    w = weights_from_marginals(mu_unary, mu_pair, seq, n_attr, n_labels, lam, mask)
    if l1:
        w = soft_threshold(w, l1 / lam)
    ent = sequence_entropies(mu_unary, mu_pair, n_labels, seq.offsets,
                             np.empty(seq.n_sequences))
    return -0.5 * lam * dot(w, w) + weighted_sum(ent, seq) / seq.n_sequences


def weighted_sum(values: np.ndarray, seq: Sequences) -> float:
    """sum_i c_i values[i] over the sequences of ``seq`` (numpy's sum when unweighted)."""
    return float(dot(seq.weights, values)) if seq.weighted else float(values.sum())


@njit(**NJIT)
def _block_gaps(w, mu_unary, mu_pair, n_attr, K, seq, out, ws, bounds, first, stride):
    offsets = seq.offsets
    tmax = transition_potentials(w, transition_offset(n_attr, K), K, ws.trans)
    for c in range(first, len(bounds) - 1, stride):
        for i in range(bounds[c], bounds[c + 1]):
            T = unary_scores(w, n_attr, K, seq, i, ws.scores)
            forward_backward(ws, T, K, tmax, w, n_attr)
            out[i] = sequence_weight(seq, i) * chain_divergence(
                mu_unary, offsets[i] * K, mu_pair, (offsets[i] - i) * K * K, ws.unary, 0,
                ws.pair, 0, T, K)
    return out


def block_gaps(w, mu_unary, mu_pair, seq: Sequences, n_attr: int, n_labels: int,
               threads: int = 1) -> np.ndarray:
    """g_i = c_i D~(mu_i || nu_i(w)) for every sequence (eq. 10-11; c_i its weight): at
    w = w_hat(mu), P(w) - D(mu) is their mean. One oracle call each."""
    out = np.empty(seq.n_sequences)
    bounds = slot_chunks(seq, threads)
    run_parallel([(lambda s=s: _block_gaps(w, mu_unary, mu_pair, n_attr, n_labels, seq, out,
                                           _workspace(seq, n_labels), bounds, s, threads))
                  for s in range(threads)])
    return out


@njit(**NJIT)
def _dirac_store(seq, K, c, mu_unary, mu_pair, ws, n_attr, scale, w_hat, entropies):
    """Each sequence's block at the smoothed Dirac; with ``entropies`` (not empty) also
    H~(mu_i) and w_hat's sums (:func:`_weights_from_marginals`'s, in its order) while the
    block is in cache, rather than in two more passes over the whole store."""
    labels, offsets = seq.labels, seq.offsets
    n = len(offsets) - 1
    KK = K * K
    zeros = np.zeros(KK)
    for i in range(n):
        start = offsets[i]
        T = offsets[i + 1] - start
        smoothed_dirac_marginals(labels, start, T, K, c, ws, zeros)
        u0 = start * K
        for j in range(T * K):
            mu_unary[u0 + j] = ws.unary[j]
        p0 = (start - i) * KK
        for j in range((T - 1) * KK):
            mu_pair[p0 + j] = ws.pair[j]
        if len(entropies):
            entropies[i] = chain_entropy(mu_unary, u0, mu_pair, p0, T, K)
            s = scale * sequence_weight(seq, i)
            add_label_stats(w_hat, s, K, n_attr, seq, i)
            add_marginal_stats(w_hat, -s, mu_unary, u0, mu_pair, p0, T, K, n_attr, seq, i,
                               T - 1)
            if len(seq.dense_attr) > 0:
                add_dense_label_stats(w_hat, s, K, seq, i)
                add_dense_marginal_stats(w_hat, -s, mu_unary, u0, T, K, seq, i)


def dirac_marginals(seq: Sequences, n_labels: int, c: float = 10.0, dtype=np.float64):
    """Marginal store initialized at the smoothed Dirac on the gold labels
    (``math.md`` section 5.1)."""
    K = n_labels
    nu, npair = store_sizes(seq, K)
    mu_unary = aligned_empty(nu, dtype)
    mu_pair = stream_empty(npair, dtype)
    _dirac_store(seq, K, float(c), mu_unary, mu_pair, _workspace(seq, K), 0, 1.0,
                 np.zeros(0), np.zeros(0))
    return mu_unary, mu_pair


def dirac_start(seq: Sequences, n_attr: int, n_labels: int, lam: float,
                mask: np.ndarray | None = None, c: float = 10.0, dtype=np.float64):
    """SDCA's start at the smoothed Dirac in one pass: (mu_unary, mu_pair, w_hat(mu),
    H~(mu_i) of every sequence), each as :func:`dirac_marginals`,
    :func:`weights_from_marginals` and :func:`sequence_entropies` give it."""
    K = n_labels
    nu, npair = store_sizes(seq, K)
    mu_unary = aligned_empty(nu, dtype)
    mu_pair = stream_empty(npair, dtype)
    w_hat = aligned_zeros(n_attr * K + 3 * K + K * K)
    entropies = aligned_empty(seq.n_sequences)
    _dirac_store(seq, K, float(c), mu_unary, mu_pair, _workspace(seq, K), n_attr,
                 1.0 / (lam * seq.n_sequences), w_hat, entropies)
    if mask is not None:
        apply_mask(w_hat, mask)
    return mu_unary, mu_pair, w_hat, entropies


@njit(**NJIT)
def _predict(w, n_attr, K, seq, out, ws, bounds, first, stride):
    for c in range(first, len(bounds) - 1, stride):
        for i in range(bounds[c], bounds[c + 1]):
            T = unary_scores(w, n_attr, K, seq, i, ws.scores)
            viterbi(ws.scores, T, K, w, n_attr, ws.emit, ws.back, ws.path)
            start = seq.offsets[i]
            for t in range(T):
                out[start + t] = ws.path[t]
    return out


def predict(w, seq: Sequences, n_attr: int, n_labels: int, threads: int = 1) -> np.ndarray:
    """Viterbi labels of every token of the split (int32, length N)."""
    out = np.empty(seq.n_tokens, dtype=np.int32)
    bounds = slot_chunks(seq, threads)
    T = int(np.max(seq.lengths()))
    run_parallel([(lambda s=s: _predict(w, n_attr, n_labels, seq, out,
                                        make_decode_workspace(T, n_labels), bounds, s,
                                        threads))
                  for s in range(threads)])
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
