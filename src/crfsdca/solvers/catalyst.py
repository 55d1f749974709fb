"""Catalyst's accelerated proximal loop around SDCA, with the original problem's gap.

Catalyst (Lin, Mairal and Harchaoui, 2015) solves P(w) = f(w) + g(w) (g = lam/2 ||w||^2
+ l1 ||w||_1) through the better-conditioned problems P(w) + kappa/2 ||w - y||^2, one
per outer round, each about a point y extrapolated from the last two rounds' solutions
with the momentum (1 - sqrt q) / (1 + sqrt q), q = lam / (lam + kappa). SDCA needs no
change for it: the inner regularizer kappa/2 ||w - y||^2 + g(w) is an elastic net of
lam' = lam + kappa about the center kappa y / lam', so SDCA runs with lam' on the
shifted dual image v = (u + kappa y) / lam' (u = (1/n) sum_i psi_i(mu_i), the dual
sum) and a new y only shifts v. The same marginals mu are a dual point of the original
problem too: D(mu) = (1/n) sum_i H~(mu_i) - g*(u) <= P*, so P(w) - D(mu) certifies every
iterate w (``math.md`` section 10). The passes over the weights are fused kernels: the
gap estimate is read ten times an epoch, on up to millions of weights, and reads w =
S(v) from v (the pipeline's elastic-net steps leave w to be set); a round's end moves
the points, sets w and sums the moved point's gap terms (g*(u) too, for the dual) in one
pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..model.features import soft_threshold
from ..runtime.jit import NJIT, NJIT_FAST, stream_copy
from .sdca_linesearch import soft


@njit(inline="always", **NJIT)
def _at(support, i):
    """The weight index of the i-th entry of a point kept on ``support`` (empty: every
    weight, the point dense)."""
    return support[i] if len(support) > 0 else i


@njit(inline="always", **NJIT)
def _inner(v, j, threshold, thresholded):
    """The inner weight w_j = S(v_j) (L1) or v_j, read from v alone: the pipeline's
    elastic-net steps leave w to be set when it is next read (:mod:`.pipeline`)."""
    return soft(v[j], threshold) if thresholded else v[j]


@njit(**NJIT_FAST)
def _conjugate(v, center, support, lam, l1, inner_lam, kappa):
    """g*(u) = 1/(2 lam) ||S_l1(u)||^2 at u = lam' v - kappa y."""
    total = 0.0
    for i in range(len(center)):
        u = inner_lam * v[_at(support, i)] - kappa * center[i]
        s = max(abs(u) - l1, 0.0)
        total += s * s
    return total / (2.0 * lam)


@njit(**NJIT_FAST)
def _gap_terms(v, center, support, lam, l1, inner_lam, kappa, threshold, thresholded):
    """(g*(u), -<u, w> + g(w)) at u = lam' v - kappa y and w = S(v): the two parts of what
    P(w) - D(mu) exceeds the inner problem's gap by (:func:`_excess`)."""
    conj = 0.0
    rest = 0.0
    for i in range(len(center)):
        j = _at(support, i)
        u = inner_lam * v[j] - kappa * center[i]
        s = max(abs(u) - l1, 0.0)
        conj += s * s
        x = _inner(v, j, threshold, thresholded)
        rest += x * (0.5 * lam * x - u) + l1 * abs(x)
    return conj / (2.0 * lam), rest


@njit(**NJIT)
def _next_round(v, w, center, previous, support, momentum, step, threshold, thresholded,
                lam, l1, inner_lam, kappa):
    """y' = x + momentum (x - x_prev) at x = S(v); v += step (y' - y); w = S(v) (L1).
    Returns :func:`_gap_terms` at the moved v and w from the same pass (u does not move:
    lam' v - kappa y shifts by kappa (y' - y) - kappa (y' - y)); sequential sums, as a
    loop that stores must sum (:mod:`crfsdca.runtime.jit`)."""
    conj = 0.0
    rest = 0.0
    for i in range(len(center)):
        j = _at(support, i)
        x = _inner(v, j, threshold, thresholded)
        y = x + momentum * (x - previous[i])
        previous[i] = x
        v[j] += step * (y - center[i])
        center[i] = y
        x = _inner(v, j, threshold, thresholded)
        if thresholded:
            w[j] = x
        u = inner_lam * v[j] - kappa * y
        s = max(abs(u) - l1, 0.0)
        conj += s * s
        rest += x * (0.5 * lam * x - u) + l1 * abs(x)
    return conj / (2.0 * lam), rest


