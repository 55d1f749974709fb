"""Catalyst's kappa moved by the run: by the share of the inner problem's gap in x_k's
certificate (``catalyst_tune``).

A round's solution x_k is certified by P(x_k) - D(mu), the inner problem's gap at x_k
plus what the proximal term leaves (``CatalystLoop.gap_estimate``'s excess, O(d)). Where
the inner gap is most of the certificate, one epoch of SDCA no longer solves the inner
problem and the run waits on it: kappa is too small (on CoNLL-2000 at c2 = 0.01 and
kappa n = 0.06 the share sat at 0.85-0.98 for 47 rounds, 50 epochs against 27.5 at
0.3). Where it is a sliver, the inner problem is solved far past what the outer loop
needs, and a smaller kappa buys a faster outer rate sqrt(lambda / (lambda + kappa)) (on
Dutch at c2 = 0.0026 and kappa n = 0.3 the share stayed below 0.01 for 30 rounds, 50.7
epochs against 27.3 at 0.05). The rule keeps the share between :data:`SHARE_LOW` and
:data:`SHARE_HIGH`, measured every :data:`PROBE_EVERY` rounds (each probe is a primal
pass at x_k, a scores-and-forward pass): kappa goes up at once where the share is
above the band and down only after :data:`LOW_PROBES` probes in a row below it, since
the share dips below it while a run leaves its start whatever kappa (``math.md`` section
10; the measurements: docs/history.md "Catalyst's kappa by the inner gap's share").
"""

from __future__ import annotations

SHARE_LOW = 0.1
"""Below this share of the inner gap in x_k's certificate, the inner problem is over-solved."""
SHARE_HIGH = 0.7
"""Above it, the inner problem is the bottleneck."""
PROBE_EVERY = 3
"""Rounds between two probes (the first at round ``PROBE_EVERY``)."""
LOW_PROBES = 2
"""Probes in a row below :data:`SHARE_LOW` before kappa goes down."""
KAPPA_UP = 1.5
KAPPA_DOWN = 2.0 / 3.0


class KappaRule:
    """Where the run probes and where kappa goes: ``kappa = rule.next(share, kappa)``
    after each probe; kappa never goes below ``least`` (the ratio's kappa, ``catalyst``
    x lambda)."""

    def __init__(self, least: float):
        self.least = least
        self._low = 0  # probes in a row below the band

    @staticmethod
    def probes(round_number: int) -> bool:
        """Whether round ``round_number`` (1, 2, ...) ends with a probe."""
        return round_number % PROBE_EVERY == 0

    def next(self, share: float, kappa: float) -> float:
        """kappa for the rounds after a probe that measured ``share``."""
        if share > SHARE_HIGH:
            self._low = 0
            return kappa * KAPPA_UP
        self._low = self._low + 1 if share < SHARE_LOW else 0
        if self._low < LOW_PROBES:
            return kappa
        self._low = 0
        return max(kappa * KAPPA_DOWN, self.least)


__all__ = ["KappaRule", "SHARE_HIGH", "SHARE_LOW"]
