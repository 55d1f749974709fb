"""The More-Thuente line search as liblbfgs runs it (CRFsuite's default for L-BFGS).

J. J. More and D. J. Thuente, "Line search algorithms with guaranteed sufficient
decrease", ACM TOMS 20(3), 1994: a safeguarded search for a step t > 0 with

    f(t) <= f(0) + ftol t f'(0)   and   |f'(t)| <= gtol |f'(0)|

that keeps an interval of uncertainty [stx, sty] (stx the best step so far) and picks
each trial from cubic and quadratic interpolants of its ends. Written from the paper,
with every choice liblbfgs makes (its trial cases, the 0.66 safeguard, the bisection
when the interval does not shrink by a third, the error exits and the order of their
tests, xtol = 1e-16, steps in [1e-20, 1e20]) and its arithmetic in the same order, so
that ``CRF(algorithm="lbfgs")`` without an L1 term takes CRFsuite's steps (liblbfgs is
Naoaki Okazaki's C library, MIT-licensed, which CRFsuite and python-crfsuite ship).

Where liblbfgs has no answer (a trial at which f or f' is not finite) the step is
halved towards the best one, which liblbfgs would not do.
"""

from __future__ import annotations

import math
from collections.abc import Callable

XTOL = 1e-16
MIN_STEP = 1e-20
MAX_STEP = 1e20


def _min2(a: float, b: float) -> float:
    return a if a <= b else b


def _max2(a: float, b: float) -> float:
    return a if a >= b else b


def _sqrt(x: float) -> float:
    """C's sqrt: NaN below 0, where math.sqrt raises."""
    return math.sqrt(x) if x >= 0.0 else math.nan


def _sign_differs(a: float, b: float) -> bool:
    """a and b have opposite signs (False when b is 0)."""
    return a * (b / abs(b)) < 0.0 if b != 0.0 else False


def _cubic(u, fu, du, v, fv, dv):
    """Minimizer of the cubic through (u, fu, du) and (v, fv, dv)."""
    d = v - u
    theta = (fu - fv) * 3 / d + du + dv
    s = _max2(_max2(abs(theta), abs(du)), abs(dv))
    a = theta / s
    gamma = s * _sqrt(a * a - (du / s) * (dv / s))
    if v < u:
        gamma = -gamma
    p = gamma - du + theta
    q = gamma - du + gamma + dv
    return u + p / q * d


def _cubic_clipped(u, fu, du, v, fv, dv, tmin, tmax):
    """The cubic's minimizer beyond v, or tmax / tmin where the cubic has none there."""
    d = v - u
    theta = (fu - fv) * 3 / d + du + dv
    s = _max2(_max2(abs(theta), abs(du)), abs(dv))
    a = theta / s
    gamma = s * _sqrt(_max2(0.0, a * a - (du / s) * (dv / s)))
    if u < v:
        gamma = -gamma
    p = gamma - dv + theta
    q = gamma - dv + gamma + du
    r = p / q
    if r < 0.0 and gamma != 0.0:
        return v - r * d
    return tmax if a < 0 else tmin


def _quadratic(u, fu, du, v, fv):
    """Minimizer of the quadratic through (u, fu, du) and (v, fv)."""
    a = v - u
    return u + du / ((fu - fv) / a + du) / 2 * a


def _secant(u, du, v, dv):
    """Zero of the line through (u, du) and (v, dv)."""
    a = u - v
    return v + dv / (dv - du) * a


