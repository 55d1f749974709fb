# Paths and helpers shared by the rules (functions only, no rules).

import errno
import itertools
import json
import os
import re
import shlex
import sys

# The command of every job (passed as params.crfsdca): `python -m crfsdca` from this
# checkout's src/, whatever environment runs it (the Makefile's virtual environment, or the
# conda environment below). The workflow itself reads the package's pure-Python tables
# (solvers and their options, figures and tables, import closures) from the same src/.
# `python` in those commands is the Python that runs Snakemake, virtual environment
# activated or not: its directory goes first on PATH, which the jobs inherit (on a SLURM
# cluster through sbatch --export=ALL; the job's own Snakemake is the same Python on the
# shared file system). A conda environment (--software-deployment-method conda) is
# activated in front of it. (The Snakefile declares PATH in envvars.)
_BIN = os.path.dirname(sys.executable)
os.environ["PATH"] = os.pathsep.join(
    [_BIN, *(p for p in os.environ["PATH"].split(os.pathsep) if p != _BIN)]
)
_SRC = os.path.join(workflow.basedir, "src")
CRFSDCA = "python -m crfsdca"
if os.path.isdir(_SRC):
    CRFSDCA = f"PYTHONPATH={shlex.quote(_SRC)}${{PYTHONPATH:+:$PYTHONPATH}} {CRFSDCA}"
    sys.path.insert(0, _SRC)

from crfsdca.runtime import memory
from crfsdca.data.readers import reader_columns
from crfsdca.data.templates import check_fields, parse_templates
from crfsdca.errors import ConfigError
from crfsdca.reproduction.report import catalog
from crfsdca.solvers import registry
from crfsdca.reproduction.rundir import RUN_FILES, set_aside_unfinished, stopped_name
from crfsdca.reproduction.sources import closure_files

# Timed jobs run on one thread: numba and the BLAS behind numpy/scipy (OpenBLAS, MKL,
# OpenMP) are pinned in the shell command, so that solver seconds compare across methods.
SINGLE_THREAD = (
    "NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1"
)

# For --software-deployment-method conda; relative to the rule files.
CONDA_ENV = "../../environment.yml"

RAW = config["raw_dir"]
PROCESSED = config["processed_dir"]
RESULTS = config["results_dir"]
DATASETS = list(config["datasets"])


def check_templates(cfg):
    """Every template field of every dataset is a column of its reader or a derived field:
    a typo stops the dry run, not the featurize job."""
    for name, spec in cfg["datasets"].items():
        columns = reader_columns(spec["reader"], spec.get("options") or {})
        if columns is None or not spec.get("templates"):
            continue
        try:
            check_fields(parse_templates(spec["templates"]), columns)
        except ConfigError as e:
            raise ConfigError(f"config datasets.{name}: {e}") from None


check_templates(config)
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


# ---------------------------------------------------------------------------- code inputs
# Each rule depends on the source files its command imports (the package's import
# closure), so editing a module reruns exactly the jobs whose code imports it; a train job
# also depends on its solver's own modules, so editing one solver reruns only its runs.


def code_of(*modules):
    """Source files (relative to the workflow) of these modules and all they import."""
    if not os.path.isdir(_SRC):
        return []
    return closure_files(["crfsdca.__main__", *modules], source=workflow.basedir)


def lambda_arg(wildcards=None):
    """The `--lambda` option of the commands, from config training.lambda (null: 1/n)."""
    lam = config["training"].get("lambda")
    return f"--lambda {_format_value(lam)}" if lam is not None else ""


# ---------------------------------------------------------------------------- training grid
# A run is a solver with options; its id (the run directory's name) lists the options that
# differ from the solver's defaults, so that the same run named by several experiment
# groups is trained once. Every run's options are checked against the solver's own option
# table before any job runs.

GRID_KEYS = {"budget_scale": 1, "threads": 1}
"""Keys of a run that are not solver options, with their defaults (a key at its default
does not name the run): budget_scale multiplies the dataset's budget (and the monitoring
period; an L-BFGS epoch is one iteration, a full pass); threads runs the solver on that
many threads (its job then holds as many cores)."""


def _format_value(v):
    return format(v, "g") if isinstance(v, float) else str(v)


