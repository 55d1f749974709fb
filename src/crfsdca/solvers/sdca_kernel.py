"""The SDCA iteration in numba (``math.md`` section 5, Algorithm 2 of the paper).

One step on sequence i: oracle at w, fresh block gap, ascent direction
delta = nu_i - mu_i, sparse primal direction v, line search on
f(gamma) = H~(mu_i + gamma delta) - (lambda n / 2) ||w + gamma v||^2, then
mu_i += gamma delta and w += gamma v. The sum of the entropies H~(mu_i) and
||w||^2 are kept up to date, so the dual objective is known at every step.

Every pass over the T*K*K pairwise entries is fused: the first computes the
gap and f'(0), f''(0) together; each line-search evaluation computes f', f''
and the entropy at the trial point together, so the accepted point's entropy
costs nothing more.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..lowlevel import cycles, prefetch_range
from ..model._fastmath import NJIT, NJIT_FAST, flog
from ..model.chain import chain_entropy
from ..model.oracle import forward_backward, transition_potentials, unary_scores
from .sampling import draw, record_gap

NEWTON, SINGLE_NEWTON, FIXED, GOLDEN = 0, 1, 2, 3
LINE_SEARCHES = {"newton": NEWTON, "single-newton": SINGLE_NEWTON, "fixed": FIXED,
                 "golden": GOLDEN}
MAX_LINE_SEARCH_ITERATIONS = 100
_INV_PHI = 0.6180339887498949

# scalars[]: running quantities of the state
W_NORM2, SUM_ENTROPY, SUM_GAPS = 0, 1, 2
# counters[]: oracle calls, parameter updates, line-search evaluations, steps whose
# step size was zero, then cycles spent in each phase of a step (a profile)
ORACLE, UPDATES, LS_EVALS, NULL_STEPS = range(4)
CYC_ORACLE, CYC_GAP, CYC_DIRECTION, CYC_LS, CYC_UPDATE = range(4, 9)
PHASES = ("oracle", "gap", "direction", "line_search", "update")
N_COUNTERS = 9
# sums[]: step sizes since the last reset
SUM_STEP = 0


class SequenceIndex(NamedTuple):
    """A split's arrays plus, per sequence, its distinct attributes (for sparse updates)."""

    offsets: np.ndarray
    labels: np.ndarray
    attr_indptr: np.ndarray
    attr_indices: np.ndarray
    uniq_ptr: np.ndarray  # n + 1: distinct attributes of i are uniq_attr[uniq_ptr[i]:...]
    uniq_attr: np.ndarray
    local: np.ndarray  # nnz: row of each (token, attribute) in its sequence's distinct list


class SDCAState(NamedTuple):
    w: np.ndarray
    mu_unary: np.ndarray
    mu_pair: np.ndarray
    entropies: np.ndarray  # H~(mu_i)
    scalars: np.ndarray  # float64: ||w||^2, sum_i H_i, sum of stored gaps
    counters: np.ndarray  # int64, see above
    sums: np.ndarray  # float64 accumulators (step sizes)


class SDCABuffers(NamedTuple):
    scores: np.ndarray
    emit: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    scale: np.ndarray
    trans: np.ndarray
    unary: np.ndarray  # nu_i, then delta (unary)
    pair: np.ndarray  # nu_i, then delta (pairwise)
    v_emission: np.ndarray  # max distinct attributes * K
    v_bias: np.ndarray  # 3K
    v_trans: np.ndarray  # KK


@njit(**NJIT)
def build_index(offsets, attr_indptr, attr_indices, n_attr, uniq_ptr, uniq_attr, local):
    """Fill the distinct-attribute lists of every sequence; returns their total length."""
    n = len(offsets) - 1
    mark = np.full(n_attr, -1, dtype=np.int64)
    pos = np.zeros(n_attr, dtype=np.int64)
    total = 0
    uniq_ptr[0] = 0
    for i in range(n):
        count = 0
        for j in range(attr_indptr[offsets[i]], attr_indptr[offsets[i + 1]]):
            a = attr_indices[j]
            if mark[a] != i:
                mark[a] = i
                pos[a] = count
                uniq_attr[total + count] = a
                count += 1
            local[j] = pos[a]
        total += count
        uniq_ptr[i + 1] = total
    return total


