"""Run directories -> one tidy DataFrame, with method labels and primal sub-optimality.

A run directory (``results/runs/{dataset}/{run_id}/``) holds ``trace.csv`` and
``meta.json`` (see :mod:`crfsdca.reproduction.rundir`). What a run is (its method, its options, its
dataset) is read from ``meta.json`` only, never from directory names. A run whose status
is not a finished one (interrupted, terminated, diverged) is refused, or with
``skip_unfinished`` left out and listed: its curve would pass for a result.

Sub-optimality is P(w) - P*, with, per dataset, P* = min(L-BFGS optimum's p_star,
smallest primal value in any trace of that dataset) (``baselines.md`` section 7). A trace
going below the L-BFGS P* by more than 1e-12 relative is recorded as a warning (the
symptom of a weak P*). Without an optimum file, P* is the best primal seen minus a tiny
margin (1e-12 relative), and the report says so.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import ConfigError, DataFormatError
from ...solvers import registry
from ...solvers.monitor import TRACE_COLUMNS
from ...solvers.options import short_number
from ...training.status import FINISHED, read_status
from ..rundir import stopped_name

log = logging.getLogger("crfsdca.report")

DATASET_ORDER = ("ocr", "conll", "ner", "pos")
"""The paper's datasets, in its order; others follow alphabetically."""

PAPER_METHODS = ("SDCA", "SDCA-GAP", "SAG-NUS", "SAG-NUS*", "OEG")
"""The methods of the paper's Figures 4, 6 and 7."""

CRFSUITE_LABEL = "CRFsuite L-BFGS"
METHOD_ORDER = registry.base_labels() + (CRFSUITE_LABEL,)
"""Legend and table order of the methods (variants follow their base method)."""

FOREIGN_SOLVERS = ("crfsuite",)
"""Runs whose trace primal is another program's own loss, not our P(w): they never set P*
(a rounding difference would move every curve), they are only measured against it."""

RELATIVE_TOL = 1e-12
CRFSUITE_LOSS_DECIMALS = 6
"""CRFsuite logs its loss (n P) with six decimals: its loss / n is known to 0.5e-6 / n."""


def foreign_below(primal: float, p_star: float, n) -> bool:
    """Whether a CRFsuite loss / n lies below P* by more than its print precision allows."""
    try:
        n = float(n)
    except (TypeError, ValueError):
        n = math.nan
    printed = 0.5 * 10.0 ** -CRFSUITE_LOSS_DECIMALS / n if n and math.isfinite(n) else 0.0
    tol = max(RELATIVE_TOL * max(abs(p_star), 1.0), printed)
    return bool(primal < p_star - tol)
"""A trace below the L-BFGS P* by more than this (relative) makes a weak-P* warning."""


fmt_num = short_number


def _close(a, b, rel: float = 1e-9) -> bool:
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def method_label(solver: dict) -> str:
    """The paper's name of a run's method from its ``meta.json`` "solver" entry
    (:func:`crfsdca.solvers.registry.method_label`); CRFsuite's runs are "CRFsuite
    L-BFGS"."""
    solver = solver or {}
    if solver.get("solver") == "crfsuite":
        alg = str(solver.get("algorithm", "lbfgs")).lower()
        return CRFSUITE_LABEL if alg in ("lbfgs", "l-bfgs") else f"CRFsuite {alg.upper()}"
    return registry.method_label(solver)


def changed_options(solver: dict) -> str:
    """The options of a run that make its label a variant of its base method (SDCA's
    sampler aside), comma-separated."""
    s = registry.SOLVERS.get((solver or {}).get("solver"))
    if s is None:
        return ""
    values = {k: v for k, v in solver.items() if k in s.options.names()}
    skip = () if s.base_option is None else (s.base_option,)
    threads = ["threads"] if int(solver.get("threads") or 1) > 1 else []
    return ",".join(s.options.changed(values, skip) + threads)


def base_label(label: str) -> str:
    """The method without its non-default options ("SDCA-GAP theta=0.5" -> "SDCA-GAP")."""
    return label if label.startswith("CRFsuite") else label.split(" ")[0]


