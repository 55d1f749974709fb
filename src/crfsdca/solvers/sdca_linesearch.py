"""SDCA's line searches (``math.md`` section 5.3): the step size gamma in [0, 1] of
a step, maximizing f(gamma) = H~(mu_i + gamma delta) - lam n g*(v + gamma u) along the
ascent direction delta of the dual block and the primal direction u (the
``line_search`` phase of a step, :func:`line_search`).

Every evaluation (:func:`_line_eval`) computes f', f'' and the entropy at the trial point
together in one pass over the block of the store, so the accepted point's entropy costs
nothing more; the quadratic part comes from <w, u> and ||u||^2 alone without L1, and from
a pass over the support of u with it (:func:`quadratic`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.fastmath import flog_normal
from ..runtime.jit import NJIT, NJIT_FAST
from .registry import LINE_SEARCHES

LINE_SEARCH_CODES = {name: code for code, name in enumerate(LINE_SEARCHES)}
NEWTON, SINGLE_NEWTON, FIXED, GOLDEN = (
    LINE_SEARCH_CODES[name] for name in ("newton", "single-newton", "fixed", "golden"))
MAX_LINE_SEARCH_ITERATIONS = 100
_INV_PHI = 0.6180339887498949


@njit(**NJIT_FAST)
def _entropy_terms(mu, m0, d, size, gamma):
    """(-sum d log q, -sum d^2 / q, -sum q log q) at q = mu + gamma d over a table."""
    fp = 0.0
    fpp = 0.0
    h = 0.0
    m_blk = mu[m0:m0 + size]
    for j in range(size):
        dj = d[j]
        q = m_blk[j] + gamma * dj
        lq = flog_normal(q)
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


class Block(NamedTuple):
    """A step's block of the store and the quadratic part of its line search.

    The dual's quadratic term along the step is lam n g*(v + gamma u) with v the
    unthresholded weights, u the sparse direction (in the buffers) and, for the elastic
    net, g*(v) = 1/2 ||S_kappa(v)||^2 (``math.md`` section 8); with kappa = 0 it is
    1/2 ||w + gamma u||^2, known from <w, u> and ||u||^2 alone. With kappa > 0 it is
    piecewise quadratic in gamma: an entry whose v_j + gamma u_j keeps its side of
    [-kappa, kappa] for every gamma the step can take adds a quadratic in gamma, summed
    once per step into ``a0`` and ``b0`` (:func:`l1_split`); only the ``n_cross`` entries
    that cross a threshold are evaluated at each gamma (:func:`quadratic`).
    """

    i: int
    u0: int  # where the block's unary marginals start in the store
    p0: int  # where its pairwise marginals start
    T: int
    K: int
    n_attr: int
    lam_n: float
    wv: float  # <w, u>
    vv: float  # ||u||^2
    kappa: float
    a0: float  # sum of u_j w_j over the entries off the thresholds on the whole range
    b0: float  # sum of u_j^2 over the same entries
    n_cross: int  # entries that cross a threshold, in the buffers' cross_v and cross_u


@njit(inline="always", **NJIT)
def soft(x, kappa):
    """The soft-threshold S_kappa(x) = sign(x) max(|x| - kappa, 0), without a branch
    (x - kappa, x + kappa or exactly 0, as the three cases give)."""
    return x - min(max(x, -kappa), kappa)


SPLIT_CHUNK = 64
"""Entries per chunk of :func:`l1_split`'s pass: the sums vectorize over a chunk, and the
scalar walk that collects the crossing entries runs only in the chunks that have one."""


@njit(inline="always", **NJIT_FAST)
def _fixed_sums(v, u, kappa, g_max, a0, b0, wv):
    """(a0, b0, wv) plus the sums of u_j w_j and u_j^2 over the entries whose v_j + gamma
    u_j stays on or beyond one threshold for gamma in [0, g_max] (where S_kappa(v_j +
    gamma u_j) = w_j + gamma u_j), and of u_j w_j over all, w = S_kappa(v); and how many
    entries cross a threshold (a loop without stores: its sums may be reordered)."""
    crossing = 0
    for k in range(len(u)):  # arithmetic on the comparisons, not selects: it vectorizes
        vk = v[k]
        uk = u[k]
        x = vk + g_max * uk
        lo = min(vk, x)
        hi = max(vk, x)
        fixed = 1.0 * ((lo >= kappa) + (hi <= -kappa))  # 0 or 1: kappa > 0
        uw = uk * soft(vk, kappa)
        a0 += uw * fixed
        b0 += uk * uk * fixed
        wv += uw
        crossing += ((lo < -kappa) & (hi > -kappa)) + ((lo < kappa) & (hi > kappa))
    return a0, b0, wv, crossing


@njit(inline="always", **NJIT)
def _crossing(v, u, kappa, g_max, n, cross_v, cross_u):
    """Append the entries of a row whose v_j + gamma u_j crosses a threshold for some
    gamma in [0, g_max] to the crossing list; returns its new length."""
    for k in range(len(u)):
        x = v[k] + g_max * u[k]
        lo = min(v[k], x)
        hi = max(v[k], x)
        if (lo < -kappa and hi > -kappa) or (lo < kappa and hi > kappa):
            cross_v[n] = v[k]
            cross_u[n] = u[k]
            n += 1
    return n


@njit(inline="always", **NJIT_FAST)
def _split_range(v, u, kappa, g_max, a0, b0, wv, n, cross_v, cross_u):
    """:func:`_fixed_sums` and the crossing entries of a contiguous range, chunk by chunk."""
    for c0 in range(0, len(u), SPLIT_CHUNK):
        c1 = min(c0 + SPLIT_CHUNK, len(u))
        a0, b0, wv, crossing = _fixed_sums(v[c0:c1], u[c0:c1], kappa, g_max, a0, b0, wv)
        if crossing:
            n = _crossing(v[c0:c1], u[c0:c1], kappa, g_max, n, cross_v, cross_u)
    return a0, b0, wv, n


@njit(**NJIT_FAST)
def l1_split(v, idx, i, K, n_attr, kappa, g_max, v_em, v_bias, v_trans, v_rows, cross_v,
             cross_u):
    """One pass over the support of u (the direction in ``v_em``, ``v_bias``, ``v_trans``)
    that splits g*(v + gamma u), gamma in [0, g_max], into a fixed quadratic and the
    entries that cross a threshold (copied to ``cross_v``, ``cross_u``); returns
    (a0, b0, <w, u>, n_cross) for :class:`Block`, w = S_kappa(v).

    The rows of v the emission part reads are gathered into ``v_rows`` first, so that the
    pass runs over two contiguous arrays rather than row by row (K entries each): it
    then vectorizes."""
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        src = v[base:base + K]
        dst = v_rows[r * K:(r + 1) * K]
        for k in range(K):
            dst[k] = src[k]
    a0, b0, wv, n = _split_range(v_rows[:nu * K], v_em[:nu * K], kappa, g_max, 0.0, 0.0,
                                 0.0, 0, cross_v, cross_u)
    ob = n_attr * K
    a0, b0, wv, n = _split_range(v[ob:ob + 3 * K], v_bias, kappa, g_max, a0, b0, wv, n,
                                 cross_v, cross_u)
    return _split_range(v[ob + 3 * K:ob + 3 * K + K * K], v_trans, kappa, g_max, a0, b0, wv,
                        n, cross_v, cross_u)


@njit(**NJIT_FAST)
def _row_change(v, u, gamma, kappa):
    """sum_j (S(v_j + gamma u_j)^2 - S(v_j)^2) / 2 over a row, S the soft-threshold at
    kappa (branch-free, so that the loop vectorizes)."""
    total = 0.0
    for j in range(len(u)):
        x = v[j]
        a = soft(x, kappa)
        b = soft(x + gamma * u[j], kappa)
        total += 0.5 * (b * b - a * a)
    return total


@njit(**NJIT)
def l1_change(v, idx, i, K, n_attr, kappa, gamma, v_em, v_bias, v_trans):
    """Q(gamma) - Q(0) of the elastic net, Q(gamma) = g*(v + gamma u), for sequence i's
    direction u (``v_em``, ``v_bias``, ``v_trans``) at the current v: one read-only pass
    over the rows u touches. A rebased move needs it at its one step size, where the
    split of :func:`l1_split` (a copy of the rows, the crossing entries
    listed) serves a line search's many."""
    total = 0.0
    ua0 = idx.uniq_ptr[i]
    for r in range(idx.uniq_ptr[i + 1] - ua0):
        base = idx.uniq_attr[ua0 + r] * K
        total += _row_change(v[base:base + K], v_em[r * K:(r + 1) * K], gamma, kappa)
    ob = n_attr * K
    total += _row_change(v[ob:ob + 3 * K], v_bias, gamma, kappa)
    return total + _row_change(v[ob + 3 * K:ob + 3 * K + K * K], v_trans, gamma, kappa)


