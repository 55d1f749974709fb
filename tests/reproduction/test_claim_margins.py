"""How close each verdict of the report is to its rule: the tests a claim rests on, the
one that decides it, its margin, and close calls said so in report.md (issue 59: claims 5
and 6 turned on x(1) / x(0.8) = 1.12 against a limit of 1.10)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from crfsdca.reproduction.optimum import Optimum, write_optimum
from crfsdca.reproduction.report import claims
from crfsdca.reproduction.report.claims import Check
from crfsdca.reproduction.report.load import load_runs
from crfsdca.reproduction.report.markdown import build_report
from crfsdca.reproduction.rundir import write_trace
from crfsdca.solvers.monitor import TRACE_COLUMNS

LAM = 0.01
P_STAR = 1.5


def _sdca(theta: float, sampler: str = "gap") -> dict:
    return {"solver": "sdca", "seed": 0, "lambda": LAM, "sampler": sampler,
            "non_uniformity": theta, "line_search": "newton",
            "line_search_start": "regula-falsi", "subprecision": 1e-3, "step_size": None,
            "refresh_every": 0.0, "store_dtype": "float64", "init_c": 10.0}


def _run(root: Path, dataset: str, name: str, solver: dict, rate: float, epochs: int = 40):
    """A run whose sub-optimality is 10 * 10^(-rate * epoch): it reaches 10^-k after
    (1 + k) / rate epochs, so two runs' x ratio is the inverse of their rates."""
    rows = []
    for e in range(epochs + 1):
        s = 10.0 * 10.0 ** (-rate * e)
        row = dict.fromkeys(TRACE_COLUMNS, math.nan)
        row.update(epoch=float(e), oracle_fb=100 * e, oracle_fwd=0, oracle_epochs=float(e),
                   updates=100 * e, update_epochs=float(e), ls_evals=200 * e,
                   seconds=0.5 * e, primal=P_STAR + s, dual=P_STAR - s, true_gap=2 * s,
                   gap_estimate=2.2 * s if e else 100.0, test_error=0.1, ls_iters=2.0,
                   ls_time_share=0.3, mean_step=0.5)
        rows.append(row)
    d = root / dataset / name
    d.mkdir(parents=True)
    write_trace(d / "trace.csv", rows)
    (d / "meta.json").write_text(json.dumps({
        "command": "train", "dataset": {"name": dataset, "path": f"{dataset}.h5",
                                        "sha256": "0" * 64, "n": 100, "d": 50},
        "status": "budget", "solver_seconds": rows[-1]["seconds"], "solver": solver,
        "machine": {"cores": 2}, "final": rows[-1]}))


def _theta_runs(tmp_path: Path, ratio: float):
    """NER runs at theta = 0.5, 0.8 and 1, theta = 1 needing ``ratio`` times the oracle
    calls of 0.8; the frame with sub-optimality."""
    root = tmp_path / "runs"
    for theta, rate in ((0.5, 0.44), (0.8, 0.45), (1.0, 0.45 / ratio)):
        _run(root, "ner", f"theta{theta}", _sdca(theta), rate)
    opt = tmp_path / "ner.h5"
    write_optimum(opt, Optimum(w_star=np.zeros(3), p_star=P_STAR, grad_norm=1e-8,
                               grad_max=1e-9, gap_bound=5e-15, iterations=100,
                               evaluations=120, seconds=1.0, lam=LAM, dataset="ner",
                               dataset_sha256="0" * 64, settings={}))
    return load_runs([root], [opt])