def method_sort_key(label: str) -> tuple:
    base = base_label(label)
    rank = METHOD_ORDER.index(base) if base in METHOD_ORDER else len(METHOD_ORDER)
    return (rank, base, label != base, label)


def dataset_sort_key(name: str) -> tuple:
    return (DATASET_ORDER.index(name) if name in DATASET_ORDER else len(DATASET_ORDER), name)


def dataset_title(name: str) -> str:
    return str(name).upper()


# ----------------------------------------------------------------------------- reading

def find_run_dirs(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Run directories under ``paths``: a run directory itself, its ``meta.json`` or
    ``trace.csv``, or any directory searched recursively for ``meta.json``."""
    found: dict[Path, None] = {}
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise ConfigError(f"{p}: no such run directory or file")
        if p.is_file():
            if p.name not in ("meta.json", "trace.csv"):
                raise ConfigError(f"{p}: expected a run directory, its meta.json or trace.csv")
            found[p.parent.resolve()] = None
        elif (p / "meta.json").is_file():
            found[p.resolve()] = None
        else:
            for meta in sorted(p.rglob("meta.json")):
                found[meta.parent.resolve()] = None
    return list(found)


def _without_meta(run_dir: Path) -> str | None:
    """Why a run directory named by its ``trace.csv`` is no result, if it has no
    ``meta.json`` (written last: the run has not finished, or the workflow moved a
    stopped run's files aside); None if it has one."""
    if (run_dir / "meta.json").is_file():
        return None
    stopped = stopped_name("meta.json")
    if (run_dir / stopped).is_file():
        return (f"no meta.json: the run stopped short ({stopped} says status "
                f"{read_status(run_dir, stopped)!r})")
    return "no meta.json: the run has not finished"


def read_run(run_dir: Path) -> tuple[dict, pd.DataFrame]:
    """``(meta, trace)`` of one run directory; a malformed one is a DataFormatError."""
    meta_path, trace_path = run_dir / "meta.json", run_dir / "trace.csv"
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    except json.JSONDecodeError as e:
        raise DataFormatError(meta_path, f"not valid JSON: {e}", e.lineno) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("solver"), dict):
        raise DataFormatError(meta_path, "expected an object with a 'solver' object")
    try:
        trace = pd.read_csv(trace_path)
    except (FileNotFoundError, pd.errors.EmptyDataError):
        trace = pd.DataFrame()
    if len(trace) and "primal" not in trace.columns:
        raise DataFormatError(trace_path, "no column 'primal' (not a crfsdca trace)")
    for col in TRACE_COLUMNS:  # a foreign trace (CRFsuite) may lack the counters
        if len(trace) and col not in trace.columns:
            trace[col] = math.nan
    return meta, trace


@dataclass
class PStar:
    """The reference optimum of one dataset and where it comes from."""

    dataset: str
    p_star: float
    source: str  # "L-BFGS optimum", "best trace (below L-BFGS)", "best trace (no optimum)"
    lbfgs_p_star: float = math.nan
    gap_bound: float = math.nan
    grad_norm: float = math.nan
    lbfgs_iterations: int | None = None
    best_trace_primal: float = math.nan
    best_trace_label: str = ""
    best_trace_run: str = ""
    resolution: float = math.nan  # P* is known to within this (NaN: unknown)
    warnings: list[str] = field(default_factory=list)


@dataclass
class RunSet:
    """All runs of a report: the tidy trace frame, one row per run, and P* per dataset."""

    frame: pd.DataFrame
    runs: pd.DataFrame
    pstar: dict[str, PStar]
    warnings: list[str]
    machines: list[dict]

    @property
    def datasets(self) -> list[str]:
        return sorted(self.runs["dataset"].unique(), key=dataset_sort_key) if len(
            self.runs) else []


def _option_columns() -> dict[str, type]:
    """A column per solver option of the registry, by its run key (``sampler``,
    ``non_uniformity``, ``sag_decrease``...; shared options once), with its type."""
    out: dict[str, type] = {}
    for spec in registry.SOLVERS.values():
        for o in spec.options:
            out.setdefault(spec.options.key(o.name), o.kind)
    return out


OPTION_COLUMNS = _option_columns()
RUN_COLUMNS = ("dataset", "run", "run_name", "label", "base_label", "variant", "changed",
               "solver", *OPTION_COLUMNS, "seed", "threads", "lam", "n", "status",
               "solver_seconds", "labels_missing")


def _option_values(config: dict) -> dict:
    """The run's options in :data:`OPTION_COLUMNS` (NaN or None for other solvers')."""
    out = {key: math.nan if kind in (float, int) else None
           for key, kind in OPTION_COLUMNS.items()}
    spec = registry.SOLVERS.get(config.get("solver"))
    if spec is None:
        return out
    for o in spec.options:
        value = config.get(o.name)
        if value is not None:
            out[spec.options.key(o.name)] = float(value) if o.kind in (float, int) else value
    return out


def _run_record(run_dir: Path, meta: dict) -> dict:
    s = meta["solver"]
    ds = meta.get("dataset") or {}
    label = method_label(s)
    return {
        "dataset": str(ds.get("name", "?")), "run": str(run_dir), "run_name": run_dir.name,
        "label": label, "base_label": base_label(label), "variant": label != base_label(label),
        "changed": changed_options(s),
        "solver": str(s.get("solver", "?")),
        **_option_values(s),
        "seed": s.get("seed"), "threads": int(s.get("threads") or 1),
        "lam": float(s["lambda"]) if s.get("lambda") is not None else math.nan,
        "n": ds.get("n"), "status": meta.get("status", "?"),
        "solver_seconds": meta.get("solver_seconds", math.nan),
        # a CRFsuite run: labels absent from the training split, which CRFsuite does not
        # know, so its objective (and loss / n) differs from ours (meta.json "check")
        "labels_missing": _labels_missing(meta),
    }


def _labels_missing(meta: dict) -> float:
    check = meta.get("check")
    value = check.get("labels_missing_from_training") if isinstance(check, dict) else None
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def load_runs(paths: Iterable[str | os.PathLike],
              optimum_paths: Iterable[str | os.PathLike] = (),
              skip_unfinished: bool = False) -> RunSet:
    """Read every run under ``paths`` and the reference optima; compute sub-optimality.

    A run with an empty trace is skipped with a warning. A run whose status is not in
    :data:`~crfsdca.training.status.FINISHED`, or one named by its ``trace.csv`` without a
    ``meta.json`` (not finished, or a stopped run whose files the workflow moved aside), is
    a DataFormatError, or with ``skip_unfinished`` skipped with a warning naming it.
    """
    warnings: list[str] = []
    frames, records, machines = [], [], []
    for run_dir in find_run_dirs(paths):
        unfinished = _without_meta(run_dir)
        if unfinished is None:
            meta, trace = read_run(run_dir)
            if trace.empty:
                warnings.append(f"{run_dir}: empty trace, run skipped")
                continue
            status = meta.get("status")
            if status not in FINISHED:
                unfinished = (f"status {status!r} is not a finished run "
                              f"({', '.join(FINISHED)})")
        if unfinished is not None:
            if not skip_unfinished:
                raise DataFormatError(run_dir / "meta.json", f"{unfinished}: rerun it, "
                                      "remove it, or skip such runs (--skip-unfinished)")
            warnings.append(f"{run_dir}: {unfinished}: run skipped")
            continue
        rec = _run_record(run_dir, meta)
        records.append(rec)
        if isinstance(meta.get("machine"), dict):
            machines.append({"dataset": rec["dataset"], "label": rec["label"],
                             **meta["machine"]})
        t = trace.copy()
        for k, v in rec.items():
            t[k] = v
        frames.append(t)
    runs = pd.DataFrame.from_records(records, columns=list(RUN_COLUMNS))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=list(RUN_COLUMNS) + ["epoch", "oracle_epochs", "update_epochs", "seconds",
                                     "primal", "dual", "true_gap", "gap_estimate",
                                     "test_error", "test_f1", "ls_evals", "updates",
                                     "ls_iters", "ls_time_share"])
    for col in frame.columns:
        if col not in RUN_COLUMNS:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    for (ds, grp) in runs.groupby("dataset"):
        combos = grp[["n", "lam"]].dropna().drop_duplicates()
        if len(combos) > 1:
            warnings.append(f"dataset {ds}: runs with different n or lambda "
                            f"({', '.join(f'n={a}, lambda={b:.3g}' for a, b in combos.values)})"
                            ": their sub-optimalities are not comparable")
    optima = _read_optima(optimum_paths)
    pstar = compute_pstar(frame, optima, warnings)
    frame = add_suboptimality(frame, pstar)
    if len(frame):
        frame = frame.sort_values(["dataset", "run", "epoch"], kind="stable").reset_index(
            drop=True)
    for w in warnings:
        log.warning("%s", w)
    return RunSet(frame=frame, runs=runs, pstar=pstar, warnings=warnings, machines=machines)