def _excess(terms: tuple[float, float]) -> float:
    """g*(u) - <u, w> + g(w) from :func:`_gap_terms`: >= 0 by Fenchel-Young; a sum with
    cancellation, so clipped at 0."""
    return max(terms[0] + terms[1], 0.0)


@njit(**NJIT)
def _scaled_sum(x, a, b, y, support):
    """x = a x + b y in place, y kept on ``support`` (x is 0 off it, and stays 0; numpy's
    two operations would allocate a temporary of the weights' size)."""
    for i in range(len(y)):
        j = _at(support, i)
        x[j] = a * x[j] + b * y[i]


L1_MOMENTUM = 0.5
"""The share of Catalyst's momentum (1 - sqrt q) / (1 + sqrt q) a run keeps with an L1
term (c1 > 0), where the whole overshoots; without one it keeps all of it. Measured on
the practitioner's data (``benchmarks/studies/catalyst_momentum.py``, epochs to 3e-4):
with c1 = 0.1 at c2 = 0.0026 / 0.01, CoNLL-2000 took 96.0 / 44.0 epochs with the whole
momentum, 40.4 / 32.0 with half, 55.0 / 29.8 with none; Dutch 43.7 / 23.0, 35.1 / 19.4,
53.5 / 23.3; at c2 >= 0.1 the three within one epoch but for Dutch at c2 = 1 (6.5, 7.1,
9.0). With c1 = 0 half of it costs up to 2.1x the epochs (Dutch, c2 = 0.0026: 105.3
against 50.7)."""


def momentum_share(option: float | None, l1: float) -> float:
    """The share of Catalyst's momentum a run keeps: the option ``catalyst_momentum``, or
    where it is None, all of it without L1 and :data:`L1_MOMENTUM` with it."""
    if option is not None:
        return float(option)
    return L1_MOMENTUM if l1 > 0 else 1.0


def kappa_ratio(ratio: float, floor: float, lam_n: float) -> float:
    """kappa / lambda of the options ``catalyst`` (the ratio) and ``catalyst_floor`` (the
    least kappa n): 0 (no outer loop) when the ratio is 0; the ratio alone where lambda
    is 0 (a problem SDCA refuses)."""
    if not ratio > 0:
        return 0.0
    return max(ratio, floor / lam_n) if lam_n > 0 else ratio


