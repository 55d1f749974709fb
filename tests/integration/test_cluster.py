"""The smoke profile on a real SLURM cluster, through workflow/profiles/slurm.

Runs only where a SLURM cluster answers (`sinfo`), such as the one-node cluster that
workflow/cluster/local-slurm.sh stands up: `make test-cluster` (as root, on Debian). The
smoke workflow runs twice, in two copies of the workflow (the package source linked, so
both share numba's cache): once locally, once with every job that is not a local rule
submitted by sbatch. Then sacct shows one COMPLETED job per Snakemake job, each with the
memory its rule asks for and a MaxRSS below it; the cluster's traces equal the local ones
bitwise in every column but the seconds; and a job that fails, or outgrows its memory, is
reported, retried as the profile says and leaves no output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from helpers.paths import ROOT
from helpers.workflow import DATASETS, check_outputs, clone_workflow, load_common, planned_jobs

pytestmark = pytest.mark.cluster

PROFILE = ROOT / "workflow" / "profiles" / "slurm"
SMOKE = "workflow/profiles/smoke/smoke.yaml"
TIMEOUT = 2400  # seconds for the cluster's smoke run (two cores: the jobs queue)
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")


def _cluster_answers() -> bool:
    if shutil.which("sinfo") is None:
        return False
    return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=30).returncode == 0


if not _cluster_answers():
    pytest.skip("no SLURM cluster answers (sinfo); `make test-cluster` stands one up "
                "(root, Debian: workflow/cluster/local-slurm.sh)", allow_module_level=True)
if not os.environ.get("CRFSDCA_SLURM_PARTITION"):
    pytest.skip("CRFSDCA_SLURM_PARTITION is not set (the partition the profile submits to)",
                allow_module_level=True)


def _env() -> dict:
    """The environment of the runs: PATH without this Python's directory (the virtual
    environment, not activated), so the jobs must find it themselves (common.smk)."""
    here = os.path.dirname(sys.executable)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != here]
    return dict(os.environ, PATH=os.pathsep.join(path))


def _snakemake(work: Path, *args: str, timeout: float = TIMEOUT):
    run = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=work, env=_env(),
                         capture_output=True, text=True, timeout=timeout)
    (work / f"snakemake-{len(list(work.glob('snakemake-*.log')))}.log").write_text(
        run.stdout + run.stderr)
    return run


def _on_cluster(work: Path, *args: str, timeout: float = TIMEOUT):
    return _snakemake(work, "--profile", str(PROFILE), *args, timeout=timeout)


def _mb(value: str) -> float:
    """MB of a sacct memory field (ReqMem 2000M, MaxRSS 123456K; empty: 0)."""
    m = re.fullmatch(r"([\d.]+)([KMGT]?)", value.strip())
    if not m:
        return 0.0
    scale = {"": 1 / 2**20, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2}[m.group(2)]
    return float(m.group(1)) * scale


def _sacct(job_ids) -> dict[str, list[dict]]:
    """{job id: [its allocation's row, then its steps' rows]} from sacct."""
    fields = ["JobID", "JobName", "State", "ExitCode", "ReqMem", "MaxRSS", "AllocCPUS",
              "Elapsed"]
    out = subprocess.run(
        ["sacct", "-P", "-n", "-j", ",".join(map(str, job_ids)),
         "--format", ",".join(fields)],
        capture_output=True, text=True, check=True, timeout=60).stdout
    jobs: dict[str, list[dict]] = {}
    for line in out.splitlines():
        row = dict(zip(fields, line.split("|"), strict=True))
        jobs.setdefault(row["JobID"].split(".")[0], []).append(row)
    return jobs


def _sacct_table(job_ids) -> str:
    """What `make test-cluster` prints: sacct's table of the run's jobs."""
    return subprocess.run(
        ["sacct", "-j", ",".join(map(str, job_ids)), "--format",
         "JobID,Comment%48,Partition,Account,AllocCPUS,ReqMem,MaxRSS,Elapsed,State,ExitCode"],
        capture_output=True, text=True, check=True, timeout=60).stdout


def _submissions(output: str) -> list[tuple[int, str, str]]:
    """(Snakemake job id, SLURM job id, SLURM log) of every sbatch of a run."""
    return [(int(a), b, c) for a, b, c in SUBMITTED.findall(output)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The smoke workflow run locally and on the cluster."""
    base = tmp_path_factory.mktemp("cluster")
    local = clone_workflow(base / "local")
    run = _snakemake(local, "--profile", "workflow/profiles/smoke", "--cores", "2")
    assert run.returncode == 0, run.stdout + run.stderr

    work = clone_workflow(base / "slurm")
    dry = _on_cluster(work, "-n", "--configfile", SMOKE)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    planned = planned_jobs(dry.stdout + dry.stderr)[1]
    run = _on_cluster(work, "--configfile", SMOKE)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    submitted = _submissions(output)
    print(f"\nsacct of the smoke run on the cluster ({len(submitted)} jobs):\n"
          + _sacct_table([s for _, s, _ in submitted]))
    return SimpleNamespace(local=local, work=work, planned=planned, output=output,
                           submitted=submitted, wf=load_common(root=work, profile="smoke"),
                           sacct=_sacct([s for _, s, _ in submitted]))


