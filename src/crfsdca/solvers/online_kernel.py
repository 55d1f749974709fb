"""Numba kernels of CRFsuite's online trainers: averaged perceptron, passive-aggressive, AROW.

Each pass visits the instances ``order[lo:hi]``: Viterbi at the current weights (the
oracle's :func:`~crfsdca.model.oracle.unary_scores` and
:func:`~crfsdca.model.oracle.viterbi`), and, when the path has a wrong label, an update
along the feature difference F(x, y) - F(x, y_hat) restricted to the feature set (the
``mask``; an empty one: every weight is a feature). CRFsuite's ``features_on_path`` walks
the gold and the Viterbi path in full; here only the tokens (and edges) where the two
paths differ are visited: elsewhere the two contributions cancel (exactly for binary
attributes, to the last bit otherwise), and most tokens are right.

The difference is either added straight into two vectors (:data:`DIRECT`: the
perceptron's w += F and its sums ws += c F) or collected, as CRFsuite's ``delta_t`` does,
into a dense ``delta`` with a list of its distinct ``actives`` (:data:`COLLECT`: PA and
AROW need its norm before they update).

``sums`` of a pass: [0] the epoch's loss as CRFsuite defines it for the algorithm, [1] the
number of instances updated, [2] Viterbi calls.

A sequence of weight c_i (CRFsuite's instance weight) counts as CRFsuite counts it: its
update is c_i times the unweighted one (the perceptron's and PA's step, AROW's
difference vector) and its loss c_i times.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..model.objective import sequence_weight
from ..model.oracle import labeling_score, transition_offset, unary_scores, viterbi
from ..runtime.jit import NJIT
from .rng import randint

DIRECT = 0
COLLECT = 1

LOSS = 0
UPDATES = 1
DECODES = 2
N_SUMS = 3


@njit(**NJIT)
def shuffle_instances(order, rng):
    """CRFsuite's ``dataset_shuffle``: for each position i in turn, swap it with a position
    drawn uniformly from all n (with our random stream instead of C's ``rand()``)."""
    n = len(order)
    for i in range(n):
        j = randint(rng, n)
        tmp = order[j]
        order[j] = order[i]
        order[i] = tmp


@njit(inline="always", **NJIT)
def _put(f, v, mode, a, sa, b, sb, used, actives, m):
    """One term v of the difference at weight f: sa v and sb v added into a and b (DIRECT),
    or sa v collected into a = delta (COLLECT); returns the number of actives."""
    if mode == DIRECT:
        a[f] += sa * v
        b[f] += sb * v
        return m
    a[f] += sa * v
    if used[f] == 0:
        used[f] = 1
        actives[m] = f
        m += 1
    return m


@njit(**NJIT)
def path_difference(seq, i, path, K, n_attr, mask, mode, a, sa, b, sb, used, actives):
    """F(x_i, y_i) - F(x_i, path) over the features of ``mask``, added (see :func:`_put`);
    returns the number of actives collected (0 in DIRECT mode)."""
    masked = len(mask) > 0
    start = seq.offsets[i]
    T = seq.offsets[i + 1] - start
    real = len(seq.attr_values) > 0
    ob = n_attr * K
    ow = transition_offset(n_attr, K)
    m = 0
    for t in range(T):
        tok = start + t
        y = seq.labels[tok]
        v = path[t]
        if y != v:
            for j in range(seq.attr_indptr[tok], seq.attr_indptr[tok + 1]):
                row = seq.attr_indices[j] * K
                x = seq.attr_values[j] if real else 1.0
                if not masked or mask[row + y]:
                    m = _put(row + y, x, mode, a, sa, b, sb, used, actives, m)
                if not masked or mask[row + v]:
                    m = _put(row + v, -x, mode, a, sa, b, sb, used, actives, m)
            # the bias block (every token, first, last): a feature only if the mask says so
            for col in range(3):
                if col == 1 and t != 0:
                    continue
                if col == 2 and t != T - 1:
                    continue
                fy = ob + 3 * y + col
                fv = ob + 3 * v + col
                if not masked or mask[fy]:
                    m = _put(fy, 1.0, mode, a, sa, b, sb, used, actives, m)
                if not masked or mask[fv]:
                    m = _put(fv, -1.0, mode, a, sa, b, sb, used, actives, m)
        if t > 0:
            yp = seq.labels[tok - 1]
            vp = path[t - 1]
            if yp != vp or y != v:
                fy = ow + yp * K + y
                fv = ow + vp * K + v
                if not masked or mask[fy]:
                    m = _put(fy, 1.0, mode, a, sa, b, sb, used, actives, m)
                if not masked or mask[fv]:
                    m = _put(fv, -1.0, mode, a, sa, b, sb, used, actives, m)
    return m


@njit(inline="always", **NJIT)
def _decode(w, n_attr, K, seq, i, ws):
    """Viterbi of sequence i at w into ``ws.path``: (T, its score, wrong labels)."""
    T = unary_scores(w, n_attr, K, seq, i, ws.scores)
    score = viterbi(ws.scores, T, K, w, n_attr, ws.emit, ws.back, ws.path)
    start = seq.offsets[i]
    d = 0
    for t in range(T):
        if ws.path[t] != seq.labels[start + t]:
            d += 1
    return T, score, d


@njit(**NJIT)
def perceptron_pass(order, lo, hi, w, wsum, count, n_attr, K, seq, mask, ws, sums):
    """The averaged perceptron on ``order[lo:hi]``: on a wrong path w += c_i (F(y) -
    F(y_hat)) and wsum += c c_i (F(y) - F(y_hat)), c = ``count[0]`` counting the instances
    from 1, c_i the sequence's weight; the loss is the sum of the wrong instances' error
    rates d / T, times c_i."""
    c = count[0]
    none = np.zeros(0, dtype=np.int64)
    flags = np.zeros(0, dtype=np.uint8)
    for p in range(lo, hi):
        i = order[p]
        T, score, d = _decode(w, n_attr, K, seq, i, ws)
        sums[DECODES] += 1
        if d > 0:
            weight = sequence_weight(seq, i)
            path_difference(seq, i, ws.path, K, n_attr, mask, DIRECT, w, weight, wsum,
                            c * weight, flags, none)
            sums[LOSS] += weight * (d / T)
            sums[UPDATES] += 1
        c += 1.0
    count[0] = c


@njit(inline="always", **NJIT)
def _reset(delta, used, actives, m):
    for j in range(m):
        f = actives[j]
        delta[f] = 0.0
        used[f] = 0


@njit(**NJIT)
def passive_aggressive_pass(order, lo, hi, w, wsum, count, n_attr, K, seq, mask, ws, delta,
                            used, actives, kind, c, sensitive, averaging, sums):
    """Passive-aggressive on ``order[lo:hi]`` (``kind`` 0: PA, 1: PA-I, 2: PA-II): on a
    wrong path, cost = score(y_hat) - score(y) + (sqrt(d) if ``sensitive`` else 1),
    tau = cost / ||delta||^2, min(c, that), or cost / (||delta||^2 + 1 / (2c)), and
    w += c_i tau delta, wsum += c_i tau u delta (u = ``count[0]``, the instances from 1;
    c_i the sequence's weight). The loss is the sum of the costs times c_i. A difference
    of norm 0 (the two paths have the same features) leaves w alone, where CRFsuite's PA
    would divide by 0."""
    u = count[0]
    for p in range(lo, hi):
        i = order[p]
        T, sv, d = _decode(w, n_attr, K, seq, i, ws)
        sums[DECODES] += 1
        if d > 0:
            sc = labeling_score(ws.scores, T, K, w, n_attr, seq.labels, seq.offsets[i])
            cost = sv - sc + (np.sqrt(d) if sensitive else 1.0)
            m = path_difference(seq, i, ws.path, K, n_attr, mask, COLLECT, delta, 1.0,
                                delta, 0.0, used, actives)
            norm2 = 0.0
            for j in range(m):
                x = delta[actives[j]]
                norm2 += x * x
            if norm2 > 0.0:
                if kind == 1:
                    tau = min(c, cost / norm2)
                elif kind == 2:
                    tau = cost / (norm2 + 0.5 / c)
                else:
                    tau = cost / norm2
                tau *= sequence_weight(seq, i)
                tauu = tau * u
                for j in range(m):
                    f = actives[j]
                    w[f] += tau * delta[f]
                    if averaging:
                        wsum[f] += tauu * delta[f]
                sums[UPDATES] += 1
            _reset(delta, used, actives, m)
            sums[LOSS] += sequence_weight(seq, i) * cost
        u += 1.0
    count[0] = u


@njit(**NJIT)
def arow_pass(order, lo, hi, mean, cov, n_attr, K, seq, mask, ws, delta, used, actives,
              gamma, sums):
    """AROW on ``order[lo:hi]``: on a wrong path, cost = score(y_hat) - score(y) + d,
    alpha = cost / (gamma + sum_k delta_k^2 cov_k), mean_k += alpha cov_k delta_k and
    cov_k = 1 / (1 / cov_k + delta_k^2 / gamma) over the difference's features, delta
    c_i (F(y) - F(y_hat)) with c_i the sequence's weight. The loss is the sum of the
    costs times c_i."""
    for p in range(lo, hi):
        i = order[p]
        T, sv, d = _decode(mean, n_attr, K, seq, i, ws)
        sums[DECODES] += 1
        if d > 0:
            sc = labeling_score(ws.scores, T, K, mean, n_attr, seq.labels, seq.offsets[i])
            cost = sv - sc + d
            weight = sequence_weight(seq, i)
            m = path_difference(seq, i, ws.path, K, n_attr, mask, COLLECT, delta, weight,
                                delta, 0.0, used, actives)
            frac = gamma
            for j in range(m):
                f = actives[j]
                frac += delta[f] * delta[f] * cov[f]
            alpha = cost / frac
            for j in range(m):
                f = actives[j]
                x = delta[f]
                mean[f] += alpha * cov[f] * x
                cov[f] = 1.0 / ((1.0 / cov[f]) + x * x / gamma)
            _reset(delta, used, actives, m)
            sums[LOSS] += weight * cost
            sums[UPDATES] += 1


@njit(**NJIT)
def average_into(out, w, wsum, c):
    """out = w - wsum / c, as CRFsuite averages (w - (1/c) ws)."""
    inv = 1.0 / c
    for j in range(len(w)):
        out[j] = w[j] - inv * wsum[j]


@njit(**NJIT)
def max_difference_terms(seq, n_attr, K):
    """The most terms :func:`path_difference` can collect for one sequence: two per
    (token, attribute) entry, per bias column of a token and per edge."""
    out = 0
    for i in range(len(seq.offsets) - 1):
        lo, hi = seq.offsets[i], seq.offsets[i + 1]
        terms = 2 * (seq.attr_indptr[hi] - seq.attr_indptr[lo]) + 2 * 3 * (hi - lo) \
            + 2 * (hi - lo - 1)
        out = max(out, terms)
    return out
