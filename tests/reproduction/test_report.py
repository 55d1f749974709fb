"""The report: run traces -> tidy frame, sub-optimality, figures, tables, claims, markdown."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from helpers.paths import ROOT  # noqa: E402

from crfsdca.cli.report import FIGURE_NAMES, TABLE_NAMES  # noqa: E402
from crfsdca.cli.report import add_arguments as _args_report  # noqa: E402
from crfsdca.cli.report import run as cmd_report  # noqa: E402
from crfsdca.reproduction.optimum import Optimum, write_optimum  # noqa: E402
from crfsdca.reproduction.report import catalog, claims, curves, figures, tables  # noqa: E402
from crfsdca.reproduction.report.load import load_runs, method_label  # noqa: E402
from crfsdca.reproduction.report.markdown import build_report  # noqa: E402
from crfsdca.reproduction.rundir import write_trace  # noqa: E402
from crfsdca.solvers.monitor import TRACE_COLUMNS  # noqa: E402

P_STAR = {"ocr": 2.0, "conll": 3.0, "ner": 1.5, "pos": 4.0}
LAM = 0.01
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- fake runs

def trace_rows(subopt, p_star=2.0, oracle_per_update=1.0, sec_per_epoch=0.5, epochs=None,
               gap_factor=1.2, ls_iters=2.0, ls_share=0.3, test_error=None, gap=True):
    """Trace rows with the given sub-optimality at epochs 0, 1, 2, ..."""
    subopt = np.asarray(subopt, dtype=float)
    epochs = np.arange(len(subopt), dtype=float) if epochs is None else np.asarray(epochs)
    n = 100
    rows = []
    for k, (e, s) in enumerate(zip(epochs, subopt, strict=True)):
        updates = int(round(e * n))
        true_gap = 2.0 * s if gap and np.isfinite(s) else math.nan
        row = dict.fromkeys(TRACE_COLUMNS, math.nan)
        row.update(
            epoch=e, oracle_fb=int(updates * oracle_per_update), oracle_fwd=0,
            oracle_epochs=e * oracle_per_update, updates=updates, update_epochs=e,
            ls_evals=int(round(ls_iters * updates)), seconds=e * sec_per_epoch,
            primal=p_star + s, dual=(p_star + s - true_gap) if gap else math.nan,
            true_gap=true_gap, gap_estimate=(true_gap * gap_factor if k else 100.0)
            if gap else math.nan,
            test_error=0.5 / (1 + e) if test_error is None else test_error[k],
            ls_iters=ls_iters if k else 0.0, ls_time_share=ls_share if k else 0.0,
            mean_step=0.5)
        rows.append(row)
    return rows


def decay(rate, epochs=20, start=10.0, floor=0.0):
    """start * 10^(-rate * e) for e = 0..epochs, plus ``floor``."""
    e = np.arange(epochs + 1, dtype=float)
    return start * 10.0 ** (-rate * e) + floor


def sdca(sampler="gap", theta=0.8, line_search="newton", subprecision=1e-3, seed=0,
         line_search_start="regula-falsi"):
    return {"solver": "sdca", "seed": seed, "lambda": LAM, "sampler": sampler,
            "non_uniformity": theta, "line_search": line_search,
            "line_search_start": line_search_start, "subprecision": subprecision,
            "step_size": None, "refresh_every": 0.0,
            "store_dtype": "float64", "init_c": 10.0}


PAPER_ONE_STEP_RUN = sdca(line_search_start="midpoint", subprecision=0.5)


def other(name, seed=0):
    return {"solver": name, "seed": seed, "lambda": LAM}


def write_run(root: Path, dataset: str, name: str, solver: dict, rows: list[dict],
              status: str = "budget") -> Path:
    d = root / dataset / name
    d.mkdir(parents=True, exist_ok=True)
    write_trace(d / "trace.csv", rows)
    meta = {"command": "train", "dataset": {"name": dataset, "path": f"{dataset}.h5",
                                            "sha256": "0" * 64, "n": 100, "d": 50},
            "status": status, "solver_seconds": rows[-1]["seconds"], "solver": solver,
            "machine": {"cores": 2, "usable_cores": 2, "machine": "x86_64", "processor": "",
                        "python": "3.11", "numpy": "2", "numba": "0.6",
                        "numba_threads": 2}, "final": rows[-1]}
    (d / "meta.json").write_text(json.dumps(meta))
    return d


def write_opt(path: Path, dataset: str, p_star: float, lam: float = LAM) -> Path:
    write_optimum(path, Optimum(w_star=np.zeros(3), p_star=p_star, grad_norm=1e-8,
                                grad_max=1e-9, gap_bound=5e-15, iterations=100,
                                evaluations=120, seconds=1.0, lam=lam, dataset=dataset,
                                dataset_sha256="0" * 64, settings={"maxiter": 100}))
    return path


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """Runs shaped like the paper's findings, on four datasets, with optimum files."""
    root = tmp_path_factory.mktemp("runs")
    opt_dir = tmp_path_factory.mktemp("optimum")
    optima = [write_opt(opt_dir / f"{ds}.h5", ds, p) for ds, p in P_STAR.items()]
    for ds, p in P_STAR.items():
        def w(name, solver, subopt, p=p, ds=ds, **kw):
            write_run(root, ds, name, solver, trace_rows(subopt, p_star=p, **kw))
        w("uniform", sdca("uniform"), decay(0.25))
        w("gap", sdca("gap"), decay(0.45))
        # SAG-NUS: more oracle calls per update; faster per update than SDCA-GAP on OCR only
        w("sagnus", other("sag-nus"), decay(0.6 if ds == "ocr" else 0.3),
          oracle_per_update=1.6, gap=False)
        # SAG-NUS*: on par with SDCA-GAP in oracle calls on OCR, 2.7x slower elsewhere
        w("sagnusstar", other("sag-nus-star"), decay(0.58 if ds == "ocr" else 0.2),
          oracle_per_update=1.2, gap=False)
        w("oeg", other("oeg"), decay(0.15), oracle_per_update=1.3)
        w("lbfgs", other("lbfgs"), decay(0.5, epochs=10), oracle_per_update=1.1, gap=False)
        w("single", sdca(line_search="single-newton"), decay(0.42))
        w("onestep", PAPER_ONE_STEP_RUN,
          decay(0.02, floor=1.0) if ds == "ner" else decay(0.42))
        if ds in ("ocr", "conll"):
            for sp, rate in ((1e-1, 0.4), (1e-2, 0.44), (1e-4, 0.45), (1e-6, 0.45)):
                w(f"sp{sp:g}", sdca(subprecision=sp), decay(rate),
                  ls_iters=-math.log10(sp), ls_share=0.05 * -math.log10(sp))
    for sampler, rate in (("importance", 0.2), ("gap-importance", 0.35)):
        write_run(root, "ocr", sampler, sdca(sampler), trace_rows(decay(rate), 2.0))
    write_run(root, "ocr", "max", sdca("max"), trace_rows(decay(0.3, floor=0.5), 2.0))
    for theta, rate in ((0.0, 0.25), (0.2, 0.3), (0.5, 0.38), (1.0, 0.47)):
        write_run(root, "ner", f"theta{theta}", sdca(theta=theta),
                  trace_rows(decay(rate), P_STAR["ner"]))
    for ds in ("conll", "ner"):  # SDCA-GAP on two threads: the same updates in 0.6x the time
        write_run(root, ds, "gap2threads", {**sdca("gap"), "threads": 2},
                  trace_rows(decay(0.45), P_STAR[ds], sec_per_epoch=0.3))
    return root, optima