@njit(**NJIT_FAST)
def _divergence_terms(mu, m0, nu, n0, rows, width, to_delta, delta_sum):
    """(sum mu log(mu/nu), -sum (nu-mu) log mu) over ``rows`` tables of ``width`` entries.

    These give the gap and f'_H(0). With ``to_delta`` the tables of ``nu`` become
    delta = nu - mu; with ``delta_sum`` (``width`` entries, else an empty array) delta
    summed over the tables is added into it, as the transition block of the primal
    direction needs.
    """
    gap = 0.0
    fp = 0.0
    add = len(delta_sum) > 0
    for r in range(rows):
        base = r * width
        for j in range(width):
            m = np.float64(mu[m0 + base + j])
            nv = nu[n0 + base + j]
            d = nv - m
            lm = flog(m)
            pos = m > 0.0
            gap += m * (lm - flog(nv)) if pos else 0.0
            fp -= d * lm if pos else 0.0
            if to_delta:
                nu[n0 + base + j] = d
            if add:
                delta_sum[j] += d
    return gap, fp


@njit(**NJIT)
def _first_pass(mu_unary, u0, mu_pair, p0, nu_unary, nu_pair, T, K, delta_sum):
    """Turn nu into delta = nu - mu in place; return (gap D~(mu || nu), f'_H(0)).

    f'_H is the derivative of the entropy part H~(mu + gamma delta) of the line-search
    objective; ``delta_sum`` receives the pairwise delta summed over edges.
    """
    KK = K * K
    for j in range(KK):
        delta_sum[j] = 0.0
    if T == 1:
        gap, fp = _divergence_terms(mu_unary, u0, nu_unary, 0, 1, K, True, delta_sum[:0])
        return max(gap, 0.0), fp
    gap, fp = _divergence_terms(mu_pair, p0, nu_pair, 0, T - 1, KK, True, delta_sum)
    gs, fps = _divergence_terms(mu_unary, u0 + K, nu_unary, K, 1, (T - 2) * K, False,
                                delta_sum[:0])
    for j in range(T * K):
        nu_unary[j] -= mu_unary[u0 + j]
    return max(gap - gs, 0.0), fp - fps


@njit(**NJIT_FAST)
def _entropy_terms(mu, m0, d, size, gamma):
    """(-sum d log q, -sum d^2 / q, -sum q log q) at q = mu + gamma d over a table."""
    fp = 0.0
    fpp = 0.0
    h = 0.0
    for j in range(size):
        dj = d[j]
        q = mu[m0 + j] + gamma * dj
        lq = flog(q)
        pos = q > 0.0
        fp -= dj * lq if pos else 0.0
        fpp -= dj * dj / q if pos else 0.0
        h -= q * lq if pos else 0.0
    return fp, fpp, h


@njit(**NJIT)
def _evaluate(mu_unary, u0, mu_pair, p0, d_unary, d_pair, T, K, gamma):
    """(f'_H, f''_H, H~) at mu + gamma delta: entropy part of f and its derivatives."""
    if T == 1:
        return _entropy_terms(mu_unary, u0, d_unary, K, gamma)
    fp, fpp, h = _entropy_terms(mu_pair, p0, d_pair, (T - 1) * K * K, gamma)
    fps, fpps, hs = _entropy_terms(mu_unary, u0 + K, d_unary[K:], (T - 2) * K, gamma)
    return fp - fps, fpp - fpps, h - hs


