"""config.yaml against the workflow's JSON schema, the experiment grid checked as a whole,
and dry runs on a fresh clone with every profile."""

from __future__ import annotations

import collections
import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.paths import ROOT
from helpers.workflow import clone_workflow, load_common
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from crfsdca.errors import ConfigError

SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def test_default_config_is_valid_and_gets_defaults():
    config = copy.deepcopy(CONFIG)
    del config["subset"]
    del config["datasets"]["ocr"]["min_count"]
    validate(config, SCHEMA)
    assert config["subset"] == {"train": None, "test": None}
    assert config["datasets"]["ocr"]["min_count"] == 1
    assert list(config["datasets"]) == ["ocr", "conll", "ner", "pos"]


def test_smoke_overrides_are_valid():
    smoke = yaml.safe_load((ROOT / "workflow/profiles/smoke/smoke.yaml").read_text())
    config = {**copy.deepcopy(CONFIG), **smoke}
    validate(config, SCHEMA)
    assert config["processed_dir"] != CONFIG["processed_dir"]
    assert config["results_dir"] != CONFIG["results_dir"]


@pytest.mark.parametrize("path, value", [
    (("datasets", "conll", "templates", 0), [["w", "-1"]]),
    (("datasets", "conll", "reader"), "csv"),
    (("datasets", "conll", "options", "trian"), "x"),
    (("datasets", "ocr", "templates"), [[["w", 0]]]),
    (("datasets", "ner", "min_count"), 0),
    (("raw_files", "treebank.zip", "sha256"), "abc"),
    (("subset", "train"), 1.5),
    (("subset", "train"), 0),
])
def test_schema_rejects(path, value):
    config = copy.deepcopy(CONFIG)
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(WorkflowError):
        validate(config, SCHEMA)


def test_schema_rejects_unknown_top_level_keys():
    config = copy.deepcopy(CONFIG)
    config["subsett"] = {"train": 3}
    with pytest.raises(WorkflowError, match="subsett"):
        validate(config, SCHEMA)


# ----------------------------------------------------------------------------- the grid

def _grid_error(run: dict, group: str = "fig2_sampling") -> str:
    config = copy.deepcopy(CONFIG)
    config["experiments"][group]["runs"].append(run)
    with pytest.raises(ConfigError) as e:
        load_common(config)
    return str(e.value)


@pytest.mark.parametrize("run, message", [
    ({"solver": "sdca", "sampler": "gapp"},
     "sdca option sampler: expected one of uniform, gap, importance"),
    ({"solver": "sdca", "non_uniformty": 0.5},
     "sdca has no option 'non_uniformty' (did you mean non_uniformity?)"),
    ({"solver": "sdca", "non_uniformity": 1.5},
     "sdca option non_uniformity: expected a value in [0, 1], got 1.5"),
    ({"solver": "sag", "sag_decrease": 0}, "sag option decrease: expected a value in (0, 1]"),
    ({"solver": "sdca", "sag_decrease": 0.5}, "sdca has no option 'sag_decrease'"),
    ({"solver": "sgd"}, "unknown solver 'sgd'"),
])
def test_every_run_is_checked_before_any_job(run, message):
    """The group, the run (its position and its entry) and the option, before any job."""
    err = _grid_error(run)
    index = len(CONFIG["experiments"]["fig2_sampling"]["runs"]) + 1
    assert err.startswith(f"config experiments.fig2_sampling, run {index} (") and message in err


@pytest.mark.parametrize("dataset, templates, message", [
    ("conll", [["w", 0], ["foo", 0]], "template field 'foo' is neither a column of the data "
                                      "(w, pos) nor a derived field"),
    ("ner", [["suf3", 1], ["pos", -1], ["lemma", 0]], "template field 'lemma'"),
])
def test_template_fields_are_checked_with_the_config(dataset, templates, message):
    """A template naming a field the reader does not give stops the dry run (featurize
    would find it only when its job runs)."""
    config = copy.deepcopy(CONFIG)
    config["datasets"][dataset]["templates"] = [templates]
    with pytest.raises(ConfigError, match=f"config datasets.{dataset}: ") as e:
        load_common(config)
    assert message in str(e.value)


def test_train_commands_of_the_grid_parse_back_to_their_runs():
    """Every job's train options are quoted and are the run's own, read back by the
    command's parser (no unquoted or unknown key reaches a shell)."""
    import shlex
    from types import SimpleNamespace

    from crfsdca.cli import build_parser
    from crfsdca.cli.train import solver_options
    from crfsdca.solvers.registry import spec

    wf = load_common()
    parser = build_parser()
    for (dataset, rid), (solver, options, extra) in wf.RUNS.items():
        args = wf.train_args(SimpleNamespace(dataset=dataset, run=rid))
        ns = parser.parse_args(["train", "--data", "d.h5", "--out", "o", *shlex.split(args)])
        assert ns.solver == solver and ns.seed == extra["seed"]
        assert spec(solver).options.resolve(solver_options(ns)) == options, (dataset, rid)


# ----------------------------------------------------------------------------- dry runs

def _dry_run(work: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""))
    return subprocess.run([sys.executable, "-m", "snakemake", "-n", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("profile", [None, "smoke", "slurm"])
def test_dry_run_on_a_fresh_clone(tmp_path, profile):
    work = clone_workflow(tmp_path / "clone")
    run = _dry_run(work, *(["--profile", f"workflow/profiles/{profile}"] if profile else []))
    assert run.returncode == 0, run.stdout + run.stderr
    counts = collections.Counter(re.findall(r"^(?:local)?rule (\w+):$", run.stdout, re.M))
    assert counts["train"] == len(load_common().RUNS) and counts["featurize"] == 4, counts
    assert not (work / "data" / "processed").exists()


def test_dry_run_with_a_bad_run_names_group_run_and_option(tmp_path):
    work = clone_workflow(tmp_path / "clone")
    config = yaml.safe_load((work / "config.yaml").read_text())
    config["experiments"]["fig3_nonuniformity"]["runs"][0]["non_uniformity"] = [0.5, 1.5]
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run = _dry_run(work)
    out = run.stdout + run.stderr  # Snakemake prints the error on standard output
    assert run.returncode != 0
    assert ('config experiments.fig3_nonuniformity, run 1 ({"non_uniformity": 1.5, '
            '"sampler": "gap", "solver": "sdca"}): sdca option non_uniformity: expected a '
            "value in [0, 1], got 1.5") in out, out


def test_seeds_repeat_every_stochastic_run_once_per_seed():
    """training.seeds [0, 1]: every seeded solver's run twice, the seed in its name;
    L-BFGS (deterministic) once."""
    from crfsdca.solvers.registry import spec

    config = copy.deepcopy(CONFIG)
    config["training"]["seeds"] = [0, 1]
    one, two = load_common(), load_common(config)
    seeded = [k for k, (solver, _, _) in one.RUNS.items() if spec(solver).seeded]
    assert seeded and len(seeded) < len(one.RUNS)
    assert len(two.RUNS) == len(one.RUNS) + len(seeded)
    for (_dataset, rid), (solver, _, extra) in two.RUNS.items():
        assert rid.endswith(f"seed-{extra['seed']}") or f"seed-{extra['seed']}_" in rid
        assert extra["seed"] == 0 or spec(solver).seeded, rid
    for group, by_dataset in two.GROUPS.items():
        for dataset, ids in by_dataset.items():
            assert len(ids) == len(set(ids)), (group, dataset)