# ----------------------------------------------------------------------------- labels

@pytest.mark.parametrize("solver, label", [
    (sdca("uniform"), "SDCA"),
    (sdca("uniform", theta=0.3), "SDCA"),
    (sdca("gap"), "SDCA-GAP"),
    (sdca("importance"), "SDCA-IMP"),
    (sdca("gap-importance"), "SDCA-GAPxIMP"),
    (sdca("max"), "SDCA-MAX"),
    (sdca("perm"), "SDCA-PERM"),
    (sdca("cyclic"), "SDCA-CYCLIC"),
    (sdca("gap", theta=0.5), "SDCA-GAP theta=0.5"),
    (sdca("gap", theta=0.0), "SDCA-GAP theta=0"),
    (sdca("gap", line_search="single-newton"), "SDCA-GAP single Newton"),
    (sdca("gap", line_search="single-newton", subprecision=1e-6), "SDCA-GAP single Newton"),
    (sdca("gap", subprecision=1e-4), "SDCA-GAP 1e-4"),
    (sdca("gap", subprecision=0.1), "SDCA-GAP 1e-1"),
    ({**sdca("gap"), "line_search": "fixed", "step_size": 0.25}, "SDCA-GAP fixed step=0.25"),
    (other("sag"), "SAG"),
    (other("sag-nus"), "SAG-NUS"),
    (other("sag-nus-star"), "SAG-NUS*"),
    (other("oeg"), "OEG"),
    (other("lbfgs"), "L-BFGS"),
    (other("crfsuite"), "CRFsuite L-BFGS"),
])
def test_method_label(solver, label):
    assert method_label(solver) == label


def test_label_comes_from_meta_not_directory(tmp_path):
    write_run(tmp_path, "ocr", "sdca-uniform", sdca("gap"), trace_rows(decay(0.3, 3)))
    rs = load_runs([tmp_path])
    assert list(rs.runs["label"]) == ["SDCA-GAP"]


# ----------------------------------------------------------------------------- loading

def test_suboptimality_against_optimum_and_weak_pstar_warning(tmp_path):
    write_run(tmp_path / "r", "ocr", "a", sdca("gap"),
              trace_rows([1.0, 0.1, 0.01], p_star=2.0))
    opt = write_opt(tmp_path / "ocr.h5", "ocr", 2.0)
    rs = load_runs([tmp_path / "r"], [opt])
    assert rs.pstar["ocr"].p_star == 2.0
    assert rs.pstar["ocr"].source == "L-BFGS optimum"
    assert np.allclose(rs.frame["subopt"], [1.0, 0.1, 0.01])
    assert np.allclose(rs.frame["log10_subopt"], [0, -1, -2])
    assert not rs.warnings
    # a trace going below the L-BFGS optimum: P* moves down to it and a warning is recorded
    write_run(tmp_path / "r", "ocr", "b", sdca("uniform"),
              trace_rows([1.0, -1e-6], p_star=2.0))
    rs = load_runs([tmp_path / "r"], [opt])
    assert rs.pstar["ocr"].p_star == pytest.approx(2.0 - 1e-6)
    assert any("weak" in w for w in rs.warnings)
    assert rs.frame["subopt"].min() == 0.0
    assert rs.frame["log10_subopt"].isna().sum() == 1  # log10(0) left out of the plots


def test_pstar_fallback_without_optimum(tmp_path):
    write_run(tmp_path, "pos", "a", sdca("gap"), trace_rows([1.0, 0.5, 0.25], p_star=4.0))
    rs = load_runs([tmp_path])
    p = rs.pstar["pos"]
    assert p.source == "best trace (no optimum)"
    assert 4.25 - 1e-10 < p.p_star < 4.25
    assert any("no optimum file" in w for w in rs.warnings)
    assert (rs.frame["subopt"] > 0).all()
    # weak duality bounds P* from below: the best dual value 3.75 certifies it to 0.5
    assert p.resolution == pytest.approx(0.5)


def test_compare_ignores_targets_below_the_resolution_of_pstar(tmp_path):
    e = np.arange(11.0)
    write_run(tmp_path, "ocr", "a", sdca("gap"), trace_rows(10.0 ** (1 - 0.6 * e), 2.0))
    write_run(tmp_path, "ocr", "b", sdca("uniform"),
              trace_rows(np.maximum(10.0 ** (1 - 1.5 * e), 2e-4), 2.0))
    rs = load_runs([tmp_path], [write_opt(tmp_path / "o.h5", "ocr", 2.0)])
    a, b = (rs.frame[rs.frame["label"] == k] for k in ("SDCA-GAP", "SDCA"))
    assert curves.compare(a, b, "epoch").winner == "a"  # only a reaches 1e-4 and below
    coarse = rs.frame.assign(resolution=1e-3)  # P* known to 1e-3 only
    a, b = (coarse[coarse["label"] == k] for k in ("SDCA-GAP", "SDCA"))
    c = curves.compare(a, b, "epoch")
    assert c.target == 1e-3 and c.winner == "b"
    t = tables.time_to_target(coarse).set_index(["method", "target"])
    assert t.loc[("SDCA-GAP", 1e-2), "resolved"] and not t.loc[("SDCA-GAP", 1e-4), "resolved"]
    md = tables.time_to_target_markdown(tables.time_to_target(coarse))
    assert "| OCR | SDCA-GAP | 5 | 5 | 2.5 | n/r | n/r | n/r | n/r | n/r | n/r |" in md


