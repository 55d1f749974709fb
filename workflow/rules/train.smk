# Training runs: one job per dataset x run of the experiment grid (config: experiments).
# Every timed job runs on its run's threads (1 unless the grid says otherwise; BLAS pinned
# to one, SINGLE_THREAD) and holds as many cores (the cpu_jobs resource), so solver
# seconds compare across methods and with CRFsuite.


rule train:
    """One solver run: trace.csv (one row per checkpoint), weights.h5, meta.json."""
    input:
        data=f"{PROCESSED}/{{dataset}}.h5",
        code=train_sources,
    output:
        trace=f"{RESULTS}/runs/{{dataset}}/{{run}}/trace.csv",
        weights=f"{RESULTS}/runs/{{dataset}}/{{run}}/weights.h5",
        meta=f"{RESULTS}/runs/{{dataset}}/{{run}}/meta.json",
    log:
        f"{RESULTS}/logs/train/{{dataset}}/{{run}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{dataset}}/{{run}}.tsv"
    wildcard_constraints:
        dataset=_alternatives(DATASETS),
        run=_alternatives(sorted({r for _, r in RUNS})),
    conda:
        CONDA_ENV
    threads: run_threads
    resources:
        mem_mb=train_mem_mb,
        runtime=120,
        cpu_jobs=lambda wc, threads: threads,
    params:
        single_thread=SINGLE_THREAD,
        crfsdca=CRFSDCA,
        args=train_args,
        out=lambda wc, output: os.path.dirname(output.trace),
    shell:
        "{params.single_thread} {params.crfsdca} train --data {input.data:q} --out {params.out:q}"
        " {params.args} --progress off > {log:q} 2>&1"


rule crfsuite:
    """CRFsuite's L-BFGS (python-crfsuite) on exactly our objective, traced like `train`:
    the reference every wall-clock comparison is made against."""
    input:
        data=f"{PROCESSED}/{{dataset}}.h5",
        code=code_of("crfsdca.cli.crfsuite"),
    output:
        trace=f"{RESULTS}/runs/{{dataset}}/crfsuite/trace.csv",
        weights=f"{RESULTS}/runs/{{dataset}}/crfsuite/weights.h5",
        meta=f"{RESULTS}/runs/{{dataset}}/crfsuite/meta.json",
    log:
        f"{RESULTS}/logs/crfsuite/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/crfsuite/{{dataset}}.tsv"
    wildcard_constraints:
        dataset=_alternatives(DATASETS),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=crfsuite_mem_mb,
        runtime=240,
        cpu_jobs=1,
    params:
        single_thread=SINGLE_THREAD,
        crfsdca=CRFSDCA,
        out=lambda wc, output: os.path.dirname(output.trace),
        max_iterations=config["crfsuite"]["max_iterations"],
        num_memories=config["crfsuite"]["num_memories"],
        delta=config["crfsuite"]["delta"],
        lam=lambda_arg,
    shell:
        "{params.single_thread} {params.crfsdca} crfsuite --data {input.data:q}"
        " --out {params.out:q}"
        " --max-iterations {params.max_iterations} --num-memories {params.num_memories}"
        " --delta {params.delta}"
        " {params.lam} > {log:q} 2>&1"