@njit(**NJIT)
def quadratic(blk, buf, gamma):
    """(Q'(gamma), Q''(gamma), Q(gamma) - Q(0)) of Q(gamma) = g*(v + gamma u)."""
    wv, vv = blk.wv, blk.vv
    if blk.kappa == 0.0:
        return wv + gamma * vv, vv, gamma * (wv + 0.5 * gamma * vv)
    kappa = blk.kappa
    d1 = blk.a0 + gamma * blk.b0
    d2 = blk.b0
    val = gamma * (blk.a0 + 0.5 * gamma * blk.b0)
    for c in range(blk.n_cross):
        u = buf.cross_u[c]
        v = buf.cross_v[c]
        y = soft(v + gamma * u, kappa)
        y0 = soft(v, kappa)
        d1 += u * y
        d2 += u * u if y != 0.0 else 0.0
        val += 0.5 * (y * y - y0 * y0)
    return d1, d2, val


@njit(**NJIT)
def _line_eval(blk, st, idx, buf, d_unary, d_pair, gamma):
    """(f'(gamma), f''(gamma), f(gamma) - f(0) + H~(mu_i), H~(mu_i + gamma delta)) of the
    line-search objective f(gamma) = H~(mu_i + gamma delta) - lam n g*(v + gamma u)."""
    fph, fpph, h = _evaluate(st.mu_unary, blk.u0, st.mu_pair, blk.p0, d_unary, d_pair,
                             blk.T, blk.K, gamma)
    d1, d2, val = quadratic(blk, buf, gamma)
    return fph - blk.lam_n * d1, fpph - blk.lam_n * d2, h - blk.lam_n * val, h