def test_optimum_with_other_lambda_is_ignored(tmp_path):
    write_run(tmp_path / "r", "ocr", "a", sdca("gap"), trace_rows([1.0, 0.1], p_star=2.0))
    opt = write_opt(tmp_path / "ocr.h5", "ocr", 1.0, lam=0.5)
    rs = load_runs([tmp_path / "r"], [opt])
    assert rs.pstar["ocr"].source == "best trace (no optimum)"
    assert any("differs" in w for w in rs.warnings)


def test_incomplete_runs_are_skipped(tmp_path):
    write_run(tmp_path, "ocr", "ok", sdca("gap"), trace_rows([1.0, 0.1]))
    (tmp_path / "ocr" / "running").mkdir()
    write_trace(tmp_path / "ocr" / "running" / "trace.csv", trace_rows([1.0]))  # no meta yet
    d = tmp_path / "ocr" / "empty"
    d.mkdir()
    (d / "trace.csv").write_text("")
    (d / "meta.json").write_text(json.dumps({"solver": sdca("gap"),
                                             "dataset": {"name": "ocr"}}))
    rs = load_runs([tmp_path])
    assert len(rs.runs) == 1
    assert any("empty trace" in w for w in rs.warnings)


def test_runs_given_as_meta_files_and_overlapping_dirs(tmp_path):
    d = write_run(tmp_path, "ocr", "a", sdca("gap"), trace_rows([1.0, 0.1]))
    rs = load_runs([tmp_path, d, d / "meta.json"])
    assert len(rs.runs) == 1


# ----------------------------------------------------------------------------- metrics/tables

def test_time_to_target_on_a_hand_made_trace(tmp_path):
    sub = [10.0, 1.0, 5e-3, 5e-5, 2e-4, 5e-7]
    write_run(tmp_path, "ocr", "a", sdca("gap"),
              trace_rows(sub, p_star=2.0, oracle_per_update=2.0, sec_per_epoch=3.0))
    write_run(tmp_path, "ocr", "b", sdca("uniform"), trace_rows([10.0, 1.0, 0.5], 2.0))
    rs = load_runs([tmp_path], [write_opt(tmp_path / "o.h5", "ocr", 2.0)])
    t = tables.time_to_target(rs.frame)
    a = t[t["method"] == "SDCA-GAP"].set_index("target")
    assert a.loc[1e-2, "epoch"] == 2 and a.loc[1e-2, "oracle_epochs"] == 4
    assert a.loc[1e-2, "seconds"] == 6
    assert a.loc[1e-4, "epoch"] == 3  # first crossing, even if it goes back up after
    assert a.loc[1e-6, "epoch"] == 5 and a.loc[1e-6, "update_epochs"] == 5
    b = t[t["method"] == "SDCA"].set_index("target")
    assert math.isinf(b.loc[1e-2, "epoch"]) and b.loc[1e-2, "reached"] == 0
    md = tables.time_to_target_markdown(t)
    assert "| OCR | SDCA | — |" in md
    assert "| OCR | SDCA-GAP | 2 | 4 | 6 | 3 | 6 | 9 | 5 | 10 | 15 |" in md
    # interpolated crossing (for claims): sqrt(0.5) is halfway (in log) between the
    # sub-optimalities 1 (epoch 1) and 0.5 (epoch 2)
    run = rs.frame[rs.frame["label"] == "SDCA"]
    assert curves.first_reach(run, "epoch", 0.5 ** 0.5, interpolate=True) == pytest.approx(
        1.5)
    assert curves.first_reach(run, "epoch", 0.5 ** 0.5) == 2


def test_compare_picks_the_faster_method(full):
    root, optima = full
    rs = load_runs([root / "ocr"], optima)
    f = rs.frame
    c = curves.compare(f[f["label"] == "SDCA-GAP"], f[f["label"] == "SDCA"], "oracle_epochs")
    assert c.winner == "a"
    assert c.target <= 1e-7  # SDCA-GAP ends at 10 * 10^-(0.45 * 20) = 1e-8, SDCA at 1e-4
    assert c.x_b == math.inf and 15 < c.x_a <= 20
    c = curves.compare(f[f["label"] == "SDCA"], f[f["label"] == "SDCA"], "oracle_epochs")
    assert c.winner == "tie"
    assert curves.compare(f.iloc[0:0], f, "epoch").winner == "none"


def test_line_search_summary():
    rows = pd.DataFrame(trace_rows(decay(0.3, 4), ls_iters=2.0, ls_share=0.3))
    rows["run"] = "r"
    rows.loc[2, "ls_time_share"] = 0.6  # one interval out of four at 60%
    iters, share = curves.line_search_summary(rows)
    assert iters == pytest.approx(2.0)
    assert share == pytest.approx((0.3 * 3 + 0.6) / 4)


def test_subprecision_and_optimum_tables(full):
    root, optima = full
    rs = load_runs([root], optima)
    t = tables.subprecision_table(rs.frame)
    assert set(t["dataset"]) == {"ocr", "conll"}
    ocr = t[t["dataset"] == "ocr"].set_index("subprecision")
    assert list(ocr.index) == [1e-1, 1e-2, 1e-3, 1e-4, 1e-6]
    assert ocr.loc[1e-4, "ls_iterations"] == pytest.approx(4.0)
    assert ocr.loc[1e-4, "ls_time_share"] == pytest.approx(0.2)
    md = tables.subprecision_markdown(t)
    assert "| OCR | 1e-4 | 1 | 4 | 20.0% |" in md
    o = tables.optimum_table(rs)
    assert list(o["dataset"]) == ["ocr", "conll", "ner", "pos"]
    assert (o["source"] == "L-BFGS optimum").all()


# ----------------------------------------------------------------------------- CRFsuite speed

def write_crfsuite(root: Path, dataset: str, seconds, subopt, p_star: float,
                   labels_missing: int = 0) -> Path:
    """A CRFsuite run as `crfsdca crfsuite` writes it: one row per L-BFGS iteration, the
    primal its loss / n, seconds wall time, no dual or gap columns."""
    d = root / dataset / "crfsuite"
    d.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, (t, sub) in enumerate(zip(seconds, subopt, strict=True), start=1):
        row = dict.fromkeys(TRACE_COLUMNS, math.nan)
        row.update(epoch=float(k), oracle_fb=k * 100, oracle_fwd=0, oracle_epochs=float(k),
                   updates=k, update_epochs=k / 100, ls_evals=k, seconds=float(t),
                   primal=p_star + sub)
        rows.append(row)
    write_trace(d / "trace.csv", rows)
    meta = {"command": "crfsuite", "dataset": {"name": dataset, "n": 100, "d": 50},
            "status": "budget", "solver_seconds": float(seconds[-1]),
            "solver": {"solver": "crfsuite", "lambda": LAM, "num_memories": 6},
            "machine": {"cores": 2, "usable_cores": 2, "machine": "x86_64", "processor": "",
                        "numba_threads": 1},
            "check": {"labels_missing_from_training": labels_missing}}
    (d / "meta.json").write_text(json.dumps(meta))
    return d


