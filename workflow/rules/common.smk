# Paths and helpers shared by the rules (functions only, no rules).

import itertools
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


# ---------------------------------------------------------------------------- training grid
# A run is a solver with options; its id (the run directory's name) lists them all, defaults
# included, so that the same run named by several experiment groups is trained once.

SOLVER_SOURCES = {
    "sdca": ["sdca.py", "sdca_kernel.py", "sampling.py", "trees.py", "random.py"],
    "sag": ["sag.py", "sag_kernel.py", "trees.py", "random.py"],
    "sag-nus": ["sag.py", "sag_kernel.py", "trees.py", "random.py"],
    "sag-nus-star": ["sag.py", "sag_kernel.py", "trees.py", "random.py"],
    "oeg": ["oeg.py", "oeg_kernel.py", "random.py"],
    "lbfgs": ["lbfgs.py"],
}
# Code every run depends on: changing it reruns every run; changing one solver's own files
# (above) reruns only that solver's runs. (Snakemake compares the checksums it recorded, so
# a bare `touch` reruns nothing.)
SHARED_SOURCES = sorted(
    [os.path.join("src/crfsdca/model", f) for f in os.listdir(os.path.join(_SRC, "crfsdca", "model"))
     if f.endswith(".py")]
    + ["src/crfsdca/solvers/base.py", "src/crfsdca/solvers/monitor.py",
       "src/crfsdca/solvers/registry.py", "src/crfsdca/training.py",
       "src/crfsdca/cli_train.py"]
) if os.path.isdir(_SRC) else []


def _format_value(v):
    return format(v, "g") if isinstance(v, float) else str(v)


def run_id(options):
    """Directory name of a run: solver, then every option as key-value, sorted."""
    rest = sorted((k, v) for k, v in options.items() if k != "solver")
    return "_".join([options["solver"]] + [f"{k}-{_format_value(v)}" for k, v in rest])


def _expand(entry):
    """All runs of one `runs:` entry: the product of its list-valued options."""
    keys = list(entry)
    values = [v if isinstance(v, list) else [v] for v in entry.values()]
    for combo in itertools.product(*values):
        yield dict(zip(keys, combo))


def build_grid(cfg):
    """{group: {dataset: [run ids]}} and {(dataset, run id): options}."""
    groups, runs = {}, {}
    seeds = cfg["training"]["seeds"]
    for group, spec in cfg["experiments"].items():
        groups[group] = {}
        for dataset in spec["datasets"]:
            ids = []
            for entry in spec["runs"]:
                for partial in _expand(entry):
                    for seed in seeds:
                        options = {"solver": partial["solver"],
                                   **cfg["defaults"].get(partial["solver"], {}),
                                   **partial, "seed": seed}
                        rid = run_id(options)
                        runs[(dataset, rid)] = options
                        ids.append(rid)
            groups[group][dataset] = ids
    return groups, runs


GROUPS, RUNS = build_grid(config)
CRFSUITE_DATASETS = list(config.get("crfsuite", {}).get("datasets", []))
RUN_DIRS = sorted({f"{RESULTS}/runs/{d}/{r}" for d, r in RUNS}
                  | {f"{RESULTS}/runs/{d}/crfsuite" for d in CRFSUITE_DATASETS})


def group_runs(group):
    """Trace files of every run of an experiment group."""
    return [f"{RESULTS}/runs/{d}/{r}/trace.csv"
            for d, ids in GROUPS[group].items() for r in ids]


def train_args(wildcards):
    """The `crfsdca train` options of a run."""
    options = dict(RUNS[(wildcards.dataset, wildcards.run)])
    training = config["training"]
    # budget_scale multiplies the dataset's budget (and the monitoring period): L-BFGS
    # counts an epoch per iteration, a full pass, and needs hundreds of them
    scale = float(options.pop("budget_scale", 1))
    epochs = training["epochs"][wildcards.dataset] * scale
    args = [f"--epochs {_format_value(epochs)}",
            f"--period {_format_value(training['period'] * scale)}"]
    if training.get("lambda") is not None:
        args.append(f"--lambda {_format_value(training['lambda'])}")
    for key, value in options.items():
        args.append(f"--{key.replace('_', '-')} {shlex.quote(_format_value(value))}")
    return " ".join(args)