@njit(**NJIT)
def _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, scale, v_em, v_bias, v_trans,
                      sum_trans):
    """v = scale * E_delta[F(x_i, .)] into the sparse buffers; returns (<w, v>, ||v||^2).

    With ``sum_trans`` false, ``v_trans`` already holds delta summed over the edges.
    """
    start = idx.offsets[i]
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    for j in range(nu * K):
        v_em[j] = 0.0
    for t in range(T):
        tok = start + t
        row = t * K
        for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
            base = idx.local[j] * K
            for k in range(K):
                v_em[base + k] += d_unary[row + k]
    for k in range(K):
        s = 0.0
        for t in range(T):
            s += d_unary[t * K + k]
        v_bias[3 * k] = scale * s
        v_bias[3 * k + 1] = scale * d_unary[k]
        v_bias[3 * k + 2] = scale * d_unary[(T - 1) * K + k]
    KK = K * K
    if sum_trans:
        for j in range(KK):
            v_trans[j] = 0.0
        for t in range(T - 1):
            for j in range(KK):
                v_trans[j] += d_pair[t * KK + j]
    wv = 0.0
    vv = 0.0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        for k in range(K):
            x = scale * v_em[r * K + k]
            v_em[r * K + k] = x
            wv += w[base + k] * x
            vv += x * x
    ob = n_attr * K
    for j in range(3 * K):
        wv += w[ob + j] * v_bias[j]
        vv += v_bias[j] * v_bias[j]
    ow = ob + 3 * K
    for j in range(KK):
        x = scale * v_trans[j]
        v_trans[j] = x
        wv += w[ow + j] * x
        vv += x * x
    return wv, vv


@njit(**NJIT)
def _apply_primal(w, n_attr, K, idx, i, gamma, v_em, v_bias, v_trans):
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        for k in range(K):
            w[base + k] += gamma * v_em[r * K + k]
    ob = n_attr * K
    for j in range(3 * K):
        w[ob + j] += gamma * v_bias[j]
    ow = ob + 3 * K
    for j in range(K * K):
        w[ow + j] += gamma * v_trans[j]


@njit(**NJIT_FAST)
def _update_table(mu, m0, d, size, gamma):
    """mu += gamma d over a table; returns -sum q log q of the new values."""
    for j in range(size):
        mu[m0 + j] += gamma * d[j]
    h = 0.0
    for j in range(size):  # a separate loop so that both vectorize
        q = np.float64(mu[m0 + j])
        h -= q * flog(q) if q > 0.0 else 0.0
    return h


@njit(**NJIT)
def _apply_dual(mu_unary, u0, mu_pair, p0, d_unary, d_pair, T, K, gamma):
    """mu_i += gamma delta; returns the chain entropy H~ of the new marginals."""
    if T == 1:
        return _update_table(mu_unary, u0, d_unary, K, gamma)
    h = _update_table(mu_pair, p0, d_pair, (T - 1) * K * K, gamma)
    h -= _update_table(mu_unary, u0 + K, d_unary[K:], (T - 2) * K, gamma)
    for j in range(K):
        mu_unary[u0 + j] += gamma * d_unary[j]
    last = (T - 1) * K
    for j in range(K):
        mu_unary[u0 + last + j] += gamma * d_unary[last + j]
    return h


@njit(**NJIT)
def _store_applied_delta(mu_unary, u0, mu_pair, p0, d_unary, d_pair, T, K, gamma):
    """Low-precision store: write mu + gamma delta, then set delta to the change really stored.

    Afterwards gamma * delta is exactly the stored change (up to float64 rounding), so
    that w = w_hat(mu) holds for the stored marginals.
    """
    inv = 1.0 / gamma
    for j in range(T * K):
        old = np.float64(mu_unary[u0 + j])
        mu_unary[u0 + j] = old + gamma * d_unary[j]
        d_unary[j] = (np.float64(mu_unary[u0 + j]) - old) * inv
    for j in range((T - 1) * K * K):
        old = np.float64(mu_pair[p0 + j])
        mu_pair[p0 + j] = old + gamma * d_pair[j]
        d_pair[j] = (np.float64(mu_pair[p0 + j]) - old) * inv