@pytest.fixture
def speed_runs(tmp_path):
    """CONLL (P* = 3) and NER (P* = 1.5): SDCA-GAP and CRFsuite with known crossings of
    the relative targets 1e-2, 1e-4, 1e-6 (absolute 3e-2, 3e-4, 3e-6 on CONLL)."""
    root = tmp_path / "runs"
    # CONLL, SDCA-GAP at 0.5 s per epoch: <= 3e-2 at epoch 2 (1 s), <= 3e-4 at epoch 4
    # (2 s; epoch 3's 1e-3 is not), <= 3e-6 at epoch 6 (3 s)
    gap_conll = [10.0, 0.05, 0.02, 1e-3, 2e-4, 5e-6, 2e-6]
    write_run(root, "conll", "gap", sdca("gap"),
              trace_rows(gap_conll, p_star=3.0, sec_per_epoch=0.5))
    # a second seed, identical but never below 3e-6: the 1e-6 time is 1 of 2 runs
    write_run(root, "conll", "gap1", sdca("gap", seed=1),
              trace_rows(gap_conll[:-1] + [5e-6], p_star=3.0, sec_per_epoch=0.5))
    # variants and methods outside the table are left out
    write_run(root, "conll", "theta", sdca("gap", theta=0.5),
              trace_rows([10.0, 1e-9], p_star=3.0, sec_per_epoch=0.01))
    write_run(root, "conll", "sagnusstar", other("sag-nus-star"),
              trace_rows([10.0, 1e-9], p_star=3.0, sec_per_epoch=0.01, gap=False))
    # SAG-NUS: 1 s per epoch, reaches 3e-2 at epoch 3 and nothing deeper
    write_run(root, "conll", "sagnus", other("sag-nus"),
              trace_rows([10.0, 1.0, 0.1, 0.01, 0.005], p_star=3.0, sec_per_epoch=1.0,
                         gap=False))
    # CRFsuite: <= 3e-2 at 1.1 s, <= 3e-4 at 6 s, never <= 3e-6 (run ends at 9 s)
    write_crfsuite(root, "conll", [0.4, 1.1, 2.5, 4.0, 6.0, 9.0],
                   [1.0, 0.025, 0.01, 1e-3, 2.9e-4, 1e-5], 3.0)
    # NER (targets 1.5e-2, 1.5e-4, 1.5e-6): SDCA-GAP at 1 s per epoch reaches the first
    # two at 1 s and 3 s and never the third (run ends at 4 s); CRFsuite at 2, 5, 20 s
    write_run(root, "ner", "gap", sdca("gap"),
              trace_rows([1.0, 0.01, 1e-3, 1e-4, 1e-5], p_star=1.5, sec_per_epoch=1.0))
    write_crfsuite(root, "ner", [2.0, 5.0, 8.0, 20.0], [0.01, 1e-4, 1e-5, 1e-6], 1.5)
    optima = [write_opt(tmp_path / "conll.h5", "conll", 3.0),
              write_opt(tmp_path / "ner.h5", "ner", 1.5)]
    return root, optima


def test_crfsuite_speed_on_hand_made_traces(speed_runs):
    root, optima = speed_runs
    rs = load_runs([root], optima)
    assert rs.pstar["conll"].p_star == 3.0 and rs.pstar["ner"].p_star == 1.5
    t = tables.crfsuite_speed(rs.frame)
    assert list(t["dataset"]) == ["conll"] * 3 + ["ner"] * 3
    assert list(t.columns[5:11]) == list(tables.SPEED_METHODS)
    c = t[t["dataset"] == "conll"].set_index("relative_target")
    assert list(c.index) == [1e-2, 1e-4, 1e-6]
    assert c["target"].tolist() == pytest.approx([3e-2, 3e-4, 3e-6])
    assert c["resolved"].all()
    assert c["SDCA-GAP"].tolist() == [1.0, 2.0, 3.0]
    assert c["CRFsuite L-BFGS"].tolist()[:2] == [1.1, 6.0]
    assert math.isinf(c.loc[1e-6, "CRFsuite L-BFGS"])
    assert c.loc[1e-2, "ratio"] == pytest.approx(1.1)
    assert c.loc[1e-4, "ratio"] == pytest.approx(3.0)
    assert math.isinf(c.loc[1e-6, "ratio"])  # only SDCA-GAP reaches it
    assert c.loc[1e-2, "SAG-NUS"] == 3.0 and math.isinf(c.loc[1e-4, "SAG-NUS"])
    assert c[["SDCA", "OEG", "L-BFGS"]].isna().all().all()  # no such runs
    assert c.loc[1e-6, "partial"] == "SDCA-GAP 1/2" and c.loc[1e-4, "partial"] == ""
    assert c["crfsuite_budget_seconds"].tolist() == [9.0] * 3
    assert c["sdca_gap_budget_seconds"].tolist() == [3.0] * 3
    n = t[t["dataset"] == "ner"].set_index("relative_target")
    assert n["SDCA-GAP"].tolist()[:2] == [1.0, 3.0] and math.isinf(n.loc[1e-6, "SDCA-GAP"])
    assert n["CRFsuite L-BFGS"].tolist() == [2.0, 5.0, 20.0]
    assert n["ratio"].tolist() == pytest.approx([2.0, 5.0 / 3.0, 0.0])

    md = tables.crfsuite_speed_markdown(t)
    assert ("| dataset | (P - P*) / P* ≤ | SDCA | SDCA-GAP | SAG-NUS | OEG | L-BFGS | "
            "CRFsuite L-BFGS | CRFsuite / SDCA-GAP |") in md
    assert "| CONLL | 1e-2 |  | 1 | 3 |  |  | 1.1 | 1.1 |" in md
    assert "| CONLL | 1e-4 |  | 2 | — |  |  | 6 | 3 |" in md
    # CRFsuite had not reached 3e-6 after 9 s = 3x SDCA-GAP's time to it
    assert "| CONLL | 1e-6 |  | 3 (1/2) | — |  |  | — | > 3 |" in md
    assert "| NER | 1e-4 |  | 3 |  |  |  | 5 | 1.67 |" in md
    # SDCA-GAP had not reached 1.5e-6 when its run ended at 4 s: ratio below 20 / 4
    assert "| NER | 1e-6 |  | — |  |  |  | 20 | < 5 |" in md
    assert '"> x": CRFsuite had not reached' in md and '"< x": SDCA-GAP had not' in md

    text = build_report(rs, root.parent / "report.md", None, None)
    section = text[text.index("## Side by side with CRFsuite"):]
    section = section[:section.index("\n## ", 5)]
    assert ("At relative sub-optimality 1e-4, the ratio CRFsuite / SDCA-GAP is 3 on CONLL "
            "(6 s against 2 s) and 1.67 on NER (5 s against 3 s).") in section
    assert "timed on one machine: 2 cores, x86_64" in section
    assert "OPENBLAS_NUM_THREADS=1" in section and "single-threaded" in section
    assert "| CONLL | 1e-4 |  | 2 | — |  |  | 6 | 3 |" in section


