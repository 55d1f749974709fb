"""The SAG family in numba: SAG, SAG-NUS and SAG-NUS* (``baselines.md`` sections 2-5).

State (:class:`SAGState`):

- ``w`` = [V | B | W]: the emission block is stored scaled, E = c V, and brought
  up to date row by row just in time (section 2.3); bias and transition blocks
  are exact at all times (updated eagerly, O(K^2) per step).
- ``dvec``: sum over seen examples of their stored gradients (section 2.2).
- per example: unary marginals at the last visit (``store_unary``, offset
  ``offsets[i]*K``) and summed pairwise marginals (``store_pair``, offset
  ``i*K*K``), ``seen``, Lipschitz estimate ``lip``, SAG-NUS* ``streak``/``skip``.
- ``cum`` (S), ``last``, scalar c: the lazy-update bookkeeping. A flush applies
  every pending row update and resets it; it happens every n iterations, when c
  falls below 1e-100, and before w is read (:func:`flush`).

One iteration costs O(u_i K) (catch-up) + O(nnz_i K + T_i K^2) (scores,
forward-backward, stored gradient and dvec update) + O(T_i K^2) per line-search
trial (one forward pass each) + O(K^2) (step). Nothing is O(d) except flushes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.oracle import (
    Workspace,
    forward_backward,
    forward_logz,
    scaled_unary_scores,
    transition_offset,
    transition_potentials,
)
from ..model.stats import mask_direction
from ..runtime.jit import NJIT, cycles
from .registry import SAG_OPTIONS
from .rng import randint, uniform
from .trees import sum_tree_draw, sum_tree_update

SAG, SAG_NUS, SAG_NUS_STAR = 0, 1, 2
VARIANTS = {"sag": SAG, "sag-nus": SAG_NUS, "sag-nus-star": SAG_NUS_STAR}
STEP_RULE_CODES = {name: code for code, name in enumerate(SAG_OPTIONS["step_rule"].choices)}
STEP_C13, STEP_HARMONIC = STEP_RULE_CODES["c13"], STEP_RULE_CODES["harmonic"]
FLUSH_SCALE = 1e-100

# counters[]
(ORACLE_FB, ORACLE_FWD, UPDATES, LS_EVALS, SKIPPED, SEARCHES, DOUBLINGS, CAPPED, FLUSHES,
 CYC_STEP, CYC_LS, GUARDED) = range(12)
N_COUNTERS = 12
# scalars[]: scale c of the emission block, global L (SAG), Lmax (NUS), sum of step sizes
SCALE, L_GLOBAL, L_MAX, SUM_STEP = range(4)
# ints[]: iterations since the last flush (k), number of seen examples (m)
SINCE_FLUSH, SEEN_COUNT = range(2)


class SAGState(NamedTuple):
    w: np.ndarray  # d: [V (scaled emission) | B | W]
    dvec: np.ndarray  # d: sum of stored gradients
    cum: np.ndarray  # n + 1: S, cumulative alpha / (m c) since the last flush
    last: np.ndarray  # A int64: k at which row a was last brought up to date
    store_unary: np.ndarray  # N*K unary marginals at the last visit
    store_pair: np.ndarray  # n*K*K summed pairwise marginals at the last visit
    seen: np.ndarray  # n uint8
    lip: np.ndarray  # n: L_i (SAG-NUS, SAG-NUS*)
    streak: np.ndarray  # n int64: accepted searches without doubling in a row (SAG-NUS*)
    skip: np.ndarray  # n int64: visits left to skip (SAG-NUS*)
    order: np.ndarray  # n int64: seen examples at positions < m, unseen after
    tree: np.ndarray  # sum tree over L_i of seen examples
    scalars: np.ndarray  # float64, see above
    ints: np.ndarray  # int64, see above
    counters: np.ndarray  # int64, see above


class SAGBuffers(NamedTuple):
    ws: Workspace  # the oracle's at w: scores, marginals
    trial: Workspace  # the line search's: scores = trial scores, trans = trial exp(W)
    tok_a: np.ndarray  # T*K: change of stored unary marginals, then delta_t (trial direction)
    tok_b: np.ndarray  # T*K: per-token gradient nu_t - e_{y_t}
    g_em: np.ndarray  # max distinct attributes * K: emission rows of g_i
    g_bias: np.ndarray  # 3K
    g_trans: np.ndarray  # KK
    pi_new: np.ndarray  # KK: summed pairwise oracle marginals
    trial_w: np.ndarray  # KK: the trial transition log-potentials W


class SAGOptions(NamedTuple):
    variant: int
    lam: float
    lipschitz_init: float  # L of SAG at start; L_i of the first example SAG-NUS visits
    guard: float  # skip the line search when ||g_i||^2 <= guard
    decrease: float  # L_i <- decrease * L_i before a search on a revisit (NUS)
    decrease_guarded: bool  # also decrease L_i when the guard skips the search (NUS)
    first_visit: float  # L_i <- first_visit * mean of seen L_j on a first visit (NUS)
    decay: float  # 2^(-1/n): per-iteration decay of L (SAG) or Lmax (NUS)
    max_doublings: int
    step_rule: int
    mask: np.ndarray  # the feature mask (uint8 per weight), empty: every weight


@njit(inline="always", **NJIT)
def _kept(mask, j):
    """1 if weight j is a feature (always, without a mask), else 0."""
    return mask[j] if len(mask) else np.uint8(1)


# ----------------------------------------------------------------------------- pieces

@njit(**NJIT)
def catch_up(st, idx, i, K):
    """Apply the pending lazy updates to the emission rows of the attributes of sequence i."""
    k = st.ints[SINCE_FLUSH]
    sk = st.cum[k]
    for r in range(idx.uniq_ptr[i], idx.uniq_ptr[i + 1]):
        a = idx.uniq_attr[r]
        la = st.last[a]
        if la != k:
            coef = sk - st.cum[la]
            base = a * K
            w_a = st.w[base:base + K]
            d_a = st.dvec[base:base + K]
            for kk in range(K):
                w_a[kk] -= coef * d_a[kk]
            st.last[a] = k


@njit(**NJIT)
def flush(st, n_attr, K):
    """Bring every emission row up to date, store E itself (c = 1) and reset the bookkeeping."""
    k = st.ints[SINCE_FLUSH]
    c = st.scalars[SCALE]
    sk = st.cum[k]
    for a in range(n_attr):
        coef = sk - st.cum[st.last[a]]
        base = a * K
        for kk in range(K):
            st.w[base + kk] = c * (st.w[base + kk] - coef * st.dvec[base + kk])
        st.last[a] = 0
    st.scalars[SCALE] = 1.0
    st.ints[SINCE_FLUSH] = 0
    st.cum[0] = 0.0
    st.counters[FLUSHES] += 1


@njit(**NJIT)
def _refresh_store(st, idx, buf, i, T, K, n_attr, seen, mask):
    """Store the fresh marginals of i and add the change of its stored gradient, restricted
    to the features of ``mask``, to dvec.

    Leaves the per-token gradient nu_t - e_{y_t} in ``buf.tok_b`` and the summed pairwise
    marginals in ``buf.pi_new`` for :func:`_gradient`.
    """
    ws = buf.ws
    real = len(idx.attr_values) > 0
    start = idx.offsets[i]
    u0 = start * K
    KK = K * K
    ob = n_attr * K
    ow = ob + 3 * K
    for t in range(T):
        tok = start + t
        yt = idx.labels[tok]
        row = t * K
        for k in range(K):
            nv = ws.unary[row + k]
            truth = 1.0 if k == yt else 0.0
            s = u0 + row + k
            old = np.float64(st.store_unary[s]) if seen else truth
            st.store_unary[s] = nv
            buf.tok_a[row + k] = np.float64(st.store_unary[s]) - old
            buf.tok_b[row + k] = nv - truth
        a_t = buf.tok_a[row:row + K]
        for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
            base = idx.attr_indices[j] * K
            d_a = st.dvec[base:base + K]
            v = idx.attr_values[j] if real else 1.0
            for k in range(K):
                d_a[k] += a_t[k] * v * _kept(mask, base + k)
        for k in range(K):
            st.dvec[ob + 3 * k] += buf.tok_a[row + k] * _kept(mask, ob + 3 * k)
    last = (T - 1) * K
    for k in range(K):
        st.dvec[ob + 3 * k + 1] += buf.tok_a[k] * _kept(mask, ob + 3 * k + 1)
        st.dvec[ob + 3 * k + 2] += buf.tok_a[last + k] * _kept(mask, ob + 3 * k + 2)
    for j in range(KK):
        buf.pi_new[j] = 0.0
    for t in range(T - 1):
        table = ws.pair[t * KK:(t + 1) * KK]
        for j in range(KK):
            buf.pi_new[j] += table[j]
    p0 = i * KK
    for j in range(KK):
        old = np.float64(st.store_pair[p0 + j]) if seen else 0.0
        st.store_pair[p0 + j] = buf.pi_new[j]
        st.dvec[ow + j] += (np.float64(st.store_pair[p0 + j]) - old) * _kept(mask, ow + j)
    if not seen:
        for t in range(T - 1):
            j = ow + idx.labels[start + t] * K + idx.labels[start + t + 1]
            st.dvec[j] -= 1.0 * _kept(mask, j)


@njit(**NJIT)
def _gradient(idx, buf, i, T, K, n_attr, mask):
    """The fresh gradient g_i, restricted to the features of ``mask``, in the sparse
    buffers, its trial direction of the unary scores delta_t(k) in ``buf.tok_a`` (section
    2.4); returns (||g_i||^2, dgt), dgt the change rate of the true labeling's score."""
    real = len(idx.attr_values) > 0
    start = idx.offsets[i]
    KK = K * K
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    for j in range(nu * K):
        buf.g_em[j] = 0.0
    for k in range(K):
        buf.g_bias[3 * k] = 0.0
    for t in range(T):
        tok = start + t
        b_t = buf.tok_b[t * K:(t + 1) * K]
        for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
            lb = idx.local[j] * K
            g = buf.g_em[lb:lb + K]
            v = idx.attr_values[j] if real else 1.0
            for k in range(K):
                g[k] += v * b_t[k]
        for k in range(K):
            buf.g_bias[3 * k] += b_t[k]
    last = (T - 1) * K
    for k in range(K):
        buf.g_bias[3 * k + 1] = buf.tok_b[k]
        buf.g_bias[3 * k + 2] = buf.tok_b[last + k]
    for j in range(KK):
        buf.g_trans[j] = buf.pi_new[j]
    for t in range(T - 1):
        buf.g_trans[idx.labels[start + t] * K + idx.labels[start + t + 1]] -= 1.0
    mask_direction(mask, idx, i, K, n_attr, buf.g_em, buf.g_bias, buf.g_trans)
    gg = 0.0
    for j in range(nu * K):
        gg += buf.g_em[j] * buf.g_em[j]
    for j in range(3 * K):
        gg += buf.g_bias[j] * buf.g_bias[j]
    for j in range(KK):
        gg += buf.g_trans[j] * buf.g_trans[j]
    dgt = 0.0
    for t in range(T):
        tok = start + t
        row = t * K
        for k in range(K):
            buf.tok_a[row + k] = buf.g_bias[3 * k]
        if t == 0:
            for k in range(K):
                buf.tok_a[row + k] += buf.g_bias[3 * k + 1]
        if t == T - 1:
            for k in range(K):
                buf.tok_a[row + k] += buf.g_bias[3 * k + 2]
        a_t = buf.tok_a[row:row + K]
        for j in range(idx.attr_indptr[tok], idx.attr_indptr[tok + 1]):
            lb = idx.local[j] * K
            g = buf.g_em[lb:lb + K]
            v = idx.attr_values[j] if real else 1.0
            for k in range(K):
                a_t[k] += v * g[k]
        dgt += buf.tok_a[row + idx.labels[tok]]
    for t in range(T - 1):
        dgt += buf.g_trans[idx.labels[start + t] * K + idx.labels[start + t + 1]]
    return gg, dgt