@njit(**NJIT)
def sdca_step(i, w, n_attr, K, idx, st, buf, lam_n, method, tol, fixed_step, exact_store):
    """One SDCA iteration on sequence i; returns (fresh gap g_i, step size gamma)."""
    c_start = cycles()
    start = idx.offsets[i]
    T = idx.offsets[i + 1] - start
    u0 = start * K
    p0 = (start - i) * K * K
    # 1. oracle at w; meanwhile the block of the marginal store comes from memory
    prefetch_range(st.mu_pair, p0, p0 + (T - 1) * K * K)
    prefetch_range(st.mu_unary, u0, u0 + T * K)
    unary_scores(w, n_attr, K, idx.offsets, idx.attr_indptr, idx.attr_indices, i, buf.scores)
    tmax = transition_potentials(w, n_attr, K, buf.trans)
    forward_backward(buf.scores, T, K, buf.trans, tmax, w, n_attr, buf.emit, buf.alpha,
                     buf.beta, buf.scale, buf.unary, buf.pair)
    st.counters[ORACLE] += 1
    c_oracle = cycles()
    # 2. gap, delta and derivatives at 0
    gap, fph0 = _first_pass(st.mu_unary, u0, st.mu_pair, p0, buf.unary, buf.pair, T, K,
                            buf.v_trans)
    d_unary = buf.unary
    d_pair = buf.pair
    c_gap = cycles()
    # 3. primal direction
    wv, vv = _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, -1.0 / lam_n,
                               buf.v_emission, buf.v_bias, buf.v_trans, False)
    # 4. line search on f(gamma) = H~(mu + gamma delta) - (lam n / 2)||w + gamma v||^2
    c_ls = cycles()
    h_old = st.entropies[i]
    fp0 = fph0 - lam_n * wv
    gamma = 0.0
    evals = 0
    if method == FIXED:
        gamma = fixed_step
    elif fp0 > 0.0:
        if method == NEWTON or method == SINGLE_NEWTON:
            gamma, evals = _newton(st, u0, p0, d_unary, d_pair, T, K, lam_n, wv, vv, fp0, tol,
                                   1 if method == SINGLE_NEWTON else MAX_LINE_SEARCH_ITERATIONS)
        else:
            gamma, evals = _golden(st, u0, p0, d_unary, d_pair, T, K, lam_n, wv, vv, h_old,
                                   tol)
    c_end_ls = cycles()
    # 5. updates: the dual block (with its new entropy), then w
    if gamma != 0.0:
        if exact_store:
            h_new = _apply_dual(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
        else:
            _store_applied_delta(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, gamma)
            wv, vv = _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, -1.0 / lam_n,
                                       buf.v_emission, buf.v_bias, buf.v_trans, True)
            h_new = chain_entropy(st.mu_unary, u0, st.mu_pair, p0, T, K)
        gain = (h_new - h_old) - lam_n * gamma * (wv + 0.5 * gamma * vv)
        if gain < 0.0 and method != FIXED and method != SINGLE_NEWTON:
            # rounding near a root at 0: the exact line search never lowers the dual
            h_new = _apply_dual(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K,
                                -gamma)
            gamma = 0.0
        else:
            _apply_primal(w, n_attr, K, idx, i, gamma, buf.v_emission, buf.v_bias,
                          buf.v_trans)
            st.scalars[W_NORM2] += 2.0 * gamma * wv + gamma * gamma * vv
        st.scalars[SUM_ENTROPY] += h_new - h_old
        st.entropies[i] = h_new
    if gamma == 0.0:
        st.counters[NULL_STEPS] += 1
    st.counters[UPDATES] += 1
    st.counters[LS_EVALS] += evals
    st.sums[SUM_STEP] += gamma
    c_end = cycles()
    st.counters[CYC_ORACLE] += c_oracle - c_start
    st.counters[CYC_GAP] += c_gap - c_oracle
    st.counters[CYC_DIRECTION] += c_ls - c_gap
    st.counters[CYC_LS] += c_end_ls - c_ls
    st.counters[CYC_UPDATE] += c_end - c_end_ls
    return gap, gamma


