"""The marginalization oracle of one sequence: scores, forward-backward, Viterbi.

All kernels write into caller-owned buffers (see :class:`Workspace`) so that
solvers allocate nothing per iteration. Buffers for a sequence of length T hold
token-major arrays: ``scores[t*K + k]`` and ``unary[t*K + k]`` for unary terms,
``pair[t*K*K + k*K + l] = p(y_t = k, y_{t+1} = l)`` for the T - 1 edges.

Forward-backward runs on scaled probabilities (Rabiner's scaling), after
subtracting the per-token maximum of the unary scores and the maximum of the
transition matrix; log Z keeps the logs of all scale factors. When a scale
factor underflows (extreme weights), the sequence is redone in log space, so
the oracle is exact at any weight magnitude.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ._fastmath import NJIT, NJIT_FAST, fexp, flog

_SAFE_MIN = 1e-280
_SAFE_MAX = 1e280


class Workspace(NamedTuple):
    """Scratch buffers of the oracle for sequences of at most ``max_len`` tokens."""

    scores: np.ndarray  # T*K unary scores
    emit: np.ndarray  # T*K exp(scores - rowmax), then backward messages
    alpha: np.ndarray  # T*K scaled forward messages
    beta: np.ndarray  # T*K scaled backward messages
    scale: np.ndarray  # T forward scale factors
    trans: np.ndarray  # K*K exp(W - max W)
    unary: np.ndarray  # T*K unary marginals
    pair: np.ndarray  # (T-1)*K*K pairwise marginals
    path: np.ndarray  # T int32 Viterbi labels
    back: np.ndarray  # T*K int32 Viterbi back-pointers


def make_workspace(max_len: int, n_labels: int) -> Workspace:
    """Allocate the scratch buffers for sequences up to ``max_len`` tokens."""
    T, K = max(int(max_len), 1), int(n_labels)
    return Workspace(
        scores=np.zeros(T * K),
        emit=np.zeros(T * K),
        alpha=np.zeros(T * K),
        beta=np.zeros(T * K),
        scale=np.zeros(T),
        trans=np.zeros(K * K),
        unary=np.zeros(T * K),
        pair=np.zeros(max(T - 1, 1) * K * K),
        path=np.zeros(T, dtype=np.int32),
        back=np.zeros(T * K, dtype=np.int32),
    )


@njit(**NJIT)
def unary_scores(w, n_attr, K, offsets, attr_indptr, attr_indices, i, out):
    """Write u_t(k) of sequence i into ``out[:T*K]`` and return T."""
    start = offsets[i]
    T = offsets[i + 1] - start
    ob = n_attr * K
    for t in range(T):
        row = t * K
        for k in range(K):
            out[row + k] = w[ob + 3 * k]
        if t == 0:
            for k in range(K):
                out[row + k] += w[ob + 3 * k + 1]
        if t == T - 1:
            for k in range(K):
                out[row + k] += w[ob + 3 * k + 2]
        tok = start + t
        for j in range(attr_indptr[tok], attr_indptr[tok + 1]):
            base = attr_indices[j] * K
            for k in range(K):
                out[row + k] += w[base + k]
    return T


@njit(**NJIT_FAST)
def transition_potentials(w, n_attr, K, trans):
    """Write exp(W - max W) into ``trans[:K*K]`` and return max W."""
    ow = n_attr * K + 3 * K
    mx = -np.inf
    for j in range(K * K):
        mx = max(mx, w[ow + j])
    for j in range(K * K):
        trans[j] = fexp(w[ow + j] - mx)
    return mx


@njit(**NJIT_FAST)
def _forward(scores, T, K, trans, trans_max, emit, alpha, scale):
    """Scaled forward pass; returns log Z, or NaN if a scale factor left the safe range."""
    logz = (T - 1) * trans_max
    for t in range(T):
        row = t * K
        mx = -np.inf
        for k in range(K):
            mx = max(mx, scores[row + k])
        logz += mx
        for k in range(K):
            emit[row + k] = fexp(scores[row + k] - mx)
    for t in range(T):
        row = t * K
        if t == 0:
            for k in range(K):
                alpha[k] = emit[k]
        else:
            prev = row - K
            for k in range(K):
                alpha[row + k] = 0.0
            for k in range(K):
                ak = alpha[prev + k]
                mrow = k * K
                for l in range(K):
                    alpha[row + l] += ak * trans[mrow + l]
            for k in range(K):
                alpha[row + k] *= emit[row + k]
        c = 0.0
        for k in range(K):
            c += alpha[row + k]
        if not (c > _SAFE_MIN and c < _SAFE_MAX):
            return np.nan
        inv = 1.0 / c
        for k in range(K):
            alpha[row + k] *= inv
        scale[t] = c
        logz += flog(c)
    return logz


@njit(**NJIT)
def logsumexp(x, start, stop):
    """log sum_j exp(x[j]) over ``x[start:stop]`` (-inf for an empty or all -inf range)."""
    mx = -np.inf
    for j in range(start, stop):
        mx = max(mx, x[j])
    if mx == -np.inf:
        return mx
    s = 0.0
    for j in range(start, stop):
        s += np.exp(x[j] - mx)
    return mx + np.log(s)


@njit(**NJIT)
def _forward_backward_log(scores, T, K, w, trans_offset, alpha, beta, emit, unary, pair):
    """Forward-backward in log space (slow, exact at any scale); returns log Z."""
    # alpha/beta hold log messages; emit serves as a K-sized scratch buffer.
    for k in range(K):
        alpha[k] = scores[k]
    for t in range(1, T):
        for l in range(K):
            for k in range(K):
                emit[k] = alpha[(t - 1) * K + k] + w[trans_offset + k * K + l]
            alpha[t * K + l] = logsumexp(emit, 0, K) + scores[t * K + l]
    logz = logsumexp(alpha, (T - 1) * K, T * K)
    for k in range(K):
        beta[(T - 1) * K + k] = 0.0
    for t in range(T - 2, -1, -1):
        for k in range(K):
            for l in range(K):
                emit[l] = (w[trans_offset + k * K + l] + scores[(t + 1) * K + l]
                           + beta[(t + 1) * K + l])
            beta[t * K + k] = logsumexp(emit, 0, K)
    for t in range(T):
        for k in range(K):
            unary[t * K + k] = np.exp(alpha[t * K + k] + beta[t * K + k] - logz)
    for t in range(T - 1):
        for k in range(K):
            for l in range(K):
                pair[t * K * K + k * K + l] = np.exp(
                    alpha[t * K + k] + w[trans_offset + k * K + l] + scores[(t + 1) * K + l]
                    + beta[(t + 1) * K + l] - logz)
    return logz


@njit(**NJIT_FAST)
def forward_backward_scaled(scores, T, K, trans, trans_max, emit, alpha, beta, scale, unary,
                            pair):
    """The scaled forward-backward alone; returns log Z, or NaN if it left the safe range.

    On success the buffers also hold what the log-marginals are made of:
    ``alpha[t*K + k]`` = normalized forward message a_t(k) and, for t >= 1,
    ``emit[t*K + l]`` = g_t(l) = exp(s_t(l) - max_k s_t(k)) b_t(l) / c_t, so that
    p(y_t = k, y_{t+1} = l) = a_t(k) exp(W[k, l] - max W) g_{t+1}(l).
    """
    logz = _forward(scores, T, K, trans, trans_max, emit, alpha, scale)
    if logz != logz:
        return logz
    KK = K * K
    last = (T - 1) * K
    for k in range(K):
        beta[last + k] = 1.0
        unary[last + k] = alpha[last + k]
    bmax = 0.0
    for t in range(T - 2, -1, -1):
        row = t * K
        nxt = row + K
        inv = 1.0 / scale[t + 1]
        # emit of token t+1 is no longer needed: reuse it for g = emit * beta / c
        for l in range(K):
            emit[nxt + l] = emit[nxt + l] * beta[nxt + l] * inv
        prow = t * KK
        for k in range(K):
            ak = alpha[row + k]
            mrow = k * K
            s = 0.0
            for l in range(K):
                x = trans[mrow + l] * emit[nxt + l]
                s += x
                pair[prow + mrow + l] = ak * x
            beta[row + k] = s
            unary[row + k] = ak * s
            bmax = max(bmax, s)
    if not bmax < _SAFE_MAX:
        return np.nan
    return logz


@njit(**NJIT)
def forward_backward(scores, T, K, trans, trans_max, w, n_attr,
                     emit, alpha, beta, scale, unary, pair):
    """log Z, unary marginals ``unary[:T*K]`` and pairwise marginals ``pair[:(T-1)*K*K]``.

    ``scores`` are the unary scores of the sequence, ``trans``/``trans_max`` come
    from :func:`transition_potentials` at the same weights ``w``. Scaled
    recursion, redone in log space if a scale factor under- or overflows.
    """
    logz = forward_backward_scaled(scores, T, K, trans, trans_max, emit, alpha, beta, scale,
                                   unary, pair)
    if logz != logz:
        return _forward_backward_log(scores, T, K, w, n_attr * K + 3 * K,
                                     alpha, beta, emit, unary, pair)
    return logz


@njit(**NJIT_FAST)
def forward_logz(scores, T, K, trans, trans_max, w, n_attr, emit, alpha, beta, scale,
                 unary, pair):
    """log Z alone (one forward pass), falling back to log space like forward_backward."""
    logz = _forward(scores, T, K, trans, trans_max, emit, alpha, scale)
    if logz != logz:
        return _forward_backward_log(scores, T, K, w, n_attr * K + 3 * K,
                                     alpha, beta, emit, unary, pair)
    return logz


@njit(**NJIT)
def viterbi(scores, T, K, w, n_attr, delta, back, path):
    """MAP labeling of the sequence into ``path[:T]``; returns its score.

    ``delta`` needs 2*K entries, ``back`` T*K. Ties go to the smallest label.
    """
    ow = n_attr * K + 3 * K
    for k in range(K):
        delta[k] = scores[k]
    cur = 0
    for t in range(1, T):
        nxt = K - cur
        for l in range(K):
            best = -np.inf
            arg = 0
            for k in range(K):
                v = delta[cur + k] + w[ow + k * K + l]
                if v > best:
                    best = v
                    arg = k
            delta[nxt + l] = best + scores[t * K + l]
            back[t * K + l] = arg
        cur = nxt
    best = -np.inf
    arg = 0
    for k in range(K):
        if delta[cur + k] > best:
            best = delta[cur + k]
            arg = k
    path[T - 1] = arg
    for t in range(T - 1, 0, -1):
        arg = back[t * K + arg]
        path[t - 1] = arg
    return best


@njit(**NJIT)
def labeling_score(scores, T, K, w, n_attr, labels, start):
    """score(x, y) of the labeling ``labels[start:start+T]`` given the unary scores."""
    ow = n_attr * K + 3 * K
    s = 0.0
    for t in range(T):
        s += scores[t * K + labels[start + t]]
    for t in range(T - 1):
        s += w[ow + labels[start + t] * K + labels[start + t + 1]]
    return s


def sequence_marginals(w, n_attr, K, seq, i):
    """log Z, unary (T, K) and pairwise (T-1, K, K) marginals of sequence i (allocating)."""
    T = int(seq.offsets[i + 1] - seq.offsets[i])
    ws = make_workspace(T, K)
    unary_scores(w, n_attr, K, seq.offsets, seq.attr_indptr, seq.attr_indices, i, ws.scores)
    tmax = transition_potentials(w, n_attr, K, ws.trans)
    logz = forward_backward(ws.scores, T, K, ws.trans, tmax, w, n_attr, ws.emit, ws.alpha,
                            ws.beta, ws.scale, ws.unary, ws.pair)
    return (logz, ws.unary[: T * K].reshape(T, K).copy(),
            ws.pair[: (T - 1) * K * K].reshape(T - 1, K, K).copy())