@njit(**NJIT)
def _slope_at_one(blk, st, idx, buf):
    """-f'(1) / (lam n) = <u, S(v + u)> - <u, w>, known without an entropy evaluation:
    at gamma = 1 the block is nu_i(w), where f'_H(1) = lam n <u, w>; ||u||^2 when
    kappa = 0."""
    if blk.kappa == 0.0:
        return blk.vv
    return quadratic(blk, buf, 1.0)[0] - blk.wv


@njit(inline="always", **NJIT)
def newton_step(gamma, fp, fpp, fp_prev, lo, hi):
    """One move of a safeguarded Newton on a decreasing f' over [lo, hi] (f' = ``fp``,
    f'' = ``fpp`` at ``gamma``): the bracket shrunk to gamma, and the Newton point when it
    stays inside it and |f'| at least halved since ``fp_prev``, else the bracket's
    midpoint. Returns (next gamma, lo, hi)."""
    if fp > 0.0:
        lo = gamma
    else:
        hi = gamma
    new = gamma - fp / fpp
    if not (lo < new < hi) or abs(fp) > 0.5 * abs(fp_prev):
        new = 0.5 * (lo + hi)
    return new, lo, hi


@njit(**NJIT)
def _newton(blk, st, idx, buf, d_unary, d_pair, fp0, tol, max_evals):
    """Safeguarded Newton on f' over the bracket [0, 1], where f'(0) > 0 >= f'(1).

    Starts at the regula-falsi point of the bracket, fp0 / (fp0 - f'(1)), with fp0 the
    estimate 2 D~(mu || nu) of f'(0) and f'(1) known without an entropy evaluation
    (:func:`_slope_at_one`; -lam n ||u||^2 without L1, ``math.md`` section 5.3): on the
    datasets here this needs fewer evaluations than a first Newton step from 0, where
    the log-barrier of small marginals makes f''(0) huge. The exact f'(0) would cost a
    logarithm per entry; with the estimate, whole runs need fewer evaluations per step on
    POS and a few more on OCR (``docs/benchmarks.md``). A Newton step is taken when it
    stays inside the bracket and the previous step at least halved |f'|; otherwise the
    bracket is bisected.
    Stops once the next step would be shorter than ``tol`` and returns the point just
    evaluated, which is then within about ``tol`` of the maximizer: its entropy
    H~(mu_i + gamma delta) is known, so the update need not take a logarithm again
    (``math.md`` section 5.3). After ``max_evals`` evaluations it returns the next point
    instead (1: the single-Newton-step variant, whose step is the Newton point).
    Returns (gamma, evaluations, the entropy at gamma or NaN if gamma was not evaluated).
    """
    lo = 0.0
    hi = 1.0
    gamma = fp0 / (fp0 + blk.lam_n * _slope_at_one(blk, st, idx, buf))
    fp_prev = np.inf
    evals = 0
    for _ in range(max_evals):
        fp, fpp, _f, h = _line_eval(blk, st, idx, buf, d_unary, d_pair, gamma)
        evals += 1
        new, lo, hi = newton_step(gamma, fp, fpp, fp_prev, lo, hi)
        fp_prev = fp
        if abs(new - gamma) < tol and max_evals > 1:
            return gamma, evals, h
        gamma = new
    return gamma, evals, np.nan


