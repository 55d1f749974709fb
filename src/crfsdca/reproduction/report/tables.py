"""Tables from the runs: time to target, line-search sub-precision, reference optima, and
the seconds to a relative sub-optimality side by side with CRFsuite.

Each table is a pandas DataFrame (what the CSV holds) plus a markdown rendering. Written
atomically by :func:`write_table`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Sequence

import pandas as pd

from ...runtime.io import atomic_write
from . import catalog, curves
from .load import (
    RunSet,
    dataset_sort_key,
    dataset_title,
    fmt_num,
    foreign_below,
    method_sort_key,
    subprecision_runs,
)

TARGETS = (1e-2, 1e-4, 1e-6)
"""Absolute sub-optimality targets P - P* of the time-to-target table (as the paper)."""

DASH = "—"
UNRESOLVED = "n/r"
"""Markdown cell of a target below the precision to which P* is known."""

TIME_COLUMNS = {"epoch": "epochs", "oracle_epochs": "oracle calls / n",
                "update_epochs": "updates / n", "seconds": "seconds"}


def format_cell(v, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        if math.isinf(v):
            return DASH
        return f"{v:.{digits}g}"
    return str(v)


def _numeric(col: pd.Series) -> bool:
    """Whether a column's non-empty cells all read as numbers ("—", "%", "(k/m)" aside)."""
    seen = False
    for v in col:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            seen = True
            continue
        t = re.sub(r"\s*\(\d+/\d+\)$", "", str(v)).strip().rstrip("%").replace(",", "")
        if t in ("", DASH, UNRESOLVED):
            continue
        try:
            float(t)
        except ValueError:
            return False
        seen = True
    return seen


