"""Measures of single runs and comparisons of two methods, shared by tables, claims, figures.

All functions take rows of the tidy frame of :mod:`.load` (columns ``run``, ``subopt``,
``log10_subopt``, x columns ``epoch``, ``oracle_epochs``, ``update_epochs``,
``seconds``...) and never fail on empty input: they return NaN / inf / None instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

TARGET_DECADES = tuple(10.0 ** -k for k in range(-1, 11))
"""Sub-optimality targets 1e1, 1e0, ..., 1e-10 used to compare two methods."""

TIE_TOLERANCE = 0.05
"""Two methods reaching a target within 5% of each other's x are tied."""

GAP_BURN_IN = 2.0
"""Epochs before the gap estimate is judged: stored gaps start at 100 and are only
refreshed when a sequence is visited, so the early estimate says nothing."""


def runs(rows: pd.DataFrame, x: str | None = None) -> Iterator[tuple[str, pd.DataFrame]]:
    """(run, its rows sorted by ``x`` or epoch) for each run in ``rows``."""
    if rows is None or not len(rows):
        return
    for run, g in rows.groupby("run", sort=True):
        yield run, g.sort_values(x or "epoch", kind="stable")


def first_row_reaching(run: pd.DataFrame, target: float) -> pd.Series | None:
    """The first trace row (in epoch order, or seconds when a trace has no epochs) with
    sub-optimality <= ``target``; None if there is none."""
    order = "epoch" if run["epoch"].notna().any() else "seconds"
    g = run.sort_values(order, kind="stable")
    hit = g[np.isfinite(g["subopt"]) & (g["subopt"] <= target)]
    return hit.iloc[0] if len(hit) else None


def first_reach(run: pd.DataFrame, x: str, target: float, interpolate: bool = False,
                x_max: float = math.inf) -> float:
    """The first ``x`` at which sub-optimality <= ``target`` (inf if never, within x_max).

    Without interpolation this is the first checkpoint; with it, the crossing point of the
    piecewise-linear curve of log10 sub-optimality between the last checkpoint above the
    target and the first one below.
    """
    d = run[[x, "subopt"]].dropna(subset=[x])
    d = d[d[x] <= x_max * (1 + 1e-12)]
    xs, s = d[x].to_numpy(float), d["subopt"].to_numpy(float)
    hit = np.flatnonzero(np.isfinite(s) & (s <= target))
    if not len(hit):
        return math.inf
    j = int(hit[0])
    if not interpolate or j == 0 or not (np.isfinite(s[j - 1]) and s[j - 1] > 0):
        return float(xs[j])
    lo = math.log10(max(s[j], 1e-300))
    hi = math.log10(s[j - 1])
    t = math.log10(target)
    frac = 1.0 if hi == lo else (hi - t) / (hi - lo)
    return float(xs[j - 1] + min(max(frac, 0.0), 1.0) * (xs[j] - xs[j - 1]))


def log_subopt_at(run: pd.DataFrame, x: str, x0: float, floor: float = 1e-16) -> float:
    """log10 sub-optimality at ``x0``, non-positive values counted as ``floor``; +inf
    where the primal is not finite (a diverged run)."""
    d = run[[x, "subopt"]].dropna(subset=[x])
    if not len(d):
        return math.nan
    s = d["subopt"].to_numpy(float)
    s = np.where(np.isfinite(s), np.maximum(s, floor), np.inf)
    xs = d[x].to_numpy(float)
    if x0 < xs[0] - 1e-12 or x0 > xs[-1] + 1e-12:
        return math.nan
    j = int(np.searchsorted(xs, x0, side="left"))
    if j < len(xs) and abs(xs[j] - x0) <= 1e-12 * max(1.0, abs(x0)):
        return float(np.log10(s[j]))
    if not np.isfinite(s[j - 1]) or not np.isfinite(s[j]):
        return math.inf
    return float(np.interp(x0, xs, np.log10(s)))


def x_range(rows: pd.DataFrame, x: str) -> float:
    """The budget every run of ``rows`` covers: min over runs of their largest ``x``."""
    ends = [g[x].max() for _, g in runs(rows, x) if g[x].notna().any()]
    return float(min(ends)) if ends else math.nan


def median(values) -> float:
    v = [float(a) for a in values if not (isinstance(a, float) and math.isnan(a))]
    return float(np.median(v)) if v else math.nan


def diverged(rows: pd.DataFrame) -> bool:
    """A non-finite primal anywhere, or a final primal above the initial one."""
    for _, g in runs(rows):
        p = g["primal"].to_numpy(float)
        if not np.all(np.isfinite(p)) or (len(p) > 1 and p[-1] > p[0]):
            return True
    return False


