"""Full-batch functions: primal P and its gradient, dual D, block gaps, predictions.

The dual marginals of all sequences live in two flat arrays (the "marginal
store"): unary marginals of sequence i at ``offsets[i]*K`` (T_i x K) and
pairwise marginals at ``(offsets[i] - i)*K*K`` ((T_i - 1) x K x K). Their sizes
are known before training starts (:func:`store_sizes`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..data.sequences import Sequences
from ._fastmath import NJIT
from .chain import chain_divergence, chain_entropy, smoothed_dirac_marginals
from .oracle import (
    forward_backward,
    forward_logz,
    labeling_score,
    make_workspace,
    transition_potentials,
    unary_scores,
    viterbi,
)
from .stats import add_label_stats, add_marginal_stats


def store_sizes(seq: Sequences, n_labels: int) -> tuple[int, int]:
    """Number of unary and pairwise entries of the marginal store of a split."""
    K = n_labels
    return seq.n_tokens * K, (seq.n_tokens - seq.n_sequences) * K * K


@njit(**NJIT)
def _primal_pass(w, n_attr, K, offsets, labels, attr_indptr, attr_indices, lam, grad,
                 want_grad, scores, emit, alpha, beta, scale, trans, unary, pair):
    n = len(offsets) - 1
    tmax = transition_potentials(w, n_attr, K, trans)
    loss = 0.0
    for i in range(n):
        T = unary_scores(w, n_attr, K, offsets, attr_indptr, attr_indices, i, scores)
        if want_grad:
            logz = forward_backward(scores, T, K, trans, tmax, w, n_attr, emit, alpha, beta,
                                    scale, unary, pair)
            add_marginal_stats(grad, 1.0, unary, 0, pair, 0, T, K, n_attr, offsets,
                               attr_indptr, attr_indices, i)
            add_label_stats(grad, -1.0, K, n_attr, offsets, labels, attr_indptr,
                            attr_indices, i)
        else:
            logz = forward_logz(scores, T, K, trans, tmax, w, n_attr, emit, alpha, beta,
                                scale, unary, pair)
        loss += logz - labeling_score(scores, T, K, w, n_attr, labels, offsets[i])
    return loss


def _pass(w, seq, n_attr, K, lam, want_grad):
    max_len = int(np.max(np.diff(seq.offsets)))
    ws = make_workspace(max_len, K)
    grad = np.zeros_like(w) if want_grad else np.zeros(1)
    loss = _primal_pass(w, n_attr, K, seq.offsets, seq.labels, seq.attr_indptr,
                        seq.attr_indices, lam, grad, want_grad, ws.scores, ws.emit, ws.alpha,
                        ws.beta, ws.scale, ws.trans, ws.unary, ws.pair)
    n = seq.n_sequences
    value = 0.5 * lam * float(w @ w) + loss / n
    if want_grad:
        grad /= n
        grad += lam * w
    return value, grad


def primal(w: np.ndarray, seq: Sequences, n_attr: int, n_labels: int, lam: float) -> float:
    """P(w) = lam/2 ||w||^2 + (1/n) sum_i [log Z_i(w) - score(x_i, y_i)]."""
    return _pass(w, seq, n_attr, n_labels, lam, False)[0]


def primal_and_gradient(w, seq: Sequences, n_attr: int, n_labels: int, lam: float):
    """P(w) and grad P(w) = lam w + (1/n) sum_i (E_nu_i[F] - F(x_i, y_i))."""
    return _pass(w, seq, n_attr, n_labels, lam, True)


@njit(**NJIT)
def _weights_from_marginals(mu_unary, mu_pair, n_attr, K, offsets, labels, attr_indptr,
                            attr_indices, scale, out):
    n = len(offsets) - 1
    for i in range(n):
        T = offsets[i + 1] - offsets[i]
        add_label_stats(out, scale, K, n_attr, offsets, labels, attr_indptr, attr_indices, i)
        add_marginal_stats(out, -scale, mu_unary, offsets[i] * K, mu_pair,
                           (offsets[i] - i) * K * K, T, K, n_attr, offsets, attr_indptr,
                           attr_indices, i)


def weights_from_marginals(mu_unary, mu_pair, seq: Sequences, n_attr: int, n_labels: int,
                           lam: float) -> np.ndarray:
    """w_hat(mu) = (1/(lam n)) sum_i (F(x_i, y_i) - E_mu_i[F(x_i, .)])  (eq. 16)."""
    K = n_labels
    out = np.zeros(n_attr * K + 3 * K + K * K)
    _weights_from_marginals(mu_unary, mu_pair, n_attr, K, seq.offsets, seq.labels,
                            seq.attr_indptr, seq.attr_indices,
                            1.0 / (lam * seq.n_sequences), out)
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
                   lam: float) -> float:
    """D(mu) = -lam/2 ||w_hat(mu)||^2 + (1/n) sum_i H~(mu_i)."""
    w = weights_from_marginals(mu_unary, mu_pair, seq, n_attr, n_labels, lam)
    ent = sequence_entropies(mu_unary, mu_pair, n_labels, seq.offsets,
                             np.empty(seq.n_sequences))
    return -0.5 * lam * float(w @ w) + float(ent.mean())


@njit(**NJIT)
def _block_gaps(w, mu_unary, mu_pair, n_attr, K, offsets, attr_indptr, attr_indices, out,
                scores, emit, alpha, beta, scale, trans, unary, pair):
    n = len(offsets) - 1
    tmax = transition_potentials(w, n_attr, K, trans)
    for i in range(n):
        T = unary_scores(w, n_attr, K, offsets, attr_indptr, attr_indices, i, scores)
        forward_backward(scores, T, K, trans, tmax, w, n_attr, emit, alpha, beta, scale,
                         unary, pair)
        out[i] = chain_divergence(mu_unary, offsets[i] * K, mu_pair, (offsets[i] - i) * K * K,
                                  unary, 0, pair, 0, T, K)
    return out


def block_gaps(w, mu_unary, mu_pair, seq: Sequences, n_attr: int, n_labels: int) -> np.ndarray:
    """g_i = D~(mu_i || nu_i(w)) for every sequence (eq. 10-11); one oracle call each."""
    ws = make_workspace(int(np.max(np.diff(seq.offsets))), n_labels)
    out = np.empty(seq.n_sequences)
    return _block_gaps(w, mu_unary, mu_pair, n_attr, n_labels, seq.offsets, seq.attr_indptr,
                       seq.attr_indices, out, ws.scores, ws.emit, ws.alpha, ws.beta, ws.scale,
                       ws.trans, ws.unary, ws.pair)


@njit(**NJIT)
def _dirac_store(labels, offsets, K, c, mu_unary, mu_pair, scores, trans, emit, alpha, beta,
                 scale, unary, pair):
    n = len(offsets) - 1
    KK = K * K
    for i in range(n):
        start = offsets[i]
        T = offsets[i + 1] - start
        smoothed_dirac_marginals(labels, start, T, K, c, scores, trans, emit, alpha, beta,
                                 scale, unary, pair)
        u0 = start * K
        for j in range(T * K):
            mu_unary[u0 + j] = unary[j]
        p0 = (start - i) * KK
        for j in range((T - 1) * KK):
            mu_pair[p0 + j] = pair[j]


def dirac_marginals(seq: Sequences, n_labels: int, c: float = 10.0, dtype=np.float64):
    """Marginal store initialized at the smoothed Dirac on the gold labels (eq. 21)."""
    K = n_labels
    nu, npair = store_sizes(seq, K)
    mu_unary = np.empty(nu, dtype=dtype)
    mu_pair = np.empty(npair, dtype=dtype)
    ws = make_workspace(int(np.max(np.diff(seq.offsets))), K)
    _dirac_store(seq.labels, seq.offsets, K, float(c), mu_unary, mu_pair, ws.scores, ws.trans,
                 ws.emit, ws.alpha, ws.beta, ws.scale, ws.unary, ws.pair)
    return mu_unary, mu_pair


@njit(**NJIT)
def _predict(w, n_attr, K, offsets, attr_indptr, attr_indices, out, scores, delta, back, path):
    n = len(offsets) - 1
    for i in range(n):
        T = unary_scores(w, n_attr, K, offsets, attr_indptr, attr_indices, i, scores)
        viterbi(scores, T, K, w, n_attr, delta, back, path)
        start = offsets[i]
        for t in range(T):
            out[start + t] = path[t]
    return out


def predict(w, seq: Sequences, n_attr: int, n_labels: int) -> np.ndarray:
    """Viterbi labels of every token of the split (int32, length N)."""
    ws = make_workspace(int(np.max(np.diff(seq.offsets))), n_labels)
    out = np.empty(seq.n_tokens, dtype=np.int32)
    return _predict(w, n_attr, n_labels, seq.offsets, seq.attr_indptr, seq.attr_indices, out,
                    ws.scores, ws.emit, ws.back, ws.path)


@njit(**NJIT)
def _oracle_pass(w, n_attr, K, offsets, attr_indptr, attr_indices, scores, emit, alpha, beta,
                 scale, trans, unary, pair):
    n = len(offsets) - 1
    total = 0.0
    for i in range(n):
        tmax = transition_potentials(w, n_attr, K, trans)
        T = unary_scores(w, n_attr, K, offsets, attr_indptr, attr_indices, i, scores)
        total += forward_backward(scores, T, K, trans, tmax, w, n_attr, emit, alpha, beta,
                                  scale, unary, pair)
    return total


def oracle_pass(w, seq: Sequences, n_attr: int, n_labels: int) -> float:
    """One bare oracle call per sequence (scores, exp(W), forward-backward with all marginals).

    This is the unit of work of the benchmarks: SDCA's epoch is compared to it. As in a
    stochastic solver, exp(W) is recomputed for every sequence. Returns sum_i log Z_i.
    """
    ws = make_workspace(int(np.max(np.diff(seq.offsets))), n_labels)
    return _oracle_pass(w, n_attr, n_labels, seq.offsets, seq.attr_indptr, seq.attr_indices,
                        ws.scores, ws.emit, ws.alpha, ws.beta, ws.scale, ws.trans, ws.unary,
                        ws.pair)