def markdown_table(df: pd.DataFrame, columns: Sequence[str] | None = None,
                   align: str | None = None) -> str:
    """A GitHub-flavoured markdown table of ``df`` (cells already strings or numbers)."""
    columns = list(columns if columns is not None else df.columns)
    if not len(columns):
        return "_(empty table)_\n"
    align = align or "".join("r" if _numeric(df[c]) else "l" for c in columns)
    seps = {"l": "---", "r": "--:", "c": ":-:"}
    lines = ["| " + " | ".join(str(c) for c in columns) + " |",
             "|" + "|".join(seps[a] for a in align[:len(columns)].ljust(len(columns), "r"))
             + "|"]
    for _, row in df[columns].iterrows() if len(df) else []:
        cells = [format_cell(row[c]) if not isinstance(row[c], str) else row[c] for c in columns]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if not len(df):
        lines.append("| " + " | ".join(["_no data_"] + [""] * (len(columns) - 1)) + " |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- time to target

def time_to_target(frame: pd.DataFrame, targets: Iterable[float] = TARGETS,
                   methods: Iterable[str] | None = None) -> pd.DataFrame:
    """For each dataset x method x target: the first checkpoint at which P - P* <= target,
    as epochs (the trace's epoch column), oracle calls / n, updates / n and seconds; inf
    when never reached; ``resolved`` is False when the target is below the precision to
    which P* is known (the values are then not meaningful). Several runs of a method
    (seeds): medians over the runs that reached it, and ``reached`` counts them.
    ``methods`` defaults to every method with default options (no variants)."""
    cols = ["dataset", "method", "target", "resolved", "runs", "reached", *TIME_COLUMNS]
    if not len(frame):
        return pd.DataFrame(columns=cols)
    if methods is None:
        methods = frame.loc[~frame["variant"].astype(bool), "label"].unique()
    methods = sorted(set(methods), key=method_sort_key)
    rows = []
    for ds in sorted(frame["dataset"].unique(), key=dataset_sort_key):
        for m in methods:
            sub = frame[(frame["dataset"] == ds) & (frame["label"] == m)]
            if not len(sub):
                continue
            groups = [g for _, g in curves.runs(sub)]
            for t in targets:
                hits = []
                for g in groups:
                    row = curves.first_row_reaching(g, t)
                    if row is not None:
                        hits.append({c: float(row[c]) for c in TIME_COLUMNS})
                res = curves.resolution(sub)
                rec = {"dataset": ds, "method": m, "target": t, "resolved": bool(t >= res),
                       "runs": len(groups), "reached": len(hits)}
                for c in TIME_COLUMNS:
                    rec[c] = curves.median(h[c] for h in hits) if hits else math.inf
                rows.append(rec)
    return pd.DataFrame(rows, columns=cols)


def time_to_target_markdown(table: pd.DataFrame,
                            shown: Sequence[str] = ("epoch", "oracle_epochs", "seconds")) -> str:
    """Wide markdown: one row per dataset x method, per target its epochs, oracle calls
    / n and seconds ("—": never reached within the run's budget)."""
    targets = sorted(table["target"].unique(), reverse=True) if len(table) else list(TARGETS)
    header = ["dataset", "method"] + [f"{fmt_num(t)}: {TIME_COLUMNS[c]}" for t in targets
                                      for c in shown]
    out = []
    if len(table):
        for (ds, m), g in table.groupby(["dataset", "method"], sort=False):
            rec = {"dataset": dataset_title(ds), "method": m}
            for t in targets:
                r = g[g["target"] == t]
                for c in shown:
                    if not len(r):
                        rec[f"{fmt_num(t)}: {TIME_COLUMNS[c]}"] = ""
                        continue
                    v, reached, n = float(r[c].iloc[0]), int(r["reached"].iloc[0]), int(
                        r["runs"].iloc[0])
                    if not bool(r["resolved"].iloc[0]):
                        rec[f"{fmt_num(t)}: {TIME_COLUMNS[c]}"] = UNRESOLVED
                        continue
                    cell = format_cell(v)
                    if math.isfinite(v) and n > 1 and reached < n:
                        cell += f" ({reached}/{n})"
                    rec[f"{fmt_num(t)}: {TIME_COLUMNS[c]}"] = cell
            out.append(rec)
    text = markdown_table(pd.DataFrame(out, columns=header), header)
    if UNRESOLVED in text:
        text += (f"\n{UNRESOLVED}: target below the precision to which P* is known on that "
                 "dataset (see the P* table).\n")
    return text


# ----------------------------------------------------------------------------- CRFsuite speed

REL_TARGETS = (1e-2, 1e-4, 1e-6)
"""Relative sub-optimality targets (P - P*) / P* of the CRFsuite comparison."""

SPEED_METHODS = ("SDCA", "SDCA-GAP", "SAG-NUS", "OEG", "L-BFGS", "CRFsuite L-BFGS")
"""Methods (default options) of the CRFsuite comparison, in column order."""

CRFSUITE, SPEED_REFERENCE = "CRFsuite L-BFGS", "SDCA-GAP"
RATIO = "ratio"
"""CSV column of CRFsuite's seconds / SDCA-GAP's seconds."""


def _seconds_to_reach(sub: pd.DataFrame, target: float) -> tuple[float, int, int, float]:
    """(median seconds over the runs reaching ``target``, inf if none; runs; runs
    reaching; median over the runs of their last checkpoint's seconds)."""
    groups = [g for _, g in curves.runs(sub)]
    hits = []
    for g in groups:
        row = curves.first_row_reaching(g, target)
        if row is not None:
            hits.append(float(row["seconds"]))
    budget = curves.median(float(g["seconds"].max()) for g in groups)
    return (curves.median(hits) if hits else math.inf), len(groups), len(hits), budget


def _crfsuite_objective_differs(rows: pd.DataFrame, p_star: float) -> bool:
    """Whether CRFsuite's runs minimized another objective than ours: labels absent from
    the training split (CRFsuite never creates their features; meta.json "check"), or a
    loss / n below P*."""
    if not len(rows):
        return False
    if "labels_missing" in rows and (rows["labels_missing"].astype(float) > 0).any():
        return True
    low = rows["primal"].astype(float).min()
    return foreign_below(low, p_star, rows["n"].iloc[0] if "n" in rows else None)


def crfsuite_speed(frame: pd.DataFrame, targets: Iterable[float] = REL_TARGETS,
                   methods: Sequence[str] = SPEED_METHODS) -> pd.DataFrame:
    """Solver seconds to reach relative sub-optimality (P - P*) / P* <= each target.

    One row per dataset x relative target: the absolute target rel x |P*|, whether it is
    resolved (not below the precision to which P* is known), and for each method (its
    default options; CRFsuite's primal is its loss / n) the solver seconds of the first
    checkpoint at or below the target (no interpolation, as :func:`time_to_target`):
    inf when never reached within the run, NaN when the method has no run on the
    dataset (several runs: median over the runs that reached it; ``partial`` lists the
    methods reached by some runs only, as "method k/m"). ``ratio`` is CRFsuite's
    seconds / SDCA-GAP's (inf: only SDCA-GAP reaches it, 0: only CRFsuite does, NaN:
    neither, a method missing or unresolved); the budgets (median seconds of the last
    checkpoint of each method's runs) bound the ratio when only one reaches the target.
    ``crfsuite_objective_differs``: CRFsuite minimized another objective on that dataset
    (labels absent from its training split, or a loss below P*), so its times do not
    compare.
    """
    methods = list(methods)
    cols = ["dataset", "relative_target", "target", "p_star", "resolved", *methods, RATIO,
            "crfsuite_budget_seconds", "sdca_gap_budget_seconds", "partial",
            "crfsuite_objective_differs"]
    if not len(frame):
        return pd.DataFrame(columns=cols)
    data = frame[frame["label"].isin(methods)]
    rows = []
    for ds in sorted(data["dataset"].unique(), key=dataset_sort_key):
        d = data[data["dataset"] == ds]
        p_star = float(d["p_star"].iloc[0]) if "p_star" in d else math.nan
        if not math.isfinite(p_star):
            continue
        res = curves.resolution(d)
        differs = _crfsuite_objective_differs(d[d["label"] == CRFSUITE], p_star)
        for rel in targets:
            target = rel * abs(p_star)
            rec = {"dataset": ds, "relative_target": rel, "target": target, "p_star": p_star,
                   "resolved": bool(target >= res), "crfsuite_budget_seconds": math.nan,
                   "sdca_gap_budget_seconds": math.nan}
            partial = []
            for m in methods:
                sub = d[d["label"] == m]
                if not len(sub):
                    rec[m] = math.nan
                    continue
                secs, n, reached, budget = _seconds_to_reach(sub, target)
                rec[m] = secs
                if 0 < reached < n:
                    partial.append(f"{m} {reached}/{n}")
                if m == CRFSUITE:
                    rec["crfsuite_budget_seconds"] = budget
                elif m == SPEED_REFERENCE:
                    rec["sdca_gap_budget_seconds"] = budget
            crf, gap = rec.get(CRFSUITE, math.nan), rec.get(SPEED_REFERENCE, math.nan)
            ratio = math.nan
            if rec["resolved"] and not (math.isnan(crf) or math.isnan(gap)):
                if math.isinf(crf) and math.isinf(gap):
                    ratio = math.nan
                elif math.isinf(gap):
                    ratio = 0.0
                elif gap > 0:
                    ratio = crf / gap
                else:
                    ratio = math.inf if crf > 0 else math.nan
            rec[RATIO] = ratio
            rec["partial"] = "; ".join(partial)
            rec["crfsuite_objective_differs"] = differs
            rows.append(rec)
    return pd.DataFrame(rows, columns=cols)


DAGGER = "†"
"""Marks CRFsuite's cells on a dataset where it minimized another objective."""


def true_cell(v) -> bool:
    """A boolean cell, also as read back from a CSV ("True"/"False", empty)."""
    if isinstance(v, str):
        return v.strip().lower() == "true"
    try:
        return bool(v) and not (isinstance(v, float) and math.isnan(v))
    except (TypeError, ValueError):
        return False


def speed_ratio_cell(row) -> str:
    """Markdown of CRFsuite / SDCA-GAP for one row of :func:`crfsuite_speed`: the ratio,
    a bound when only one of them reaches the target ("> 8.1": CRFsuite had not reached
    it after 8.1 times SDCA-GAP's time), "—" when neither does, "n/r", or "" when one of
    them has no run."""
    crf, gap = float(row[CRFSUITE]), float(row[SPEED_REFERENCE])
    if math.isnan(crf) or math.isnan(gap):
        return ""
    if not bool(row["resolved"]):
        return UNRESOLVED
    ratio = float(row[RATIO])
    if math.isinf(crf) and math.isinf(gap):
        return DASH
    if math.isinf(crf):
        b = float(row["crfsuite_budget_seconds"])
        return f"> {format_cell(b / gap)}" if gap > 0 and math.isfinite(b) else DASH
    if math.isinf(gap):
        b = float(row["sdca_gap_budget_seconds"])
        return f"< {format_cell(crf / b)}" if b > 0 and math.isfinite(b) else DASH
    return format_cell(ratio) if math.isfinite(ratio) else DASH


def crfsuite_speed_markdown(table: pd.DataFrame,
                            methods: Sequence[str] = SPEED_METHODS) -> str:
    """One row per dataset x relative target: seconds per method ("—": never reached
    within the run, "n/r": target below the precision of P*, empty: no run) and the ratio
    CRFsuite / SDCA-GAP."""
    methods = list(methods)
    ratio_col = f"{CRFSUITE.split()[0]} / {SPEED_REFERENCE}"
    header = ["dataset", "(P - P*) / P* ≤", *methods, ratio_col]
    out = []
    for _, r in table.iterrows() if len(table) else []:
        part = r.get("partial")
        partial = dict(p.rsplit(" ", 1) for p in (part if isinstance(part, str) else "")
                       .split("; ") if p)
        rec = {"dataset": dataset_title(r["dataset"]),
               "(P - P*) / P* ≤": fmt_num(r["relative_target"])}
        for m in methods:
            v = float(r[m])
            if math.isnan(v):
                cell = ""
            elif not bool(r["resolved"]):
                cell = UNRESOLVED
            else:
                cell = format_cell(v) + (f" ({partial[m]})" if m in partial and math.isfinite(v)
                                  else "")
            rec[m] = cell
        rec[ratio_col] = speed_ratio_cell(r)
        if true_cell(r.get("crfsuite_objective_differs")):
            for c in (CRFSUITE, ratio_col):
                if rec[c]:
                    rec[c] += " " + DAGGER
        out.append(rec)
    text = markdown_table(pd.DataFrame(out, columns=header), header,
                          align="lr" + "r" * (len(methods) + 1))
    bounds = {c[0] for c in (rec[ratio_col] for rec in out) if c[:1] in "<>" and c}
    notes = []
    if ">" in bounds:
        notes.append("\"> x\": CRFsuite had not reached the target when its run ended, "
                     "after x times SDCA-GAP's time to it.")
    if "<" in bounds:
        notes.append("\"< x\": SDCA-GAP had not reached the target when its run ended, "
                     "after CRFsuite's time to it / x.")
    if UNRESOLVED in text:
        notes.append(f"{UNRESOLVED}: target below the precision to which P* is known on that "
                     "dataset (see the P* table).")
    if any(DAGGER in str(rec[CRFSUITE]) for rec in out):
        notes.append(f"{DAGGER}: on this dataset CRFsuite minimized another objective (labels "
                     "absent from the training split, which it never learns, or a loss below "
                     "P*; its meta.json \"check\"), so its times do not compare.")
    if notes:
        text += "\n" + " ".join(notes) + "\n"
    return text


# ----------------------------------------------------------------------------- sub-precision

def subprecision_table(frame: pd.DataFrame) -> pd.DataFrame:
    """SDCA-GAP at each line-search sub-precision, per dataset: mean line-search
    iterations per update, share of solver time in the line search, and the final
    sub-optimality, updates / n and seconds (medians over seeds)."""
    cols = ["dataset", "subprecision", "runs", "ls_iterations", "ls_time_share",
            "final_update_epochs", "final_seconds", "final_subopt", "final_log10_subopt"]
    data = subprecision_runs(frame)
    rows = []
    if len(data):
        for (ds, s), g in data.groupby(["dataset", "subprecision"]):
            stats, finals = [], []
            for _, r in curves.runs(g):
                stats.append(curves.line_search_summary(r))
                finals.append(r.iloc[-1])
            sub = curves.median(f["subopt"] for f in finals)
            rows.append({"dataset": ds, "subprecision": float(s), "runs": len(stats),
                         "ls_iterations": curves.median(a for a, _ in stats),
                         "ls_time_share": curves.median(b for _, b in stats),
                         "final_update_epochs": curves.median(f["update_epochs"]
                                                               for f in finals),
                         "final_seconds": curves.median(f["seconds"] for f in finals),
                         "final_subopt": sub,
                         "final_log10_subopt": math.log10(sub) if sub > 0 else math.nan})
    out = pd.DataFrame(rows, columns=cols)
    if len(out):
        order = {d: i for i, d in enumerate(sorted(out["dataset"].unique(),
                                                   key=dataset_sort_key))}
        out = (out.assign(_o=out["dataset"].map(order))
               .sort_values(["_o", "subprecision"], ascending=[True, False])
               .drop(columns="_o").reset_index(drop=True))
    return out


def subprecision_markdown(table: pd.DataFrame) -> str:
    show = pd.DataFrame({
        "dataset": table["dataset"].map(dataset_title),
        "sub-precision": table["subprecision"].map(fmt_num),
        "runs": table["runs"].astype(str),
        "line-search iterations / update": table["ls_iterations"].map(lambda v: format_cell(v, 3)),
        "time in line search": table["ls_time_share"].map(
            lambda v: "" if math.isnan(v) else f"{100 * v:.1f}%"),
        "updates / n": table["final_update_epochs"].map(format_cell),
        "seconds": table["final_seconds"].map(format_cell),
        "final P - P*": table["final_subopt"].map(lambda v: f"{v:.3e}"
                                                  if math.isfinite(v) else format_cell(v)),
    })
    return markdown_table(show)


# ----------------------------------------------------------------------------- threads

THREADS_TARGET = 1e-4
"""Relative sub-optimality of the thread-scaling table."""


def threads_table(frame: pd.DataFrame, target: float = THREADS_TARGET) -> pd.DataFrame:
    """Per dataset and number of threads: SDCA-GAP's solver seconds and updates / n to
    relative sub-optimality ``target`` (inf: not reached), and the speed-up over the run
    on one thread."""
    cols = ["dataset", "threads", "seconds", "update_epochs", "speedup"]
    if not len(frame):
        return pd.DataFrame(columns=cols)
    data = frame[(frame["base_label"] == SPEED_REFERENCE)
                 & frame["changed"].isin(["", "threads"])]
    rows = []
    for ds in sorted(data["dataset"].unique(), key=dataset_sort_key):
        d = data[data["dataset"] == ds]
        if d["threads"].nunique() < 2:
            continue
        goal = target * abs(float(d["p_star"].iloc[0]))
        base = math.nan
        for th in sorted(d["threads"].unique()):
            secs, _, _, _ = _seconds_to_reach(d[d["threads"] == th], goal)
            hit = [curves.first_row_reaching(g, goal) for _, g in curves.runs(
                d[d["threads"] == th])]
            epochs = curves.median(float(h["update_epochs"]) for h in hit if h is not None)
            base = secs if th == 1 else base
            rows.append({"dataset": ds, "threads": int(th), "seconds": secs,
                         "update_epochs": epochs,
                         "speedup": base / secs if secs and math.isfinite(secs) else math.nan})
    return pd.DataFrame(rows, columns=cols)


def threads_markdown(table: pd.DataFrame) -> str:
    if not len(table):
        return "_no data_\n"
    show = pd.DataFrame({
        "dataset": table["dataset"].map(dataset_title),
        "threads": table["threads"],
        f"seconds to {fmt_num(THREADS_TARGET)}": table["seconds"].map(format_cell),
        "updates / n": table["update_epochs"].map(format_cell),
        "speed-up over 1 thread": table["speedup"].map(
            lambda v: f"{v:.2f}x" if isinstance(v, float) and math.isfinite(v) else ""),
    })
    return markdown_table(show, align="lrrrr")


# ----------------------------------------------------------------------------- optimum

def optimum_table(runset: RunSet) -> pd.DataFrame:
    """P* per dataset: the L-BFGS optimum, its certificate, the best trace, what is used."""
    rows = []
    for ds, p in runset.pstar.items():
        rows.append({"dataset": ds, "p_star_used": p.p_star, "source": p.source,
                     "lbfgs_p_star": p.lbfgs_p_star, "lbfgs_gap_bound": p.gap_bound,
                     "lbfgs_grad_norm": p.grad_norm, "lbfgs_iterations": p.lbfgs_iterations,
                     "best_trace_primal": p.best_trace_primal,
                     "best_trace_method": p.best_trace_label, "resolution": p.resolution,
                     "warnings": " / ".join(p.warnings)})
    return pd.DataFrame(rows, columns=["dataset", "p_star_used", "source", "lbfgs_p_star",
                                       "lbfgs_gap_bound", "lbfgs_grad_norm", "lbfgs_iterations",
                                       "best_trace_primal", "best_trace_method", "resolution",
                                       "warnings"])


def optimum_markdown(table: pd.DataFrame) -> str:
    def num(v, spec=".12g"):
        return "" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)

    show = pd.DataFrame({
        "dataset": table["dataset"].map(dataset_title),
        "P* used": table["p_star_used"].map(num),
        "from": table["source"],
        "L-BFGS P*": table["lbfgs_p_star"].map(num),
        "gap bound ‖∇P‖²/2λ": table["lbfgs_gap_bound"].map(lambda v: num(v, ".2e")),
        "‖∇P(w*)‖": table["lbfgs_grad_norm"].map(lambda v: num(v, ".2e")),
        "best primal in the traces": table["best_trace_primal"].map(num),
        "by": table["best_trace_method"],
        "P* known to within": table["resolution"].map(lambda v: num(v, ".1e")),
    })
    return markdown_table(show, align="lrlrrrrlr")


