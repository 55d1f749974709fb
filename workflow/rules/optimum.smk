# Reference optima: a long L-BFGS run per dataset (P* and its certificate).


rule optimum:
    """w*, P*, the final gradient norm and the gap bound ||grad P||^2 / (2 lambda), by
    scipy's L-BFGS-B on the full-batch objective."""
    input:
        data=f"{PROCESSED}/{{dataset}}.h5",
        code=["src/crfsdca/solvers/lbfgs.py", "src/crfsdca/optimum.py",
              "src/crfsdca/model/objective.py", "src/crfsdca/model/oracle.py"],
    output:
        f"{RESULTS}/optimum/{{dataset}}.h5",
    wildcard_constraints:
        dataset=_alternatives(DATASETS),
    params:
        crfsdca=CRFSDCA,
        maxiter=config["optimum"]["maxiter"],
        maxcor=config["optimum"]["maxcor"],
        lam=lambda wc: (f"--lambda {config['training']['lambda']}"
                        if config["training"].get("lambda") is not None else ""),
    threads: 1
    resources:
        mem_mb=optimum_mem_mb,
        runtime=240,
        cpu_jobs=1,
    conda:
        CONDA_ENV,
    log:
        f"{RESULTS}/logs/optimum/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/optimum/{{dataset}}.tsv"
    shell:
        "NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1"
        " {params.crfsdca} optimum --data {input.data:q} --out {output:q}"
        " --maxiter {params.maxiter} --maxcor {params.maxcor} {params.lam}"
        " > {log:q} 2>&1"
