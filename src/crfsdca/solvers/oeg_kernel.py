"""Online exponentiated gradient on the CRF dual, in numba (``baselines.md`` section 6).

Every dual variable u_i is a chain distribution with log-potentials theta_i:
unary ``theta_unary`` (T_i x K, stored in full) and pairwise
theta_{i,t,t+1} = a_i c0 e_{y_t} e_{y_{t+1}}^T + Q_i (scalar a_i, K x K matrix
Q_i; memory trick of section 6.1). An EG step with rate eta interpolates the
potentials toward the current model scores,
theta_i' = (1 - eta) theta_i + eta s_i(w), i.e. U' = (1-eta) U + eta s,
a' = (1-eta) a, Q' = (1-eta) Q + eta W, and is accepted iff it increases the dual
D = (1/n) sum_i H(u_i) - lambda/2 ||w||^2 (exact change, section 6.2);
otherwise eta_i is halved and the step retried.

The chain with the per-edge bonus a' c0 on the true transition is solved by
:func:`bonus_forward_backward`, which returns log Z, the unary marginals, the
SUMMED pairwise marginals Pi and the mass on the true transitions, which is all
the entropy and the statistics Phi_i need.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model._fastmath import NJIT, NJIT_FAST, fexp, flog
from ..model.oracle import logsumexp, unary_scores
from .random import permutation, randint

_SAFE_MIN = 1e-280
_SAFE_MAX = 1e280

UNIFORM, PERM = 0, 1
SAMPLINGS = {"uniform": UNIFORM, "perm": PERM}

# counters[]: oracle calls (forward-backward), updates (accepted steps), acceptance tests,
# rejected trials, visits on which every trial failed
ORACLE_FB, UPDATES, LS_EVALS, REJECTED, FAILED_VISITS = range(5)
N_COUNTERS = 5
# sums[]: accepted step sizes, dual increase
SUM_ETA, SUM_GAIN = range(2)


class OEGState(NamedTuple):
    w: np.ndarray  # d, always w_hat(mu)
    theta_unary: np.ndarray  # N*K unary log-potentials U_i
    theta_scale: np.ndarray  # n: a_i
    theta_pair: np.ndarray  # n*K*K: Q_i
    mu_unary: np.ndarray  # N*K unary marginals of u_i
    mu_pair: np.ndarray  # n*K*K summed pairwise marginals of u_i
    entropy: np.ndarray  # n: H(u_i)
    eta: np.ndarray  # n: step size of each example
    order: np.ndarray  # n int64: permutation (perm sampling)
    cursor: np.ndarray  # int64[1]: position in the permutation
    counters: np.ndarray  # int64, see above
    sums: np.ndarray  # float64, see above


class OEGBuffers(NamedTuple):
    scores: np.ndarray  # T*K model scores s_i(w)
    emit: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    scale: np.ndarray
    trans: np.ndarray
    unary: np.ndarray  # T*K marginals of the trial
    theta: np.ndarray  # T*K trial unary potentials
    q: np.ndarray  # KK trial Q'
    pi: np.ndarray  # KK trial summed pairwise marginals
    dw_em: np.ndarray  # max distinct attributes * K
    dw_bias: np.ndarray  # 3K
    dw_trans: np.ndarray  # KK


class OEGOptions(NamedTuple):
    lam: float
    c0: float
    eta_increase: float  # eta_i <- min(eta_i * eta_increase, eta_max) after a success
    eta_max: float
    max_trials: int
    sampling: int


# ----------------------------------------------------------------------------- inference

@njit(**NJIT)
def _bonus_fb_log(theta, T, K, q, bonus, labels, start, la, lb, tmp, unary, pi):
    """Log-space version of :func:`bonus_forward_backward` (slow, exact at any scale)."""
    KK = K * K
    for k in range(K):
        la[k] = theta[k]
    for t in range(1, T):
        e = labels[start + t - 1] * K + labels[start + t]
        for l in range(K):
            for k in range(K):
                b = bonus if k * K + l == e else 0.0
                tmp[k] = la[(t - 1) * K + k] + q[k * K + l] + b
            la[t * K + l] = logsumexp(tmp, 0, K) + theta[t * K + l]
    for k in range(K):
        tmp[k] = la[(T - 1) * K + k]
    logz = logsumexp(tmp, 0, K)
    for k in range(K):
        lb[(T - 1) * K + k] = 0.0
    for t in range(T - 2, -1, -1):
        e = labels[start + t] * K + labels[start + t + 1]
        for k in range(K):
            for l in range(K):
                b = bonus if k * K + l == e else 0.0
                tmp[l] = q[k * K + l] + b + theta[(t + 1) * K + l] + lb[(t + 1) * K + l]
            lb[t * K + k] = logsumexp(tmp, 0, K)
    for j in range(T * K):
        unary[j] = np.exp(la[j] + lb[j] - logz)
    for j in range(KK):
        pi[j] = 0.0
    true_mass = 0.0
    for t in range(T - 1):
        e = labels[start + t] * K + labels[start + t + 1]
        for k in range(K):
            for l in range(K):
                b = bonus if k * K + l == e else 0.0
                x = np.exp(la[t * K + k] + q[k * K + l] + b + theta[(t + 1) * K + l]
                           + lb[(t + 1) * K + l] - logz)
                pi[k * K + l] += x
                if k * K + l == e:
                    true_mass += x
    return logz, true_mass


@njit(**NJIT_FAST)
def bonus_forward_backward(theta, T, K, q, bonus, labels, start, trans, emit, alpha, beta,
                           scale, unary, pi):
    """Inference in the chain with unary potentials ``theta`` (T x K) and pairwise
    potentials q(k, l) + bonus [k = y_t, l = y_{t+1}] on edge t.

    Writes the unary marginals into ``unary[:T*K]`` and the pairwise marginals summed
    over edges into ``pi[:K*K]``; returns (log Z, sum_t p(y_t, y_{t+1})). Scaled
    recursions like the oracle's, redone in log space if a scale factor underflows.
    """
    KK = K * K
    qmax = -np.inf
    for j in range(KK):
        qmax = max(qmax, q[j])
    for j in range(KK):
        trans[j] = fexp(q[j] - qmax)
    e1 = np.expm1(bonus)
    logz = (T - 1) * qmax
    for t in range(T):
        row = t * K
        mx = -np.inf
        for k in range(K):
            mx = max(mx, theta[row + k])
        logz += mx
        for k in range(K):
            emit[row + k] = fexp(theta[row + k] - mx)
    ok = True
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
            ya = labels[start + t - 1]
            yb = labels[start + t]
            alpha[row + yb] += alpha[prev + ya] * trans[ya * K + yb] * e1
            for k in range(K):
                alpha[row + k] *= emit[row + k]
        c = 0.0
        for k in range(K):
            c += alpha[row + k]
        if not (c > _SAFE_MIN and c < _SAFE_MAX):
            ok = False
            break
        inv = 1.0 / c
        for k in range(K):
            alpha[row + k] *= inv
        scale[t] = c
        logz += flog(c)
    if not ok:
        return _bonus_fb_log(theta, T, K, q, bonus, labels, start, alpha, beta, emit, unary, pi)
    for j in range(KK):
        pi[j] = 0.0
    last = (T - 1) * K
    for k in range(K):
        beta[last + k] = 1.0
        unary[last + k] = alpha[last + k]
    true_mass = 0.0
    bmax = 0.0
    for t in range(T - 2, -1, -1):
        row = t * K
        nxt = row + K
        inv = 1.0 / scale[t + 1]
        for l in range(K):
            emit[nxt + l] = emit[nxt + l] * beta[nxt + l] * inv
        for k in range(K):
            ak = alpha[row + k]
            mrow = k * K
            s = 0.0
            for l in range(K):
                x = trans[mrow + l] * emit[nxt + l]
                s += x
                pi[mrow + l] += ak * x
            beta[row + k] = s
        ya = labels[start + t]
        yb = labels[start + t + 1]
        base = trans[ya * K + yb] * emit[nxt + yb]
        beta[row + ya] += base * e1
        pi[ya * K + yb] += alpha[row + ya] * base * e1
        true_mass += alpha[row + ya] * base * (e1 + 1.0)
        for k in range(K):
            unary[row + k] = alpha[row + k] * beta[row + k]
            bmax = max(bmax, beta[row + k])
    if not bmax < _SAFE_MAX:
        # recompute the forward messages too: the log version overwrites alpha and beta
        return _bonus_fb_log(theta, T, K, q, bonus, labels, start, alpha, beta, emit, unary, pi)
    return logz, true_mass


@njit(**NJIT)
def _entropy(logz, theta, unary, T, K, q, pi, bonus, true_mass):
    """H(u) = log Z - <theta, mu> for the chain of :func:`bonus_forward_backward`."""
    h = logz - bonus * true_mass
    for j in range(T * K):
        h -= theta[j] * unary[j]
    for j in range(K * K):
        h -= q[j] * pi[j]
    return h


# ----------------------------------------------------------------------------- OEG

@njit(**NJIT)
def oeg_init(st, idx, buf, n_attr, K, opt, eta0):
    """Smoothed-Dirac start (theta = c0 on the truth), its marginals and entropies, w = w_hat.

    One forward-backward per sequence, counted as oracle calls.
    """
    n = len(idx.offsets) - 1
    KK = K * K
    ob = n_attr * K
    ow = ob + 3 * K
    scale = 1.0 / (opt.lam * n)
    for j in range(len(st.w)):
        st.w[j] = 0.0
    for i in range(n):
        start = idx.offsets[i]
        T = idx.offsets[i + 1] - start
        u0 = start * K
        for t in range(T):
            for k in range(K):
                st.theta_unary[u0 + t * K + k] = 0.0
            st.theta_unary[u0 + t * K + idx.labels[start + t]] = opt.c0
        st.theta_scale[i] = 1.0
        for j in range(KK):
            st.theta_pair[i * KK + j] = 0.0
            buf.q[j] = 0.0
        logz, true_mass = bonus_forward_backward(
            st.theta_unary[u0:u0 + T * K], T, K, buf.q, opt.c0, idx.labels, start, buf.trans,
            buf.emit, buf.alpha, buf.beta, buf.scale, buf.unary, buf.pi)
        st.counters[ORACLE_FB] += 1
        st.entropy[i] = _entropy(logz, st.theta_unary[u0:u0 + T * K], buf.unary, T, K, buf.q,
                                 buf.pi, opt.c0, true_mass)
        st.eta[i] = eta0
        # store the marginals; w += scale * (Phi(y) - Phi(mu))
        for t in range(T):
            tok = start + t
            y = idx.labels[tok]
            row = t * K
            for k in range(K):
                st.mu_unary[u0 + row + k] = buf.unary[row + k]
                buf.theta[row + k] = scale * ((1.0 if k == y else 0.0) - buf.unary[row + k])
            for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
                base = idx.attr_indices[j] * K
                for k in range(K):
                    st.w[base + k] += buf.theta[row + k]
            for k in range(K):
                st.w[ob + 3 * k] += buf.theta[row + k]
        for k in range(K):
            st.w[ob + 3 * k + 1] += buf.theta[k]
            st.w[ob + 3 * k + 2] += buf.theta[(T - 1) * K + k]
        for j in range(KK):
            st.mu_pair[i * KK + j] = buf.pi[j]
            st.w[ow + j] -= scale * buf.pi[j]
        for t in range(T - 1):
            st.w[ow + idx.labels[start + t] * K + idx.labels[start + t + 1]] += scale


@njit(**NJIT)
def _dual_change(st, idx, buf, i, T, K, n_attr, scale):
    """Dw = scale (Phi_i(mu_i) - Phi_i(mu')) into the sparse buffers; returns (<w,Dw>, ||Dw||^2)."""
    start = idx.offsets[i]
    u0 = start * K
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    KK = K * K
    for j in range(nu * K):
        buf.dw_em[j] = 0.0
    for j in range(3 * K):
        buf.dw_bias[j] = 0.0
    for t in range(T):
        tok = start + t
        row = t * K
        # emit is free after inference: per-token change of the unary marginals
        for k in range(K):
            buf.emit[row + k] = st.mu_unary[u0 + row + k] - buf.unary[row + k]
        for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
            lb = idx.local[j] * K
            for k in range(K):
                buf.dw_em[lb + k] += buf.emit[row + k]
        for k in range(K):
            buf.dw_bias[3 * k] += buf.emit[row + k]
    for k in range(K):
        buf.dw_bias[3 * k + 1] = buf.emit[k]
        buf.dw_bias[3 * k + 2] = buf.emit[(T - 1) * K + k]
    for j in range(KK):
        buf.dw_trans[j] = scale * (st.mu_pair[i * KK + j] - buf.pi[j])
    wdw = 0.0
    dd = 0.0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        for k in range(K):
            x = scale * buf.dw_em[r * K + k]
            buf.dw_em[r * K + k] = x
            wdw += st.w[base + k] * x
            dd += x * x
    ob = n_attr * K
    for j in range(3 * K):
        x = scale * buf.dw_bias[j]
        buf.dw_bias[j] = x
        wdw += st.w[ob + j] * x
        dd += x * x
    ow = ob + 3 * K
    for j in range(KK):
        x = buf.dw_trans[j]
        wdw += st.w[ow + j] * x
        dd += x * x
    return wdw, dd


@njit(**NJIT)
def _accept(st, idx, buf, i, T, K, n_attr, a_new, h_new):
    start = idx.offsets[i]
    u0 = start * K
    KK = K * K
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        for k in range(K):
            st.w[base + k] += buf.dw_em[r * K + k]
    ob = n_attr * K
    for j in range(3 * K):
        st.w[ob + j] += buf.dw_bias[j]
    ow = ob + 3 * K
    for j in range(KK):
        st.w[ow + j] += buf.dw_trans[j]
        st.theta_pair[i * KK + j] = buf.q[j]
        st.mu_pair[i * KK + j] = buf.pi[j]
    for j in range(T * K):
        st.theta_unary[u0 + j] = buf.theta[j]
        st.mu_unary[u0 + j] = buf.unary[j]
    st.theta_scale[i] = a_new
    st.entropy[i] = h_new


@njit(**NJIT)
def oeg_step(i, st, idx, buf, n_attr, K, opt):
    """One visit of example i: trials with eta_i, eta_i / 2, ... until D increases.

    Returns the number of trials (oracle calls).
    """
    n = len(idx.offsets) - 1
    lam = opt.lam
    start = idx.offsets[i]
    u0 = start * K
    KK = K * K
    ow = n_attr * K + 3 * K
    T = unary_scores(st.w, n_attr, K, idx.offsets, idx.attr_indptr, idx.attr_indices, i,
                     buf.scores)
    eta = st.eta[i]
    a_old = st.theta_scale[i]
    h_old = st.entropy[i]
    scale = 1.0 / (lam * n)
    trials = 0
    for _ in range(opt.max_trials):
        trials += 1
        keep = 1.0 - eta
        for j in range(T * K):
            buf.theta[j] = keep * st.theta_unary[u0 + j] + eta * buf.scores[j]
        for j in range(KK):
            buf.q[j] = keep * st.theta_pair[i * KK + j] + eta * st.w[ow + j]
        a_new = keep * a_old
        bonus = a_new * opt.c0
        logz, true_mass = bonus_forward_backward(
            buf.theta, T, K, buf.q, bonus, idx.labels, start, buf.trans, buf.emit, buf.alpha,
            buf.beta, buf.scale, buf.unary, buf.pi)
        st.counters[ORACLE_FB] += 1
        st.counters[LS_EVALS] += 1
        h_new = _entropy(logz, buf.theta, buf.unary, T, K, buf.q, buf.pi, bonus, true_mass)
        wdw, dd = _dual_change(st, idx, buf, i, T, K, n_attr, scale)
        gain = (h_new - h_old) / n - lam * wdw - 0.5 * lam * dd
        if gain > 0.0:
            _accept(st, idx, buf, i, T, K, n_attr, a_new, h_new)
            st.counters[UPDATES] += 1
            st.sums[SUM_ETA] += eta
            st.sums[SUM_GAIN] += gain
            st.eta[i] = min(eta * opt.eta_increase, max(opt.eta_max, eta))
            return trials
        st.counters[REJECTED] += 1
        eta *= 0.5
        st.eta[i] = eta
    st.counters[FAILED_VISITS] += 1
    return trials


@njit(**NJIT)
def oeg_run(n_steps, st, idx, buf, rng, n_attr, K, opt):
    """n_steps visits, uniform with replacement or a fresh permutation every epoch."""
    n = len(idx.offsets) - 1
    for _ in range(n_steps):
        if opt.sampling == PERM:
            if st.cursor[0] >= n:
                permutation(rng, st.order)
                st.cursor[0] = 0
            i = st.order[st.cursor[0]]
            st.cursor[0] += 1
        else:
            i = randint(rng, n)
        oeg_step(i, st, idx, buf, n_attr, K, opt)
