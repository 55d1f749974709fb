"""End-to-end: the Snakemake workflow on the smoke profile, in a temporary copy.

The copy links the vendored raw files except conll2002.zip (1.8 MB, above Snakemake's default
checksum size threshold, which ensure(sha256=...) must still check), which the download rule
fetches from a local HTTP server (127.0.0.1), so the download path of the workflow runs too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import RAW, ROOT

from crfsdca.data.hdf5 import load_dataset
from crfsdca.data.raw import sha256_file

pytestmark = pytest.mark.slow

DATASETS = ("ocr", "conll", "ner", "pos")
DOWNLOADED = "conll2002.zip"


def _workflow_copy(tmp_path, url: str):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "Snakefile", work)
    shutil.copytree(ROOT / "workflow", work / "workflow")
    (work / "src").symlink_to(ROOT / "src")  # the package code (rules depend on it)
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
        cwd=work, env=env, capture_output=True, text=True, timeout=300)


def test_smoke_profile_end_to_end(tmp_path, http_dir):
    served, url = http_dir
    shutil.copy(RAW / DOWNLOADED, served / DOWNLOADED)
    work = _workflow_copy(tmp_path, url)

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

    again = _snakemake(work, "-n")
    assert again.returncode == 0, again.stderr
    assert "Nothing to be done" in again.stdout + again.stderr


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


def test_snakemake_lint_is_clean():
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""))
    run = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Lints for" not in run.stdout + run.stderr