def trial_step(x, fx, dx, y, fy, dy, t, ft, dt, tmin, tmax, bracketed):
    """One update of the interval of uncertainty [x, y] (x the lower end in f) by the
    trial (t, ft, dt), and the next trial step (More and Thuente's four cases).

    Returns (x, fx, dx, y, fy, dy, next t, bracketed, ok); with ``ok`` False (the trial
    was outside the bracket, or f does not decrease from x) nothing is changed."""
    if bracketed and (t <= _min2(x, y) or _max2(x, y) <= t or 0.0 <= dx * (t - x)
                      or tmax < tmin):
        return x, fx, dx, y, fy, dy, t, bracketed, False
    opposite = _sign_differs(dt, dx)
    if fx < ft:  # 1: a higher value, the minimum is bracketed
        bracketed, bound = True, True
        mc = _cubic(x, fx, dx, t, ft, dt)
        mq = _quadratic(x, fx, dx, t, ft)
        new = mc if abs(mc - x) < abs(mq - x) else mc + 0.5 * (mq - mc)
    elif opposite:  # 2: a lower value, derivatives of opposite signs
        bracketed, bound = True, False
        mc = _cubic(x, fx, dx, t, ft, dt)
        mq = _secant(x, dx, t, dt)
        new = mc if abs(mc - t) > abs(mq - t) else mq
    elif abs(dt) < abs(dx):  # 3: lower, same signs, the derivative's size decreases
        bound = True
        mc = _cubic_clipped(x, fx, dx, t, ft, dt, tmin, tmax)
        mq = _secant(x, dx, t, dt)
        if bracketed:
            new = mc if abs(t - mc) < abs(t - mq) else mq
        else:
            new = mc if abs(t - mc) > abs(t - mq) else mq
    else:  # 4: lower, same signs, the derivative's size does not decrease
        bound = False
        if bracketed:
            new = _cubic(t, ft, dt, y, fy, dy)
        else:
            new = tmax if x < t else tmin
    if fx < ft:
        y, fy, dy = t, ft, dt
    else:
        if opposite:
            y, fy, dy = x, fx, dx
        x, fx, dx = t, ft, dt
    if tmax < new:
        new = tmax
    if new < tmin:
        new = tmin
    if bracketed and bound:
        mq = x + 0.66 * (y - x)
        if x < y:
            if mq < new:
                new = mq
        elif new < mq:
            new = mq
    return x, fx, dx, y, fy, dy, new, bracketed, True


def more_thuente(phi: Callable, f0: float, dg0: float, step: float, ftol: float,
                 gtol: float, max_evals: int):
    """Search along a direction from step ``step``: ``phi(t)`` evaluates the point at t and
    returns (f, its gradient, the directional derivative); f0 and dg0 < 0 are f and f' at
    0. Returns (t, f, gradient) of a point meeting the strong Wolfe conditions, or None
    where liblbfgs reports an error (rounding, the evaluations spent, a step at its bound)."""
    if not (step > 0.0 and dg0 < 0.0):
        return None
    bracketed, stage1, ok = False, True, True
    dgtest = ftol * dg0
    width = MAX_STEP - MIN_STEP
    prev_width = 2.0 * width
    stx = sty = 0.0
    fx = fy = f0
    dgx = dgy = dg0
    count = 0
    while True:
        if bracketed:
            stmin, stmax = _min2(stx, sty), _max2(stx, sty)
        else:
            stmin, stmax = stx, step + 4.0 * (step - stx)
        step = min(max(step, MIN_STEP), MAX_STEP)
        if bracketed and (step <= stmin or stmax <= step or max_evals <= count + 1 or not ok
                          or stmax - stmin <= XTOL * stmax):
            step = stx  # the last evaluation, at the best step (then an error below)
        f, g, dg = phi(step)
        ftest = f0 + step * dgtest
        count += 1
        if bracketed and (step <= stmin or stmax <= step or not ok):
            return None  # rounding errors prevent progress
        if step == MAX_STEP and f <= ftest and dg <= dgtest:
            return None
        if step == MIN_STEP and (ftest < f or dgtest <= dg):
            return None
        if bracketed and stmax - stmin <= XTOL * stmax:
            return None
        if max_evals <= count:
            return None
        if f <= ftest and abs(dg) <= gtol * -dg0:
            return step, f, g
        if not (math.isfinite(f) and math.isfinite(dg)):  # not liblbfgs's: halve
            if not math.isfinite(step):
                return None
            sty, fy, dgy, bracketed = step, math.inf, math.nan, True
            step = stx + 0.5 * (step - stx)
            continue
        if stage1 and f <= ftest and _min2(ftol, gtol) * dg0 <= dg:
            stage1 = False
        if stage1 and ftest < f <= fx:  # on the modified function f(t) - t dgtest
            (stx, fxm, dgxm, sty, fym, dgym, step, bracketed, ok) = trial_step(
                stx, fx - stx * dgtest, dgx - dgtest, sty, fy - sty * dgtest, dgy - dgtest,
                step, f - step * dgtest, dg - dgtest, stmin, stmax, bracketed)
            fx, fy = fxm + stx * dgtest, fym + sty * dgtest
            dgx, dgy = dgxm + dgtest, dgym + dgtest
        else:
            (stx, fx, dgx, sty, fy, dgy, step, bracketed, ok) = trial_step(
                stx, fx, dgx, sty, fy, dgy, step, f, dg, stmin, stmax, bracketed)
        if bracketed:  # force the interval to shrink
            if 0.66 * prev_width <= abs(sty - stx):
                step = stx + 0.5 * (sty - stx)
            prev_width, width = width, abs(sty - stx)