@njit(**NJIT)
def _rtsafe(blk, st, idx, buf, d_unary, d_pair, tol, max_evals):
    """The paper's line search: Numerical Recipes' ``rtsafe`` on f' over [0, 1] from the
    midpoint, step for step as [LP]'s ``safe_newton`` (``math.md`` section 5.3).

    f'(1) < 0 unless the direction is zero (known for free, :func:`_slope_at_one`), in
    which case the step is 1. Otherwise start at gamma = 0.5 with dx_old = dx = 1, the
    bracket width, and evaluate there. Each round: the Newton step dx = f'/f'' is kept
    when gamma - dx stays in the bracket (ends included) and |dx| <= |dx_old| / 2 (dx_old:
    the step before last), else the bracket is bisected; stop as soon as the last step is
    shorter than ``tol`` (with ``tol`` = 0.5: after one Newton step from 0.5 when it is
    kept), else evaluate at the new point and only then shrink the bracket to it. So the
    first round tests Newton against [0, 1] and a bisection there returns to 0.5; [LP]
    evaluates 0.5 again (the same values), which is skipped here: the trajectory is
    [LP]'s, the count of evaluations is one lower after such a first bisection.
    ``max_evals`` bounds the evaluations (1: the first move to a point not yet
    evaluated, Newton or bisection, is the step). Returns
    (gamma, evaluations).
    """
    if not blk.lam_n * _slope_at_one(blk, st, idx, buf) > 0.0:
        return 1.0, 0
    lo = 0.0  # f'(lo) > 0
    hi = 1.0  # f'(hi) < 0
    gamma = 0.5
    dx_old = 1.0
    dx = 1.0
    fp, fpp, _f, _h = _line_eval(blk, st, idx, buf, d_unary, d_pair, gamma)
    evals = 1
    for _ in range(MAX_LINE_SEARCH_ITERATIONS):
        newton = fp / fpp
        new = gamma - newton
        keep = lo <= new <= hi and abs(newton) <= 0.5 * abs(dx_old)  # false if NaN
        dx_old, prev = dx, gamma
        if keep:
            dx = newton
            gamma = new
        else:
            dx = 0.5 * (hi - lo)
            gamma = lo + dx
        if abs(dx) < tol:
            break
        if gamma != prev:  # [LP] evaluates again at an unchanged point: same values
            if evals >= max_evals:
                break
            fp, fpp, _f, _h = _line_eval(blk, st, idx, buf, d_unary, d_pair, gamma)
            evals += 1
        if fp > 0.0:  # f' decreases: the root is to the right
            lo = gamma
        else:
            hi = gamma
    return gamma, evals


