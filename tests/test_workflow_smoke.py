"""End-to-end: the Snakemake workflow on the smoke profile, in a temporary copy.

The copy links the vendored raw files except conll2002.zip (1.8 MB, above Snakemake's default
checksum size threshold, which ensure(sha256=...) must still check), which the download rule
fetches from a local HTTP server (127.0.0.1), so the download path of the workflow runs too.
The package source is copied (not linked), so the test may touch a solver's file to check
what reruns; its numba cache starts empty, so the first jobs of each solver compile.
"""

from __future__ import annotations

import base64
import collections
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from conftest import RAW, ROOT
from snakemake.utils import validate

from crfsdca.data.hdf5 import load_dataset
from crfsdca.runtime.io import sha256_file

pytestmark = pytest.mark.slow

DATASETS = ("ocr", "conll", "ner", "pos")
DOWNLOADED = "conll2002.zip"
TIMEOUT = 900  # seconds per snakemake call: a fresh machine compiles every numba kernel
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _workflow_copy(tmp_path, url: str):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "Snakefile", work)
    shutil.copytree(ROOT / "workflow", work / "workflow")
    # the package code, which the rules depend on: a copy, so touching it is safe
    shutil.copytree(ROOT / "src", work / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "environment.yml", work)
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["raw_files"][DOWNLOADED]["url"] = f"{url}/{DOWNLOADED}"
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    raw = work / "data" / "raw"
    raw.mkdir(parents=True)
    for name in ("letter.data.gz", "conll2000.zip", "treebank.zip"):
        (raw / name).symlink_to(RAW / name)
    return work


