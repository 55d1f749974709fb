"""Digests of a reproduction's results, stored in a committed file and checked later.

A digest file (JSON) holds, for chosen runs of a results directory, every trace column
but the timings, and, for chosen datasets, the reference optimum (P*, its certificate
and a digest of w*). :func:`check` compares a later build with it and names the first
run and column (or optimum and field) that differ, with the row and both values.

How values are compared (the file states it too, under ``"rules"``):

- *Counting columns* (:data:`EXACT_COLUMNS`: epochs, oracle calls, updates, line-search
  evaluations, nonzero weights; and any other column whose every value is an integer)
  must match exactly: they do not depend on rounding, and a different count is a
  different trajectory.
- *Float columns* (primal, dual, gaps, test scores, steps...) match within
  :data:`RTOL` (1e-10, ten significant digits) relative to the larger of the two values
  and of the column's largest magnitude in the stored run: a change of rounding in the
  last bits (a gradient summed in another order) passes, a changed trajectory does not.
  The file keeps them to 12 significant digits. (A hash of values rounded to ten digits
  would flip whenever a value sits near a rounding boundary: with thousands of values,
  last-bit noise would fail it at random; a tolerance does not.)
- *Timings* (:func:`is_timing`: solver seconds, the line search's share of the time,
  SDCA's cycle-counter shares ``share_*``, CRFsuite's ``cpu_seconds``) are left out: they
  depend on the machine and its load.
- *Optima*: the dimension and lambda exactly; P* within RTOL; w* by its 2-norm, largest
  magnitude, 1-norm, sum and product with a fixed +-1 vector, each within
  :data:`W_RTOL` relative or what the two certificates allow (w* is known to less than
  P*: strong convexity gives only ||w - w*||^2 <= 2 (P(w) - P*) / lambda, so two optima
  within their gap bounds g1, g2 lie within sqrt(2 g1 / lambda) + sqrt(2 g2 / lambda) of
  each other); the certificate (gap bound, gradient norm) is noise at the optimum and
  need only stay within a factor :data:`GAP_FACTOR`. The L-BFGS iterations and
  evaluations are stored, not compared: a change of the gradient's last bits changes
  them.

Runs on several threads race (their trajectories depend on scheduling) and are never
stored. ``python -m crfsdca.reproduction.digests write`` rewrites a digest file from a
results directory, loudly: a digest changes only in a commit that says why.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import llvmlite
import numba
import numpy as np
from numba.core.registry import cpu_target

from ..runtime import cpu_levels
from ..training.status import FINISHED, read_status
from .optimum import read_optimum

FORMAT = "crfsdca-reproduction-digests"
FORMAT_VERSION = 1

RTOL = 1e-10
"""Relative tolerance of float columns and of P* (ten significant digits)."""
STORED_DIGITS = 12
"""Significant digits the file keeps of a float value (well inside RTOL)."""
W_RTOL = 1e-6
"""Relative tolerance of w*'s digest (norms, sum, projection)."""
GAP_FACTOR = 100.0
"""The optimum's gap bound and gradient norm may move by at most this factor."""

TIMING_COLUMNS = ("seconds", "ls_time_share")
"""Trace columns left out: they measure time..."""
TIMING_PREFIXES = ("share_",)
"""... and so do these (SDCA's cycle-counter shares of a step's phases)..."""
TIMING_SUFFIXES = ("seconds",)
"""... and these (CRFsuite's cpu_seconds)."""


def is_timing(column: str) -> bool:
    """Whether a trace column measures time (left out of the digests)."""
    return (column in TIMING_COLUMNS or column.startswith(TIMING_PREFIXES)
            or column.endswith(TIMING_SUFFIXES))
EXACT_COLUMNS = ("epoch", "oracle_fb", "oracle_fwd", "oracle_epochs", "updates",
                 "update_epochs", "ls_evals", "nonzero_weights")
"""Counting columns compared exactly (so is any other all-integer column)."""

DATASET_ORDER = ("ocr", "conll", "ner", "pos")

