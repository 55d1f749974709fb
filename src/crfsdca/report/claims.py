"""The paper's qualitative claims, each decided from the traces.

Every claim is a function of the tidy frame (:mod:`.load`, with sub-optimality) that
returns a :class:`Claim`: a verdict (``supported``, ``not supported`` or
``not enough data``) and one sentence with the numbers behind it. The decision rules and
their thresholds are in each function's docstring and in :data:`THRESHOLDS`; the
comparison of two methods is :func:`crfsdca.report.curves.compare` (who reaches the
deepest sub-optimality decade first, ties within 5%).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import curves
from .load import (
    DATASET_ORDER,
    dataset_sort_key,
    dataset_title,
    fmt_num,
    sdca_runs,
    select_labels,
)

SUPPORTED = "supported"
NOT_SUPPORTED = "not supported"
NO_DATA = "not enough data"

THRESHOLDS = {
    "stall_decades": 0.5,       # max sampling: < 0.5 decade gained over its last half ...
    "stall_behind": 2.0,        # ... while >= 2 decades (100x) above the reference
    "stall_min_budget": 5.0,    # ... judged only on runs of at least 5 oracle calls / n
    "stall_abs": 1e-3,          # ... or, without a reference, still above 1e-3
    "newton_fail_behind": 2.0,  # single Newton fails: >= 2 decades above the full search
    "theta_helps": 1.10,        # theta=0 needs >= 10% more oracle calls than theta=0.8
    "theta_monotone": 1.10,     # each larger theta <= 0.8 needs at most 10% more
    "theta_little_gain": 1.25,  # theta=1 at most 25% faster than theta=0.8
    "gap_factor": 2.0,          # estimate within a factor 2 of the true gap
    "ls_iters": (1.5, 2.5),     # "about 2 iterations"
    "ls_share": (0.20, 0.40),   # "about 30% of the time"
}


@dataclass
class Claim:
    key: str
    paper: str        # the claim as the paper states it
    verdict: str      # supported / not supported / not enough data
    evidence: str     # one sentence with the numbers
    figure: str = ""  # the figure that shows it


def _rows(frame: pd.DataFrame, label: str, dataset: str) -> pd.DataFrame:
    return select_labels(frame, [label], dataset)


def _datasets_with(frame: pd.DataFrame, *labels: str) -> list[str]:
    if not len(frame):
        return []
    out = []
    for ds in sorted(frame["dataset"].unique(), key=dataset_sort_key):
        if all(len(_rows(frame, lab, ds)) for lab in labels):
            out.append(ds)
    return out


def _coverage(checked: list[str], wanted=DATASET_ORDER) -> str:
    missing = [dataset_title(d) for d in wanted if d not in checked]
    return f" (no data for {', '.join(missing)})" if missing else ""


def _beats_everywhere(frame, key, paper, a, b, x, unit, figure, datasets=None) -> Claim:
    """``a`` beats ``b`` on every dataset that has both."""
    dss = [d for d in _datasets_with(frame, a, b) if datasets is None or d in datasets]
    if not dss:
        return Claim(key, paper, NO_DATA, f"no dataset has both {a} and {b} runs", figure)
    parts, wins = [], []
    for ds in dss:
        c = curves.compare(_rows(frame, a, ds), _rows(frame, b, ds), x)
        wins.append(c.winner == "a")
        note = {"a": "", "tie": " [tie]", "b": f" [{b} ahead]", "none": " [no data]"}[c.winner]
        parts.append(f"{dataset_title(ds)}: {c.describe(a, b, unit)}{note}")
    verdict = SUPPORTED if all(wins) else NOT_SUPPORTED
    n_ok = sum(wins)
    return Claim(key, paper, verdict, f"{a} ahead of {b} on {n_ok} of {len(dss)} datasets"
                 f"{_coverage(dss, datasets or DATASET_ORDER)}; " + "; ".join(parts) + ".",
                 figure)


def gap_beats_uniform(frame: pd.DataFrame) -> Claim:
    """SDCA-GAP reaches the deepest sub-optimality decade in fewer oracle calls than
    uniform SDCA on every dataset that has both."""
    return _beats_everywhere(frame, "gap_beats_uniform",
                             "Gap sampling beats uniform sampling on every dataset.",
                             "SDCA-GAP", "SDCA", "oracle_epochs", "oracle calls / n",
                             "fig4_methods")


def importance_worse_ocr(frame: pd.DataFrame) -> Claim:
    """Uniform SDCA beats SDCA-IMP on OCR (same comparison as above)."""
    return _beats_everywhere(frame, "importance_worse_ocr",
                             "Importance sampling does worse than uniform sampling on OCR.",
                             "SDCA", "SDCA-IMP", "oracle_epochs", "oracle calls / n",
                             "fig2_sampling", datasets=["ocr"])


def gapimp_worse_than_gap(frame: pd.DataFrame) -> Claim:
    """SDCA-GAP beats SDCA-GAPxIMP on every dataset that has both (OCR in the paper)."""
    return _beats_everywhere(frame, "gapimp_worse_than_gap",
                             "Gap x importance sampling does worse than gap sampling.",
                             "SDCA-GAP", "SDCA-GAPxIMP", "oracle_epochs", "oracle calls / n",
                             "fig2_sampling", datasets=["ocr"])


def max_fails_ocr(frame: pd.DataFrame) -> Claim:
    """SDCA-MAX on OCR fails to converge: over the second half of its budget (at least 5
    oracle calls / n) its log10 sub-optimality drops by less than 0.5, while it stays at
    least 2 decades above the best of SDCA-GAP / SDCA / SDCA-IMP at the same budget (or,
    without those, above 1e-3)."""
    key, paper, fig = "max_fails_ocr", "Max sampling fails to converge on OCR.", \
        "fig2_sampling"
    th = THRESHOLDS
    mx = _rows(frame, "SDCA-MAX", "ocr")
    if not len(mx):
        return Claim(key, paper, NO_DATA, "no SDCA-MAX run on OCR", fig)
    x = "oracle_epochs"
    stats = [curves.stall(g, x) for _, g in curves.runs(mx, x)]
    budget = min(s[0] for s in stats)
    if not budget >= th["stall_min_budget"]:
        return Claim(key, paper, NO_DATA, f"SDCA-MAX on OCR ran {budget:.3g} oracle calls / n, "
                     f"fewer than the {th['stall_min_budget']:g} needed to judge a plateau", fig)
    final = curves.median(s[1] for s in stats)
    gained = curves.median(s[2] for s in stats)
    refs = []
    for lab in ("SDCA-GAP", "SDCA", "SDCA-IMP"):
        r = _rows(frame, lab, "ocr")
        if len(r):
            v = curves.median(curves.log_subopt_at(g, x, min(budget, g[x].max()))
                               for _, g in curves.runs(r, x))
            if math.isfinite(v):
                refs.append((v, lab))
    stalled = gained < th["stall_decades"]
    if refs:
        ref_v, ref_lab = min(refs)
        behind = final - ref_v
        fails = stalled and behind >= th["stall_behind"]
        ref_txt = f"; {ref_lab} is at {ref_v:.2f} at the same budget ({behind:.1f} decades " \
                  "lower)"
    else:
        fails = stalled and final > math.log10(th["stall_abs"])
        ref_txt = "; no SDCA-GAP/SDCA/SDCA-IMP run on OCR to compare with"
    return Claim(key, paper, SUPPORTED if fails else NOT_SUPPORTED,
                 f"SDCA-MAX on OCR ends at log10 sub-optimality {final:.2f} after {budget:.3g} "
                 f"oracle calls / n, gaining {gained:.2f} decades over the second half of its "
                 f"budget{ref_txt}.", fig)


def nonuniformity_ner(frame: pd.DataFrame) -> Claim:
    """On NER, with gap sampling: x(theta) = oracle calls / n to reach the deepest decade
    that theta = 0.8 reaches within the budget all theta runs cover. Supported if
    x(0) >= 1.1 x(0.8) (helps), each larger theta up to 0.8 needs at most 10% more than
    the previous one (monotone), and x(1) >= x(0.8) / 1.25 (little gain past 0.8)."""
    key, paper, fig = ("nonuniformity_ner", "Increasing the non-uniformity helps on NER, "
                       "with little gain past 0.8.", "fig3_nonuniformity")
    th = THRESHOLDS
    data = sdca_runs(frame, "gap", vary="non_uniformity")
    data = data[data["dataset"] == "ner"] if len(data) else data
    thetas = sorted(data["non_uniformity"].unique()) if len(data) else []
    if not any(np.isclose(thetas, 0.8)) or not [t for t in thetas if t < 0.8 - 1e-9]:
        return Claim(key, paper, NO_DATA, "needs SDCA-GAP runs on NER at theta = 0.8 and a "
                     f"smaller theta (have: {', '.join(fmt_num(t) for t in thetas) or 'none'})",
                     fig)
    x = "oracle_epochs"
    budget = curves.x_range(data, x)
    by = {t: data[np.isclose(data["non_uniformity"], t)] for t in thetas}
    ref = by[[t for t in thetas if np.isclose(t, 0.8)][0]]
    target = None
    floor = curves.resolution(data)
    for t in reversed(curves.TARGET_DECADES):
        if t >= floor and math.isfinite(curves.median(curves.first_reach(g, x, t, True, budget)
                                        for _, g in curves.runs(ref, x))):
            target = t
            break
    if target is None:
        return Claim(key, paper, NO_DATA, "SDCA-GAP at theta = 0.8 on NER reaches no "
                     "sub-optimality decade within the common budget", fig)
    need = {t: curves.median(curves.first_reach(g, x, target, True, budget)
                              for _, g in curves.runs(r, x)) for t, r in by.items()}
    t08 = [t for t in thetas if np.isclose(t, 0.8)][0]
    lows = [t for t in thetas if t <= t08 + 1e-9]
    helps = need[lows[0]] >= th["theta_helps"] * need[t08]
    monotone = all(need[b] <= th["theta_monotone"] * need[a]
                   for a, b in zip(lows, lows[1:], strict=False))
    highs = [t for t in thetas if t > t08 + 1e-9]
    little = all(need[t] >= need[t08] / th["theta_little_gain"] for t in highs)

    def f(v):
        return f"{v:.3g}" if math.isfinite(v) else "never"

    detail = ", ".join(f"theta={fmt_num(t)}: {f(need[t])}" for t in thetas)
    low = (f"theta={fmt_num(lows[0])} needs {need[lows[0]] / need[t08]:.2f}x the oracle calls "
           "of theta=0.8" if math.isfinite(need[lows[0]]) else
           f"theta={fmt_num(lows[0])} does not reach it within the budget")
    text = (f"oracle calls / n to reach {target:.0e} on NER (budget {budget:.3g}): {detail}; "
            + low + ("" if monotone else "; not monotone in theta up to 0.8"))
    if highs:
        text += "; theta=1 vs 0.8: " + ", ".join(
            f"{need[t08] / need[t]:.2f}x as fast" if math.isfinite(need[t]) else "never reaches"
            for t in highs)
        verdict = SUPPORTED if helps and monotone and little else NOT_SUPPORTED
    else:
        text += "; no run above theta = 0.8, so 'little gain past 0.8' is unchecked"
        verdict = NOT_SUPPORTED if not (helps and monotone) else NO_DATA
    return Claim(key, paper, verdict, text + ".", fig)


def single_newton_fails_ner_only(frame: pd.DataFrame) -> Claim:
    """SDCA-GAP with a single Newton step "fails" on a dataset if its primal diverges (not
    finite, or ends above its start) or, at the common budget in updates / n, it is at
    least 2 decades above SDCA-GAP with the full line search. Supported if it fails on
    NER and on no other dataset."""
    key, paper, fig = ("single_newton_ner_only", "A single Newton step instead of the line "
                       "search fails on NER only.", "fig8_line_search")
    a, b, x = "SDCA-GAP single Newton", "SDCA-GAP", "update_epochs"
    dss = _datasets_with(frame, a, b)
    if "ner" not in dss:
        return Claim(key, paper, NO_DATA, "no NER dataset with both SDCA-GAP and SDCA-GAP "
                     "single Newton runs" + (f" (have {', '.join(map(dataset_title, dss))})"
                                             if dss else ""), fig)
    fails, parts = {}, []
    for ds in dss:
        ra, rb = _rows(frame, a, ds), _rows(frame, b, ds)
        budget = min(curves.x_range(ra, x), curves.x_range(rb, x))
        va = curves.median(curves.log_subopt_at(g, x, budget) for _, g in curves.runs(ra, x))
        vb = curves.median(curves.log_subopt_at(g, x, budget) for _, g in curves.runs(rb, x))
        div = curves.diverged(ra)
        fails[ds] = div or not (va - vb < THRESHOLDS["newton_fail_behind"])
        parts.append(f"{dataset_title(ds)}: {'diverges, ' if div else ''}log10 sub-opt at "
                     f"{budget:.3g} updates / n {va:.2f} (single Newton) vs {vb:.2f} (line "
                     f"search) -> {'fails' if fails[ds] else 'fine'}")
    ok = fails["ner"] and not any(v for d, v in fails.items() if d != "ner")
    return Claim(key, paper, SUPPORTED if ok else NOT_SUPPORTED,
                 "; ".join(parts) + _coverage(dss) + ".", fig)


def gap_estimate_factor2(frame: pd.DataFrame) -> Claim:
    """The gap estimate (mean of stored g_i) divided by the true duality gap stays in
    [1/2, 2] at every checkpoint after the first 2 epochs (stored gaps start at 100) where
    the true gap is above rounding, on every dataset's SDCA-GAP runs."""
    key, paper, fig = ("gap_estimate_factor2", "The gap estimate stays within a factor 2 of "
                       "the true duality gap.", "fig9_gap_estimate")
    data = sdca_runs(frame, "gap")
    parts, oks, checked = [], [], []
    for ds in sorted(data["dataset"].unique(), key=dataset_sort_key) if len(data) else []:
        r = np.concatenate([curves.gap_ratios(g) for _, g in curves.runs(
            data[data["dataset"] == ds])] or [np.empty(0)])
        if not len(r):
            continue
        checked.append(ds)
        factor = np.maximum(r, 1 / r)
        within = float(np.mean(factor <= THRESHOLDS["gap_factor"]))
        oks.append(bool(np.all(factor <= THRESHOLDS["gap_factor"])))
        parts.append(f"{dataset_title(ds)}: estimate/true in [{r.min():.2f}, {r.max():.2f}] "
                     f"over {len(r)} checkpoints ({100 * within:.0f}% within a factor 2)")
    if not checked:
        return Claim(key, paper, NO_DATA, "no SDCA-GAP checkpoint after "
                     f"{curves.GAP_BURN_IN:g} epochs with a known true gap", fig)
    return Claim(key, paper, SUPPORTED if all(oks) else NOT_SUPPORTED,
                 "; ".join(parts) + _coverage(checked) + ".", fig)