def _read_optima(paths: Iterable[str | os.PathLike]) -> dict:
    from ..optimum import read_optimum  # numba (optimum.py imports kernels): only to read optima

    out = {}
    for p in paths:
        p = Path(p)
        if not p.is_file():
            raise ConfigError(f"{p}: no such optimum file")
        opt = read_optimum(p)
        out[opt.dataset] = opt
    return out


def compute_pstar(frame: pd.DataFrame, optima: dict, warnings: list[str]) -> dict[str, PStar]:
    """P* per dataset: min(L-BFGS p_star, best primal in the traces of our solvers);
    warnings appended."""
    out: dict[str, PStar] = {}
    datasets = set(frame["dataset"].unique()) if len(frame) else set()
    for ds in sorted(datasets | set(optima), key=dataset_sort_key):
        sub = frame[(frame["dataset"] == ds) & np.isfinite(frame["primal"])
                    & ~frame["solver"].isin(FOREIGN_SOLVERS)] if len(frame) else frame
        best = math.nan
        best_label = best_run = ""
        if len(sub):
            i = sub["primal"].idxmin()
            best, best_label, best_run = float(sub.at[i, "primal"]), sub.at[i, "label"], \
                sub.at[i, "run"]
        duals = sub["dual"].to_numpy(float) if len(sub) and "dual" in sub else np.empty(0)
        duals = duals[np.isfinite(duals)]
        # weak duality: every dual value is below P*, so P* lies in [max dual, best primal]
        certified = best - float(duals.max()) if len(duals) and math.isfinite(best) \
            else math.nan
        opt = optima.get(ds)
        if opt is not None and len(sub):
            lams = sub["lam"].dropna().unique()
            if len(lams) and not any(_close(opt.lam, lam) for lam in lams):
                warnings.append(f"{ds}: the optimum file's lambda {opt.lam:.6g} differs from "
                                f"the runs' ({', '.join(f'{v:.6g}' for v in lams)}); optimum "
                                "ignored")
                opt = None
        if opt is not None:
            ps = PStar(ds, opt.p_star, "L-BFGS optimum", lbfgs_p_star=opt.p_star,
                       gap_bound=opt.gap_bound, grad_norm=opt.grad_norm,
                       lbfgs_iterations=opt.iterations, best_trace_primal=best,
                       best_trace_label=best_label, best_trace_run=best_run)
            ps.resolution = max(opt.gap_bound, RELATIVE_TOL * abs(opt.p_star))
            if math.isfinite(best) and best < opt.p_star:
                rel = (opt.p_star - best) / max(abs(opt.p_star), 1e-300)
                ps.p_star = best
                ps.source = "best trace (below L-BFGS)"
                ps.resolution = max(RELATIVE_TOL * abs(best), certified) if math.isfinite(
                    certified) else math.nan
                if rel > RELATIVE_TOL:
                    msg = (f"{ds}: {best_label} ({best_run}) reaches P = {best:.15g}, below "
                           f"the L-BFGS P* = {opt.p_star:.15g} by {opt.p_star - best:.3g} "
                           f"({rel:.2g} relative): the L-BFGS P* is weak; P* set to the "
                           "trace's value")
                    ps.warnings.append(msg)
                    warnings.append(msg)
        elif math.isfinite(best):
            margin = RELATIVE_TOL * max(abs(best), 1.0)
            ps = PStar(ds, best - margin, "best trace (no optimum)", best_trace_primal=best,
                       best_trace_label=best_label, best_trace_run=best_run,
                       resolution=max(margin, certified) if math.isfinite(certified)
                       else math.nan)
            known = (f"P* is certified to within {ps.resolution:.2g} by the best dual value"
                     if math.isfinite(ps.resolution) else "no dual value bounds P* from below")
            msg = (f"{ds}: no optimum file; P* = best primal in the traces ({best_label}) "
                   f"minus {margin:.1g}: sub-optimalities are relative to the best run; "
                   f"{known}")
            ps.warnings.append(msg)
            warnings.append(msg)
        else:
            continue
        foreign = frame[(frame["dataset"] == ds) & frame["solver"].isin(FOREIGN_SOLVERS)
                        & np.isfinite(frame["primal"])] if len(frame) else frame
        if len(foreign) and foreign_below(float(foreign["primal"].min()), ps.p_star,
                                          foreign["n"].iloc[0] if "n" in foreign else None):
            low = float(foreign["primal"].min())
            msg = (f"{ds}: {foreign['label'].iloc[0]} reports a loss {low:.15g} below P* = "
                   f"{ps.p_star:.15g} (by {ps.p_star - low:.3g}); its objective differs from "
                   "ours (see its meta.json 'check'); P* is left unchanged")
            ps.warnings.append(msg)
            warnings.append(msg)
        out[ds] = ps
    return out