def test_test_distance_and_which_one_decides():
    near = Check("a", 1.08, "<=", 1.10)
    far = Check("b", 0.5, "<=", 1.10)
    assert near.holds and far.holds
    assert near.distance == pytest.approx(0.02 / 1.10)
    assert claims.deciding_test([far, near], claims.SUPPORTED) is near
    bad1, bad2 = Check("c", 1.12, "<=", 1.10), Check("d", 2.2, "<=", 1.10)
    # not supported: the failing test farthest from its threshold (all must flip)
    assert claims.deciding_test([far, bad1, bad2], claims.NOT_SUPPORTED) is bad2
    assert claims.deciding_test([far, bad1], claims.NOT_SUPPORTED) is bad1
    assert claims.deciding_test([far], claims.NO_DATA) is None
    assert Check("e", math.inf, ">=", 2.0).distance == math.inf
    assert "1.12 against at most 1.1, 1.8% past it" in bad1.describe()
    assert "1.08 against at most 1.1, 1.8% inside it" in near.describe()


def test_theta_ratio_just_past_its_limit_is_a_close_call(tmp_path):
    """The case of issue 59: x(1) / x(0.8) = 1.12 against 1.10, both theta claims not
    supported by 1.8%: close calls, said so in the claim and in report.md."""
    rs = _theta_runs(tmp_path, 1.12)
    mono = claims.nonuniformity_monotone(rs.frame)
    marg = claims.nonuniformity_marginal(rs.frame)
    for c in (mono, marg):
        assert c.verdict == claims.NOT_SUPPORTED, c.evidence
        assert c.close, c.margin
        assert "x(1) / x(0.8): 1.12 against at most 1.1, 1.8% past it" in c.margin
        assert "close call" in c.margin and c.margin_short == "**1.8%, close call**"
    text = build_report(rs, tmp_path / "report.md", None, None)
    assert "- Verdict: not supported (a close call)" in text
    assert "- Margin: the failing test: x(1) / x(0.8): 1.12 against at most 1.1" in text
    assert "a close call, which a small change in one run could flip (claims 5, 6 here)" \
        in text


def test_a_clear_verdict_is_not_a_close_call(tmp_path):
    rs = _theta_runs(tmp_path, 0.95)  # theta = 1 5% faster than 0.8: marginal, supported
    mono = claims.nonuniformity_monotone(rs.frame)
    marg = claims.nonuniformity_marginal(rs.frame)
    assert mono.verdict == marg.verdict == claims.SUPPORTED
    assert not mono.close and not marg.close
    # the tightest test of "marginal": 0.95 against at most 1.10 (13.6% inside)
    assert marg.decided_by.what == "x(1) / x(0.8)" and marg.decided_by.op == "<="
    assert marg.margin_short == "13.6%"
    text = build_report(rs, tmp_path / "report.md", None, None)
    assert "- Margin: closest to its threshold: " in text
    assert "could flip; none is here." in text


def test_close_win_against_the_tie_tolerance(tmp_path):
    """A beats B only past the 5% tie: x(B) / x(A) = 1.08 wins, by 2.6% of 1/0.95."""
    root = tmp_path / "runs"
    _run(root, "ocr", "gap", _sdca(0.8), 0.45 * 1.08)
    _run(root, "ocr", "uniform", _sdca(0.8, "uniform"), 0.45)
    c = claims.gap_beats_uniform(load_runs([root]).frame)
    assert c.verdict == claims.SUPPORTED, c.evidence
    t = c.decided_by
    assert t.limit == pytest.approx(1 / 0.95) and t.value == pytest.approx(1.08, rel=1e-4)
    assert c.close and "OCR x(SDCA) / x(SDCA-GAP): 1.08 against above 1.05" in c.margin


def test_margins_on_several_seeds_use_every_seed(tmp_path):
    root = tmp_path / "runs"
    for seed, ratio in ((0, 1.05), (1, 1.3)):
        for theta, rate in ((0.8, 0.45), (1.0, 0.45 / ratio)):
            _run(root, "ner", f"t{theta}s{seed}", {**_sdca(theta), "seed": seed}, rate)
    frame = load_runs([root]).frame
    c = claims.evaluate(claims.nonuniformity_monotone, frame, claims.seed_frames(frame))
    assert c.verdict == claims.NOT_SUPPORTED
    assert c.decided_by.what == "seed 1, x(1) / x(0.8)"
    assert not c.close  # seed 1 is 18% past the limit