def gap_fewer_updates_than_sagnus(frame: pd.DataFrame) -> Claim:
    """Along parameter updates / n (same comparison as gap vs uniform): SDCA-GAP beats
    SAG-NUS on CONLL, NER and POS, and does not on OCR. Supported if that holds on every
    one of these datasets that has both runs."""
    key, paper, fig = ("gap_vs_sagnus_updates", "SDCA-GAP needs fewer parameter updates than "
                       "SAG-NUS on CONLL, NER and POS, but not on OCR.", "fig4_methods")
    a, b, x = "SDCA-GAP", "SAG-NUS", "update_epochs"
    dss = _datasets_with(frame, a, b)
    if not dss:
        return Claim(key, paper, NO_DATA, "no dataset has both SDCA-GAP and SAG-NUS runs", fig)
    parts, ok = [], []
    for ds in dss:
        c = curves.compare(_rows(frame, a, ds), _rows(frame, b, ds), x)
        expected = c.winner != "a" if ds == "ocr" else c.winner == "a"
        ok.append(expected)
        who = {"a": a, "b": b, "tie": "tie", "none": "no data"}[c.winner]
        parts.append(f"{dataset_title(ds)}: {c.describe(a, b, 'updates / n')} "
                     f"[{who}{'' if expected else ', unlike the paper'}]")
    return Claim(key, paper, SUPPORTED if all(ok) else NOT_SUPPORTED,
                 "; ".join(parts) + _coverage(dss) + ".", fig)


