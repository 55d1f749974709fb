"""End-to-end: the Snakemake workflow on the smoke profile, in a temporary copy.

The copy links the vendored raw files except conll2002.zip (1.8 MB, above Snakemake's default
checksum size threshold, which ensure(sha256=...) must still check), which the download rule
fetches from a local HTTP server (127.0.0.1), so the download path of the workflow runs too.
The package source is copied (not linked), so the test may touch a solver's file to check
what reruns; the copy takes the kernels the checkout's numba cache holds when the test
starts (in ``make test``, what the tests before it compiled), so the suite compiles a
kernel once rather than twice; the jobs compile the rest, two at a time, as on a fresh
clone.
"""

from __future__ import annotations

import base64
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

import pytest
import yaml
from helpers.paths import RAW, ROOT
from helpers.workflow import DATASETS, check_outputs, clone_workflow, load_common, planned_jobs

from crfsdca.data.hdf5 import load_dataset
from crfsdca.runtime.io import sha256_file

pytestmark = pytest.mark.slow

DOWNLOADED = "conll2002.zip"
TIMEOUT = 900  # seconds per snakemake call: a fresh machine compiles every numba kernel


def _workflow_copy(tmp_path, url: str):
    """A clone with the package's source copied (so a test may touch it), config.yaml's
    download URL on the local server, and every vendored raw file but DOWNLOADED."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["raw_files"][DOWNLOADED]["url"] = f"{url}/{DOWNLOADED}"
    return clone_workflow(tmp_path / "work", src="copy", config=config,
                          raw=("letter.data.gz", "conll2000.zip", "treebank.zip"))

def _snakemake(work, *args):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", "workflow/profiles/smoke", *args],
        cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT)


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

    wf = load_common(root=work, profile="smoke")
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

    check_outputs(work, wf)
    _check_digests(work, wf)

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
    counts, jobs = planned_jobs(dry.stdout + dry.stderr)
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


def _check_digests(work: Path, wf: SimpleNamespace) -> None:
    """Every trace column but the timings, and every optimum, as the smoke profile's
    stored digests have them (tests/reproduction/digests/smoke.json, or smoke.LEVEL.json
    for a processor of another vector level, which rounds otherwise; issue 59; rules in
    crfsdca.reproduction.digests): a changed trajectory fails here, naming its first run
    and column, before the test edits a solver. Rewrite the file only for a change that
    is meant (a fix), in a commit that says why:
    make smoke && python -m crfsdca.reproduction.digests write --results results/smoke
    --out tests/reproduction/digests/smoke.json (each level's file on its processor)"""
    from crfsdca.reproduction import digests

    stored = digests.for_host(ROOT / "tests" / "reproduction" / "digests" / "smoke.json")
    results = work / wf.RESULTS
    found = digests.check(digests.load(stored), results)
    assert not found, digests.report(found, stored, results, "smoke")
    # the digests cover every finished single-thread run and every optimum of the profile
    assert list(digests.load(stored)["runs"]) == digests.available_runs(results)
    assert sorted(digests.load(stored)["optima"]) == sorted(DATASETS)


def _as_in_a_terminal() -> None:
    """SIGINT and SIGQUIT at their defaults, as a terminal's foreground job has them: a
    suite started in the background (``cmd &``, nohup) passes them on ignored, and a
    Python whose SIGINT is ignored at its start never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


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
        start_new_session=True, preexec_fn=_as_in_a_terminal)
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
            counts, planned = planned_jobs(dry.stdout + dry.stderr)
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