def _snakemake(work, *args):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", "workflow/profiles/smoke", *args],
        cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def _deep_update(base: dict, over: dict) -> dict:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _deep_update(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def _smoke_workflow(work: Path) -> SimpleNamespace:
    """The names of workflow/rules/common.smk (catalog, TABLE1, RUN_DIRS, RUNS,
    report_runs, train_sources...) as the workflow sees them on the smoke profile:
    config.yaml with smoke.yaml merged over it and the schema's defaults."""
    config = yaml.safe_load((work / "config.yaml").read_text())
    _deep_update(config, yaml.safe_load(
        (work / "workflow" / "profiles" / "smoke" / "smoke.yaml").read_text()))
    validate(config, str(work / "workflow" / "schemas" / "config.schema.yaml"))
    common = work / "workflow" / "rules" / "common.smk"
    names = {"workflow": SimpleNamespace(basedir=str(work)), "config": config}
    exec(compile(common.read_text(), str(common), "exec"), names)
    return SimpleNamespace(**names)


def _planned_jobs(output: str) -> tuple[collections.Counter, list[dict]]:
    """(jobs per rule, rule, wildcards and local (a local rule's job) of every job) from a
    dry run's output."""
    jobs, rule = [], None
    for line in output.splitlines():
        m = re.match(r"^(local)?rule (\w+):$", line.strip())
        if m:
            rule = m.group(2)
            jobs.append({"rule": rule, "local": bool(m.group(1))})
            continue
        m = re.match(r"^wildcards: (.*)$", line.strip())
        if m and rule is not None:
            jobs[-1].update(kv.split("=", 1) for kv in m.group(1).split(", "))
    return collections.Counter(j["rule"] for j in jobs), jobs


def _check_outputs(work: Path, wf: SimpleNamespace) -> None:
    """Every figure, table, run directory and the report of the smoke run, non-empty."""
    for name in wf.catalog.FIGURES:
        png = work / wf.RESULTS / "figures" / f"{name}.png"
        pdf = work / wf.RESULTS / "figures" / f"{name}.pdf"
        assert png.read_bytes()[:8] == PNG_MAGIC, png
        assert png.stat().st_size > 10_000, (png, png.stat().st_size)
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000, pdf
    assert sorted(str(work / f) for f in wf.FIGURE_FILES) == sorted(
        str(work / wf.RESULTS / "figures" / f"{n}.{e}") for n in wf.catalog.FIGURES
        for e in ("png", "pdf"))
    tables = [*wf.catalog.TABLES, "table1_datasets"]
    for name in tables:
        csv = work / wf.RESULTS / "tables" / f"{name}.csv"
        md = work / wf.RESULTS / "tables" / f"{name}.md"
        frame = pd.read_csv(csv)
        assert len(frame.columns) > 1 and len(frame) >= 1, (name, frame)  # header + data
        text = md.read_text()
        assert text.startswith("| ") and text.count("\n") >= 3, (name, text)
        assert "_no data_" not in text, (name, text)
    report = (work / wf.RESULTS / "report.md").read_text()
    assert report.startswith("# Reproduction of")
    for name in wf.catalog.FIGURES:
        assert f"](figures/{name}.png)" in report, name
    _check_claims(report)
    assert "## Side by side with CRFsuite" in report
    assert "the ratio CRFsuite / SDCA-GAP is" in report
    assert re.search(r"timed on one machine: \d+ cores", report)
    assert len(wf.RUN_DIRS) > 40
    for run in wf.RUN_DIRS:
        for f in ("trace.csv", "meta.json", "weights.h5"):
            assert (work / run / f).stat().st_size > 0, (run, f)
    runs = {str(p.relative_to(work)) for p in (work / wf.RESULTS / "runs").glob("*/*")}
    assert runs == set(wf.RUN_DIRS)


def _check_claims(report: str) -> None:
    """Every claim of report.md quotes the paper (section and figure), and has a verdict,
    our number (unless there is not enough data, then the reason) and its rule."""
    from crfsdca.reproduction.report import claims

    blocks = re.split(r"\n\*\*\d+\. ", report.split("## The paper's claims")[1]
                      .split("\n## ")[0])[1:]
    assert len(blocks) == len(claims.CLAIMS), len(blocks)
    verdicts = (claims.SUPPORTED, claims.NOT_SUPPORTED, claims.NO_DATA)
    quotes = []
    for block in blocks:
        quote = re.search(r'^> "(.+)" \((Section [^)]+)\)$', block, re.M)
        assert quote and len(quote.group(1)) > 20 and "Section" in quote.group(2), block
        assert quote.group(1) in {p.quote for p in claims.PAPER.values()}, block
        verdict = re.search(r"^- Verdict: (.+)$", block, re.M).group(1)
        assert verdict.startswith(verdicts), block
        number = re.search(r"^- Our number: (.+)$", block, re.M).group(1)
        if not verdict.startswith(claims.NO_DATA):
            assert re.search(r"\d", number), block
        assert re.search(r"^- Decided by: .{20,}$", block, re.M), block
        assert re.search(r"^- Where our setting differs: .{10,}$", block, re.M), block
        quotes.append(quote.group(1))
    assert sorted(quotes) == sorted(p.quote for p in claims.PAPER.values())


def _check_html_report(work: Path, wf: SimpleNamespace) -> None:
    """`snakemake --report` builds and embeds, byte for byte, every figure (PNG) and table
    (CSV) that report.md shows or links, Table 1 and report.md itself, with the catalog's
    captions."""
    html = work / "report.html"
    run = _snakemake(work, "--report", str(html))
    assert run.returncode == 0, run.stdout + run.stderr
    text = html.read_text(encoding="utf-8")
    embedded = {m[1]: base64.b64decode(m[2]) for m in
                re.finditer(r'filename=([^;"]+);base64,([A-Za-z0-9+/=]+)', text)}
    results = work / wf.RESULTS
    report = (results / "report.md").read_text()
    shown = {f for f in re.findall(r"\]\(((?:figures|tables)/[^)]+)\)", report)
             if not f.endswith(".pdf")}
    assert {f"figures/{n}.png" for n in wf.catalog.FIGURES} <= shown
    assert {f"tables/{n}.csv" for n in wf.catalog.TABLES} <= shown
    for f in sorted(shown | {"tables/table1_datasets.csv", "report.md"}):
        name = Path(f).name
        assert embedded.get(name) == (results / f).read_bytes(), name
    for entry in [*wf.catalog.FIGURES.values(), *wf.catalog.TABLES.values()]:
        assert entry.caption.split(":")[0] in text, entry.name


def test_smoke_profile_end_to_end(tmp_path, http_dir):
    served, url = http_dir
    shutil.copy(RAW / DOWNLOADED, served / DOWNLOADED)
    work = _workflow_copy(tmp_path, url)

    wf = _smoke_workflow(work)
    assert wf.RESULTS == "results/smoke"
    run = _snakemake(work, "--cores", "2")
    assert run.returncode == 0, run.stdout + run.stderr

    raw = work / "data" / "raw" / DOWNLOADED
    assert sha256_file(raw) == sha256_file(RAW / DOWNLOADED)
    for name in DATASETS:
        ds = load_dataset(work / "data" / "processed" / "smoke" / f"{name}.h5")
        assert ds.train.n_sequences == 200 and ds.test.n_sequences == 100
        assert ds.radii.shape == (200,) and (ds.radii > 0).all()
        assert (work / "results" / "smoke" / "benchmarks" / "featurize" / f"{name}.tsv").exists()
    assert load_dataset(work / "data" / "processed" / "smoke" / "ocr.h5").n_attributes == 128
    # the smoke profile never writes the full-size artifacts
    assert not list((work / "data" / "processed").glob("*.h5"))
    assert not (work / "results" / "tables").exists()
    table = (work / "results" / "smoke" / "tables" / "table1_datasets.csv").read_text()
    assert table.count(",ours,") == 4 and table.count(",paper,") == 4
    assert (work / "results" / "smoke" / "tables" / "table1_datasets.md").exists()

    _check_outputs(work, wf)

    again = _snakemake(work, "-n")
    assert again.returncode == 0, again.stderr
    assert "Nothing to be done" in again.stdout + again.stderr
    _check_html_report(work, wf)

    # changing one solver's own source reruns its runs and the reports, nothing else (an
    # edit, not a bare touch: Snakemake skips an input that is newer but has the checksum
    # it recorded)
    kernel = work / "src" / "crfsdca" / "solvers" / "oeg_kernel.py"
    assert not kernel.is_symlink() and not (work / "src").is_symlink()
    oeg = {(d, r) for (d, r), (solver, _, _) in wf.RUNS.items() if solver == "oeg"}
    for (d, r) in wf.RUNS:
        code = wf.train_sources(SimpleNamespace(dataset=d, run=r))
        assert ("src/crfsdca/solvers/oeg_kernel.py" in code) == ((d, r) in oeg), (d, r)
    kernel.write_text(kernel.read_text() + "\n# edited by the smoke test\n")
    dry = _snakemake(work, "-n")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    counts, jobs = _planned_jobs(dry.stdout + dry.stderr)
    assert {(j["dataset"], j["run"]) for j in jobs if j["rule"] == "train"} == oeg, (
        dry.stdout + dry.stderr)
    assert counts["train"] == len(oeg) == len(DATASETS)
    oeg_traces = {f"{wf.RESULTS}/runs/{d}/{r}/trace.csv" for d, r in oeg}
    expected = {
        "figure": {n for n, a in wf.catalog.FIGURES.items()
                   if oeg_traces & set(wf.report_runs(a.groups))},
        "table": {n for n, a in wf.catalog.TABLES.items()
                  if oeg_traces & set(wf.report_runs(a.groups))},
    }
    assert expected["figure"] and expected["table"]
    for rule, names in expected.items():
        assert {j["name"] for j in jobs if j["rule"] == rule} == names, (rule, counts)
    assert set(counts) == {"train", "figure", "table", "report_md", "all"}, counts
    assert counts["report_md"] == 1

    _check_stopped_runs(work, wf)


def _stop_train_job(work: Path, log: Path, target: str, how: str) -> None:
    """Run the job of ``target`` with --keep-incomplete on long.yaml (a budget it never
    reaches) and stop it once its solver runs: SIGTERM to the train process (kill,
    timeout, SLURM's time limit), or SIGINT to snakemake's process group (Ctrl-C in a
    terminal)."""
    import psutil

    log.unlink(missing_ok=True)  # the log of the finished run, from the first call
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""), PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--profile", "workflow/profiles/smoke", target,
         "--cores", "1", "--configfile", "long.yaml", "--keep-incomplete"], cwd=work,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    deadline = time.monotonic() + TIMEOUT
    while not (log.exists() and "solver built" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
        time.sleep(0.2)
    time.sleep(1.0)
    if how == "SIGINT":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        train = [p for p in psutil.Process(proc.pid).children(recursive=True)
                 if "train" in p.cmdline() and "crfsdca" in p.cmdline()]
        assert len(train) == 1, train
        train[0].send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=TIMEOUT)[0]
    assert proc.returncode != 0, out


