# Reproduction of "Adaptive Stochastic Dual Coordinate Ascent for Conditional Random Fields"
# (Le Priol, Piche, Lacoste-Julien, UAI 2018). Every rule's job is one call of the package's
# command-line interface (python -m crfsdca <command> ...); see README.md.
#
#   snakemake --cores 8                                 the full reproduction (config.yaml)
#   snakemake --cores 2 --profile workflow/profiles/smoke   CI-sized subsets, separate outputs

import os

from snakemake.utils import min_version, validate

min_version("8.0")


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


# common.smk puts the directory of the Python that runs Snakemake first on PATH, so that
# every job's `python` is that one (a cluster job inherits PATH)
envvars:
    "PATH",


# Long CPU-bound jobs (train and crfsuite, whose solver seconds are compared, and optimum)
# must not share a core: at most one per CPU core, whatever --cores says, so that
# `snakemake --cores 8` on a smaller machine keeps the timings honest
# (--resources cpu_jobs=N overrides).
if "cpu_jobs" not in workflow.global_resources:
    workflow.register_resource("cpu_jobs", os.cpu_count() or 1)


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/optimum.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        expand(f"{PROCESSED}/{{dataset}}.h5", dataset=DATASETS),
        TABLE1,
        OPTIMA,
        all_traces(),
        FIGURE_FILES,
        TABLE_FILES,
        f"{RESULTS}/report.md",