class CatalystLoop:
    """The outer loop's state: the center y, the previous round's weights, the momentum
    (a share of Catalyst's: :func:`momentum_share`); SDCA keeps the inner problem's v and
    w (``w = S_{l1/lam'}(v)``).

    With a feature mask, v, w and both points are 0 off the feature set, so y and x_k are
    kept on it alone (``support``: CoNLL-2000's 453,094 features of 7.4 million weights,
    two vectors of 3.5 MiB instead of 56) and the round's passes read the weights there
    alone; the sums run in the same order over the same nonzero terms."""

    def __init__(self, lam: float, l1: float, ratio: float, x0: np.ndarray,
                 w_hat: np.ndarray, weights: np.ndarray | None = None,
                 support: np.ndarray | None = None, share: float = 1.0):
        """Start at x0, the original problem's weights of the marginals (w_hat(mu) = u /
        lam their dual image), or at ``weights`` (where an earlier run ended): the first
        center is then the one whose inner weights they are. ``support``: the sorted
        indices off which x0, w_hat and ``weights`` are 0 (None: the points dense).
        ``share``: the part of Catalyst's momentum kept (:func:`momentum_share`)."""
        self.lam, self.l1, self.share = lam, l1, share
        self._set_kappa(ratio * lam)
        self.dim = len(x0)
        self.support = (np.zeros(0, dtype=np.int64) if support is None
                        else np.asarray(support, dtype=np.int64))
        start = x0 if weights is None else np.asarray(weights, dtype=np.float64)
        if start.shape != x0.shape:
            raise ValueError(f"initial weights of size {start.size}; the problem has "
                             f"{x0.size}")
        start = self.on_support(start)
        if weights is not None:  # v = start + sign(start) t, or within [-t, t] where 0
            t = l1 / self.inner_lam
            hat = self.on_support(w_hat)
            v = np.where(start != 0, start + np.sign(start) * t,
                         np.clip(hat * (lam / self.inner_lam), -t, t))
            self.center = stream_copy((self.inner_lam * v - lam * hat) / self.kappa)
        else:
            self.center = stream_copy(start)
        self.previous = stream_copy(start)
        self.rounds = 0

    def _set_kappa(self, kappa: float) -> None:
        """kappa, the inner lambda' = lambda + kappa and the momentum that goes with them."""
        self.kappa = kappa
        self.inner_lam = self.lam + kappa
        sq = (self.lam / self.inner_lam) ** 0.5
        self.momentum = self.share * (1.0 - sq) / (1.0 + sq)

    def retune(self, kappa: float, v: np.ndarray, w: np.ndarray) -> float:
        """Move to ``kappa`` between two rounds: v = (u + kappa y) / lam' of the same dual
        sum u and center y, in place, and w = S(v) where it is another array (L1); returns
        the new lam'. The marginals, and so the dual and the certificate, do not move."""
        old_lam, old_kappa = self.inner_lam, self.kappa
        self._set_kappa(kappa)
        _scaled_sum(v, old_lam / self.inner_lam, (kappa - old_kappa) / self.inner_lam,
                    self.center, self.support)
        if w is not v:
            soft_threshold(v, self.l1 / self.inner_lam, out=w)
        return self.inner_lam

    def on_support(self, x: np.ndarray) -> np.ndarray:
        """x's entries on the support (x itself when the points are dense)."""
        return x[self.support] if len(self.support) else x

    def dense(self, point: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """A point of the loop (``previous``, ``center``) over every weight, in ``out``
        if given (overwritten) or a new array."""
        if len(self.support) == 0:
            if out is None:
                return point.copy()
            out[:] = point
            return out
        if out is None:
            out = np.zeros(self.dim)
        else:
            out[:] = 0.0
        out[self.support] = point
        return out

    @property
    def nbytes(self) -> int:
        """Bytes of the loop's state (its two points and their support)."""
        return self.center.nbytes + self.previous.nbytes + self.support.nbytes

    def inner_image(self, w_hat: np.ndarray) -> np.ndarray:
        """v of the inner problem from w_hat(mu) = u / lam (in place)."""
        _scaled_sum(w_hat, self.lam / self.inner_lam, self.kappa / self.inner_lam,
                    self.center, self.support)
        return w_hat

    def _args(self):
        return self.center, self.support, self.lam, self.l1, self.inner_lam, self.kappa

    def _inner_args(self):
        """The threshold of w = S(v) and whether there is one (L1; else w is v)."""
        return self.l1 / self.inner_lam, self.l1 > 0

    def dual(self, v: np.ndarray, mean_entropy: float, conjugate: float | None = None) -> float:
        """D(mu) of the original problem, a lower bound on P*; ``conjugate``: g*(u) where
        a pass at the same u gave it (:meth:`next_round`)."""
        if conjugate is None:
            conjugate = _conjugate(v, *self._args())
        return mean_entropy - conjugate

    def gap_terms(self, v: np.ndarray) -> tuple[float, float]:
        """(g*(u), -<u, w> + g(w)) at the inner weights w = S(v), read from v."""
        return _gap_terms(v, *self._args(), *self._inner_args())

    def gap_estimate(self, inner_gap: float, v: np.ndarray,
                     terms: tuple[float, float] | None = None) -> float:
        """An estimate of P(w) - D(mu) from the inner problem's gap estimate (the mean of
        SDCA's stored block gaps): P_inner(w) - D_inner(mu) equals the mean of the block
        gaps, and P(w) - D(mu) exceeds it by g*(u) - <u, w> + g(w) >= 0 (``terms``: its
        parts where a pass at the same v gave them, :meth:`gap_terms`). w = S(v) is read
        from v, so the estimate needs no w set."""
        return inner_gap + _excess(self.gap_terms(v) if terms is None else terms)

    def next_round(self, v: np.ndarray, w: np.ndarray) -> tuple[float, float]:
        """End a round at the inner weights S(v): extrapolate the new center and shift v,
        setting w = S(v) on the support (L1; in place); returns :meth:`gap_terms` at the
        moved v, made in the same pass."""
        terms = _next_round(v, w, self.center, self.previous, self.support, self.momentum,
                            self.kappa / self.inner_lam, *self._inner_args(),
                            self.lam, self.l1, self.inner_lam, self.kappa)
        self.rounds += 1
        return terms


__all__ = ["CatalystLoop", "L1_MOMENTUM", "kappa_ratio", "momentum_share"]