def test_crfsuite_speed_unresolved_and_missing(speed_runs):
    root, optima = speed_runs
    rs = load_runs([root], optima)
    coarse = rs.frame.assign(resolution=1e-3)  # P* known to 1e-3 only
    t = tables.crfsuite_speed(coarse)
    c = t[t["dataset"] == "conll"].set_index("relative_target")
    assert c["resolved"].tolist() == [True, False, False]  # 3e-2, 3e-4, 3e-6 vs 1e-3
    assert c.loc[1e-2, "ratio"] == pytest.approx(1.1) and c[["ratio"]].iloc[1:].isna().all().all()
    md = tables.crfsuite_speed_markdown(t)
    assert "| CONLL | 1e-4 |  | n/r | n/r |  |  | n/r | n/r |" in md
    assert "n/r: target below the precision" in md
    # without CRFsuite runs: the ratio column is empty and the report says why
    rs = load_runs([root / "conll" / "gap", root / "ner" / "gap"], optima)
    t = tables.crfsuite_speed(rs.frame)
    assert t["CRFsuite L-BFGS"].isna().all() and t["ratio"].isna().all()
    assert "| CONLL | 1e-2 |  | 1 |  |  |  |  |  |" in tables.crfsuite_speed_markdown(t)
    text = build_report(rs, root.parent / "report.md", None, None)
    assert ("the ratio CRFsuite / SDCA-GAP is not available on CONLL (no CRFsuite L-BFGS "
            "run) and not available on NER (no CRFsuite L-BFGS run)") in text
    assert tables.crfsuite_speed(rs.frame.iloc[0:0]).empty


def test_crfsuite_speed_flags_another_objective(tmp_path):
    """CRFsuite never learns labels absent from its training split (meta.json "check"),
    or its loss / n goes below P*: its times are marked, the report gives no ratio."""
    write_run(tmp_path, "conll", "gap", sdca("gap"), trace_rows([1.0, 1e-3], p_star=3.0))
    write_crfsuite(tmp_path, "conll", [1.0, 2.0], [0.5, 1e-3], 3.0, labels_missing=2)
    write_run(tmp_path, "ner", "gap", sdca("gap"), trace_rows([1.0, 1e-3], p_star=1.5))
    write_crfsuite(tmp_path, "ner", [1.0, 2.0], [0.5, -0.01], 1.5)  # below P*
    write_run(tmp_path, "pos", "gap", sdca("gap"), trace_rows([1.0, 1e-3], p_star=4.0))
    write_crfsuite(tmp_path, "pos", [1.0, 2.0], [0.5, 1e-3], 4.0)
    rs = load_runs([tmp_path], [write_opt(tmp_path / f"{d}.h5", d, p)
                                for d, p in (("conll", 3.0), ("ner", 1.5), ("pos", 4.0))])
    t = tables.crfsuite_speed(rs.frame)
    flags = t.groupby("dataset")["crfsuite_objective_differs"].all()
    assert flags.to_dict() == {"conll": True, "ner": True, "pos": False}
    md = tables.crfsuite_speed_markdown(t)
    assert "| CONLL | 1e-2 |  | 0.5 |  |  |  | 2 † | 4 † |" in md
    assert "| POS | 1e-2 |  | 0.5 |  |  |  | 2 | 4 |" in md
    assert "†: on this dataset CRFsuite minimized another objective" in md
    text = build_report(rs, tmp_path / "report.md", None, None)
    assert ("the ratio CRFsuite / SDCA-GAP is not comparable on CONLL (CRFsuite minimized "
            "another objective there") in text


def test_crfsuite_speed_cli_round_trip(speed_runs, tmp_path):
    root, optima = speed_runs
    csv, md = tmp_path / "t" / "crfsuite_speed.csv", tmp_path / "t" / "crfsuite_speed.md"
    assert _cli(["table", "crfsuite_speed", "--runs", str(root), "--optimum",
                 *map(str, optima), "--csv", str(csv), "--md", str(md)]) == 0
    back = pd.read_csv(csv, keep_default_na=False, na_values=[""])
    assert len(back) == 6
    assert back["ratio"].tolist()[:2] == pytest.approx([1.1, 3.0])
    assert math.isinf(back["ratio"].iloc[2])
    # the markdown renders the same from the CSV as from the frame
    assert tables.crfsuite_speed_markdown(back) == md.read_text()


# ----------------------------------------------------------------------------- claims

def _verdicts(frame):
    return {c.key: c for c in claims.evaluate_claims(frame)}


def test_claims_supported_on_paper_like_runs(full):
    root, optima = full
    rs = load_runs([root], optima)
    v = _verdicts(rs.frame)
    for key, c in v.items():
        assert c.verdict == claims.SUPPORTED, (key, c.evidence)
        assert any(ch.isdigit() for ch in c.evidence)
    assert "SDCA-MAX on OCR ends at log10 sub-optimality" in v["max_fails_ocr"].evidence


def test_claims_not_supported_when_the_data_says_otherwise(tmp_path):
    ds_p = 2.0

    def w(ds, name, solver, subopt, **kw):
        write_run(tmp_path, ds, name, solver, trace_rows(subopt, p_star=ds_p, **kw))

    w("ocr", "uniform", sdca("uniform"), decay(0.45))   # uniform faster than gap
    w("ocr", "gap", sdca("gap"), decay(0.25), gap_factor=3.0)  # estimate 3x the gap
    w("ocr", "imp", sdca("importance"), decay(0.6))     # importance faster than uniform
    w("ocr", "gapimp", sdca("gap-importance"), decay(0.5))
    w("ocr", "max", sdca("max"), decay(0.5))            # max converges
    w("ocr", "sagnus", other("sag-nus"), decay(0.1), gap=False)  # SDCA-GAP faster on OCR
    w("ocr", "single", PAPER_ONE_STEP_RUN, decay(0.02, floor=1.0))
    w("ner", "gap", sdca("gap"), decay(0.3))
    w("ner", "single", PAPER_ONE_STEP_RUN, decay(0.3))  # fine on NER
    for theta, rate in ((0.0, 0.4), (1.0, 0.6)):         # theta hurts, then theta=1 much faster
        w("ner", f"t{theta}", sdca(theta=theta), decay(rate))
    w("ner", "uniform", sdca("uniform"), decay(0.3))
    w("ner", "sagnus", other("sag-nus"), decay(0.2), gap=False)
    rs = load_runs([tmp_path], [write_opt(tmp_path / "o.h5", "ocr", ds_p),
                                write_opt(tmp_path / "n.h5", "ner", ds_p)])
    v = _verdicts(rs.frame)
    for key in ("gap_beats_uniform", "max_fails_ocr", "importance_worse_ocr",
                "gapimp_worse_than_gap", "nonuniformity_monotone", "nonuniformity_marginal",
                "single_newton_ner_only",
                "gap_estimate_factor2", "gap_vs_sagnus_updates"):
        assert v[key].verdict == claims.NOT_SUPPORTED, (key, v[key].evidence)