def line_search_cost(frame: pd.DataFrame) -> Claim:
    """SDCA-GAP (Newton line search, sub-precision 1e-3): mean line-search iterations per
    update (cumulative ls_evals / updates) and share of solver time in the line search
    (time-weighted), per dataset; supported if their means over datasets are within
    [1.5, 2.5] iterations and [20%, 40%] of the time."""
    key, paper, fig = ("line_search_cost", "The line search takes about 30% of the time, at "
                       "about 2 iterations per update.", "subprecision")
    data = sdca_runs(frame, "gap")
    per = []
    for ds in sorted(data["dataset"].unique(), key=dataset_sort_key) if len(data) else []:
        vals = [curves.line_search_summary(g) for _, g in curves.runs(
            data[data["dataset"] == ds])]
        it = curves.median(v[0] for v in vals)
        sh = curves.median(v[1] for v in vals)
        if math.isfinite(it) or math.isfinite(sh):
            per.append((ds, it, sh))
    if not per:
        return Claim(key, paper, NO_DATA, "no SDCA-GAP run with line-search counters", fig)
    its = [p[1] for p in per if math.isfinite(p[1])]
    shs = [p[2] for p in per if math.isfinite(p[2])]
    if not its or not shs:
        return Claim(key, paper, NO_DATA, "SDCA-GAP runs lack line-search iterations or time "
                     "shares", fig)
    mi, ms = float(np.mean(its)), float(np.mean(shs))
    lo_i, hi_i = THRESHOLDS["ls_iters"]
    lo_s, hi_s = THRESHOLDS["ls_share"]
    ok = lo_i <= mi <= hi_i and lo_s <= ms <= hi_s
    detail = "; ".join(f"{dataset_title(d)}: {i:.2f} iterations, {100 * s:.1f}% of the time"
                       for d, i, s in per)
    return Claim(key, paper, SUPPORTED if ok else NOT_SUPPORTED,
                 f"mean over datasets {mi:.2f} iterations per update and {100 * ms:.1f}% of "
                 f"solver time ({detail}).", fig)


CLAIMS: tuple[Callable[[pd.DataFrame], Claim], ...] = (
    gap_beats_uniform,
    max_fails_ocr,
    importance_worse_ocr,
    gapimp_worse_than_gap,
    nonuniformity_ner,
    single_newton_fails_ner_only,
    gap_estimate_factor2,
    gap_fewer_updates_than_sagnus,
    line_search_cost,
)


def evaluate_claims(frame: pd.DataFrame) -> list[Claim]:
    """Every claim of :data:`CLAIMS`, in the paper's order."""
    return [c(frame) for c in CLAIMS]