# ----------------------------------------------------------------------------- output

def _time_to_target(runset: RunSet) -> tuple[pd.DataFrame, str]:
    t = time_to_target(runset.frame)
    return t, time_to_target_markdown(t)


def _crfsuite_speed(runset: RunSet) -> tuple[pd.DataFrame, str]:
    t = crfsuite_speed(runset.frame)
    return t, crfsuite_speed_markdown(t)


def _subprecision(runset: RunSet) -> tuple[pd.DataFrame, str]:
    t = subprecision_table(runset.frame)
    return t, subprecision_markdown(t)


def _threads(runset: RunSet) -> tuple[pd.DataFrame, str]:
    t = threads_table(runset.frame)
    return t, threads_markdown(t)


def _optimum(runset: RunSet) -> tuple[pd.DataFrame, str]:
    t = optimum_table(runset)
    return t, optimum_markdown(t)


TABLES: dict[str, Callable[[RunSet], tuple[pd.DataFrame, str]]] = {
    name: globals()[f"_{name}"] for name in catalog.TABLES}
"""Table name (:data:`crfsdca.reproduction.report.catalog.TABLES`) -> (CSV frame, markdown)."""


def write_table(table: pd.DataFrame, md: str, csv_path: str | os.PathLike | None = None,
                md_path: str | os.PathLike | None = None) -> None:
    if csv_path is not None:
        with atomic_write(csv_path, newline="") as f:
            table.to_csv(f, index=False)
    if md_path is not None:
        with atomic_write(md_path) as f:
            f.write(md)