def test_every_job_but_the_local_rules_went_through_sbatch_and_completed(runs):
    # the jobs the run started: those of the dry run, the local rule (table1) and the
    # target rule as `localrule` (a dry run does not say which are local)
    ran = planned_jobs(runs.output)[1]
    assert sorted(j["rule"] for j in ran) == sorted(j["rule"] for j in runs.planned)
    assert sorted(j["rule"] for j in ran if j["local"]) == ["all", "table1"]
    remote = [j for j in ran if not j["local"]]
    assert len(remote) > 70
    ids = [job for job, _, _ in runs.submitted]
    assert len(ids) == len(set(ids)) == len(remote), runs.output  # one sbatch per job
    assert len(runs.sacct) == len(remote)
    for rows in runs.sacct.values():
        assert rows[0]["State"] == "COMPLETED" and rows[0]["ExitCode"] == "0:0", rows
        assert all(r["State"] == "COMPLETED" for r in rows), rows
    counts = {}
    for j in remote:
        counts[j["rule"]] = counts.get(j["rule"], 0) + 1
    assert counts["featurize"] == counts["optimum"] == counts["crfsuite"] == len(DATASETS)
    assert counts["train"] == len(runs.wf.RUNS)


def test_outputs_appear_and_a_second_call_has_nothing_to_do(runs):
    check_outputs(runs.work, runs.wf)
    again = _on_cluster(runs.work, "-n", "--configfile", SMOKE, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Nothing to be done" in again.stdout + again.stderr


def _without_timings(frame: pd.DataFrame) -> pd.DataFrame:
    """A trace without what the clock measures: the seconds, and the shares of time
    (ls_time_share, SDCA's share_<phase>)."""
    return frame.drop(columns=[c for c in frame.columns
                               if "seconds" in c or "time" in c or c.startswith("share_")])


COUNTERS = ["epoch", "oracle_fb", "oracle_fwd", "oracle_epochs", "updates", "update_epochs"]


def test_traces_equal_those_of_a_local_run_but_the_seconds(runs):
    """Bitwise, but for the runs on several threads: their lanes run asynchronously
    (docs/math.md section 9), so their path depends on the interleaving, here as between
    two local runs; those agree in their checkpoints and work counters."""
    assert len(runs.wf.RUN_DIRS) > 40
    threaded = {f"{runs.wf.RESULTS}/runs/{d}/{r}" for (d, r), (_, _, extra)
                in runs.wf.RUNS.items() if extra.get("threads", 1) > 1}
    assert threaded
    for run in runs.wf.RUN_DIRS:
        here = pd.read_csv(runs.work / run / "trace.csv")
        there = pd.read_csv(runs.local / run / "trace.csv")
        assert "seconds" in here.columns and len(here) > 1, run
        if run in threaded:
            pd.testing.assert_frame_equal(here[COUNTERS], there[COUNTERS], check_exact=True,
                                          obj=run)
            continue
        pd.testing.assert_frame_equal(_without_timings(here), _without_timings(there),
                                      check_exact=True, obj=run)


def test_memory_comes_from_the_rules_and_no_job_exceeds_it(runs):
    """ReqMem is the rule's mem_mb, computed from the featurized data once it exists (not a
    default for the missing file), and every step's MaxRSS stays below it."""
    wf, blocks = runs.wf, _job_blocks(runs.output)
    processed = runs.work / wf.PROCESSED
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    checked = set()
    for job, slurm_id, _ in runs.submitted:
        rule, wildcards = blocks[job]
        rows = runs.sacct[slurm_id]
        requested = _mb(rows[0]["ReqMem"])
        wc = SimpleNamespace(**wildcards)
        if rule in ("train", "optimum", "crfsuite"):
            data = SimpleNamespace(data=str(processed / f"{wc.dataset}.h5"))
            expected = getattr(wf, f"{rule}_mem_mb")(wc, data)
        else:
            expected = profile["set-resources"].get(rule, {}).get(
                "mem_mb", profile["default-resources"]["mem_mb"])
        assert requested == expected, (rule, wildcards, rows[0])
        for row in rows[1:]:
            assert _mb(row["MaxRSS"]) < requested, (rule, wildcards, row)
        checked.add(rule)
        if rule == "train":
            threads = wf.run_threads(wc)
            assert int(rows[0]["AllocCPUS"]) == threads, (wildcards, rows[0])
    assert {"featurize", "train", "optimum", "crfsuite", "figure", "table"} <= checked


def _job_blocks(output: str) -> dict[int, tuple[str, dict]]:
    """{Snakemake job id: (rule, wildcards)} from a run's log (a job's block names its
    jobid before its wildcards)."""
    blocks, current = {}, None
    for line in output.splitlines():
        line = line.strip()
        m = re.match(r"^(?:local)?rule (\w+):$", line)
        if m:
            current = (m.group(1), {})
        elif current is not None and line.startswith("wildcards: "):
            current[1].update(kv.split("=", 1) for kv in line[11:].split(", "))
        elif current is not None and line.startswith("jobid: "):
            blocks[int(line[7:])] = current
    return blocks


FAILING = """\
rule fail:
    output:
        "fail.txt",
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "echo partial > {output}; echo 'failing on purpose' >&2; exit 3"


rule hog:
    output:
        "hog.txt",
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "echo partial > {output};"
        " python3 -c 'import time; b = bytes(1) * (4000 * 2**20); time.sleep(30)'"
"""


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    work = tmp_path_factory.mktemp("failing")
    (work / "Snakefile").write_text(FAILING)
    return work


def test_a_failing_job_is_reported_with_its_slurm_log_retried_and_leaves_no_output(failing):
    retries = yaml.safe_load((PROFILE / "config.yaml").read_text())["retries"]
    run = _on_cluster(failing, "fail.txt", timeout=900)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    submitted = _submissions(output)
    assert len(submitted) == 1 + retries, output  # the first try and the profile's retries
    assert "Error in rule fail" in output
    for _, slurm_id, log in submitted:
        # Snakemake reports each failed attempt with its SLURM log, which says why
        assert re.search(rf"SLURM-job '{slurm_id}' failed, SLURM status is: 'FAILED'.*\n"
                         rf"(?:\s+\w+: .*\n)*?\s+log: .*{re.escape(log)}", output), output
        assert "failing on purpose" in Path(log).read_text(), Path(log).read_text()
    jobs = _sacct([s for _, s, _ in submitted])
    assert [rows[0]["State"] for rows in jobs.values()] == ["FAILED"] * (1 + retries), jobs
    assert not (failing / "fail.txt").exists()
    again = _on_cluster(failing, "-n", "fail.txt", timeout=300)
    assert planned_jobs(again.stdout + again.stderr)[0]["fail"] == 1, again.stdout


def test_a_job_over_its_memory_is_killed_by_slurm_and_reported(failing):
    """local-slurm.sh enforces memory with jobacct_gather's OverMemoryKill (no cgroups on
    such a machine): the step is killed within a second of going over --mem, sacct shows
    it CANCELLED (OUT_OF_MEMORY needs the cgroup plugins), its job FAILED, and the SLURM
    log that Snakemake names says why."""
    run = _on_cluster(failing, "hog.txt", "--retries", "0", timeout=900)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    [(_, slurm_id, log)] = _submissions(output)
    assert re.search(rf"SLURM-job '{slurm_id}' failed.*\n(?:\s+\w+: .*\n)*?"
                     rf"\s+log: .*{re.escape(log)}", output), output
    text = Path(log).read_text()
    assert re.search(r"StepId=\d+\.0 exceeded memory limit \(\d+ > 1048576000\), being "
                     r"killed", text), text  # 1000 MB, the rule's mem_mb
    rows = _sacct([slurm_id])[slurm_id]
    assert rows[0]["State"] == "FAILED", rows
    assert any(r["State"] in ("CANCELLED", "OUT_OF_MEMORY") or r["State"].startswith(
        "CANCELLED") for r in rows[1:]), rows
    assert not (failing / "hog.txt").exists()