RULES = {
    "exact": "counting columns (" + ", ".join(EXACT_COLUMNS) + ", and any all-integer "
             "column) match exactly",
    "float": f"other columns match within {RTOL:g} relative to the larger of the two values "
             "and of the stored column's largest magnitude; stored to "
             f"{STORED_DIGITS} significant digits",
    "left_out": "timings: " + ", ".join(TIMING_COLUMNS + tuple(
        p + "*" for p in TIMING_PREFIXES) + tuple("*" + p for p in TIMING_SUFFIXES))
        + "; runs on several threads",
    "optimum": f"d and lambda exactly; p_star within {RTOL:g} relative; w* norms, sum and "
               f"projection within {W_RTOL:g} relative or the distance the two gap bounds "
               "allow (sqrt(2 g / lambda) each; times sqrt(d) for the 1-norm, sum and "
               f"projection); gap_bound and grad_norm within a factor {GAP_FACTOR:g}; "
               "iterations and evaluations stored, not compared",
}

WARNING = """\
*** REWRITING STORED DIGESTS: {path} ***
The digests are what `make test` (smoke) and `make reproduce-check` (full) compare every
later build with. Commit the new file only in a commit whose message says why the
traces or optima changed (which commit changed them, and that the change is a fix).
"""


# ----------------------------------------------------------------------------- reading

def _number(text: str):
    """A CSV cell as a JSON value: int, float, None (empty or NaN) or 'inf'/'-inf'."""
    text = text.strip()
    if text == "" or text.lower() == "nan":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    v = float(text)
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _as_float(v) -> float:
    if v is None:
        return math.nan
    if isinstance(v, str):
        return float(v)
    return float(v)


def _rounded(v):
    if isinstance(v, float):
        return float(f"{v:.{STORED_DIGITS}g}")
    return v


