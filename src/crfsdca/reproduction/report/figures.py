"""The paper's figures from the tidy run frame of :mod:`.load`, drawn with seaborn.

One function per figure; each takes the whole frame (all runs the caller has), selects
what it needs by method label and options, and returns a matplotlib Figure. A dataset or
method absent from the frame gives a "no data" panel, never an error. Colors are fixed
per method across all figures (:func:`method_color`); sweeps of one option
(non-uniformity, sub-precision) use a sequential palette over the option's value.

Axes as in the paper: y is log10 primal sub-optimality log10(P(w) - P*), x is
"oracle calls / n", "parameter updates / n" or "seconds" (solver time, monitoring
excluded). :func:`save_figure` writes PNG and PDF atomically.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ...runtime.io import atomic_path
from ...solvers.registry import PAPER_ONE_STEP_LABEL, method_label
from . import catalog, curves
from .claims import paper_one_step_label
from .load import (
    DATASET_ORDER,
    PAPER_METHODS,
    base_label,
    dataset_sort_key,
    dataset_title,
    fmt_num,
    method_sort_key,
    safe_log10,
    sdca_runs,
    select_labels,
    subprecision_runs,
)

Y_SUBOPT = "log10 primal sub-optimality"
X_ORACLE = "oracle calls / n"
X_UPDATES = "parameter updates / n"
X_SECONDS = "seconds"
X_COLUMNS = {"oracle_epochs": X_ORACLE, "update_epochs": X_UPDATES, "seconds": X_SECONDS}

METHOD_COLORS = {
    "SDCA": "#0072B2",          # blue
    "SDCA-GAP": "#D55E00",      # vermillion
    "SDCA-IMP": "#009E73",      # green
    "SDCA-GAPxIMP": "#CC79A7",  # pink
    "SDCA-MAX": "#8C510A",      # brown
    "SDCA-PERM": "#56B4E9",     # sky blue
    "SDCA-CYCLIC": "#999933",   # olive
    "SAG": "#BBBBBB",           # light grey
    "SAG-NUS": "#E69F00",       # orange
    "SAG-NUS*": "#882255",      # wine
    "OEG": "#332288",           # indigo
    "L-BFGS": "#555555",        # dark grey
    "CRFsuite L-BFGS": "#117733",  # dark green
}
"""One color per method, the same in every figure."""

STYLE = {"style": "whitegrid", "context": "paper", "font_scale": 1.15}
PANEL = (3.9, 2.9)  # inches per panel


def method_color(label: str):
    """The color of a method label; a variant ("SDCA-GAP single Newton") gets a shade of
    its base method's color, the same in every figure."""
    if label in METHOD_COLORS:
        return METHOD_COLORS[label]
    base = METHOD_COLORS.get(base_label(label))
    if base is None:
        palette = sns.color_palette("husl", 12)
        return palette[zlib.crc32(label.encode()) % len(palette)]
    shade = (zlib.crc32(label.encode()) % 5) / 4  # 0..1
    return sns.set_hls_values(base, l=0.25 + 0.45 * shade)


METHOD_DASHES = {"SAG-NUS*": (5, 2), "CRFsuite L-BFGS": (5, 2)}
"""Dashed methods, the same in every figure: SAG-NUS* (whose curve often runs on
SAG-NUS's) and CRFsuite's L-BFGS (beside ours)."""


def _dashes(label: str):
    """A method's line style: its own (:data:`METHOD_DASHES`), a variant's (dashed), or
    solid."""
    if label in METHOD_DASHES:
        return METHOD_DASHES[label]
    return "" if label == base_label(label) else (4, 1.5)


def sequential_colors(values: Sequence[float], palette: str = "viridis",
                      log: bool = False) -> dict:
    """A color per value along a sequential palette (log scale if ``log``)."""
    vals = sorted({float(v) for v in values})
    if not vals:
        return {}
    pos = np.log10(vals) if log else np.asarray(vals)
    lo, hi = float(np.min(pos)), float(np.max(pos))
    cmap = sns.color_palette(palette, as_cmap=True)
    return {v: cmap(0.1 + 0.8 * ((p - lo) / (hi - lo) if hi > lo else 0.5))
            for v, p in zip(vals, pos, strict=True)}