def options_of(wildcards):
    return RUNS[(wildcards.dataset, wildcards.run)]


def train_sources(wildcards):
    solver = RUNS[(wildcards.dataset, wildcards.run)]["solver"]
    own = [f"src/crfsdca/solvers/{f}" for f in SOLVER_SOURCES.get(solver, [])]
    return [f for f in SHARED_SOURCES + own if os.path.exists(os.path.join(workflow.basedir, f))]


def _dataset_sizes(path):
    import h5py

    with h5py.File(path, "r") as f:
        n = f["train/offsets"].shape[0] - 1
        N = f["train/labels"].shape[0]
        return n, N, int(f.attrs["n_labels"]), int(f.attrs["n_attributes"])


def train_mem_mb(wildcards, input):
    """Memory of a run: its per-sequence state (known from the data sizes) plus overhead."""
    n, N, K, A = _dataset_sizes(input.data)
    d = A * K + 3 * K + K * K
    solver = RUNS[(wildcards.dataset, wildcards.run)]["solver"]
    state = {
        "sdca": 8 * (N * K + (N - n) * K * K),
        "oeg": 8 * (2 * N * K + 2 * n * K * K),
        "lbfgs": 8 * d * (2 * int(options_of(wildcards).get("lbfgs_memory", 50)) + 6),
    }.get(solver, 8 * (N * K + n * K * K) + 16 * d)
    return int((state + 8 * 8 * d + 2 * N * 8) / 2**20) + 800


def optimum_mem_mb(wildcards, input):
    n, N, K, A = _dataset_sizes(input.data)
    d = A * K + 3 * K + K * K
    return int(8 * d * (2 * config["optimum"]["maxcor"] + 12) / 2**20) + 800


# ---------------------------------------------------------------------------- report
# Which experiment groups each figure and table is drawn from.
FIGURES = {
    "fig2_sampling": ["fig2_sampling"],
    "fig3_nonuniformity": ["fig3_nonuniformity"],
    "fig4_methods": ["fig4_methods"],
    "fig7_test_error": ["fig4_methods"],
    "fig8_line_search": ["fig8_line_search"],
    "fig9_gap_estimate": ["fig4_methods"],
    "subprecision": ["subprecision"],
    "wallclock": ["fig4_methods", "crfsuite"],
}
TABLES = {
    "time_to_target": ["fig4_methods", "crfsuite"],
    "subprecision": ["subprecision"],
    "optimum": ["fig4_methods"],
    "crfsuite_speed": ["fig4_methods", "crfsuite"],
}
FIGURE_FILES = [f"{RESULTS}/figures/{name}.{ext}" for name in FIGURES for ext in ("png", "pdf")]
TABLE_FILES = [f"{RESULTS}/tables/{name}.{ext}" for name in TABLES for ext in ("csv", "md")]
OPTIMA = [f"{RESULTS}/optimum/{d}.h5" for d in DATASETS]
REPORT_CODE = sorted(
    os.path.join("src/crfsdca/report", f)
    for f in os.listdir(os.path.join(_SRC, "crfsdca", "report")) if f.endswith(".py")
) + ["src/crfsdca/cli_report.py"] if os.path.isdir(_SRC) else []


def report_runs(groups):
    """Trace files of the experiment groups (and of CRFsuite if listed)."""
    files = []
    for group in groups:
        if group == "crfsuite":
            files += [f"{RESULTS}/runs/{d}/crfsuite/trace.csv" for d in CRFSUITE_DATASETS]
        elif group in GROUPS:
            files += group_runs(group)
    return sorted(set(files))


def all_traces():
    return sorted({f"{run}/trace.csv" for run in RUN_DIRS})
