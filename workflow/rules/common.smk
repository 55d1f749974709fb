# Paths and helpers shared by the rules (functions only, no rules).

import json
import re
import shlex
import os

# The command of every job (passed as params.crfsdca): `python -m crfsdca` from this
# checkout's src/, whatever environment runs it (the Makefile's virtual environment, or the
# conda environment below).
_SRC = os.path.join(workflow.basedir, "src")
CRFSDCA = "python -m crfsdca"
if os.path.isdir(_SRC):
    CRFSDCA = f"PYTHONPATH={shlex.quote(_SRC)}${{PYTHONPATH:+:$PYTHONPATH}} {CRFSDCA}"

# For --software-deployment-method conda; relative to the rule files.
CONDA_ENV = "../../environment.yml"

RAW = config["raw_dir"]
PROCESSED = config["processed_dir"]
RESULTS = config["results_dir"]
DATASETS = list(config["datasets"])
TABLE1 = [
    f"{RESULTS}/tables/table1_datasets.csv",
    f"{RESULTS}/tables/table1_datasets.md",
]

# Raw files verified by their sha256 only, and those that may instead pass a content check.
RAW_BY_SHA = [f for f, spec in config["raw_files"].items() if "content" not in spec]
RAW_BY_CONTENT = [f for f, spec in config["raw_files"].items() if "content" in spec]


def _alternatives(names):
    """A wildcard regex matching exactly these names (a never-matching one if empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!x)x"


def raw_sha256(wildcards):
    return config["raw_files"][wildcards.rawfile]["sha256"]


def raw_url(wildcards):
    return config["raw_files"][wildcards.rawfile]["url"]


def raw_content(wildcards):
    content = config["raw_files"][wildcards.rawfile]["content"]
    return f"--rows {content['rows']} --columns {content['columns']}"


def dataset_source(wildcards):
    """The raw file (or directory) a dataset is read from."""
    source = config["datasets"][wildcards.dataset]["source"]
    return source if os.path.isabs(source) else f"{RAW}/{source}"


def featurize_spec(wildcards):
    """The dataset's spec as JSON for `crfsdca featurize --spec`: its config entry with the
    source resolved and the top-level subset as default."""
    spec = dict(config["datasets"][wildcards.dataset])
    spec["source"] = dataset_source(wildcards)
    subset = {k: v for k, v in config["subset"].items() if v is not None}
    subset.update({k: v for k, v in spec.get("subset", {}).items() if v is not None})
    if subset:
        spec["subset"] = subset
    else:
        spec.pop("subset", None)
    return json.dumps(spec, sort_keys=True)
