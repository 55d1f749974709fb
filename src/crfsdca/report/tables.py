"""Tables from the runs: time to target, line-search sub-precision, reference optima.

Each table is a pandas DataFrame (what the CSV holds) plus a markdown rendering. Written
atomically by :func:`write_table`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Sequence

import pandas as pd

from ..io import atomic_write
from . import metrics
from .load import (
    RunSet,
    dataset_sort_key,
    dataset_title,
    fmt_num,
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


def _fmt(v, digits: int = 3) -> str:
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
        cells = [_fmt(row[c]) if not isinstance(row[c], str) else row[c] for c in columns]
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
            groups = [g for _, g in metrics.runs(sub)]
            for t in targets:
                hits = []
                for g in groups:
                    row = metrics.first_row_reaching(g, t)
                    if row is not None:
                        hits.append({c: float(row[c]) for c in TIME_COLUMNS})
                res = metrics.resolution(sub)
                rec = {"dataset": ds, "method": m, "target": t, "resolved": bool(t >= res),
                       "runs": len(groups), "reached": len(hits)}
                for c in TIME_COLUMNS:
                    rec[c] = metrics.median(h[c] for h in hits) if hits else math.inf
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
                    cell = _fmt(v)
                    if math.isfinite(v) and n > 1 and reached < n:
                        cell += f" ({reached}/{n})"
                    rec[f"{fmt_num(t)}: {TIME_COLUMNS[c]}"] = cell
            out.append(rec)
    text = markdown_table(pd.DataFrame(out, columns=header), header)
    if UNRESOLVED in text:
        text += (f"\n{UNRESOLVED}: target below the precision to which P* is known on that "
                 "dataset (see the P* table).\n")
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
            for _, r in metrics.runs(g):
                stats.append(metrics.line_search_summary(r))
                finals.append(r.iloc[-1])
            sub = metrics.median(f["subopt"] for f in finals)
            rows.append({"dataset": ds, "subprecision": float(s), "runs": len(stats),
                         "ls_iterations": metrics.median(a for a, _ in stats),
                         "ls_time_share": metrics.median(b for _, b in stats),
                         "final_update_epochs": metrics.median(f["update_epochs"]
                                                               for f in finals),
                         "final_seconds": metrics.median(f["seconds"] for f in finals),
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
        "line-search iterations / update": table["ls_iterations"].map(lambda v: _fmt(v, 3)),
        "time in line search": table["ls_time_share"].map(
            lambda v: "" if math.isnan(v) else f"{100 * v:.1f}%"),
        "updates / n": table["final_update_epochs"].map(_fmt),
        "seconds": table["final_seconds"].map(_fmt),
        "final P - P*": table["final_subopt"].map(lambda v: f"{v:.3e}"
                                                  if math.isfinite(v) else _fmt(v)),
    })
    return markdown_table(show)


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

def _tt_markdown(runset: RunSet) -> tuple[pd.DataFrame, str]:
    t = time_to_target(runset.frame)
    return t, time_to_target_markdown(t)


def _sp_markdown(runset: RunSet) -> tuple[pd.DataFrame, str]:
    t = subprecision_table(runset.frame)
    return t, subprecision_markdown(t)


def _opt_markdown(runset: RunSet) -> tuple[pd.DataFrame, str]:
    t = optimum_table(runset)
    return t, optimum_markdown(t)


TABLES: dict[str, Callable[[RunSet], tuple[pd.DataFrame, str]]] = {
    "time_to_target": _tt_markdown,
    "subprecision": _sp_markdown,
    "optimum": _opt_markdown,
}
"""Table name (command line) -> (CSV frame, markdown)."""


def write_table(table: pd.DataFrame, md: str, csv_path: str | os.PathLike | None = None,
                md_path: str | os.PathLike | None = None) -> None:
    if csv_path is not None:
        with atomic_write(csv_path, newline="") as f:
            table.to_csv(f, index=False)
    if md_path is not None:
        with atomic_write(md_path) as f:
            f.write(md)