def add_suboptimality(frame: pd.DataFrame, pstar: dict[str, PStar]) -> pd.DataFrame:
    """Columns p_star, subopt = primal - P*, and log10 of subopt, true gap and gap
    estimate (NaN where the value is not positive, so log plots leave it out)."""
    frame = frame.copy()
    if not len(frame):
        for c in ("p_star", "resolution", "subopt", "log10_subopt", "log10_true_gap",
                  "log10_gap_estimate"):
            frame[c] = pd.Series(dtype=float)
        return frame
    frame["p_star"] = frame["dataset"].map(
        {k: v.p_star for k, v in pstar.items()}).astype(float)
    frame["resolution"] = frame["dataset"].map(
        {k: v.resolution for k, v in pstar.items()}).astype(float)
    frame["subopt"] = frame["primal"] - frame["p_star"]
    frame["log10_subopt"] = safe_log10(frame["subopt"])
    for col in ("true_gap", "gap_estimate"):
        frame[f"log10_{col}"] = safe_log10(frame[col]) if col in frame else math.nan
    return frame


def safe_log10(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    out = np.full(v.shape, np.nan)
    ok = np.isfinite(v) & (v > 0)
    out[ok] = np.log10(v[ok])
    return out


# ----------------------------------------------------------------------------- selection

def sdca_runs(frame: pd.DataFrame, sampler: str | None = "gap",
              vary: str | None = None) -> pd.DataFrame:
    """SDCA rows with ``sampler`` and every other option at its default, except option
    ``vary`` (non_uniformity, line_search, subprecision...), which may take any value."""
    if not len(frame):
        return frame
    m = frame["solver"] == "sdca"
    if sampler is not None:
        m &= frame["sampler"] == sampler
    allowed = {vary} if vary is not None else set()
    m &= frame["changed"].map(lambda c: set(filter(None, str(c).split(","))) <= allowed)
    return frame[m]


def subprecision_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """SDCA-GAP rows (default options but the sub-precision) on the datasets where at
    least two sub-precisions were run (the study; the default run alone is not one)."""
    data = sdca_runs(frame, "gap", vary="subprecision")
    if not len(data):
        return data
    counts = data.groupby("dataset")["subprecision"].nunique()
    return data[data["dataset"].isin(counts[counts >= 2].index)]


def select_labels(frame: pd.DataFrame, labels: Iterable[str],
                  dataset: str | None = None) -> pd.DataFrame:
    if not len(frame):
        return frame
    m = frame["label"].isin(list(labels))
    if dataset is not None:
        m &= frame["dataset"] == dataset
    return frame[m]
