"""config.yaml and the smoke overrides against the workflow's JSON schema."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import ROOT
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

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
