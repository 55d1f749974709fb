"""L-BFGS's two-loop recursion in numba: one pass over memory per stored vector.

On the sparse datasets d is 4e6 to 8e6, so an (s, y) pair is 60-120 MB and the
recursion is bound by memory traffic, not arithmetic. numpy's ``q -= a * y`` followed by
the next ``s @ q`` reads q three times, writes it twice and allocates a d-long temporary
(fresh pages from the kernel on every call); here each stored vector is read once, in a
pass that updates q and takes the next dot product with it. Sums run in a fixed order (four
interleaved partial sums), so results do not depend on alignment or on the machine's
vector width.
"""

from __future__ import annotations

from numba import njit

from ..runtime.jit import NJIT


@njit(**NJIT)
def _update_dot(q, a, u, scale, v):
    """q <- (q - a u) * scale, then return <v, q> (in the same pass).

    Each entry is rounded as numpy's ``q -= a * u; q *= scale`` rounds it (``scale`` = 1
    is exact); the sum has four partial sums, added as (s0 + s1) + (s2 + s3).
    """
    n = len(q)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    m = n - n % 4
    for i in range(0, m, 4):
        x0 = (q[i] - a * u[i]) * scale
        x1 = (q[i + 1] - a * u[i + 1]) * scale
        x2 = (q[i + 2] - a * u[i + 2]) * scale
        x3 = (q[i + 3] - a * u[i + 3]) * scale
        q[i] = x0
        q[i + 1] = x1
        q[i + 2] = x2
        q[i + 3] = x3
        s0 += v[i] * x0
        s1 += v[i + 1] * x1
        s2 += v[i + 2] * x2
        s3 += v[i + 3] * x3
    for i in range(m, n):
        x = (q[i] - a * u[i]) * scale
        q[i] = x
        s0 += v[i] * x
    return (s0 + s1) + (s2 + s3)


@njit(**NJIT)
def two_loop(S, Y, rho, slots, gamma, g, q, a):
    """q <- -H g, H the L-BFGS inverse-Hessian approximation of the pairs
    (S[slots[j]], Y[slots[j]]), newest first, with initial scaling ``gamma`` = s'y / y'y of
    the newest pair; ``a`` is scratch of len(slots) floats. With no pair, q = -g.
    """
    m = len(slots)
    for i in range(len(q)):
        q[i] = 0.0
    if m == 0:
        _update_dot(q, 1.0, g, 1.0, g)
        return
    # first loop, newest to oldest: a_j = rho_j <s_j, q>; q -= a_j y_j
    dot = _update_dot(q, 1.0, g, 1.0, S[slots[0]])  # q = -g, and <s_0, q>
    for j in range(m):
        a[j] = rho[slots[j]] * dot
        last = j == m - 1
        nxt = Y[slots[j]] if last else S[slots[j + 1]]
        dot = _update_dot(q, a[j], Y[slots[j]], gamma if last else 1.0, nxt)
    # second loop, oldest to newest: b = rho_j <y_j, q>; q += (a_j - b) s_j
    for j in range(m - 1, -1, -1):
        b = rho[slots[j]] * dot
        nxt = Y[slots[j - 1]] if j > 0 else S[slots[j]]
        dot = _update_dot(q, b - a[j], S[slots[j]], 1.0, nxt)


@njit(**NJIT)
def orthant_point(x, d, t, pg, xt, step):
    """OWL-QN's trial point: xt = x + t d with the entries that leave the orthant of x (of
    -pg where x is 0) set to 0, and step = xt - x; one pass, as numpy's ``np.where``,
    ``x + t * d``, mask and difference round it."""
    for j in range(len(x)):
        xj = x[j]
        v = xj + t * d[j]
        side = xj if xj != 0 else -pg[j]
        if v * side <= 0:
            v = 0.0
        xt[j] = v
        step[j] = v - xj