@njit(**NJIT)
def _condition(L, st, idx, buf, i, T, K, n_attr, f0, base_gt, dgt, gg):
    """Does f_i(w - g_i / L) <= f_i(w) - ||g_i||^2 / (2L) hold? One forward pass."""
    inv = 1.0 / L
    trial = buf.trial
    for j in range(T * K):
        trial.scores[j] = buf.ws.scores[j] - inv * buf.tok_a[j]
    KK = K * K
    ow = transition_offset(n_attr, K)
    for j in range(KK):
        buf.trial_w[j] = st.w[ow + j] - inv * buf.g_trans[j]
    tmax = transition_potentials(buf.trial_w, 0, K, trial.trans)
    logz = forward_logz(trial, T, K, tmax, buf.trial_w, 0)
    st.counters[ORACLE_FWD] += 1
    st.counters[LS_EVALS] += 1
    f = logz - (base_gt - inv * dgt)
    return f <= f0 - 0.5 * gg * inv


@njit(**NJIT)
def _search(L, opt, st, idx, buf, i, T, K, n_attr, f0, base_gt, dgt, gg):
    """Double L until the Lipschitz condition holds; returns (L, doublings)."""
    st.counters[SEARCHES] += 1
    d = 0
    while not _condition(L, st, idx, buf, i, T, K, n_attr, f0, base_gt, dgt, gg):
        if d >= opt.max_doublings:
            st.counters[CAPPED] += 1
            break
        L *= 2.0
        d += 1
    st.counters[DOUBLINGS] += d
    return L, d