# ----------------------------------------------------------------------------- drawing

def _no_data(ax, message: str = "no data") -> None:
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center",
            color="0.45", fontsize="large", style="italic")
    ax.set_xticks([])
    ax.set_yticks([])


def seed_band(rows: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Median, min and max of ``y`` over the runs in ``rows`` (one per seed), on the union
    of their ``x`` values where every run has data (each run interpolated linearly)."""
    runs = [g.sort_values(x) for _, g in rows.groupby("run")]
    lo = max(float(g[x].min()) for g in runs)
    hi = min(float(g[x].max()) for g in runs)
    grid = np.unique(np.concatenate([g[x].to_numpy(float) for g in runs]))
    grid = grid[(grid >= lo) & (grid <= hi)]
    ys = np.vstack([np.interp(grid, g[x].to_numpy(float), g[y].to_numpy(float))
                    for g in runs]) if len(grid) else np.empty((len(runs), 0))
    return pd.DataFrame({x: grid, "median": np.median(ys, axis=0),
                         "min": ys.min(axis=0, initial=np.inf),
                         "max": ys.max(axis=0, initial=-np.inf)})


def _draw_key(ax, rows: pd.DataFrame, x: str, y: str, color, dash) -> None:
    """One method's curve: its run, or with several runs (seeds) their median with a band
    from the min to the max."""
    style = {"color": color, "linewidth": 1.6}
    if dash:
        style["dashes"] = dash
    if rows["run"].nunique() == 1:
        g = rows.sort_values(x)
        ax.plot(g[x], g[y], **style)
        return
    band = seed_band(rows, x, y)
    ax.fill_between(band[x], band["min"], band["max"], color=color, alpha=0.2, lw=0)
    ax.plot(band[x], band["median"], **style)


def _panel(ax, data: pd.DataFrame, x: str, y: str, key: str, colors: dict,
           dashes: dict | None = None, xlabel: str = "", ylabel: str = "",
           title: str = "", empty: str = "no data", cap_log: bool = True) -> list:
    """Lines of ``y`` against ``x``, one per value of ``key`` (a run, or the median of
    several runs, the seeds, with a min-max band), colored by ``key``; returns the keys
    drawn. Curves leaving through the top (a diverging run) are cut at 1 decade above
    the highest starting point, with a note."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    d = data[[x, y, key, "run"]].replace([np.inf, -np.inf], np.nan).dropna() if len(
        data) else data
    if not len(d):
        _no_data(ax, empty)
        return []
    keys = [k for k in colors if k in set(d[key])]
    for k in keys:
        _draw_key(ax, d[d[key] == k], x, y, colors[k], (dashes or {}).get(k, ""))
    if len(d.groupby("run")) and d.groupby("run")[x].nunique().max() <= 3:
        # tiny runs (smoke): show the checkpoints
        for k in keys:
            kk = d[d[key] == k]
            ax.scatter(kk[x], kk[y], color=colors[k], s=12, zorder=3)
    if y == "log10_subopt" and "resolution" in data:
        # P* is only known to within `resolution`: mark it, and do not zoom far below it
        res = data["resolution"].max()
        if np.isfinite(res) and res > 0 and math.log10(res) > float(d[y].min()) - 1.0:
            level = math.log10(res)
            ax.axhline(level, color="0.45", ls=":", lw=1.0, zorder=1)
            ax.annotate("P* known to here", (1.0, level), xycoords=("axes fraction", "data"),
                        xytext=(-3, 2), textcoords="offset points", ha="right", va="bottom",
                        fontsize="x-small", color="0.35")
            if float(d[y].min()) < level - 1.0:
                ax.set_ylim(bottom=level - 1.0)
    if cap_log:
        starts = d.sort_values(x).groupby("run")[y].first()
        top = float(starts.max()) + 1.0
        if float(d[y].max()) > top:
            ax.set_ylim(top=top)
            ax.text(0.98, 0.97, "cut: curves above diverge", transform=ax.transAxes,
                    ha="right", va="top", fontsize="small", color="0.3")
    return keys