@njit(**NJIT)
def _newton(st, u0, p0, d_unary, d_pair, T, K, lam_n, wv, vv, fp0, tol, max_evals):
    """Safeguarded Newton on f' over the bracket [0, 1], where f'(0) > 0 >= f'(1).

    Starts at the regula-falsi point of the bracket, f'(0) / (f'(0) - f'(1)),
    with f'(1) = -lam n ||v||^2 known for free (``math.md`` section 5): on the
    datasets here this needs fewer evaluations than a first Newton step from 0,
    where the log-barrier of small marginals makes f''(0) huge. A Newton step is
    taken when it stays inside the bracket and the previous step at least
    halved |f'|; otherwise the bracket is bisected. As in Numerical Recipes'
    rtsafe, returns the next point once a step is shorter than ``tol``, or after
    ``max_evals`` evaluations (1: the single-Newton-step variant). Returns (gamma,
    evaluations).
    """
    lo = 0.0
    hi = 1.0
    gamma = fp0 / (fp0 + lam_n * vv)
    fp_prev = np.inf
    evals = 0
    for _ in range(max_evals):
        fph, fpph, _h = _evaluate(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K,
                                  gamma)
        evals += 1
        fp = fph - lam_n * (wv + gamma * vv)
        fpp = fpph - lam_n * vv
        if fp > 0.0:
            lo = gamma
        else:
            hi = gamma
        new = gamma - fp / fpp
        if not (lo < new < hi) or abs(fp) > 0.5 * abs(fp_prev):
            new = 0.5 * (lo + hi)
        fp_prev = fp
        step = new - gamma
        gamma = new
        if abs(step) < tol:
            break
    return gamma, evals


@njit(**NJIT)
def _golden(st, u0, p0, d_unary, d_pair, T, K, lam_n, wv, vv, h0, tol):
    """Bounded golden-section search for the maximum of f on [0, 1]."""
    a = 0.0
    b = 1.0
    x1 = b - _INV_PHI * (b - a)
    x2 = a + _INV_PHI * (b - a)
    h1 = _evaluate(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, x1)[2]
    h2 = _evaluate(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, x2)[2]
    f1 = h1 - lam_n * x1 * (wv + 0.5 * x1 * vv)
    f2 = h2 - lam_n * x2 * (wv + 0.5 * x2 * vv)
    evals = 2
    while b - a > tol and evals < MAX_LINE_SEARCH_ITERATIONS:
        if f1 < f2:
            a = x1
            x1, f1, h1 = x2, f2, h2
            x2 = a + _INV_PHI * (b - a)
            h2 = _evaluate(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, x2)[2]
            f2 = h2 - lam_n * x2 * (wv + 0.5 * x2 * vv)
        else:
            b = x2
            x2, f2, h2 = x1, f1, h1
            x1 = b - _INV_PHI * (b - a)
            h1 = _evaluate(st.mu_unary, u0, st.mu_pair, p0, d_unary, d_pair, T, K, x1)[2]
            f1 = h1 - lam_n * x1 * (wv + 0.5 * x1 * vv)
        evals += 1
    gamma, f = (x1, f1) if f1 >= f2 else (x2, f2)
    if f < h0:  # f(0) = H~(mu) = h0 up to the constant -lam n ||w||^2 / 2
        return 0.0, evals
    return gamma, evals


@njit(**NJIT)
def sdca_run(n_steps, w, n_attr, K, idx, st, buf, sampler, rng, lam_n, method, tol,
             fixed_step, exact_store):
    """Run n_steps SDCA iterations with the given sampler; stored gaps kept current."""
    for _ in range(n_steps):
        i = draw(sampler, rng)
        old = sampler.gaps[i]
        gap, _ = sdca_step(i, w, n_attr, K, idx, st, buf, lam_n, method, tol, fixed_step,
                           exact_store)
        record_gap(sampler, i, gap)
        st.scalars[SUM_GAPS] += sampler.gaps[i] - old


@njit(**NJIT)
def refresh_gaps(w, n_attr, K, idx, st, buf, sampler):
    """Recompute the stored gap of every sequence at the current w (n oracle calls)."""
    n = len(idx.offsets) - 1
    tmax = transition_potentials(w, n_attr, K, buf.trans)
    total = 0.0
    for i in range(n):
        start = idx.offsets[i]
        T = idx.offsets[i + 1] - start
        unary_scores(w, n_attr, K, idx.offsets, idx.attr_indptr, idx.attr_indices, i,
                     buf.scores)
        forward_backward(buf.scores, T, K, buf.trans, tmax, w, n_attr, buf.emit, buf.alpha,
                         buf.beta, buf.scale, buf.unary, buf.pair)
        gap = _first_pass(st.mu_unary, start * K, st.mu_pair, (start - i) * K * K, buf.unary,
                          buf.pair, T, K, buf.v_trans)[0]
        record_gap(sampler, i, gap)
        total += sampler.gaps[i]
    st.counters[ORACLE] += n
    st.scalars[SUM_GAPS] = total

