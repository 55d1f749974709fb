"""Types of the commands' own numeric arguments, checked where they enter (argparse).

Each is an :class:`~crfsdca.solvers.options.Option` (a kind and an interval), as the solver
options are: ``--period 0``, ``--epochs inf``, ``--epochs nan`` or ``--lambda -1`` are
one-line usage errors (exit 2) before any work, never a hang or a traceback. NaN never
passes; an open bound at infinity excludes it, so "positive" means finite and > 0.
"""

from __future__ import annotations

import argparse

from ..solvers.options import Option


def number(bounds: str, kind: type = float):
    """An argparse ``type``: a ``kind`` in the interval ``bounds`` (e.g. ``"(0, inf)"``)."""
    option = Option("value", kind, None, "", bounds=bounds, nullable=True)

    def parse(text: str):
        try:
            return option.parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


POSITIVE = number("(0, inf)")
"""A finite number > 0 (a budget, a period, a tolerance, lambda)."""

NON_NEGATIVE = number("[0, inf)")
"""A finite number >= 0 (the L1 coefficient)."""

COUNT = number("[1, inf)", int)
"""An integer >= 1 (sequences, iterations, history pairs)."""

NON_NEGATIVE_INT = number("[0, inf)", int)
"""An integer >= 0 (a seed)."""
