"""``results/report.md``: every figure and table, and each claim of the paper with what the
runs show for it. Everything is computed from the traces at generation time."""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from ... import __version__
from ...runtime.io import atomic_write
from . import catalog, tables
from . import claims as claims_mod
from .load import RunSet, dataset_sort_key, dataset_title, method_sort_key

TITLE = ("Reproduction of \"Adaptive Stochastic Dual Coordinate Ascent for Conditional "
         "Random Fields\" (Le Priol, Piché, Lacoste-Julien, UAI 2018)")

def _rel(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def _runs_table(rs: RunSet) -> str:
    if not len(rs.runs):
        return "_No runs._\n"
    rows = []
    last = rs.frame.sort_values("epoch").groupby("run").tail(1).set_index("run")
    for (ds, label), g in sorted(rs.runs.groupby(["dataset", "label"]),
                                 key=lambda kv: (dataset_sort_key(kv[0][0]),
                                                 method_sort_key(kv[0][1]))):
        fin = last.loc[last.index.intersection(g["run"])]
        status = Counter(g["status"])
        rows.append({
            "dataset": dataset_title(ds), "method": label, "runs": str(len(g)),
            "status": ", ".join(f"{k} x{v}" if v > 1 else k for k, v in status.items()),
            "epochs": tables.format_cell(float(fin["epoch"].max())) if len(fin) else "",
            "oracle calls / n": tables.format_cell(float(fin["oracle_epochs"].max())) if len(fin)
            else "",
            "solver seconds": tables.format_cell(float(g["solver_seconds"].astype(float).max())),
            "final P - P*": f"{float(fin['subopt'].min()):.3e}" if len(fin) else "",
        })
    return tables.markdown_table(pd.DataFrame(rows))


def _machines(rs: RunSet) -> str:
    if not rs.machines:
        return "_No machine information in the runs' metadata._\n"
    keys = ("machine", "processor", "cores", "usable_cores", "numba_threads", "python",
            "numpy", "numba")
    df = pd.DataFrame(rs.machines)
    cols = [k for k in keys if k in df.columns]
    counts = df.groupby(cols, dropna=False).size().reset_index(name="runs") if cols else df
    counts = counts.astype(str)
    return tables.markdown_table(counts, list(counts.columns))


THREADS_TEXT = (
    "Threads: every job runs single-threaded. The train, optimum and crfsuite rules set "
    "NUMBA_NUM_THREADS=1 (our kernels are serial anyway) and OPENBLAS_NUM_THREADS=1, "
    "OMP_NUM_THREADS=1 and MKL_NUM_THREADS=1 (scipy's BLAS) in their shell commands; "
    "CRFsuite's L-BFGS is single-threaded; and the workflow runs at most one train, "
    "optimum or crfsuite job per core of the machine (its `cpu_jobs` resource), whatever "
    "`--cores` says, so two timed jobs never share a core (a short featurize or report job "
    "may run beside them).")


def _ratio_phrase(table: pd.DataFrame, dataset: str, rel: float) -> str:
    """"3.2 on CONLL (13 s against 4.1 s)": CRFsuite's seconds / SDCA-GAP's to reach
    relative sub-optimality ``rel`` on ``dataset``, or why there is no such number."""
    name = dataset_title(dataset)
    r = table[(table["dataset"] == dataset)
              & np.isclose(table["relative_target"].astype(float), rel)] if len(
        table) else table
    if not len(r):
        return f"not available on {name} (no run)"
    r = r.iloc[0]
    crf, gap = float(r[tables.CRFSUITE]), float(r[tables.SPEED_REFERENCE])
    if math.isnan(crf) or math.isnan(gap):
        missing = " and ".join(m for m, v in ((tables.CRFSUITE, crf),
                                                (tables.SPEED_REFERENCE, gap)) if math.isnan(v))
        return f"not available on {name} (no {missing} run)"
    if not bool(r["resolved"]):
        return f"not resolved on {name} (P* is not known to {rel:.0e} relative)"
    cell = tables.speed_ratio_cell(r)
    if tables.true_cell(r.get("crfsuite_objective_differs")):
        return (f"not comparable on {name} (CRFsuite minimized another objective there, "
                f"see {tables.DAGGER} under the table)")
    if math.isfinite(crf) and math.isfinite(gap):
        return f"{cell} on {name} ({tables.format_cell(crf)} s against {tables.format_cell(gap)} s)"
    if math.isinf(crf) and math.isinf(gap):
        return f"undefined on {name} (neither reaches it within its run)"
    if math.isinf(crf):
        return (f"more than {cell[2:]} on {name} (CRFsuite does not reach it within its "
                f"{tables.format_cell(float(r['crfsuite_budget_seconds']))} s; SDCA-GAP takes "
                f"{tables.format_cell(gap)} s)")
    return (f"less than {cell[2:]} on {name} (SDCA-GAP does not reach it within its "
            f"{tables.format_cell(float(r['sdca_gap_budget_seconds']))} s; CRFsuite takes "
            f"{tables.format_cell(crf)} s)")


def _machine_sentence(rs: RunSet) -> str:
    """The machine(s) the compared runs were timed on, from their meta.json."""
    labels = set(tables.SPEED_METHODS)
    ms = [m for m in rs.machines if m.get("label") in labels] or list(rs.machines)
    if not ms:
        return "The runs' metadata records no machine."

    def describe(m):
        cores = m.get("cores", "?")
        usable = m.get("usable_cores")
        text = f"{cores} cores"
        if usable is not None and usable != cores:
            text += f" ({usable} usable)"
        arch = " ".join(str(m[k]) for k in ("machine", "processor") if m.get(k))
        return text + (f", {arch}" if arch else "")

    kinds = Counter(describe(m) for m in ms)
    threads = sorted({str(m["numba_threads"]) for m in ms if m.get("numba_threads")
                      is not None})
    if len(kinds) == 1:
        text = (f"{'All ' if len(ms) > 1 else ''}{len(ms)} run{'s' if len(ms) > 1 else ''} "
                f"compared here {'were' if len(ms) > 1 else 'was'} timed on one machine: "
                f"{next(iter(kinds))}.")
    else:
        text = ("The runs compared here were timed on several machines: "
                + "; ".join(f"{k} ({v} runs)" for k, v in kinds.items()) + ".")
    if threads:
        text += f" Numba threads recorded in their metadata: {', '.join(threads)}."
    return text


def _crfsuite_section(rs: RunSet) -> list[str]:
    t = tables.crfsuite_speed(rs.frame)
    phrases = [_ratio_phrase(t, ds, 1e-4) for ds in ("conll", "ner")]
    return [
        "## Side by side with CRFsuite\n",
        "Solver seconds at which each method (default options) first reaches relative "
        "sub-optimality (P - P*) / P* of 1e-2, 1e-4 and 1e-6: the first checkpoint at or "
        "below the target, nothing interpolated. CRFsuite's L-BFGS (python-crfsuite) "
        "trains exactly our objective (c2 = λn/2); its primal is its own loss / n and its "
        "seconds are wall time from the end of its feature generation; ours are solver "
        "time with monitoring excluded. The last column is CRFsuite's seconds / SDCA-GAP's.\n",
        "At relative sub-optimality 1e-4, the ratio CRFsuite / SDCA-GAP is "
        + " and ".join(phrases) + ".\n",
        _machine_sentence(rs) + " " + THREADS_TEXT + "\n",
        tables.crfsuite_speed_markdown(t),
    ]


def _header(rs: RunSet) -> list[str]:
    dss = ", ".join(dataset_title(d) for d in rs.datasets) or "none"
    return [
        f"# {TITLE}\n",
        f"Generated by `crfsdca report markdown` (crfsdca {__version__}) from {len(rs.runs)} "
        f"runs (datasets: {dss}). Every number, verdict and figure below is computed from "
        "the runs' traces (`trace.csv`, `meta.json`); nothing is typed by hand. "
        "Sub-optimality is P(w) - P*, P* from the reference optimum (see below).\n",
    ]


def _claims_section(rs: RunSet) -> list[str]:
    cl = claims_mod.evaluate_claims(rs.frame)
    counts = Counter(c.verdict for c in cl)
    seeds = claims_mod.seed_frames(rs.frame)
    L = ["## The paper's claims\n",
         f"{counts[claims_mod.SUPPORTED]} supported, {counts[claims_mod.NOT_SUPPORTED]} not "
         f"supported, {counts[claims_mod.NO_DATA]} without enough data. Each claim below "
         "quotes the paper, gives our number, the rule that decides it and where our "
         "setting differs (rules: `crfsdca.reproduction.report.claims`; the comparisons "
         "interpolate "
         "between checkpoints)."
         + (f" The stochastic runs were repeated with seeds "
            f"{', '.join(str(s) for s in seeds)}: numbers are medians over the seeds, and a "
            "claim is supported only if it holds for every seed that has its runs."
            if seeds else "") + "\n"]
    close = [i for i, c in enumerate(cl, 1) if c.close]
    L.append("The margin column says how far the number that decides each verdict lies "
             "from its threshold (relative to the threshold): within "
             f"{100 * claims_mod.CLOSE_CALL:.0f}% a verdict is a close call, which a small "
             "change in one run could flip"
             + (f" ({'claims' if len(close) > 1 else 'claim'} "
                f"{', '.join(map(str, close))} here)." if close else "; none is here.")
             + "\n")
    rows = [{"#": str(i), "claim": c.paper.summary, "paper": c.paper.where,
             "verdict": f"**{c.verdict}**", "our number": c.number or "—",
             "margin": c.margin_short}
            for i, c in enumerate(cl, 1)]
    L.append(tables.markdown_table(pd.DataFrame(rows), align="rlllll"))
    for i, c in enumerate(cl, 1):
        L += [f"**{i}. {c.paper.summary}** ({c.paper.where}; our figure `{c.figure}`)\n",
              f"> \"{c.paper.quote}\" ({c.paper.where})\n",
              f"- Verdict: {c.verdict}" + (" (a close call)" if c.close else "")
              + (f" ({c.seeds})" if c.seeds else ""),
              f"- Our number: {c.number or '—'}",
              f"- Decided by: {c.threshold}",
              f"- Margin: {c.margin or '—'}",
              f"- Evidence: {c.evidence}",
              f"- Where our setting differs: {c.paper.differs}\n"]
    return L


def _warnings_section(rs: RunSet) -> list[str]:
    if not rs.warnings:
        return []
    return ["## Warnings\n", *(f"- {w}" for w in rs.warnings), ""]


def _table1_section(table1: Path | None, base: Path) -> list[str]:
    L = ["## Table 1: datasets\n"]
    if table1 is not None and table1.is_file():
        L += [table1.read_text(encoding="utf-8").rstrip() + "\n",
              f"(from `{_rel(table1, base)}`)\n"]
    else:
        L.append("_Table 1 was not given to the report._\n")
    return L


def _optimum_section(rs: RunSet) -> list[str]:
    return [
        "## Reference optima P*\n",
        "P* = min(L-BFGS optimum, best primal value of any trace on that dataset). The gap "
        "bound ‖∇P(w*)‖²/(2λ) bounds how far the L-BFGS point is from the true optimum, so "
        "sub-optimalities below it are not resolved.\n",
        tables.optimum_markdown(tables.optimum_table(rs)),
    ]


def _figures_section(figures_dir: Path | None, base: Path) -> list[str]:
    L = ["## Figures\n"]
    for name, fig in catalog.FIGURES.items():
        L.append(f"### {fig.title}\n")
        png = figures_dir / f"{name}.png" if figures_dir is not None else None
        pdf = figures_dir / f"{name}.pdf" if figures_dir is not None else None
        if png is not None and png.is_file():
            L.append(f"![{fig.title}]({_rel(png, base)})\n")
            links = f"[PNG]({_rel(png, base)})"
            if pdf is not None and pdf.is_file():
                links += f" · [PDF]({_rel(pdf, base)})"
            L.append(f"{fig.text} {links}\n")
        else:
            L.append(f"_Figure `{name}` was not produced._\n")
    return L


def _time_to_target_section(rs: RunSet) -> list[str]:
    return [
        "## Time to reach a sub-optimality\n",
        "First checkpoint at which P - P* <= 1e-2, 1e-4, 1e-6 (absolute, as the paper), "
        "for every method with its default options: epochs (the trace's epoch column: n "
        "iterations for the stochastic methods, one iteration for L-BFGS), oracle calls / n "
        "and solver seconds. \"—\" means never within the run's budget. Checkpoints are "
        "every epoch after the first, so values are resolved to one epoch.\n",
        tables.time_to_target_markdown(tables.time_to_target(rs.frame)),
    ]


def _subprecision_section(rs: RunSet, tables_dir: Path | None, base: Path) -> list[str]:
    L = ["## Line-search sub-precision (Section 6.2)\n",
         tables.subprecision_markdown(tables.subprecision_table(rs.frame))]
    if tables_dir is not None:
        csvs = [p for p in (tables_dir / f"{n}.csv" for n in catalog.TABLES) if p.is_file()]
        if csvs:
            L.append("CSV: " + ", ".join(f"[{p.name}]({_rel(p, base)})" for p in csvs) + "\n")
    return L


def _runs_section(rs: RunSet) -> list[str]:
    return ["## Runs\n", _runs_table(rs), "## Machine\n", _machines(rs)]


def build_report(rs: RunSet, out: str | os.PathLike, figures_dir: str | os.PathLike | None,
                 tables_dir: str | os.PathLike | None = None,
                 table1: str | os.PathLike | None = None) -> str:
    """The markdown text of the report written at ``out`` (paths are made relative to
    it): one function per section, in order."""
    base = Path(out).parent
    figures_dir = Path(figures_dir) if figures_dir is not None else None
    tables_dir = Path(tables_dir) if tables_dir is not None else None
    if table1 is None and tables_dir is not None:
        table1 = tables_dir / "table1_datasets.md"
    table1 = Path(table1) if table1 is not None else None
    sections = (_header(rs), _claims_section(rs), _warnings_section(rs),
                _table1_section(table1, base), _optimum_section(rs),
                _figures_section(figures_dir, base), _time_to_target_section(rs),
                _crfsuite_section(rs), _subprecision_section(rs, tables_dir, base),
                _runs_section(rs))
    return "\n".join(line for section in sections for line in section).rstrip() + "\n"


def write_report(rs: RunSet, out: str | os.PathLike, figures_dir=None, tables_dir=None,
                 table1=None) -> None:
    text = build_report(rs, out, figures_dir, tables_dir, table1)
    with atomic_write(out) as f:
        f.write(text)