def _legend(fig: Figure, keys: Iterable, colors: dict, dashes: dict | None = None,
            title: str | None = None) -> None:
    keys = list(dict.fromkeys(keys))
    if not keys:
        return
    handles = []
    for k in keys:
        dash = (dashes or {}).get(k, "")
        handles.append(Line2D([], [], color=colors[k], lw=2,
                              linestyle=(0, dash) if dash else "-"))
    width = fig.get_size_inches()[0]
    longest = max(len(str(k)) for k in keys)
    per_entry = 0.75 + 0.085 * longest  # inches: line sample + text
    ncols = max(1, min(len(keys), int(width // per_entry)))
    fig.legend(handles, [str(k) for k in keys], loc="outside lower center", ncols=ncols,
               title=title, frameon=False)


def _figure(nrows: int, ncols: int, title: str, extra_height: float = 0.9) -> tuple:
    fig = Figure(figsize=(PANEL[0] * ncols, PANEL[1] * nrows + extra_height),
                 layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    fig.suptitle(title)
    return fig, axes


def _datasets(frame: pd.DataFrame, datasets: Iterable[str] | None,
              default: Iterable[str] = DATASET_ORDER) -> list[str]:
    """The datasets to draw: those given, else the paper's plus any other present."""
    if datasets is not None:
        return list(datasets)
    present = set(frame["dataset"].unique()) if len(frame) else set()
    return sorted(set(default) | present, key=dataset_sort_key)


def _grid(n: int, max_cols: int = 2) -> tuple[int, int]:
    ncols = min(max(n, 1), max_cols)
    return math.ceil(max(n, 1) / ncols), ncols


def _hide_unused(axes, used: int) -> None:
    for ax in axes.flat[used:]:
        ax.set_visible(False)


def _dataset_grid(frame: pd.DataFrame, datasets: Iterable[str] | None, data: pd.DataFrame,
                  title: str) -> tuple[Figure, list]:
    """A figure with one panel per dataset (two columns, unused panels hidden) and, for
    each panel, (axes, dataset, that dataset's rows of ``data``)."""
    dss = _datasets(frame, datasets)
    nrows, ncols = _grid(len(dss))
    fig, axes = _figure(nrows, ncols, title)
    _hide_unused(axes, len(dss))
    return fig, [(ax, ds, data[data["dataset"] == ds] if len(data) else data)
                 for ax, ds in zip(axes.flat, dss, strict=False)]


def _labelled(frame: pd.DataFrame, methods: Iterable[str]) -> tuple[pd.DataFrame, dict]:
    methods = list(methods)
    sub = select_labels(frame, methods)
    colors = {m: method_color(m) for m in sorted(methods, key=method_sort_key)}
    return sub, colors


def _subopt_row(row, data: pd.DataFrame, key: str, colors: dict, title: str,
                dashes: dict | None = None, empty: str = "no data") -> list:
    """The paper's pair of panels: log10 sub-optimality against oracle calls / n and
    against parameter updates / n; returns the keys drawn."""
    drawn = []
    for ax, x in zip(row, ("oracle_epochs", "update_epochs"), strict=True):
        drawn += _panel(ax, data, x, "log10_subopt", key, colors, dashes, xlabel=X_COLUMNS[x],
                        ylabel=Y_SUBOPT, title=title, empty=empty)
    return drawn


# ----------------------------------------------------------------------------- figures

def fig2_sampling(frame: pd.DataFrame, dataset: str = "ocr") -> Figure:
    """Figure 2: SDCA's sampling schemes on OCR at non-uniformity 0.8 (uniform,
    importance, gap, gap x importance, max), against oracle calls and updates."""
    parts = [sdca_runs(frame, s) for s in ("uniform", "importance", "gap", "gap-importance",
                                          "max")]
    parts = [p for p in parts if len(p)]
    data = pd.concat(parts) if parts else frame.iloc[0:0]
    data = data[data["dataset"] == dataset] if len(data) else data
    labels = sorted(set(data["label"]), key=method_sort_key) if len(data) else []
    colors = {k: method_color(k) for k in labels}
    fig, axes = _figure(1, 2, f"Figure 2: sampling schemes on {dataset_title(dataset)} "
                        "(non-uniformity 0.8)")
    drawn = _subopt_row(axes[0], data, "label", colors, dataset_title(dataset),
                        empty=f"no SDCA sampling runs on {dataset_title(dataset)}")
    _legend(fig, drawn, colors)
    return fig


def fig3_nonuniformity(frame: pd.DataFrame, dataset: str = "ner") -> Figure:
    """Figure 3: SDCA with gap sampling on NER at non-uniformity theta = 0 ... 1."""
    data = sdca_runs(frame, "gap", vary="non_uniformity")
    data = data[data["dataset"] == dataset].copy() if len(data) else data
    thetas = sorted(data["non_uniformity"].unique()) if len(data) else []
    names = {t: f"theta = {fmt_num(t)}" for t in thetas}
    if len(data):
        data["theta"] = data["non_uniformity"].map(names)
    else:
        data = data.assign(theta=pd.Series(dtype=str))
    shade = sequential_colors(thetas, "viridis")
    colors = {names[t]: shade[t] for t in thetas}
    fig, axes = _figure(1, 2, f"Figure 3: gap sampling on {dataset_title(dataset)}, "
                        "non-uniformity theta")
    drawn = _subopt_row(axes[0], data, "theta", colors, dataset_title(dataset),
                        empty=f"no SDCA-GAP runs on {dataset_title(dataset)}")
    _legend(fig, drawn, colors, title="SDCA-GAP, non-uniformity")
    return fig


def fig4_methods(frame: pd.DataFrame, datasets: Iterable[str] | None = None,
                 methods: Iterable[str] = PAPER_METHODS) -> Figure:
    """Figure 4 (and the oracle-call panels of Figure 6): SDCA, SDCA-GAP, SAG-NUS,
    SAG-NUS*, OEG; rows = datasets, columns = oracle calls / n, parameter updates / n."""
    data, colors = _labelled(frame, methods)
    dss = _datasets(frame, datasets)
    fig, axes = _figure(len(dss), 2, "Figure 4: SDCA, SDCA-GAP and the baselines")
    dashes = {k: _dashes(k) for k in colors}
    drawn = []
    for row, ds in zip(axes, dss, strict=True):
        d = data[data["dataset"] == ds] if len(data) else data
        drawn += _subopt_row(row, d, "label", colors, dataset_title(ds), dashes)
    _legend(fig, sorted(set(drawn), key=method_sort_key), colors, dashes)
    return fig


def fig7_test_error(frame: pd.DataFrame, datasets: Iterable[str] | None = None,
                    methods: Iterable[str] = PAPER_METHODS) -> Figure:
    """Figure 7: test error (token error rate, %) against epochs (oracle calls / n)."""
    data, colors = _labelled(frame, methods)
    if len(data):
        data = data.assign(test_error_pct=100 * data["test_error"])
    else:
        data = data.assign(test_error_pct=pd.Series(dtype=float))
    fig, panels = _dataset_grid(frame, datasets, data, "Figure 7: test error")
    dashes = {k: _dashes(k) for k in colors}
    drawn = []
    for ax, ds, d in panels:
        drawn += _panel(ax, d, "oracle_epochs", "test_error_pct", "label", colors, dashes,
                        xlabel="epochs (oracle calls / n)", ylabel="test error (%)",
                        title=dataset_title(ds), cap_log=False)
        # zoom on where the methods differ: leave the first epochs' high errors above
        start = max(2.0, 0.2 * float(d["oracle_epochs"].max())) if len(d) else 0.0
        later = d[(d["oracle_epochs"] >= start) & d["test_error_pct"].notna()] if len(
            d) else d
        if len(later) and later["oracle_epochs"].nunique() > 1:
            lo, hi = float(later["test_error_pct"].min()), float(later["test_error_pct"].max())
            pad = max(0.15 * (hi - lo), 0.05 * hi, 0.1)
            ax.set_ylim(max(0.0, lo - pad), hi + pad)
    _legend(fig, sorted(set(drawn), key=method_sort_key), colors, dashes)
    return fig


def fig8_line_search(frame: pd.DataFrame, datasets: Iterable[str] | None = None) -> Figure:
    """Figure 8: SDCA-GAP with its line search at sub-precision 1e-3 (solid), with the
    paper's one Newton step (rtsafe from 0.5 at sub-precision 0.5, dashed) and with our
    single Newton step from the regula-falsi point (dotted)."""
    full = "SDCA-GAP"
    paper = paper_one_step_label()
    ours = method_label({"solver": "sdca", "line_search": "single-newton"})
    names = {full: "SDCA-GAP, sub-precision 1e-3", paper: f"SDCA-GAP, {PAPER_ONE_STEP_LABEL}",
             ours: "SDCA-GAP, single Newton from regula falsi (ours)"}
    data = select_labels(frame, list(names))
    if len(data):
        data = data.assign(method=data["label"].map(names))
    else:
        data = data.assign(method=pd.Series(dtype=str))
    colors = {names[full]: METHOD_COLORS["SDCA-GAP"], names[paper]: "#000000",
              names[ours]: "#999999"}
    dashes = {names[full]: "", names[paper]: (4, 1.5), names[ours]: (1.2, 1.2)}
    fig, panels = _dataset_grid(frame, datasets, data, "Figure 8: line search at "
                                "sub-precision 1e-3 against one Newton step")
    drawn = []
    for ax, ds, d in panels:
        drawn += _panel(ax, d, "update_epochs", "log10_subopt", "method", colors, dashes,
                        xlabel=X_UPDATES, ylabel=Y_SUBOPT, title=dataset_title(ds))
    _legend(fig, [k for k in colors if k in drawn], colors, dashes)
    return fig


GAP_TRUE = "true duality gap"
GAP_EST = "gap estimate (mean of stored g_i)"


def fig9_gap_estimate(frame: pd.DataFrame, datasets: Iterable[str] | None = None) -> Figure:
    """Figure 9: true duality gap and SDCA-GAP's running estimate, against epochs."""
    data = sdca_runs(frame, "gap")
    fig, panels = _dataset_grid(frame, datasets, data,
                                "Figure 9: SDCA-GAP's gap estimate and the true gap")
    colors = {GAP_TRUE: "#000000", GAP_EST: METHOD_COLORS["SDCA-GAP"]}
    dashes = {GAP_TRUE: "", GAP_EST: (4, 1.5)}
    drawn = []
    for ax, ds, d in panels:
        if len(d):
            long = pd.concat([
                d[["run", "update_epochs"]].assign(quantity=GAP_TRUE, value=d["log10_true_gap"]),
                d[["run", "update_epochs"]].assign(quantity=GAP_EST,
                                                   value=d["log10_gap_estimate"])])
            long["run"] = long["run"] + "|" + long["quantity"]
        else:
            long = pd.DataFrame(columns=["run", "update_epochs", "quantity", "value"])
        drawn += _panel(ax, long, "update_epochs", "value", "quantity", colors, dashes,
                        xlabel="epochs (parameter updates / n)", ylabel="log10 duality gap",
                        title=dataset_title(ds), empty=f"no SDCA-GAP runs on "
                        f"{dataset_title(ds)}", cap_log=False)
        ratios = np.concatenate([curves.gap_ratios(g) for _, g in curves.runs(d)] or
                                [np.empty(0)])
        if len(ratios):
            ax.text(0.98, 0.97, f"estimate / true after {curves.GAP_BURN_IN:g} epochs:\n"
                    f"{ratios.min():.2f} to {ratios.max():.2f}", transform=ax.transAxes,
                    ha="right", va="top", fontsize="small",
                    bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "0.8"})
    _legend(fig, drawn, colors, dashes)
    return fig


def subprecision(frame: pd.DataFrame, datasets: Iterable[str] | None = None) -> Figure:
    """Section 6.2: SDCA-GAP at line-search sub-precision 1e-1 ... 1e-8. Per dataset:
    convergence against updates and against seconds, and the mean line-search
    iterations per update (bars) with the share of time in the line search (line)."""
    data = subprecision_runs(frame)
    if len(data):
        present = sorted(data["dataset"].unique(), key=dataset_sort_key)
    else:
        present = []
    dss = list(datasets) if datasets is not None else (present or ["ocr", "conll"])
    subs = sorted(data["subprecision"].unique()) if len(data) else []
    names = {s: f"{fmt_num(s)}" for s in subs}
    shade = sequential_colors(subs, "rocket", log=True)
    colors = {names[s]: shade[s] for s in sorted(subs, reverse=True)}
    if len(data):
        data = data.assign(subprec=data["subprecision"].map(names))
    else:
        data = data.assign(subprec=pd.Series(dtype=str))
    fig, axes = _figure(len(dss), 3, "Line-search sub-precision (Section 6.2)")
    drawn = []
    for row, ds in zip(axes, dss, strict=True):
        d = data[data["dataset"] == ds] if len(data) else data
        for ax, x in zip(row[:2], ("update_epochs", "seconds"), strict=True):
            drawn += _panel(ax, d, x, "log10_subopt", "subprec", colors, xlabel=X_COLUMNS[x],
                            ylabel=Y_SUBOPT, title=dataset_title(ds))
        ax = row[2]
        ax.set_title(f"{dataset_title(ds)}: line search")
        stats = []
        for s in subs:
            runs_s = d[d["subprecision"] == s] if len(d) else d
            vals = [curves.line_search_summary(g) for _, g in curves.runs(runs_s)]
            if vals:
                stats.append((s, curves.median(v[0] for v in vals),
                              curves.median(v[1] for v in vals)))
        if not stats:
            _no_data(ax)
            ax.set_xlabel("sub-precision")
            continue
        pos = np.arange(len(stats))
        ax.bar(pos, [st[1] for st in stats], color=[shade[st[0]] for st in stats],
               alpha=0.85, width=0.6)
        ax.set_xticks(pos, [names[st[0]] for st in stats])
        ax.set_xlabel("sub-precision")
        ax.set_ylabel("line-search iterations / update")
        tw = ax.twinx()
        tw.plot(pos, [100 * st[2] for st in stats], color="0.15", marker="o", lw=1.5)
        tw.set_ylabel("% of time in line search")
        tw.set_ylim(0, max(5.0, 1.15 * np.nanmax([100 * st[2] for st in stats] + [0.0])))
        tw.grid(False)
    _legend(fig, drawn, colors, title="sub-precision (bars: iterations, line: time share)")
    return fig


def wallclock(frame: pd.DataFrame, datasets: Iterable[str] | None = None,
              methods: Iterable[str] | None = None) -> Figure:
    """Every method (default options) against solver seconds, per dataset. Our L-BFGS runs
    10 times the budget of the others: the x axis stops at the longest other run (a note
    says how long L-BFGS ran), so that the stochastic methods' curves stay readable."""
    if methods is None:
        methods = sorted(set(frame.loc[~frame["variant"].astype(bool), "label"])
                         if len(frame) else [], key=method_sort_key)
    data, colors = _labelled(frame, methods)
    dashes = {k: _dashes(k) for k in colors}
    fig, panels = _dataset_grid(frame, datasets, data, "Sub-optimality against solver time")
    drawn = []
    for ax, ds, d in panels:
        drawn += _panel(ax, d, "seconds", "log10_subopt", "label", colors, dashes,
                        xlabel="seconds (solver time)", ylabel=Y_SUBOPT,
                        title=dataset_title(ds))
        ends = d.groupby("label")["seconds"].max() if len(d) else pd.Series(dtype=float)
        others = ends.drop("L-BFGS", errors="ignore")
        if "L-BFGS" in ends and len(others) and ends["L-BFGS"] > 1.5 * others.max():
            right = 1.05 * float(others.max())
            ax.set_xlim(left=0.0, right=right)
            seen = d.loc[d["seconds"] <= right, "log10_subopt"].replace(
                [np.inf, -np.inf], np.nan).dropna()
            if len(seen):
                ax.set_ylim(bottom=float(seen.min()) - 0.3)
            ax.text(0.98, 0.97, f"L-BFGS runs on to {ends['L-BFGS']:.3g} s",
                    transform=ax.transAxes, ha="right", va="top", fontsize="small",
                    color="0.3")
    _legend(fig, sorted(set(drawn), key=method_sort_key), colors, dashes)
    return fig


def threads(frame: pd.DataFrame, datasets: Iterable[str] | None = None) -> Figure:
    """SDCA-GAP on each number of threads: relative sub-optimality against seconds."""
    data = frame[(frame["base_label"] == "SDCA-GAP") & frame["changed"].isin(["", "threads"])] \
        if len(frame) else frame
    if len(data):
        data = data[data.groupby("dataset")["threads"].transform("nunique") > 1].copy()
        data["log10_rel_subopt"] = safe_log10(data["subopt"] / data["p_star"].abs())
        data["key"] = data["threads"].map(lambda t: f"{t} thread" + ("s" if t > 1 else ""))
    keys = sorted(data["key"].unique(), key=lambda k: int(k.split()[0])) if len(data) else []
    shade = sequential_colors([int(k.split()[0]) for k in keys], "viridis")
    colors = {k: shade[float(k.split()[0])] for k in keys}
    if datasets is None and len(data):  # the datasets with a thread-scaling study
        datasets = sorted(data["dataset"].unique(), key=dataset_sort_key)
    fig, panels = _dataset_grid(frame, datasets, data, "SDCA-GAP on several threads")
    drawn = []
    for ax, ds, d in panels:
        drawn += _panel(ax, d, "seconds", "log10_rel_subopt", "key", colors,
                        xlabel="seconds (solver time)",
                        ylabel="log10 relative sub-optimality", title=dataset_title(ds))
    _legend(fig, [k for k in keys if k in drawn], colors)
    return fig


FIGURES: dict[str, Callable[[pd.DataFrame], Figure]] = {
    name: globals()[name] for name in catalog.FIGURES}
"""Figure name (:data:`crfsdca.reproduction.report.catalog.FIGURES`) -> the function of that
name."""


def draw(name: str, frame: pd.DataFrame) -> Figure:
    """Figure ``name`` of :data:`FIGURES`, styled."""
    if name not in FIGURES:
        raise KeyError(f"unknown figure {name!r}; choose one of {', '.join(FIGURES)}")
    with sns.axes_style(STYLE["style"]), sns.plotting_context(STYLE["context"],
                                                              font_scale=STYLE["font_scale"]):
        return FIGURES[name](frame)


def has_data(fig: Figure) -> bool:
    """Whether any panel of ``fig`` shows data (a line, a point or a bar), not only "no
    data" notes: a figure without any is an error, not a result."""
    for ax in fig.axes:
        if ax.patches or any(len(line.get_xdata()) for line in ax.lines):
            return True
        if any(len(getattr(c, "get_offsets", lambda: [])()) for c in ax.collections):
            return True
    return False


def save_figure(fig: Figure, png: str | os.PathLike | None = None,
                pdf: str | os.PathLike | None = None, dpi: int = 150) -> None:
    """Write ``fig`` as PNG and/or PDF, each atomically."""
    with sns.axes_style(STYLE["style"]), sns.plotting_context(STYLE["context"],
                                                              font_scale=STYLE["font_scale"]):
        for path, fmt in ((png, "png"), (pdf, "pdf")):
            if path is None:
                continue
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=fmt, dpi=dpi,
                            metadata={"CreationDate": None} if fmt == "pdf" else None)
