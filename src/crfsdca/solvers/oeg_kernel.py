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

The chain with the per-edge bonus a' c0 on the true transition is solved by the
oracle's recursion (:func:`~crfsdca.model.oracle.chain_marginals`, pairwise marginals
summed over the edges), which gives log Z, the unary marginals, the SUMMED pairwise
marginals Pi and the mass on the true transitions: all the entropy and the statistics
Phi_i need.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.oracle import (
    Workspace,
    chain_marginals,
    transition_offset,
    transition_potentials,
    unary_scores,
)
from ..model.stats import apply_mask, mask_direction
from ..runtime.jit import NJIT
from .registry import OEG_OPTIONS
from .rng import permutation, randint

SAMPLING_CODES = {name: code for code, name in enumerate(OEG_OPTIONS["sampling"].choices)}
UNIFORM, PERM = SAMPLING_CODES["uniform"], SAMPLING_CODES["perm"]

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
    ws: Workspace  # scores: the model's scores s_i(w); emit: scratch after inference
    chain: Workspace  # the trial chain: scores = its unary potentials theta', unary = its
    #                   marginals, pair[:KK] = its summed pairwise marginals Pi
    q: np.ndarray  # KK trial Q'
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
    mask: np.ndarray  # the feature mask (uint8 per weight), empty: every weight


@njit(**NJIT)
def _solve_chain(buf, T, K, bonus, labels, start):
    """The trial chain of ``buf.chain`` (unary potentials in its scores, transitions
    ``buf.q``, ``bonus`` on the true transitions): (log Z, true mass); marginals in
    ``buf.chain.unary`` and, summed over edges, ``buf.chain.pair[:K*K]``."""
    tmax = transition_potentials(buf.q, 0, K, buf.chain.trans)
    return chain_marginals(buf.chain, T, K, buf.q, 0, tmax, bonus, labels, start, True)


# ----------------------------------------------------------------------------- inference

@njit(**NJIT)
def _entropy(logz, theta, unary, T, K, q, pi, bonus, true_mass):
    """H(u) = log Z - <theta, mu> for the chain of unary potentials theta, transitions q
    and the bonus on the true transitions."""
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
    ow = transition_offset(n_attr, K)
    scale = 1.0 / (opt.lam * n)
    real = len(idx.attr_values) > 0
    chain = buf.chain
    for j in range(len(st.w)):
        st.w[j] = 0.0
    for i in range(n):
        start = idx.offsets[i]
        T = idx.offsets[i + 1] - start
        u0 = start * K
        for t in range(T):
            for k in range(K):
                chain.scores[t * K + k] = 0.0
            chain.scores[t * K + idx.labels[start + t]] = opt.c0
        for j in range(T * K):
            st.theta_unary[u0 + j] = chain.scores[j]
        st.theta_scale[i] = 1.0
        for j in range(KK):
            st.theta_pair[i * KK + j] = 0.0
            buf.q[j] = 0.0
        logz, true_mass = _solve_chain(buf, T, K, opt.c0, idx.labels, start)
        st.counters[ORACLE_FB] += 1
        st.entropy[i] = _entropy(logz, chain.scores, chain.unary, T, K, buf.q, chain.pair,
                                 opt.c0, true_mass)
        st.eta[i] = eta0
        # store the marginals; w += scale * (Phi(y) - Phi(mu)); chain.scores is free now
        for t in range(T):
            tok = start + t
            y = idx.labels[tok]
            row = t * K
            for k in range(K):
                st.mu_unary[u0 + row + k] = chain.unary[row + k]
                chain.scores[row + k] = scale * ((1.0 if k == y else 0.0) - chain.unary[row + k])
            for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
                base = idx.attr_indices[j] * K
                v = idx.attr_values[j] if real else 1.0
                for k in range(K):
                    st.w[base + k] += v * chain.scores[row + k]
            for k in range(K):
                st.w[ob + 3 * k] += chain.scores[row + k]
        for k in range(K):
            st.w[ob + 3 * k + 1] += chain.scores[k]
            st.w[ob + 3 * k + 2] += chain.scores[(T - 1) * K + k]
        for j in range(KK):
            st.mu_pair[i * KK + j] = chain.pair[j]
            st.w[ow + j] -= scale * chain.pair[j]
        for t in range(T - 1):
            st.w[ow + idx.labels[start + t] * K + idx.labels[start + t + 1]] += scale
    apply_mask(st.w, opt.mask)


