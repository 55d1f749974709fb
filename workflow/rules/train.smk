# Training runs: one job per dataset x run of the experiment grid (config: experiments).
# Every timed job is single-threaded: numba and the BLAS behind numpy/scipy (OpenBLAS, MKL,
# OpenMP) are pinned to one thread in the shell command, and snakemake runs at most
# --cores jobs at once, so solver seconds compare across methods and with CRFsuite.


rule train:
    """One solver run: trace.csv (one row per checkpoint), weights.h5, meta.json."""
    input:
        data=f"{PROCESSED}/{{dataset}}.h5",
        code=train_sources,
    output:
        trace=f"{RESULTS}/runs/{{dataset}}/{{run}}/trace.csv",
        weights=f"{RESULTS}/runs/{{dataset}}/{{run}}/weights.h5",
        meta=f"{RESULTS}/runs/{{dataset}}/{{run}}/meta.json",
    wildcard_constraints:
        dataset=_alternatives(DATASETS),
        run=_alternatives(sorted({r for _, r in RUNS})),
    params:
        crfsdca=CRFSDCA,
        args=train_args,
        out=lambda wc, output: os.path.dirname(output.trace),
    threads: 1
    resources:
        mem_mb=train_mem_mb,
        runtime=120,
        cpu_jobs=1,
    conda:
        CONDA_ENV,
    log:
        f"{RESULTS}/logs/train/{{dataset}}/{{run}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{dataset}}/{{run}}.tsv"
    shell:
        "NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1"
        " {params.crfsdca} train --data {input.data:q} --out {params.out:q}"
        " {params.args} --progress off > {log:q} 2>&1"


rule crfsuite:
    """CRFsuite's L-BFGS (python-crfsuite) on exactly our objective, traced like `train`:
    the reference every wall-clock comparison is made against."""
    input:
        data=f"{PROCESSED}/{{dataset}}.h5",
        code=["src/crfsdca/crfsuite.py", "src/crfsdca/cli_crfsuite.py"],
    output:
        trace=f"{RESULTS}/runs/{{dataset}}/crfsuite/trace.csv",
        weights=f"{RESULTS}/runs/{{dataset}}/crfsuite/weights.h5",
        meta=f"{RESULTS}/runs/{{dataset}}/crfsuite/meta.json",
    wildcard_constraints:
        dataset=_alternatives(DATASETS),
    params:
        crfsdca=CRFSDCA,
        out=lambda wc, output: os.path.dirname(output.trace),
        max_iterations=config["crfsuite"]["max_iterations"],
        num_memories=config["crfsuite"]["num_memories"],
        lam=lambda wc: (f"--lambda {config['training']['lambda']}"
                        if config["training"].get("lambda") is not None else ""),
    threads: 1
    resources:
        mem_mb=lambda wc, input: optimum_mem_mb(wc, input) // 4 + 1000,
        runtime=240,
        cpu_jobs=1,
    conda:
        CONDA_ENV,
    log:
        f"{RESULTS}/logs/crfsuite/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/crfsuite/{{dataset}}.tsv"
    shell:
        "NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1"
        " {params.crfsdca} crfsuite --data {input.data:q} --out {params.out:q}"
        " --max-iterations {params.max_iterations} --num-memories {params.num_memories}"
        " {params.lam} > {log:q} 2>&1"
