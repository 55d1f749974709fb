"""Digests of a reproduction's traces and optima (crfsdca.reproduction.digests): what
they compare, with which tolerance, and how a difference is named. The smoke profile's
stored digests are checked against a real smoke run by
integration/test_workflow_smoke.py; the full profile's by `make reproduce-check`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import ROOT

from crfsdca.reproduction import digests
from crfsdca.reproduction.optimum import Optimum, write_optimum
from crfsdca.reproduction.rundir import write_trace
from crfsdca.solvers.monitor import TRACE_COLUMNS

STORED = ROOT / "tests" / "reproduction" / "digests"


def _rows(scale: float = 1.0, seconds: float = 0.5, n: int = 4) -> list[dict]:
    rows = []
    for k in range(n):
        row = dict.fromkeys(TRACE_COLUMNS, math.nan)
        row.update(epoch=float(k), oracle_fb=100 * k, oracle_fwd=0, oracle_epochs=float(k),
                   updates=100 * k, update_epochs=float(k), ls_evals=150 * k,
                   seconds=seconds * k, primal=scale * (2.0 + 1.0 / (1 + k) ** 3),
                   dual=scale * (2.0 - 1.0 / (1 + k) ** 3), true_gap=2.0 / (1 + k) ** 3,
                   test_error=0.1 / (1 + k), ls_time_share=0.3, mean_step=0.25,
                   nonzero_weights=50 + k, share_oracle=0.5 * seconds, cpu_seconds=seconds * k,
                   null_steps=0.01 * k)
        rows.append(row)
    return rows


def _run(results: Path, dataset: str, run: str, rows: list[dict], threads: int = 1,
         ran_on: int | None = None):
    d = results / "runs" / dataset / run
    d.mkdir(parents=True, exist_ok=True)
    write_trace(d / "trace.csv", rows)
    (d / "meta.json").write_text(json.dumps({
        "status": "budget", "args": {"threads": threads},
        "solver": {"name": "sdca", "threads": threads if ran_on is None else ran_on}}))


def _optimum(results: Path, dataset: str, p_star: float = 1.5, w_scale: float = 1.0,
             gap_bound: float = 1e-12, iterations: int = 100):
    (results / "optimum").mkdir(parents=True, exist_ok=True)
    w = w_scale * np.linspace(-1.0, 1.0, 101)
    write_optimum(results / "optimum" / f"{dataset}.h5", Optimum(
        w_star=w, p_star=p_star, grad_norm=1e-8, grad_max=1e-9, gap_bound=gap_bound,
        iterations=iterations, evaluations=iterations + 5, seconds=1.0, lam=0.01,
        dataset=dataset, dataset_sha256="0" * 64, settings={}))


@pytest.fixture
def results(tmp_path):
    r = tmp_path / "results"
    _run(r, "ocr", "sdca_seed-0", _rows())
    _run(r, "ner", "sdca_seed-0", _rows())
    _run(r, "ner", "sdca_non_uniformity-1_seed-0", _rows(1.1))
    _run(r, "ner", "sdca_seed-0_threads-2", _rows(), threads=2)
    _run(r, "conll", "sdca_seed-0_threads-2", _rows(), threads=2, ran_on=1)  # capped
    _optimum(r, "ner")
    return r


def _stored(results: Path, tmp_path: Path) -> Path:
    path = tmp_path / "digests.json"
    assert digests.main(["write", "--results", str(results), "--out", str(path)]) == 0
    return path


def test_round_trip_and_what_is_stored(results, tmp_path, capsys):
    path = _stored(results, tmp_path)
    assert "REWRITING STORED DIGESTS" in capsys.readouterr().err
    d = digests.load(path)
    # dataset order, then run id; the two-thread runs race and are left out, also one
    # that asked for two threads and was capped to one
    assert list(d["runs"]) == ["ocr/sdca_seed-0", "ner/sdca_non_uniformity-1_seed-0",
                               "ner/sdca_seed-0"]
    assert list(d["optima"]) == ["ner"]
    cols = d["runs"]["ner/sdca_seed-0"]["columns"]
    assert not {"seconds", "ls_time_share", "share_oracle", "cpu_seconds"} & set(cols)
    assert "null_steps" in cols
    assert {"epoch", "oracle_fb", "updates", "nonzero_weights"} <= set(
        d["runs"]["ner/sdca_seed-0"]["exact"])
    assert "primal" not in d["runs"]["ner/sdca_seed-0"]["exact"]
    assert d["rules"] == digests.RULES and d["made_on"]["numba"]
    assert digests.check(d, results) == []
    assert digests.main(["check", "--digests", str(path), "--results", str(results)]) == 0
    targets = digests.targets(d, "res")
    assert targets[0] == "res/optimum/ner.h5" and "res/runs/ocr/sdca_seed-0/trace.csv" in targets
    # a rewrite keeps the file's own runs and optima
    _run(results, "pos", "sdca_seed-0", _rows())
    assert digests.main(["write", "--results", str(results), "--out", str(path)]) == 0
    assert list(digests.load(path)["runs"]) == list(d["runs"])


def test_timings_and_last_bits_do_not_count(results, tmp_path):
    stored = digests.load(_stored(results, tmp_path))
    _run(results, "ner", "sdca_seed-0", _rows(1.0 + 3e-15, seconds=9.0))
    _optimum(results, "ner", p_star=1.5 * (1 + 1e-14), w_scale=1 + 1e-9, gap_bound=3e-12)
    assert digests.check(stored, results) == []


def test_first_difference_names_run_column_and_row(results, tmp_path, capsys):
    path = _stored(results, tmp_path)
    rows = _rows()
    rows[2]["oracle_fb"] += 1          # an exact column: one call more
    rows[3]["primal"] *= 1 + 1e-8      # a float column, beyond ten digits
    _run(results, "ner", "sdca_seed-0", rows)
    diffs = digests.check(digests.load(path), results)
    assert [(d.where, d.field) for d in diffs] == [("run ner/sdca_seed-0", "oracle_fb"),
                                                   ("run ner/sdca_seed-0", "primal")]
    assert "row 2 (epoch 2.0): stored 200, now 201 (an exact column)" in str(diffs[0])
    assert "relative difference 1e-08" in str(diffs[1])
    assert digests.main(["check", "--digests", str(path), "--results", str(results)]) == 1
    err = capsys.readouterr().err
    assert "first difference: run ner/sdca_seed-0, oracle_fb: row 2" in err
    assert "digests write --results RESULTS" in err


def test_missing_rows_columns_runs_and_optimum_changes(results, tmp_path):
    stored = digests.load(_stored(results, tmp_path))
    _run(results, "ocr", "sdca_seed-0", _rows(n=3))
    (results / "runs" / "ner" / "sdca_non_uniformity-1_seed-0" / "trace.csv").unlink()
    _optimum(results, "ner", p_star=1.5 + 1e-6, iterations=101, gap_bound=1e-9)
    got = [(d.where, d.field) for d in digests.check(stored, results)]
    # iterations are not compared; the gap bound moved 1000x
    assert got[:2] == [("optimum ner", "p_star"), ("optimum ner", "gap_bound")]
    assert ("run ocr/sdca_seed-0", "epoch") in got
    assert ("run ner/sdca_non_uniformity-1_seed-0", "trace.csv") in got


def test_w_star_digest_catches_a_moved_optimum(results, tmp_path):
    stored = digests.load(_stored(results, tmp_path))
    _optimum(results, "ner", w_scale=1 + 1e-4)
    got = {d.field for d in digests.check(stored, results)}
    assert {"w_star norm2", "w_star norm1", "w_star max_abs"} <= got


def test_a_level_s_own_file_serves_its_processors(tmp_path, monkeypatch):
    """The check reads NAME.LEVEL.json for a processor of that level where there is one
    (its rounding differs), else NAME.json; the file says the level it was made on."""
    base = tmp_path / "smoke.json"
    monkeypatch.setattr(digests, "host_level", lambda: "x86-64-v4")
    assert digests.for_host(base) == base
    (tmp_path / "smoke.x86-64-v3.json").write_text("{}")
    assert digests.for_host(base) == base
    (tmp_path / "smoke.x86-64-v4.json").write_text("{}")
    assert digests.for_host(base) == tmp_path / "smoke.x86-64-v4.json"
    monkeypatch.undo()
    assert digests.machine()["level"] == digests.host_level()


@pytest.mark.parametrize("name, optima", [
    ("smoke", digests.DATASET_ORDER),
    ("smoke.x86-64-v4", digests.DATASET_ORDER),
    ("full", ("ocr", "ner")),  # CONLL's and POS's: see docs/reproduction/report.md
])
def test_stored_digest_files(name, optima):
    """The committed digests: readable, this format, the rules this code applies, runs of
    every dataset (the full profile: its cheapest ones, and NER's theta = 1 of issue 59;
    the smoke: all but the racing ones) and their optima."""
    d = digests.load(STORED / f"{name}.json")
    assert d["profile"] == name.split(".")[0] and d["rules"] == digests.RULES
    assert tuple(d["optima"]) == optima
    assert {k.split("/")[0] for k in d["runs"]} == set(digests.DATASET_ORDER)
    assert not any("threads-" in k for k in d["runs"])
    for run in d["runs"].values():
        assert {len(v) for v in run["columns"].values()} == {run["rows"]}
        assert not any(map(digests.is_timing, run["columns"]))
    if name == "full":
        assert {"ner/sdca_seed-0", "ner/sdca_non_uniformity-1_seed-0"} <= set(d["runs"])
