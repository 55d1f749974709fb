"""Numba kernels of CRFsuite's L2-regularized SGD (``train_l2sgd.c``).

The weights are kept as w_true = decay * w, so that the shrinkage (1 - eta lambda) of
every step costs O(1): a step on instance i sets eta = 1 / (lambda (t0 + t)),
decay *= 1 - eta lambda, and adds gain (F(x_i, y_i) - E[F(x_i, .)]) to w with
gain = eta / decay, the expectation under the model at w_true (forward-backward of the
oracle: :func:`~crfsdca.model.oracle.chain_marginals`, the pairwise marginals summed over
the edges). The caller folds decay into w at the end of an epoch.

``state`` of a pass: [T_STEPS] t, the steps taken since the start; [DECAY]; [LOSS] the sum
of the instances' losses, each at the weights before its own update (CRFsuite's epoch
loss); [LAST] the last instance's loss. A sequence of weight c_i (CRFsuite's instance
weight) has loss c_i NLL_i and a step of gain c_i times the unweighted one, as CRFsuite's.
"""

from __future__ import annotations

from numba import njit

from ..model.objective import sequence_weight
from ..model.oracle import (
    NO_LABELS,
    chain_marginals,
    forward_logz,
    transition_offset,
    transition_potentials,
    unary_scores,
)
from ..runtime.jit import NJIT

T_STEPS = 0
DECAY = 1
LOSS = 2
LAST = 3
N_STATE = 4


@njit(inline="always", **NJIT)
def _scaled_scores(w, scale, n_attr, K, seq, i, ws, tw):
    """Unary scores of sequence i and the transition log-potentials (into ``tw``) of the
    weights scale * w; returns T."""
    T = unary_scores(w, n_attr, K, seq, i, ws.scores)
    if scale != 1.0:
        s = ws.scores[:T * K]
        for j in range(T * K):
            s[j] *= scale
    ow = transition_offset(n_attr, K)
    W = w[ow:ow + K * K]
    for j in range(K * K):
        tw[j] = W[j] * scale
    return T


@njit(inline="always", **NJIT)
def _gold_score(ws, tw, T, K, seq, i):
    start = seq.offsets[i]
    s = 0.0
    for t in range(T):
        s += ws.scores[t * K + seq.labels[start + t]]
    for t in range(T - 1):
        s += tw[seq.labels[start + t] * K + seq.labels[start + t + 1]]
    return s


@njit(**NJIT)
def add_gradient_step(w, gain, ws, T, K, n_attr, seq, i, mask):
    """w += gain (F(x_i, y_i) - E[F(x_i, .)]) over the features of ``mask`` (empty: all),
    the expectation from the unary marginals ``ws.unary`` and the pairwise marginals
    summed over the edges ``ws.pair[:K*K]``."""
    masked = len(mask) > 0
    start = seq.offsets[i]
    real = len(seq.attr_values) > 0
    ob = n_attr * K
    ow = ob + 3 * K
    for t in range(T):
        tok = start + t
        y = seq.labels[tok]
        u = ws.unary[t * K:(t + 1) * K]
        for j in range(seq.attr_indptr[tok], seq.attr_indptr[tok + 1]):
            row = seq.attr_indices[j] * K
            g = gain * seq.attr_values[j] if real else gain
            wr = w[row:row + K]
            if masked:
                mr = mask[row:row + K]
                if mr[y]:
                    wr[y] += g
                for k in range(K):
                    wr[k] -= (g * u[k]) * mr[k]
            else:
                wr[y] += g
                for k in range(K):
                    wr[k] -= g * u[k]
        for col in range(3):
            if col == 1 and t != 0:
                continue
            if col == 2 and t != T - 1:
                continue
            for k in range(K):
                f = ob + 3 * k + col
                if not masked or mask[f]:
                    w[f] -= gain * u[k]
            f = ob + 3 * y + col
            if not masked or mask[f]:
                w[f] += gain
    for t in range(T - 1):
        f = ow + seq.labels[start + t] * K + seq.labels[start + t + 1]
        if not masked or mask[f]:
            w[f] += gain
    pair = ws.pair[:K * K]
    trans = w[ow:ow + K * K]
    if masked:
        mt = mask[ow:ow + K * K]
        for j in range(K * K):
            trans[j] -= (gain * pair[j]) * mt[j]
    else:
        for j in range(K * K):
            trans[j] -= gain * pair[j]


@njit(**NJIT)
def sgd_pass(order, lo, hi, w, n_attr, K, seq, mask, ws, tw, lam, t0, state):
    """SGD steps on the instances ``order[lo:hi]`` (see the module's docstring); returns
    the number of forward-backward passes."""
    t = state[T_STEPS]
    decay = state[DECAY]
    total = state[LOSS]
    loss = state[LAST]
    for p in range(lo, hi):
        i = order[p]
        eta = 1.0 / (lam * (t0 + t))
        decay *= 1.0 - eta * lam
        gain = eta / decay
        T = _scaled_scores(w, decay, n_attr, K, seq, i, ws, tw)
        tmax = transition_potentials(tw, 0, K, ws.trans)
        logz = chain_marginals(ws, T, K, tw, 0, tmax, 0.0, NO_LABELS, 0, True)[0]
        weight = sequence_weight(seq, i)
        loss = weight * (logz - _gold_score(ws, tw, T, K, seq, i))
        add_gradient_step(w, gain * weight, ws, T, K, n_attr, seq, i, mask)
        total += loss
        t += 1.0
    state[T_STEPS] = t
    state[DECAY] = decay
    state[LOSS] = total
    state[LAST] = loss
    return hi - lo


@njit(**NJIT)
def loss_sum(order, lo, hi, w, n_attr, K, seq, ws, tw):
    """sum of -c_i log p(y_i | x_i; w) over the instances ``order[lo:hi]`` (forward passes;
    c_i the sequence weights)."""
    total = 0.0
    for p in range(lo, hi):
        i = order[p]
        T = _scaled_scores(w, 1.0, n_attr, K, seq, i, ws, tw)
        tmax = transition_potentials(tw, 0, K, ws.trans)
        total += sequence_weight(seq, i) * (forward_logz(ws, T, K, tmax, tw, 0)
                                            - _gold_score(ws, tw, T, K, seq, i))
    return total


@njit(**NJIT)
def scale_into(out, w, scale):
    """out = scale * w (out may be w)."""
    for j in range(len(w)):
        out[j] = w[j] * scale


@njit(**NJIT)
def squared_norm(w):
    """sum w_j^2, in order (CRFsuite's vecdot)."""
    s = 0.0
    for j in range(len(w)):
        s += w[j] * w[j]
    return s