def _check_stopped_runs(work: Path, wf: SimpleNamespace) -> None:
    """A train job stopped short, its files kept by --keep-incomplete (SIGTERM to the job,
    or Ctrl-C to snakemake): the next call reruns it, asked for the run's trace.csv (what
    the report's rules read) or for the whole workflow, with its .snakemake or after
    .snakemake is removed; its files wait under their stopped names, and the rerun
    replaces them."""
    from crfsdca.reproduction.rundir import RUN_FILES, stopped_name
    from crfsdca.training.status import FINISHED, STOPPED

    dataset, rid = next(k for k, (solver, _, _) in wf.RUNS.items()
                        if k[0] == "ocr" and solver == "sdca")
    run = work / wf.RESULTS / "runs" / dataset / rid
    log = work / wf.RESULTS / "logs" / "train" / dataset / f"{rid}.log"
    target = f"{wf.RESULTS}/runs/{dataset}/{rid}/trace.csv"
    job = {"rule": "train", "local": False, "dataset": dataset, "run": rid}
    smoke = yaml.safe_load((work / "workflow/profiles/smoke/smoke.yaml").read_text())
    smoke["training"].update(period=1000, epochs={**smoke["training"]["epochs"], "ocr": 10**6})
    (work / "long.yaml").write_text(yaml.safe_dump(smoke))
    calls = {"SIGTERM": [(False, (target,))],  # (.snakemake removed, arguments)
             "SIGINT": [(False, (target,)), (False, ()), (True, ()), (True, (target,))]}
    for how, status in (("SIGTERM", "terminated"), ("SIGINT", "interrupted")):
        _stop_train_job(work, log, target, how)
        assert f"{status} after" in log.read_text(), log.read_text()
        kept = {name: (run / name).read_bytes() for name in RUN_FILES}
        assert json.loads(kept["meta.json"])["status"] == status and status in STOPPED
        for forget, args in calls[how]:
            if forget:  # Snakemake's records gone: no incomplete marker, no metadata
                shutil.rmtree(work / ".snakemake", ignore_errors=True)
            for name, data in kept.items():  # the run as the stop left it
                (run / stopped_name(name)).unlink(missing_ok=True)
                (run / name).write_bytes(data)
            dry = _snakemake(work, "-n", *args)  # the workflow's profile: not long.yaml
            assert dry.returncode == 0, dry.stdout + dry.stderr
            counts, planned = _planned_jobs(dry.stdout + dry.stderr)
            assert job in planned, (args, dry.stdout + dry.stderr)
            if not args:  # the reports wait for the rerun
                assert counts["report_md"] == 1, counts
            assert f"{run.relative_to(work)}: status {status!r}" in dry.stderr
            assert sorted(p.name for p in run.iterdir()) == sorted(
                map(stopped_name, RUN_FILES))
            assert {name: (run / stopped_name(name)).read_bytes()
                    for name in RUN_FILES} == kept
    again = _snakemake(work, "--cores", "1", target)
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(p.name for p in run.iterdir()) == sorted(RUN_FILES)
    assert json.loads((run / "meta.json").read_text())["status"] in FINISHED


def test_download_rule_rejects_corrupted_file(tmp_path, http_dir):
    served, url = http_dir
    data = bytearray((RAW / DOWNLOADED).read_bytes())
    data[1000] ^= 0xFF
    (served / DOWNLOADED).write_bytes(bytes(data))
    work = _workflow_copy(tmp_path, url)

    run = _snakemake(work, "--cores", "1", f"data/raw/{DOWNLOADED}")
    assert run.returncode != 0
    log = (work / "results" / "smoke" / "logs" / "download" / f"{DOWNLOADED}.log").read_text()
    expected = yaml.safe_load((ROOT / "config.yaml").read_text())["raw_files"][DOWNLOADED]
    assert f"{DOWNLOADED}: checksum mismatch: expected sha256 {expected['sha256']}" in log
    assert sorted(p.name for p in (work / "data" / "raw").iterdir()) == [
        "conll2000.zip", "letter.data.gz", "treebank.zip"]