def read_trace(path: str | os.PathLike) -> dict[str, list]:
    """{column: values} of a trace.csv, every column but the timings."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"{path}: empty trace")
    header, body = rows[0], rows[1:]
    return {name: [_number(r[i]) if i < len(r) else None for r in body]
            for i, name in enumerate(header) if not is_timing(name)}


def _is_exact(name: str, values: list) -> bool:
    return name in EXACT_COLUMNS or all(v is None or isinstance(v, int) for v in values)


def run_digest(run_dir: str | os.PathLike) -> dict:
    """The digest of one run directory: its rows, and each column's values (floats to
    STORED_DIGITS digits), with the names of the exact ones."""
    cols = read_trace(Path(run_dir) / "trace.csv")
    exact = [c for c, v in cols.items() if _is_exact(c, v)]
    return {"rows": len(next(iter(cols.values()), [])), "exact": exact,
            "columns": {c: v if c in exact else [_rounded(x) for x in v]
                        for c, v in cols.items()}}


def _projection(d: int) -> np.ndarray:
    return np.random.default_rng(20180806).choice([-1.0, 1.0], size=d)


def optimum_digest(path: str | os.PathLike) -> dict:
    """The digest of a reference optimum file."""
    opt = read_optimum(path)
    w = np.asarray(opt.w_star, dtype=np.float64)
    return {"d": int(w.size), "lambda": float(opt.lam), "p_star": float(opt.p_star),
            "iterations": int(opt.iterations), "evaluations": int(opt.evaluations),
            "gap_bound": float(opt.gap_bound), "grad_norm": float(opt.grad_norm),
            "w_star": {"norm2": _rounded(float(np.linalg.norm(w))),
                       "norm1": _rounded(float(np.abs(w).sum())),
                       "max_abs": _rounded(float(np.abs(w).max(initial=0.0))),
                       "sum": _rounded(float(w.sum())),
                       "projection": _rounded(float(_projection(w.size) @ w))}}


def _threads(run_dir: Path) -> int:
    """The threads a run was asked for (its command's --threads) or ran on, whichever is
    more: a run asked for two threads but capped to one (OMP_NUM_THREADS=1 in the
    workflow's jobs) is still the grid's two-thread run."""
    try:
        meta = json.loads((run_dir / "meta.json").read_text())
    except (OSError, ValueError):
        return 1
    found = [1]
    for where in (meta, meta.get("args"), meta.get("solver"), meta.get("config")):
        if isinstance(where, dict):
            try:
                found.append(int(where.get("threads") or 1))
            except (TypeError, ValueError):
                pass
    return max(found)


def _run_key(key: str) -> tuple:
    dataset, _, run = key.partition("/")
    order = DATASET_ORDER.index(dataset) if dataset in DATASET_ORDER else len(DATASET_ORDER)
    return order, dataset, run


def available_runs(results: str | os.PathLike) -> list[str]:
    """'dataset/run' of every finished single-thread run under ``results``/runs."""
    root = Path(results) / "runs"
    keys = []
    for trace in root.glob("*/*/trace.csv"):
        run = trace.parent
        if read_status(run) in FINISHED and _threads(run) == 1:
            keys.append(f"{run.parent.name}/{run.name}")
    return sorted(keys, key=_run_key)


def available_optima(results: str | os.PathLike) -> list[str]:
    root = Path(results) / "optimum"
    return sorted((p.stem for p in root.glob("*.h5")), key=lambda d: _run_key(d + "/"))


def build(results: str | os.PathLike, runs: list[str] | None = None,
          optima: list[str] | None = None, profile: str = "") -> dict:
    """The digest file's content for these runs ('dataset/run') and optima (datasets) of
    ``results`` (default: every single-thread run and every optimum there)."""
    results = Path(results)
    runs = available_runs(results) if runs is None else sorted(runs, key=_run_key)
    optima = available_optima(results) if optima is None else list(optima)
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "profile": profile,
            "made_on": machine(), "rules": RULES,
            "optima": {d: optimum_digest(results / "optimum" / f"{d}.h5") for d in optima},
            "runs": {k: run_digest(results / "runs" / k) for k in runs}}


def host_level() -> str:
    """The best standard level this processor runs (:mod:`crfsdca.runtime.cpu_levels`;
    "none" if none): the vector instructions numba compiles the kernels with, which
    their rounding, and so SDCA's path, follows (the smoke profile's runs on an
    x86-64-v4 processor differ from an x86-64-v3 one's from the second epoch)."""
    triple, _, features = cpu_target.target_context.codegen().magic_tuple()
    runs = cpu_levels.runnable(triple, features)
    return runs[0] if runs else "none"


def for_host(path: str | os.PathLike) -> Path:
    """The digest file for this processor: ``NAME.LEVEL.json`` beside ``path`` where
    there is one for its :func:`host_level`, else ``path``."""
    path = Path(path)
    variant = path.with_name(f"{path.stem}.{host_level()}{path.suffix}")
    return variant if variant.exists() else path


def machine() -> dict:
    """Where the digests were made (a difference on another processor may be its
    rounding): processor, its level, architecture, numba, llvmlite and numpy."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f
                        if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {"processor": cpu, "level": host_level(), "machine": platform.machine(),
            "numba": numba.__version__,
            "llvmlite": llvmlite.__version__, "numpy": np.__version__}


def write(path: str | os.PathLike, digest: dict) -> None:
    text = json.dumps(digest, indent=1, sort_keys=False)
    # one line per column: the file stays readable and its diffs name the column
    Path(path).write_text(_compact(text) + "\n")


def _compact(text: str) -> str:
    """JSON with every list of scalars on one line."""
    out, buf, depth = [], [], 0
    for line in text.splitlines():
        s = line.strip()
        if depth:
            buf.append(s)
            if s.startswith("]"):
                depth = 0
                out.append(buf[0] + " ".join(buf[1:-1]) + buf[-1])
                buf = []
            continue
        if s.endswith("[") and not s.endswith("[["):
            depth, buf = 1, [line]
            continue
        out.append(line)
    return "\n".join(out)


def load(path: str | os.PathLike) -> dict:
    digest = json.loads(Path(path).read_text())
    if digest.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} file")
    if int(digest.get("format_version", 0)) > FORMAT_VERSION:
        raise ValueError(f"{path}: format version {digest['format_version']} is newer than "
                         f"this package reads ({FORMAT_VERSION})")
    return digest


def targets(digest: dict, results: str) -> list[str]:
    """The files a build must make for :func:`check`: each run's trace.csv and each
    optimum."""
    return ([f"{results}/optimum/{d}.h5" for d in digest["optima"]]
            + [f"{results}/runs/{k}/trace.csv" for k in digest["runs"]])


# ----------------------------------------------------------------------------- comparing

@dataclass
class Difference:
    where: str   # 'run ner/sdca_seed-0' or 'optimum ner'
    field: str   # the column or field
    detail: str  # the row and both values

    def __str__(self) -> str:
        return f"{self.where}, {self.field}: {self.detail}"


def _fmt(v) -> str:
    return "missing" if v is None else repr(v)


def _floats_close(a, b, scale: float, rtol: float) -> bool:
    x, y = _as_float(a), _as_float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= rtol * max(abs(x), abs(y), scale)


def _scale(values) -> float:
    v = [abs(_as_float(x)) for x in values]
    v = [x for x in v if math.isfinite(x)]
    return max(v) if v else 0.0


def compare_run(key: str, stored: dict, now: dict) -> list[Difference]:
    """The differences of one run, columns in the stored order (the trace's)."""
    where = f"run {key}"
    out = []
    for col, want in stored["columns"].items():
        got = now["columns"].get(col)
        if got is None:
            out.append(Difference(where, col, "column missing from the new trace"))
            continue
        if len(got) != len(want):
            out.append(Difference(where, col, f"{len(got)} rows, stored {len(want)}"))
            continue
        exact = col in stored["exact"]
        scale = 0.0 if exact else _scale(want)
        epochs = now["columns"].get("epoch") or [None] * len(got)
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            if (a == b) if exact else _floats_close(a, b, scale, RTOL):
                continue
            how = " (an exact column)"
            if not exact:
                x, y = _as_float(a), _as_float(b)
                how = ""
                if math.isfinite(x) and math.isfinite(y):
                    how = (f", relative difference {abs(x - y) / max(abs(x), abs(y)):.2g}"
                           f" (tolerance {RTOL:g} x {max(abs(x), abs(y), scale):.3g})")
            out.append(Difference(where, col, f"row {i} (epoch {_fmt(epochs[i])}): stored "
                                  f"{_fmt(a)}, now {_fmt(b)}{how}"))
            break
    extra = sorted(set(now["columns"]) - set(stored["columns"]))
    if extra:
        out.append(Difference(where, ", ".join(extra),
                              "new column(s) not in the stored digest"))
    return out


W_NORMS = {"norm2": 1.0, "max_abs": 1.0, "norm1": "sqrt_d", "sum": "sqrt_d",
           "projection": "sqrt_d"}
"""How each w* statistic can move when w* moves by r in the 2-norm: by r, or (a 1-norm, a
sum, a product with a +-1 vector) by sqrt(d) r."""


def _radius(opt: dict) -> float:
    """How far the optimum's w can be from the true w*: sqrt(2 gap_bound / lambda)
    (strong convexity, ||w - w*||^2 <= 2 (P(w) - P*) / lambda)."""
    g, lam = float(opt.get("gap_bound", math.nan)), float(opt.get("lambda", math.nan))
    return math.sqrt(2 * g / lam) if g >= 0 and lam > 0 else 0.0


def compare_optimum(dataset: str, stored: dict, now: dict) -> list[Difference]:
    """d and lambda exactly, P* within RTOL, w*'s statistics within W_RTOL or what the two
    certificates allow, the certificate within GAP_FACTOR. The L-BFGS iterations and
    evaluations are recorded, not compared: they follow the gradient's last bits."""
    where = f"optimum {dataset}"
    out = []
    for k in ("d", "lambda"):
        if stored[k] != now[k]:
            out.append(Difference(where, k, f"stored {stored[k]!r}, now {now[k]!r}"))
    if not _floats_close(stored["p_star"], now["p_star"], 0.0, RTOL):
        x, y = stored["p_star"], now["p_star"]
        out.append(Difference(where, "p_star", f"stored {x!r}, now {y!r} (relative "
                              f"difference {abs(x - y) / max(abs(x), abs(y), 1e-300):.2g}, "
                              f"tolerance {RTOL:g})"))
    r = _radius(stored) + _radius(now)
    for k, v in stored["w_star"].items():
        w = now["w_star"][k]
        factor = math.sqrt(stored["d"]) if W_NORMS.get(k) == "sqrt_d" else 1.0
        allowed = max(W_RTOL * max(abs(v), abs(w)), factor * r)
        if not abs(v - w) <= allowed:
            out.append(Difference(where, f"w_star {k}", f"stored {v!r}, now {w!r} (allowed "
                                  f"{allowed:.2g})"))
    for k in ("gap_bound", "grad_norm"):
        x, y = stored[k], now[k]
        if not (x > 0 and y > 0 and max(x / y, y / x) <= GAP_FACTOR) and x != y:
            out.append(Difference(where, k, f"stored {x!r}, now {y!r} (more than a factor "
                                  f"{GAP_FACTOR:g} apart)"))
    return out


def check(stored: dict, results: str | os.PathLike) -> list[Difference]:
    """Every difference between the stored digest and the results directory: optima
    first, then the runs in the stored order; a missing file is a difference."""
    results = Path(results)
    out = []
    for ds, want in stored["optima"].items():
        path = results / "optimum" / f"{ds}.h5"
        if not path.is_file():
            out.append(Difference(f"optimum {ds}", "file", f"{path} not found"))
            continue
        out += compare_optimum(ds, want, optimum_digest(path))
    for key, want in stored["runs"].items():
        path = results / "runs" / key / "trace.csv"
        if not path.is_file():
            out.append(Difference(f"run {key}", "trace.csv", f"{path} not found"))
            continue
        out += compare_run(key, want, run_digest(results / "runs" / key))
    return out


REWRITE = {
    "smoke": "make smoke && python -m crfsdca.reproduction.digests write --results "
             "results/smoke --out {path}",
    "full": "make reproduce-check (the build; its check fails) && python -m "
            "crfsdca.reproduction.digests write --results results --out {path}",
}
"""How each profile's digest file is rewritten from a build of this checkout."""


def report(differences: list[Difference], stored_path, results, profile: str = "") -> str:
    """The check's answer: the first difference, then every run and optimum that differs;
    and how to rewrite the digests when the change is meant."""
    if not differences:
        return f"{results} matches the stored digests {stored_path}."
    first = differences[0]
    where = list(dict.fromkeys(d.where for d in differences))
    rewrite = REWRITE.get(profile, "python -m crfsdca.reproduction.digests write "
                          "--results RESULTS --out {path}").format(path=stored_path)
    return "\n".join([
        f"{results} differs from the stored digests {stored_path}:",
        f"first difference: {first}",
        f"{len(differences)} difference(s) in {len(where)} run(s)/optima: "
        + "; ".join(f"{d.where} [{d.field}]" for d in differences[:20])
        + (" ..." if len(differences) > 20 else ""),
        "Find the commit that changed them. Only if the change is meant (a fix), rewrite "
        f"the digests ({rewrite}) in a commit that says why."])


# ----------------------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m crfsdca.reproduction.digests",
        description="Check a reproduction's traces and optima against stored digests, or "
                    "rewrite the stored digests.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="compare a results directory with a digest file")
    c.add_argument("--digests", required=True)
    c.add_argument("--results", required=True)
    t = sub.add_parser("targets", help="the files a build must make for the check")
    t.add_argument("--digests", required=True)
    t.add_argument("--results", required=True)
    w = sub.add_parser("write", help="REWRITE a digest file from a results directory")
    w.add_argument("--results", required=True)
    w.add_argument("--out", required=True)
    w.add_argument("--profile", default="")
    w.add_argument("--runs", nargs="*", help="dataset/run keys (default: the file's own "
                   "runs if it exists, else every single-thread run)")
    w.add_argument("--optima", nargs="*", help="datasets (default: as for --runs)")
    a = p.parse_args(argv)
    if a.command == "check":
        path = for_host(a.digests)
        stored = load(path)
        diffs = check(stored, a.results)
        print(report(diffs, path, a.results, stored.get("profile", "")),
              file=sys.stderr if diffs else sys.stdout)
        return 1 if diffs else 0
    if a.command == "targets":
        print(" ".join(targets(load(for_host(a.digests)), a.results.rstrip("/"))))
        return 0
    runs, optima, profile = a.runs, a.optima, a.profile
    if Path(a.out).is_file():
        old = load(a.out)
        runs = list(old["runs"]) if runs is None else runs
        optima = list(old["optima"]) if optima is None else optima
        profile = profile or old.get("profile", "")
    print(WARNING.format(path=a.out), file=sys.stderr)
    digest = build(a.results, runs, optima, profile)
    write(a.out, digest)
    print(f"wrote {a.out}: {len(digest['runs'])} runs, {len(digest['optima'])} optima",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
