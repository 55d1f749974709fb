"""Ctrl-C at a chosen moment of a fit: SDCA's ``run`` raising KeyboardInterrupt at its nth
call, as the signal raises it in the training loop."""

from __future__ import annotations


def ctrl_c_at_run(monkeypatch, n: int) -> dict:
    """Make the ``n``-th call of ``SDCA.run`` (counted over every fit from now) raise
    KeyboardInterrupt; the returned dict's ``"n"`` counts the calls."""
    from crfsdca.solvers.sdca import SDCA

    calls = {"n": 0}
    run = SDCA.run

    def interrupted(self, n_steps):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        run(self, n_steps)

    monkeypatch.setattr(SDCA, "run", interrupted)
    return calls