@dataclass
class Comparison:
    """Which of two methods gets to a lower sub-optimality faster along ``x``."""

    x: str
    budget: float
    target: float | None  # the deepest target either reached within the budget
    x_a: float  # x each needs to reach it (inf: never within the budget)
    x_b: float
    final_a: float  # log10 sub-optimality at the common budget
    final_b: float
    winner: str  # "a", "b", "tie" or "none" (no data)

    def describe(self, name_a: str, name_b: str, unit: str) -> str:
        if self.winner == "none":
            return "no comparable data"
        if self.target is None:
            return (f"neither reaches 1e1; log10 sub-opt at {self.budget:.3g} {unit}: "
                    f"{name_a} {self.final_a:.2f}, {name_b} {self.final_b:.2f}")

        def fmt(v):
            return f"{v:.3g}" if math.isfinite(v) else f"not within {self.budget:.3g}"
        return (f"to reach {self.target:.0e}: {name_a} {fmt(self.x_a)}, {name_b} "
                f"{fmt(self.x_b)} {unit}")


def resolution(*rows: pd.DataFrame) -> float:
    """How precisely P* is known for these rows (0 if unknown: no floor)."""
    vals = [float(v) for r in rows if r is not None and len(r) and "resolution" in r
            for v in r["resolution"].dropna().unique()]
    return max(vals) if vals else 0.0


def compare(a: pd.DataFrame, b: pd.DataFrame, x: str) -> Comparison:
    """Compare methods ``a`` and ``b`` (their rows; several runs = seeds, medians taken).

    Over the budget both cover, take the deepest target of :data:`TARGET_DECADES` (not
    below the resolution to which P* is known) that either reaches; the one that reaches
    it at a smaller ``x`` (interpolated) wins; within :data:`TIE_TOLERANCE` it is a tie.
    If neither reaches any target, the lower log10 sub-optimality at the common budget
    wins (by more than 0.1 decade, else a tie).
    """
    if a is None or b is None or not len(a) or not len(b):
        return Comparison(x, math.nan, None, math.nan, math.nan, math.nan, math.nan, "none")
    budget = min(x_range(a, x), x_range(b, x))
    if not math.isfinite(budget):
        return Comparison(x, math.nan, None, math.nan, math.nan, math.nan, math.nan, "none")
    final_a = median(log_subopt_at(g, x, budget) for _, g in runs(a, x))
    final_b = median(log_subopt_at(g, x, budget) for _, g in runs(b, x))
    floor = resolution(a, b)
    for target in reversed(TARGET_DECADES):
        if target < floor:
            continue  # below what P* is known to: not a meaningful target
        xa = median(first_reach(g, x, target, True, budget) for _, g in runs(a, x))
        xb = median(first_reach(g, x, target, True, budget) for _, g in runs(b, x))
        if math.isfinite(xa) or math.isfinite(xb):
            if math.isfinite(xa) and math.isfinite(xb) and abs(xa - xb) <= TIE_TOLERANCE * max(
                    xa, xb, 1e-12):
                winner = "tie"
            else:
                winner = "a" if xa < xb else "b"
            return Comparison(x, budget, target, xa, xb, final_a, final_b, winner)
    if abs(final_a - final_b) <= 0.1 or math.isnan(final_a) or math.isnan(final_b):
        winner = "tie"
    else:
        winner = "a" if final_a < final_b else "b"
    return Comparison(x, budget, None, math.inf, math.inf, final_a, final_b, winner)


def stall(run: pd.DataFrame, x: str) -> tuple[float, float, float]:
    """(budget, log10 sub-opt at the end, decades gained over the second half)."""
    d = run.dropna(subset=[x])
    if not len(d):
        return math.nan, math.nan, math.nan
    end = float(d[x].max())
    start = float(d[x].min())
    half = start + (end - start) / 2
    v_end = log_subopt_at(d, x, end)
    v_half = log_subopt_at(d, x, half)
    return end, v_end, v_half - v_end


def line_search_summary(run: pd.DataFrame) -> tuple[float, float]:
    """(mean line-search evaluations per update, share of solver time in the line search)
    over a whole run: cumulative ls_evals / updates at its last row, and the per-row
    shares weighted by the solver seconds of each interval."""
    g = run.sort_values("epoch")
    if not len(g):
        return math.nan, math.nan
    last = g.iloc[-1]
    updates = float(last.get("updates", math.nan))
    iters = float(last.get("ls_evals", math.nan)) / updates if updates and updates > 0 \
        else math.nan
    share = math.nan
    if "ls_time_share" in g:
        dt = np.diff(g["seconds"].to_numpy(float), prepend=0.0)
        s = g["ls_time_share"].to_numpy(float)
        ok = np.isfinite(s) & np.isfinite(dt) & (dt > 0)
        if ok.any() and dt[ok].sum() > 0:
            share = float((s[ok] * dt[ok]).sum() / dt[ok].sum())
    return iters, share


def gap_ratios(run: pd.DataFrame, burn_in: float = GAP_BURN_IN) -> np.ndarray:
    """gap estimate / true gap at the checkpoints after ``burn_in`` epochs where the true
    gap is above rounding (1e-10 relative to the primal)."""
    if not len(run) or "gap_estimate" not in run or "true_gap" not in run:
        return np.empty(0)
    g = run[run["update_epochs"] >= burn_in - 1e-9]
    true, est, p = (g[c].to_numpy(float) for c in ("true_gap", "gap_estimate", "primal"))
    ok = np.isfinite(true) & np.isfinite(est) & (true > 1e-10 * np.maximum(1.0, np.abs(p)))
    return est[ok] / true[ok]
