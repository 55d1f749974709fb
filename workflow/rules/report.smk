# Tables, figures and the markdown report, all computed from the run traces.


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
            caption="../report/caption.rst",
            category="Table 1",
        ),
        md=f"{RESULTS}/tables/table1_datasets.md",
    log:
        f"{RESULTS}/logs/table1.log",
    conda:
        CONDA_ENV
    params:
        crfsdca=CRFSDCA,
        caption=catalog.TABLE1.caption,
    shell:
        "{params.crfsdca} table1 {input:q} --csv {output.csv:q} --md {output.md:q}"
        " > {log:q} 2>&1"


rule figure:
    """One of the paper's figures (PNG and PDF) from the traces of its experiment groups."""
    input:
        runs=lambda wc: report_runs(catalog.FIGURES[wc.name].groups),
        optima=OPTIMA,
        code=REPORT_CODE,
    output:
        png=report(
            f"{RESULTS}/figures/{{name}}.png",
            caption="../report/caption.rst",
            category="Figures",
        ),
        pdf=f"{RESULTS}/figures/{{name}}.pdf",
    log:
        f"{RESULTS}/logs/figures/{{name}}.log",
    wildcard_constraints:
        name=_alternatives(catalog.FIGURES),
    conda:
        CONDA_ENV
    params:
        crfsdca=CRFSDCA,
        caption=lambda wc: catalog.FIGURES[wc.name].caption,
    shell:
        "{params.crfsdca} report figure {wildcards.name} --runs {input.runs:q}"
        " --optimum {input.optima:q} --png {output.png:q} --pdf {output.pdf:q} > {log:q} 2>&1"


rule table:
    """A results table (CSV and markdown): time to reach a sub-optimality, the sub-precision
    study, the reference optima, the seconds to a relative sub-optimality next to CRFsuite.
    """
    input:
        runs=lambda wc: report_runs(catalog.TABLES[wc.name].groups),
        optima=OPTIMA,
        code=REPORT_CODE,
    output:
        csv=report(
            f"{RESULTS}/tables/{{name}}.csv",
            caption="../report/caption.rst",
            category="Tables",
        ),
        md=f"{RESULTS}/tables/{{name}}.md",
    log:
        f"{RESULTS}/logs/tables/{{name}}.log",
    wildcard_constraints:
        name=_alternatives(catalog.TABLES),
    conda:
        CONDA_ENV
    params:
        crfsdca=CRFSDCA,
        caption=lambda wc: catalog.TABLES[wc.name].caption,
    shell:
        "{params.crfsdca} report table {wildcards.name} --runs {input.runs:q}"
        " --optimum {input.optima:q} --csv {output.csv:q} --md {output.md:q} > {log:q} 2>&1"


rule report_md:
    """results/report.md: every figure and table, and each claim of the paper checked
    against the traces."""
    input:
        runs=all_traces(),
        optima=OPTIMA,
        figures=FIGURE_FILES,
        tables=TABLE_FILES,
        table1=TABLE1,
        code=REPORT_CODE,
    output:
        report(
            f"{RESULTS}/report.md", caption="../report/caption.rst", category="Report"
        ),
    log:
        f"{RESULTS}/logs/report_md.log",
    conda:
        CONDA_ENV
    params:
        crfsdca=CRFSDCA,
        caption=catalog.REPORT.caption,
        figures_dir=lambda wc, input: os.path.dirname(input.figures[0]),
        tables_dir=lambda wc, input: os.path.dirname(input.tables[0]),
    shell:
        "{params.crfsdca} report markdown --runs {input.runs:q} --optimum {input.optima:q}"
        " --figures-dir {params.figures_dir:q} --tables {params.tables_dir:q}"
        " --table1 {input.table1[1]:q} --out {output:q} > {log:q} 2>&1"