def _expand(entry):
    """All runs of one `runs:` entry: the product of its list-valued options."""
    keys = list(entry)
    values = [v if isinstance(v, list) else [v] for v in entry.values()]
    for combo in itertools.product(*values):
        yield dict(zip(keys, combo))


def _resolve(group, index, run, defaults):
    """(solver, checked options, grid keys) of one run; a ConfigError names where it is."""
    grid = {
        k: run[k] for k, default in GRID_KEYS.items() if run.get(k, default) != default
    }
    options = {k: v for k, v in run.items() if k not in GRID_KEYS}
    try:
        solver = registry.spec(options.get("solver")).name
        solver, resolved = registry.resolve_run(
            {"solver": solver, **defaults.get(solver, {}), **options}
        )
    except ConfigError as e:
        raise ConfigError(
            f"config experiments.{group}, run {index} "
            f"({json.dumps(run, sort_keys=True)}): {e}"
        ) from None
    return solver, resolved, grid


def build_grid(cfg):
    """{group: {dataset: [run ids]}} and {(dataset, run id): run} with run = (solver,
    options, grid keys + seed)."""
    for solver, options in cfg.get("defaults", {}).items():
        try:
            registry.spec(solver).options.resolve(options, keys=True)
        except ConfigError as e:
            raise ConfigError(f"config defaults.{solver}: {e}") from None
    groups, runs = {}, {}
    seeds = cfg["training"]["seeds"]
    for group, spec in cfg["experiments"].items():
        unknown = sorted(set(spec["datasets"]) - set(cfg["datasets"]))
        if unknown:
            raise ConfigError(
                f"config experiments.{group}: unknown dataset(s) "
                f"{', '.join(unknown)}; datasets are {', '.join(cfg['datasets'])}"
            )
        resolved = [
            _resolve(group, i, run, cfg.get("defaults", {}))
            for i, entry in enumerate(spec["runs"], 1)
            for run in _expand(entry)
        ]
        groups[group] = {}
        for dataset in spec["datasets"]:
            ids = []
            for solver, options, grid in resolved:
                # a deterministic solver runs once, with the first seed
                for seed in seeds if registry.spec(solver).seeded else seeds[:1]:
                    extra = {**grid, "seed": seed}
                    rid = registry.run_id(solver, options, extra)
                    runs[(dataset, rid)] = (solver, options, extra)
                    ids.append(rid)
            groups[group][dataset] = ids
    return groups, runs


GROUPS, RUNS = build_grid(config)
CRFSUITE_DATASETS = list(config.get("crfsuite", {}).get("datasets", []))
RUN_DIRS = sorted(
    {f"{RESULTS}/runs/{d}/{r}" for d, r in RUNS}
    | {f"{RESULTS}/runs/{d}/crfsuite" for d in CRFSUITE_DATASETS}
)


def rerun_unfinished():
    """Make Snakemake rerun every run that stopped short (its meta.json says interrupted,
    terminated or diverged: kept by --keep-incomplete, or after .snakemake was removed):
    each of its files is moved aside (trace.csv to trace.stopped.csv, ...; they stay for a
    look until the new run replaces them), so that every output of its job is missing,
    whichever one a target or a report asks for. (Snakemake's --forcerun cannot be set
    from here: the DAG's settings are replaced after the workflow is read.)"""
    for run in RUN_DIRS:
        status = set_aside_unfinished(run)
        if status is not None:
            print(
                f"{run}: status {status!r}, the run did not finish: it will run again "
                f"(its files are kept as {', '.join(map(stopped_name, RUN_FILES))})",
                file=sys.stderr,
            )


rerun_unfinished()


def group_runs(group):
    """Trace files of every run of an experiment group."""
    return [
        f"{RESULTS}/runs/{d}/{r}/trace.csv"
        for d, ids in GROUPS[group].items()
        for r in ids
    ]


def train_args(wildcards):
    """The `crfsdca train` options of a run, each value shell-quoted."""
    solver, options, extra = RUNS[(wildcards.dataset, wildcards.run)]
    training = config["training"]
    scale = float(extra.get("budget_scale", 1))
    epochs = training["epochs"][wildcards.dataset] * scale
    args = [
        f"--solver {solver}",
        f"--seed {extra['seed']}",
        f"--threads {extra['threads']}" if "threads" in extra else "",
        f"--epochs {_format_value(epochs)}",
        f"--period {_format_value(training['period'] * scale)}",
        lambda_arg(),
    ]
    table = registry.spec(solver).options
    for name, value in table.non_default(options, trajectory_only=False).items():
        args.append(f"{table.flag(name)} {shlex.quote(_format_value(value))}")
    return " ".join(a for a in args if a)