def test_max_sampling_stall_detected(tmp_path):
    write_run(tmp_path, "ocr", "max", sdca("max"), trace_rows(decay(0.3, floor=0.3), 2.0))
    write_run(tmp_path, "ocr", "gap", sdca("gap"), trace_rows(decay(0.4), 2.0))
    rs = load_runs([tmp_path], [write_opt(tmp_path / "o.h5", "ocr", 2.0)])
    c = claims.max_fails_ocr(rs.frame)
    assert c.verdict == claims.SUPPORTED, c.evidence
    # the same stall without a converging reference, but still far from the optimum
    rs2 = load_runs([tmp_path / "ocr" / "max"], [write_opt(tmp_path / "o.h5", "ocr", 2.0)])
    assert claims.max_fails_ocr(rs2.frame).verdict == claims.SUPPORTED


def test_claims_without_data(tmp_path):
    write_run(tmp_path, "pos", "sagnus", other("sag-nus"), trace_rows(decay(0.3, 2), 4.0))
    rs = load_runs([tmp_path])
    v = _verdicts(rs.frame)
    assert all(c.verdict == claims.NO_DATA for c in v.values()), {
        k: c.verdict for k, c in v.items()}
    v = _verdicts(load_runs([tmp_path / "pos"]).frame.iloc[0:0])
    assert all(c.verdict == claims.NO_DATA for c in v.values())


def test_short_max_run_is_not_judged(tmp_path):
    write_run(tmp_path, "ocr", "max", sdca("max"), trace_rows(decay(0.0, 3), 2.0))
    rs = load_runs([tmp_path], [write_opt(tmp_path / "o.h5", "ocr", 2.0)])
    assert claims.max_fails_ocr(rs.frame).verdict == claims.NO_DATA


# ----------------------------------------------------------------------------- figures

def _check_outputs(png: Path, pdf: Path):
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000