@njit(**NJIT)
def _dual_change(st, idx, buf, i, T, K, n_attr, scale, mask):
    """Dw = scale (Phi_i(mu_i) - Phi_i(mu')), restricted to the features of ``mask``, into
    the sparse buffers; returns (<w,Dw>, ||Dw||^2)."""
    emit, unary, pi = buf.ws.emit, buf.chain.unary, buf.chain.pair
    real = len(idx.attr_values) > 0
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
        e = emit[row:row + K]
        mu_t = st.mu_unary[u0 + row:u0 + row + K]
        u_t = unary[row:row + K]
        for k in range(K):
            e[k] = mu_t[k] - u_t[k]
        for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
            lb = idx.local[j] * K
            dw = buf.dw_em[lb:lb + K]
            v = idx.attr_values[j] if real else 1.0
            for k in range(K):
                dw[k] += v * e[k]
        for k in range(K):
            buf.dw_bias[3 * k] += e[k]
    for k in range(K):
        buf.dw_bias[3 * k + 1] = emit[k]
        buf.dw_bias[3 * k + 2] = emit[(T - 1) * K + k]
    mu_i = st.mu_pair[i * KK:(i + 1) * KK]
    for j in range(KK):
        buf.dw_trans[j] = scale * (mu_i[j] - pi[j])
    mask_direction(mask, idx, i, K, n_attr, buf.dw_em, buf.dw_bias, buf.dw_trans)
    wdw = 0.0
    dd = 0.0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        w_a = st.w[base:base + K]
        dw = buf.dw_em[r * K:(r + 1) * K]
        for k in range(K):
            x = scale * dw[k]
            dw[k] = x
            wdw += w_a[k] * x
            dd += x * x
    ob = n_attr * K
    w_b = st.w[ob:ob + 3 * K]
    for j in range(3 * K):
        x = scale * buf.dw_bias[j]
        buf.dw_bias[j] = x
        wdw += w_b[j] * x
        dd += x * x
    ow = ob + 3 * K
    w_t = st.w[ow:ow + KK]
    for j in range(KK):
        x = buf.dw_trans[j]
        wdw += w_t[j] * x
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
        w_a = st.w[base:base + K]
        dw = buf.dw_em[r * K:(r + 1) * K]
        for k in range(K):
            w_a[k] += dw[k]
    ob = n_attr * K
    w_b = st.w[ob:ob + 3 * K]
    for j in range(3 * K):
        w_b[j] += buf.dw_bias[j]
    ow = ob + 3 * K
    w_t = st.w[ow:ow + KK]
    theta_i = st.theta_pair[i * KK:(i + 1) * KK]
    mu_i = st.mu_pair[i * KK:(i + 1) * KK]
    for j in range(KK):
        w_t[j] += buf.dw_trans[j]
        theta_i[j] = buf.q[j]
        mu_i[j] = buf.chain.pair[j]
    theta_u = st.theta_unary[u0:u0 + T * K]
    mu_u = st.mu_unary[u0:u0 + T * K]
    for j in range(T * K):
        theta_u[j] = buf.chain.scores[j]
        mu_u[j] = buf.chain.unary[j]
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
    ow = transition_offset(n_attr, K)
    scores, theta = buf.ws.scores, buf.chain.scores
    T = unary_scores(st.w, n_attr, K, idx, i, scores)
    eta = st.eta[i]
    a_old = st.theta_scale[i]
    h_old = st.entropy[i]
    scale = 1.0 / (lam * n)
    trials = 0
    for _ in range(opt.max_trials):
        trials += 1
        keep = 1.0 - eta
        theta_u = st.theta_unary[u0:u0 + T * K]
        for j in range(T * K):
            theta[j] = keep * theta_u[j] + eta * scores[j]
        theta_i = st.theta_pair[i * KK:(i + 1) * KK]
        w_t = st.w[ow:ow + KK]
        for j in range(KK):
            buf.q[j] = keep * theta_i[j] + eta * w_t[j]
        a_new = keep * a_old
        bonus = a_new * opt.c0
        logz, true_mass = _solve_chain(buf, T, K, bonus, idx.labels, start)
        st.counters[ORACLE_FB] += 1
        st.counters[LS_EVALS] += 1
        h_new = _entropy(logz, theta, buf.chain.unary, T, K, buf.q, buf.chain.pair, bonus,
                         true_mass)
        wdw, dd = _dual_change(st, idx, buf, i, T, K, n_attr, scale, opt.mask)
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
