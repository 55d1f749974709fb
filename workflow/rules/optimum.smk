# Reference optima: a long L-BFGS run per dataset (P* and its certificate).


rule optimum:
    """w*, P*, the final gradient norm and the gap bound ||grad P||^2 / (2 lambda), by
    the package's L-BFGS on the full-batch objective (on the job's threads)."""
    input:
        data=f"{PROCESSED}/{{dataset}}.h5",
        code=code_of("crfsdca.cli.optimum"),
    output:
        f"{RESULTS}/optimum/{{dataset}}.h5",
    log:
        f"{RESULTS}/logs/optimum/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/optimum/{{dataset}}.tsv"
    wildcard_constraints:
        dataset=_alternatives(DATASETS),
    conda:
        CONDA_ENV
    threads: optimum_threads
    resources:
        mem_mb=optimum_mem_mb,
        runtime=240,
        cpu_jobs=lambda wc, threads: threads,
    params:
        single_thread=SINGLE_THREAD,
        crfsdca=CRFSDCA,
        maxiter=config["optimum"]["maxiter"],
        maxcor=config["optimum"]["maxcor"],
        lam=lambda_arg,
    shell:
        "{params.single_thread} {params.crfsdca} optimum --data {input.data:q} --out {output:q}"
        " --maxiter {params.maxiter} --maxcor {params.maxcor} --threads {threads}"
        " {params.lam}"
        " > {log:q} 2>&1"