def test_every_figure_on_full_data(full, tmp_path):
    root, optima = full
    rs = load_runs([root], optima)
    for name in FIGURE_NAMES:
        fig = figures.draw(name, rs.frame)
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert not any(t.startswith("no ") for t in texts), (name, texts)
        labels = {ax.get_ylabel() for ax in fig.axes} | {ax.get_xlabel() for ax in fig.axes}
        if name in ("fig2_sampling", "fig3_nonuniformity", "fig4_methods"):
            assert {figures.Y_SUBOPT, figures.X_ORACLE, figures.X_UPDATES} <= labels
        if name == "wallclock":
            assert figures.Y_SUBOPT in labels
        figures.save_figure(fig, tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
        _check_outputs(tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
    fig = figures.draw("fig4_methods", rs.frame)
    assert len(fig.axes) == 8  # 4 datasets x (oracle calls, updates)
    curves = [ln for ax in fig.axes for ln in ax.lines if ln.get_linestyle() != ":"]
    assert len(curves) == 8 * 5  # 5 methods per panel (dotted: where P* is known to)


def test_the_threads_table_reads_the_speedup_off_the_traces(full):
    root, optima = full
    table = tables.threads_table(load_runs([root], optima).frame)
    assert list(table["dataset"]) == ["conll", "conll", "ner", "ner"]
    assert list(table["threads"]) == [1, 2, 1, 2]
    one, two = table[table["threads"] == 1], table[table["threads"] == 2]
    np.testing.assert_allclose(two["seconds"].to_numpy() / one["seconds"].to_numpy(), 0.6)
    np.testing.assert_allclose(two["speedup"], 1 / 0.6)
    np.testing.assert_array_equal(two["update_epochs"], one["update_epochs"])


@pytest.mark.parametrize("subset", ["empty", "one_run"])
def test_figures_degrade_gracefully(tmp_path, subset):
    if subset == "one_run":
        write_run(tmp_path, "pos", "sagnus", other("sag-nus"), trace_rows([1.0, 0.5], 4.0))
    else:
        (tmp_path / "nothing").mkdir()
    rs = load_runs([tmp_path])
    for name in FIGURE_NAMES:
        fig = figures.draw(name, rs.frame)
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert any(t.startswith("no ") for t in texts), name
        figures.save_figure(fig, tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
        _check_outputs(tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")


def test_diverging_curve_is_cut(tmp_path):
    write_run(tmp_path, "ner", "gap", sdca("gap"), trace_rows(decay(0.3, 5), 1.5))
    write_run(tmp_path, "ner", "single", PAPER_ONE_STEP_RUN,
              trace_rows([10.0, 1e3, 1e30, 1e60, 1e80, 1e90], 1.5))
    rs = load_runs([tmp_path], [write_opt(tmp_path / "o.h5", "ner", 1.5)])
    fig = figures.draw("fig8_line_search", rs.frame)
    ax = fig.axes[2]  # NER
    assert ax.get_title() == "NER"
    assert ax.get_ylim()[1] < 3
    assert any("diverge" in t.get_text() for t in ax.texts)
    assert claims.single_newton_fails_ner_only(rs.frame).verdict == claims.SUPPORTED


def test_foreign_trace_with_few_columns(tmp_path):
    """A CRFsuite run (issue 7) may only record seconds and the primal."""
    d = tmp_path / "ocr" / "crfsuite"
    d.mkdir(parents=True)
    pd.DataFrame({"seconds": [0.0, 1.0, 2.0, 3.0], "primal": [12.0, 3.0, 2.01, 1.99]}).to_csv(
        d / "trace.csv", index=False)
    (d / "meta.json").write_text(json.dumps({"solver": {"solver": "crfsuite"},
                                             "status": "converged",
                                             "dataset": {"name": "ocr"}}))
    write_run(tmp_path, "ocr", "gap", sdca("gap"), trace_rows(decay(0.5, 4), 2.0))
    rs = load_runs([tmp_path], [write_opt(tmp_path / "o.h5", "ocr", 2.0)])
    assert "CRFsuite L-BFGS" in set(rs.runs["label"])
    assert rs.pstar["ocr"].p_star == 2.0  # CRFsuite's own loss never sets P*
    assert len(rs.warnings) == 1 and "objective differs" in rs.warnings[0]
    fig = figures.draw("wallclock", rs.frame)
    assert sum(len(ax.lines) for ax in fig.axes) == 2
    t = tables.time_to_target(rs.frame)  # 2.01 at 2 s is within 1e-2
    assert t[t["method"] == "CRFsuite L-BFGS"]["seconds"].iloc[0] == 2.0


def test_method_colors_are_fixed():
    assert figures.method_color("SDCA-GAP") == figures.METHOD_COLORS["SDCA-GAP"]
    assert figures.method_color("SDCA-GAP 1e-4") == figures.method_color("SDCA-GAP 1e-4")
    assert figures.method_color("SDCA-GAP 1e-4") != figures.method_color("SDCA-GAP")
    assert len(set(figures.METHOD_COLORS.values())) == len(figures.METHOD_COLORS)


# ----------------------------------------------------------------------------- CLI, markdown

def _cli(argv):
    p = argparse.ArgumentParser()
    _args_report(p)
    return cmd_report(p.parse_args(argv))


def test_cli_figures_tables_and_markdown(full, tmp_path):
    root, optima = full
    opt = ["--optimum", *map(str, optima)]
    fig_dir, tab_dir = tmp_path / "figures", tmp_path / "tables"
    for name in ("fig4_methods", "wallclock"):
        assert _cli(["figure", name, "--runs", str(root), *opt, "--png",
                     str(fig_dir / f"{name}.png"), "--pdf", str(fig_dir / f"{name}.pdf")]) == 0
        _check_outputs(fig_dir / f"{name}.png", fig_dir / f"{name}.pdf")
    for name in TABLE_NAMES:
        assert _cli(["table", name, "--runs", str(root), *opt, "--csv",
                     str(tab_dir / f"{name}.csv"), "--md", str(tab_dir / f"{name}.md")]) == 0
        assert len(pd.read_csv(tab_dir / f"{name}.csv")) > 0
        assert (tab_dir / f"{name}.md").read_text().count("\n") > 2
    (tab_dir / "table1_datasets.md").write_text("| dataset | d |\n|---|---|\n| OCR | 4,082 |\n")
    out = tmp_path / "report.md"
    assert _cli(["markdown", "--runs", str(root), *opt, "--figures-dir", str(fig_dir),
                 "--tables", str(tab_dir), "--out", str(out)]) == 0
    text = out.read_text()
    assert "](figures/fig4_methods.png)" in text
    assert "_Figure `fig2_sampling` was not produced._" in text
    assert "| OCR | 4,082 |" in text
    assert text.count("**supported**") == len(claims.CLAIMS)
    assert "## Reference optima P*" in text and "5.00e-15" in text
    assert "[time_to_target.csv](tables/time_to_target.csv)" in text


def test_markdown_with_no_runs(tmp_path):
    (tmp_path / "runs").mkdir()
    rs = load_runs([tmp_path / "runs"])
    text = build_report(rs, tmp_path / "report.md", tmp_path / "figures", tmp_path / "tables")
    assert text.count("**not enough data**") == len(claims.CLAIMS)
    assert "_No runs._" in text


def test_every_catalog_entry_has_its_function_and_captions():
    assert tuple(figures.FIGURES) == FIGURE_NAMES == tuple(catalog.FIGURES)
    assert tuple(tables.TABLES) == TABLE_NAMES == tuple(catalog.TABLES)
    for entry in [*catalog.FIGURES.values(), *catalog.TABLES.values()]:
        assert entry.title and entry.caption, entry.name
    for entry in catalog.FIGURES.values():
        assert entry.text, entry.name


@pytest.mark.parametrize("status", ["interrupted", "terminated", "diverged", None])
def test_unfinished_runs_are_refused_or_skipped_and_listed(tmp_path, status, capsys):
    """A meta.json whose status is not a finished one (written by hand, or kept after
    Snakemake's metadata is gone) is never taken for a result."""
    from crfsdca.cli import main
    from crfsdca.errors import DataFormatError

    write_run(tmp_path, "ocr", "ok", sdca("gap"), trace_rows(decay(0.4)))
    bad = write_run(tmp_path, "ocr", "cut", sdca("uniform"), trace_rows(decay(0.2)),
                    status=status)
    with pytest.raises(DataFormatError, match=f"cut/meta.json: status {status!r} is not a "
                                              "finished run"):
        load_runs([tmp_path])
    rs = load_runs([tmp_path], skip_unfinished=True)
    assert list(rs.runs["run_name"]) == ["ok"]
    assert any(str(bad) in w and "run skipped" in w for w in rs.warnings)
    png = tmp_path / "f.png"
    args = ["report", "figure", "fig4_methods", "--runs", str(tmp_path), "--png", str(png)]
    assert main(args) == 2 and not png.exists()
    assert "not a finished run" in capsys.readouterr().err
    assert main(args + ["--skip-unfinished"]) == 0 and png.exists()


@pytest.mark.parametrize("status", ["interrupted", "terminated", "diverged"])
def test_a_stopped_run_set_aside_is_refused_by_its_trace(tmp_path, status, capsys):
    """The workflow moves a stopped run's files aside (set_aside_unfinished): each file
    under its stopped name, a finished run untouched. A report rule that still names its
    trace.csv (an input given by hand) gets one line naming the run and its status."""
    from crfsdca.cli import main
    from crfsdca.errors import DataFormatError
    from crfsdca.reproduction.rundir import RUN_FILES, set_aside_unfinished, stopped_name

    ok = write_run(tmp_path, "ocr", "ok", sdca("gap"), trace_rows(decay(0.4)))
    bad = write_run(tmp_path, "ocr", "cut", sdca("uniform"), trace_rows(decay(0.2)),
                    status=status)
    (bad / "weights.h5").write_bytes(b"w")
    before = {name: (bad / name).read_bytes() for name in RUN_FILES}
    assert set_aside_unfinished(ok) is None and set_aside_unfinished(tmp_path) is None
    assert set_aside_unfinished(bad) == status
    assert sorted(p.name for p in bad.iterdir()) == sorted(map(stopped_name, RUN_FILES))
    assert {name: (bad / stopped_name(name)).read_bytes() for name in RUN_FILES} == before
    assert set_aside_unfinished(bad) is None  # nothing left to move
    (bad / "trace.csv").write_bytes(before["trace.csv"])  # a report handed it anyway
    runs = [str(ok / "trace.csv"), str(bad / "trace.csv")]
    with pytest.raises(DataFormatError, match=f"cut/meta.json: no meta.json: the run "
                                              f"stopped short .meta.stopped.json says "
                                              f"status {status!r}."):
        load_runs(runs)
    rs = load_runs(runs, skip_unfinished=True)
    assert list(rs.runs["run_name"]) == ["ok"]
    assert any(str(bad) in w and "run skipped" in w for w in rs.warnings)
    (bad / stopped_name("meta.json")).unlink()
    with pytest.raises(DataFormatError, match="no meta.json: the run has not finished"):
        load_runs(runs)
    csv = tmp_path / "t.csv"
    assert main(["report", "table", "optimum", "--runs", *runs, "--csv", str(csv)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cut/meta.json: no meta.json" in err, err
    assert not csv.exists()


def test_cli_fails_without_runs_or_without_data_for_a_figure(tmp_path, capsys):
    from crfsdca.cli import main

    (tmp_path / "runs").mkdir()
    png = tmp_path / "f.png"
    assert main(["report", "figure", "fig4_methods", "--runs", str(tmp_path / "runs"),
                 "--png", str(png)]) == 2
    assert "no finished run under" in capsys.readouterr().err
    write_run(tmp_path / "runs", "pos", "sagnus", other("sag-nus"), trace_rows(decay(0.3)))
    assert main(["report", "figure", "fig3_nonuniformity", "--runs", str(tmp_path / "runs"),
                 "--png", str(png)]) == 2
    assert "figure fig3_nonuniformity: none of the 1 runs given" in capsys.readouterr().err
    assert main(["report", "table", "subprecision", "--runs", str(tmp_path / "runs"),
                 "--csv", str(tmp_path / "t.csv")]) == 2
    assert "table subprecision: none of the 1 runs given" in capsys.readouterr().err
    assert not png.exists() and not (tmp_path / "t.csv").exists()
    assert main(["report", "figure", "fig4_methods", "--runs", str(tmp_path / "runs"),
                 "--png", str(png)]) == 0


def test_cli_rejects_missing_paths(tmp_path):
    from crfsdca.errors import ConfigError

    with pytest.raises(ConfigError, match="no such run directory"):
        _cli(["table", "optimum", "--runs", str(tmp_path / "missing"), "--csv",
              str(tmp_path / "x.csv")])


# ----------------------------------------------------------------------------- a real run

def test_real_short_run(tmp_path):
    """A real SDCA run on the first OCR words, featurized from the vendored raw file."""
    import yaml

    from crfsdca.cli import main
    from crfsdca.data.featurize import featurize, spec_from_config
    from crfsdca.data.hdf5 import write_dataset

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    spec = {**spec_from_config(config, "ocr"), "subset": {"train": 60, "test": 30}}
    data = write_dataset(tmp_path / "ocr.h5",
                         featurize("ocr", spec, raw_dir=ROOT / config["raw_dir"]))
    out = tmp_path / "runs" / "ocr" / "gap"
    assert main(["train", "--data", str(data), "--epochs", "3", "--out", str(out),
                 "--progress", "off"]) == 0
    rs = load_runs([tmp_path / "runs"])
    assert list(rs.runs["label"]) == ["SDCA-GAP"]
    assert rs.frame["log10_subopt"].notna().sum() >= 3
    for name in ("fig4_methods", "fig9_gap_estimate", "subprecision"):
        fig = figures.draw(name, rs.frame)
        figures.save_figure(fig, tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
        _check_outputs(tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
    v = _verdicts(rs.frame)
    assert v["gap_estimate_factor2"].verdict in (claims.SUPPORTED, claims.NOT_SUPPORTED)
    assert v["line_search_cost"].verdict in (claims.SUPPORTED, claims.NOT_SUPPORTED)
    text = build_report(rs, tmp_path / "report.md", tmp_path, None)
    assert "SDCA-GAP" in text


def test_crfsuite_loss_below_pstar_within_its_print_precision_is_not_flagged():
    from crfsdca.reproduction.report.load import foreign_below

    # CRFsuite logs n P with six decimals: loss / n is only known to 0.5e-6 / n
    assert not foreign_below(0.876468840085, 0.876468840133, 8936)  # 4.8e-11 below
    assert foreign_below(0.8764687, 0.876468840133, 8936)  # 1.4e-7 below: another objective
    assert foreign_below(2.4264, 2.4265, None)


def test_seeds_give_bands_and_per_seed_verdicts(tmp_path):
    """Two seeds: figures draw the median with a min-max band; a claim holding on one
    seed only is not supported and says on how many seeds it holds."""
    for seed, (gap_rate, uni_rate) in enumerate(((0.45, 0.25), (0.2, 0.3))):
        write_run(tmp_path, "ocr", f"gap{seed}", sdca("gap", seed=seed),
                  trace_rows(decay(gap_rate), 2.0))
        write_run(tmp_path, "ocr", f"uniform{seed}", sdca("uniform", seed=seed),
                  trace_rows(decay(uni_rate), 2.0))
    write_run(tmp_path, "ocr", "lbfgs", other("lbfgs"), trace_rows(decay(0.5), 2.0))
    rs = load_runs([tmp_path], [write_opt(tmp_path / "o.h5", "ocr", 2.0)])
    assert set(claims.seed_frames(rs.frame)) == {0, 1}
    assert all("L-BFGS" in set(f["label"]) for f in claims.seed_frames(rs.frame).values())
    c = _verdicts(rs.frame)["gap_beats_uniform"]
    assert c.verdict == claims.NOT_SUPPORTED
    assert c.seeds.startswith("supported on 1 of 2 seeds"), c.seeds
    fig = figures.draw("fig2_sampling", rs.frame)
    bands = [col for ax in fig.axes for col in ax.collections
             if type(col).__name__ in ("PolyCollection", "FillBetweenPolyCollection")]
    assert len(bands) == 2 * 2  # 2 methods x (oracle calls, updates)
    lines = [ln for ax in fig.axes for ln in ax.lines if ln.get_linestyle() != ":"]
    assert len(lines) == 2 * 2  # one median per method and panel, not one per seed
    band = figures.seed_band(rs.frame[rs.frame["label"] == "SDCA-GAP"], "update_epochs",
                             "log10_subopt")
    assert (band["min"] <= band["median"]).all() and (band["median"] <= band["max"]).all()
    assert (band["max"] - band["min"]).iloc[-1] > 1.0