def run_threads(wildcards):
    """Threads of a run (1 unless its grid entry says otherwise)."""
    return int(RUNS[(wildcards.dataset, wildcards.run)][2].get("threads", 1))


def train_sources(wildcards):
    solver = RUNS[(wildcards.dataset, wildcards.run)][0]
    return code_of("crfsdca.cli.train", registry.spec(solver).module)


def _dataset_sizes(path):
    """The sizes of a featurized file. Before the file exists (a dry run on a fresh clone,
    or a job whose featurize job has not run yet) this raises FileNotFoundError naming the
    file: Snakemake then shows the job's mem_mb as <TBD> and evaluates it again once the
    input is there, so a cluster job never asks for a made-up default."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            errno.ENOENT,
            f"featurized dataset {path} not found (memory of the job)",
            path,
        )
    return memory.DataSizes.of_file(path)


def _mem_mb(nbytes):
    return int(nbytes / memory.MIB) + 1


def train_mem_mb(wildcards, input):
    """Memory of a run (crfsdca.runtime.memory: its dataset, its solver's state, the process)."""
    sizes = _dataset_sizes(input.data)
    solver, options, _ = RUNS[(wildcards.dataset, wildcards.run)]
    return _mem_mb(registry.spec(solver).configure(options).train_job_bytes(sizes))


def _on_cluster():
    """Jobs go to a cluster (an executor plugin such as slurm), or this is such a job (the
    job's own Snakemake, which has --cores all: the node's cores, not the job's)."""
    return workflow.non_local_exec or workflow.remote_exec


def optimum_threads(wildcards):
    """The optimum's full-batch passes use every core a job may hold (--cores, and at most
    one long job per core: the cpu_jobs limit), or config optimum.threads. On a cluster
    every job is its own allocation: optimum.threads, else 1 (the job asks SLURM for as
    many CPUs; the submitting Snakemake has no --cores, and the job's own must not count
    the node's cores, or its srun asks for more CPUs than the job holds)."""
    if config["optimum"].get("threads"):
        return int(config["optimum"]["threads"])
    if _on_cluster():
        return 1
    cores = workflow.global_resources.get("_cores")
    cores = getattr(cores, "value", cores)  # a Resource in Snakemake 9
    cpu_jobs = workflow.global_resources.get("cpu_jobs")
    cpu_jobs = getattr(cpu_jobs, "value", cpu_jobs)
    return min(int(cores), int(cpu_jobs or cores))


def optimum_mem_mb(wildcards, input):
    sizes = _dataset_sizes(input.data)
    return _mem_mb(memory.optimum_job_bytes(config["optimum"]["maxcor"], sizes))


def crfsuite_mem_mb(wildcards, input):
    sizes = _dataset_sizes(input.data)
    return _mem_mb(memory.crfsuite_job_bytes(config["crfsuite"]["num_memories"], sizes))


# ---------------------------------------------------------------------------- report
# Figures and tables (crfsdca.reproduction.report.catalog), and the runs each one reads.
FIGURE_FILES = [
    f"{RESULTS}/figures/{name}.{ext}"
    for name in catalog.FIGURES
    for ext in ("png", "pdf")
]
TABLE_FILES = [
    f"{RESULTS}/tables/{name}.{ext}" for name in catalog.TABLES for ext in ("csv", "md")
]
OPTIMA = [f"{RESULTS}/optimum/{d}.h5" for d in DATASETS]
REPORT_CODE = code_of("crfsdca.cli.report")


def report_runs(groups):
    """Trace files of the experiment groups (and of CRFsuite's runs, if listed)."""
    files = []
    for group in groups:
        if group == catalog.CRFSUITE_GROUP:
            files += [
                f"{RESULTS}/runs/{d}/crfsuite/trace.csv" for d in CRFSUITE_DATASETS
            ]
        elif group in GROUPS:
            files += group_runs(group)
    return sorted(set(files))


def all_traces():
    return sorted({f"{run}/trace.csv" for run in RUN_DIRS})
