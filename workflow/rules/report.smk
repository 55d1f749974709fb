# Tables and figures.


localrules:
    table1,


rule table1:
    """Table 1: size of every dataset (d, n, N, K, A, a, memory of the pairwise marginals),
    ours next to the paper's."""
    input:
        expand(f"{PROCESSED}/{{dataset}}.h5", dataset=DATASETS),
    output:
        csv=report(
            f"{RESULTS}/tables/table1_datasets.csv",
            caption="../report/table1.rst",
            category="Table 1",
        ),
        md=f"{RESULTS}/tables/table1_datasets.md",
    params:
        crfsdca=CRFSDCA,
    conda:
        CONDA_ENV,
    log:
        f"{RESULTS}/logs/table1.log",
    shell:
        "{params.crfsdca} table1 {input:q} --csv {output.csv:q} --md {output.md:q}"
        " > {log:q} 2>&1"