@njit(**NJIT)
def _golden(blk, st, idx, buf, d_unary, d_pair, h0, tol):
    """Bounded golden-section search for the maximum of f on [0, 1]."""
    a = 0.0
    b = 1.0
    x1 = b - _INV_PHI * (b - a)
    x2 = a + _INV_PHI * (b - a)
    f1 = _line_eval(blk, st, idx, buf, d_unary, d_pair, x1)[2]
    f2 = _line_eval(blk, st, idx, buf, d_unary, d_pair, x2)[2]
    evals = 2
    while b - a > tol and evals < MAX_LINE_SEARCH_ITERATIONS:
        if f1 < f2:
            a = x1
            x1, f1 = x2, f2
            x2 = a + _INV_PHI * (b - a)
            f2 = _line_eval(blk, st, idx, buf, d_unary, d_pair, x2)[2]
        else:
            b = x2
            x2, f2 = x1, f1
            x1 = b - _INV_PHI * (b - a)
            f1 = _line_eval(blk, st, idx, buf, d_unary, d_pair, x1)[2]
        evals += 1
    gamma, f = (x1, f1) if f1 >= f2 else (x2, f2)
    if f < h0:  # f(0) = H~(mu) = h0 (values shifted so that f(0) is the block's entropy)
        return 0.0, evals
    return gamma, evals


@njit(inline="always", **NJIT)
def line_search(blk, st, idx, buf, d_unary, d_pair, gap, h_old, opt):
    """The step size of a step whose block gap is ``gap`` and whose block entropy is
    ``h_old``, by the line search ``opt.method``; returns (gamma, evaluations, the
    entropy at gamma or NaN if the search did not evaluate it)."""
    method = opt.method
    # f'(0) = D~(mu || nu) + D~(nu || mu) (math.md section 5.3): the second divergence
    # needs log mu, a logarithm per entry; 2 D~(mu || nu) (equal to second order) gives
    # the search its start and the step's sign at no cost
    fp0 = 2.0 * gap
    gamma = 0.0
    evals = 0
    h_ls = np.nan  # the entropy at the accepted gamma, when the line search evaluated it
    if method == FIXED:
        gamma = opt.fixed_step
    elif fp0 > 0.0:
        max_evals = 1 if method == SINGLE_NEWTON else MAX_LINE_SEARCH_ITERATIONS
        if (method == NEWTON or method == SINGLE_NEWTON) and opt.midpoint:
            gamma, evals = _rtsafe(blk, st, idx, buf, d_unary, d_pair, opt.tol, max_evals)
        elif method == NEWTON or method == SINGLE_NEWTON:
            gamma, evals, h_ls = _newton(blk, st, idx, buf, d_unary, d_pair, fp0, opt.tol,
                                         max_evals)
        else:
            gamma, evals = _golden(blk, st, idx, buf, d_unary, d_pair, h_old, opt.tol)
    return gamma, evals, h_ls
