"""The workflow in a temporary clone, shared by the workflow's tests (reproduction/
test_workflow_config, runtime/test_memory, integration/test_workflow_smoke and
integration/test_cluster): one clone, one reading of ``common.smk``, one parser of a dry
run's jobs, one check of a smoke run's outputs."""

from __future__ import annotations

import collections
import copy
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import yaml

from helpers.paths import RAW, ROOT

DATASETS = ("ocr", "conll", "ner", "pos")
"""The workflow's datasets."""
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def clone_workflow(dest: Path, *, src: str = "link", raw=None, config: dict | None = None,
                   ) -> Path:
    """What ``git clone`` gives, in ``dest`` (created): Snakefile, config.yaml,
    environment.yml and workflow/ copied; the package's ``src/`` linked (``src="link"``:
    runs share numba's cache) or copied (``src="copy"``: a test may touch a solver's
    file), with the kernels numba's cache holds in the checkout at that moment (the files
    keep their times and contents, so numba loads them; a .tmp file it is writing is left
    out; what is not there compiles in the copy, as on a fresh clone); the vendored raw
    files linked, all of them or the names in ``raw``. ``config``, where given, is written
    as config.yaml instead of the repository's; nothing is featurized or trained."""
    dest.mkdir(parents=True)
    for name in ("Snakefile", "config.yaml", "environment.yml"):
        shutil.copy(ROOT / name, dest)
    if config is not None:
        (dest / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    shutil.copytree(ROOT / "workflow", dest / "workflow")
    if src == "link":
        (dest / "src").symlink_to(ROOT / "src")
    elif src == "copy":
        shutil.copytree(ROOT / "src", dest / "src",
                        ignore=shutil.ignore_patterns("*.pyc", "*.egg-info", "*.tmp.*"))
    else:
        raise ValueError(f"src={src!r}: 'link' or 'copy'")
    data = dest / "data" / "raw"
    data.mkdir(parents=True)
    for f in sorted(RAW.iterdir()) if raw is None else [RAW / n for n in raw]:
        (data / f.name).symlink_to(f)
    return dest


def _deep_update(base: dict, over: dict) -> dict:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _deep_update(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def load_common(config: dict | None = None, root: Path = ROOT,
                profile: str | None = None) -> SimpleNamespace:
    """The names of ``workflow/rules/common.smk`` (RUNS, GROUPS, train_mem_mb, catalog,
    TABLE1, RUN_DIRS, report_runs, train_sources...) as the workflow in ``root`` defines
    them for ``config`` (default: its config.yaml) with the profile's yaml
    (``workflow/profiles/<profile>/<profile>.yaml``) deep-merged over it, after the
    schema's validation and defaults, as the Snakefile does."""
    from snakemake.utils import validate

    if config is None:
        config = yaml.safe_load((root / "config.yaml").read_text())
    if profile is not None:
        _deep_update(config, yaml.safe_load(
            (root / "workflow" / "profiles" / profile / f"{profile}.yaml").read_text()))
    validate(config, str(root / "workflow" / "schemas" / "config.schema.yaml"))
    common = root / "workflow" / "rules" / "common.smk"
    names = {"workflow": SimpleNamespace(basedir=str(root)), "config": config}
    exec(compile(common.read_text(), str(common), "exec"), names)
    return SimpleNamespace(**names)


def planned_jobs(output: str) -> tuple[collections.Counter, list[dict]]:
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


def check_outputs(work: Path, wf: SimpleNamespace) -> None:
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
    check_claims(report)
    assert "## Side by side with CRFsuite" in report
    assert "the ratio CRFsuite / SDCA-GAP is" in report
    assert re.search(r"timed on one machine: \d+ cores", report)
    assert len(wf.RUN_DIRS) > 40
    for run in wf.RUN_DIRS:
        for f in ("trace.csv", "meta.json", "weights.h5"):
            assert (work / run / f).stat().st_size > 0, (run, f)
    runs = {str(p.relative_to(work)) for p in (work / wf.RESULTS / "runs").glob("*/*")}
    assert runs == set(wf.RUN_DIRS)


def check_claims(report: str) -> None:
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