@njit(**NJIT)
def draw_nus(st, rng, n):
    """SAG-NUS sampling (section 4.2): an unseen example with probability (n - m)/n, else
    half uniform over the seen examples, half proportional to their L_i. Two uniforms."""
    m = st.ints[SEEN_COUNT]
    if uniform(rng) * n < n - m:
        pos = m + randint(rng, n - m)
        j = st.order[pos]
        st.order[pos] = st.order[m]
        st.order[m] = j
        return j
    u = uniform(rng)
    if u < 0.5:
        return st.order[min(np.int64(2.0 * u * m), m - 1)]
    return sum_tree_draw(st.tree, 2.0 * u - 1.0)


# ----------------------------------------------------------------------------- iteration

@njit(**NJIT)
def sag_step(i, st, idx, buf, n_attr, K, opt):
    """One iteration of the chosen variant on sequence i; returns the step size."""
    c_start = cycles()
    n = len(idx.offsets) - 1
    lam = opt.lam
    seen = st.seen[i] != 0
    start = idx.offsets[i]
    # 1. lazy catch-up of the rows of i, scores and oracle at w
    catch_up(st, idx, i, K)
    ws = buf.ws
    T = scaled_unary_scores(st.w, st.scalars[SCALE], n_attr, K, idx, i, ws.scores)
    tmax = transition_potentials(st.w, transition_offset(n_attr, K), K, ws.trans)
    logz = forward_backward(ws, T, K, tmax, st.w, n_attr)
    st.counters[ORACLE_FB] += 1
    ow = transition_offset(n_attr, K)
    base_gt = 0.0
    for t in range(T):
        base_gt += ws.scores[t * K + idx.labels[start + t]]
    for t in range(T - 1):
        base_gt += st.w[ow + idx.labels[start + t] * K + idx.labels[start + t + 1]]
    f0 = logz - base_gt
    # 2. stored marginals and dvec; the fresh gradient g_i only if a line search runs
    _refresh_store(st, idx, buf, i, T, K, n_attr, seen, opt.mask)
    if not seen:
        st.seen[i] = 1
        st.ints[SEEN_COUNT] += 1
    m = st.ints[SEEN_COUNT]
    # 3. Lipschitz estimate and step size
    c_ls = cycles()
    if opt.variant == SAG:
        L = st.scalars[L_GLOBAL]
        gg, dgt = _gradient(idx, buf, i, T, K, n_attr, opt.mask)
        if gg > opt.guard:
            L, _ = _search(L, opt, st, idx, buf, i, T, K, n_attr, f0, base_gt, dgt, gg)
        else:
            st.counters[GUARDED] += 1
        st.scalars[L_GLOBAL] = L
        alpha = 1.0 / (L + lam)
    else:
        if opt.variant == SAG_NUS_STAR and seen and st.skip[i] > 0:
            st.skip[i] -= 1
            st.counters[SKIPPED] += 1
            L = st.lip[i]
        else:
            gg, dgt = _gradient(idx, buf, i, T, K, n_attr, opt.mask)
            if not seen:
                prev = m - 1
                L = opt.first_visit * st.tree[1] / prev if prev >= 1 else opt.lipschitz_init
            elif gg > opt.guard or opt.decrease_guarded:
                L = opt.decrease * st.lip[i]
            else:
                L = st.lip[i]
            if not gg > opt.guard:
                st.counters[GUARDED] += 1
            if gg > opt.guard:
                L, d = _search(L, opt, st, idx, buf, i, T, K, n_attr, f0, base_gt, dgt, gg)
                if opt.variant == SAG_NUS_STAR:
                    if d == 0:
                        st.streak[i] += 1
                        st.skip[i] = np.int64(1) << min(st.streak[i] - 1, 40)
                    else:
                        st.streak[i] = 0
                        st.skip[i] = 0
            st.lip[i] = L
            sum_tree_update(st.tree, i, L)
        lmean = st.tree[1] / m
        lmax = max(st.scalars[L_MAX], L)
        if opt.step_rule == STEP_C13:
            alpha = ((n - m) / n) / (lmax + lam) + (m / n) * (
                0.5 / (lmax + lam) + 0.5 / (lmean + lam))
        else:
            alpha = 1.0 / (0.5 * (lmax + lmean) + lam)
        st.scalars[L_MAX] = lmax
    c_end_ls = cycles()
    # 4. the step: O(1) for the scaled emission block, eager for bias and transitions
    fac = 1.0 - alpha * lam
    c = st.scalars[SCALE] * fac
    st.scalars[SCALE] = c
    k = st.ints[SINCE_FLUSH]
    st.cum[k + 1] = st.cum[k] + alpha / (m * c)
    st.ints[SINCE_FLUSH] = k + 1
    am = alpha / m
    for j in range(n_attr * K, len(st.w)):
        st.w[j] = fac * st.w[j] - am * st.dvec[j]
    if opt.variant == SAG:
        st.scalars[L_GLOBAL] *= opt.decay
    else:
        st.scalars[L_MAX] *= opt.decay
    st.counters[UPDATES] += 1
    st.scalars[SUM_STEP] += alpha
    c_end = cycles()
    st.counters[CYC_STEP] += c_end - c_start
    st.counters[CYC_LS] += c_end_ls - c_ls
    return alpha


@njit(**NJIT)
def sag_run(n_steps, st, idx, buf, rng, n_attr, K, opt):
    """Run n_steps iterations (sampling included); flush every n iterations."""
    n = len(idx.offsets) - 1
    for _ in range(n_steps):
        if opt.variant == SAG:
            i = randint(rng, n)
        else:
            i = draw_nus(st, rng, n)
        sag_step(i, st, idx, buf, n_attr, K, opt)
        if st.ints[SINCE_FLUSH] >= n or st.scalars[SCALE] < FLUSH_SCALE:
            flush(st, n_attr, K)
