# Raw files (download when missing) and featurization into HDF5.


localrules:
    download,
    download_by_content,


rule download:
    """Fetch a raw file missing from raw_dir and verify its sha256 (vendored files satisfy
    this rule, so it only runs when a file is missing)."""
    output:
        ensure(f"{RAW}/{{rawfile}}", sha256=raw_sha256),
    log:
        f"{RESULTS}/logs/download/{{rawfile}}.log",
    wildcard_constraints:
        rawfile=_alternatives(RAW_BY_SHA),
    conda:
        CONDA_ENV
    params:
        crfsdca=CRFSDCA,
        url=raw_url,
        sha256=raw_sha256,
    shell:
        "{params.crfsdca} download --url {params.url:q} --sha256 {params.sha256}"
        " --output {output:q} > {log:q} 2>&1"


rule download_by_content:
    """Like download, for a file whose canonical copy may differ byte-wise from the vendored
    one (OCR): accepted if its sha256 matches or its content passes the row/column check.
    """
    output:
        f"{RAW}/{{rawfile}}",
    log:
        f"{RESULTS}/logs/download/{{rawfile}}.log",
    wildcard_constraints:
        rawfile=_alternatives(RAW_BY_CONTENT),
    conda:
        CONDA_ENV
    params:
        crfsdca=CRFSDCA,
        url=raw_url,
        sha256=raw_sha256,
        content=raw_content,
    shell:
        "{params.crfsdca} download --url {params.url:q} --sha256 {params.sha256}"
        " {params.content} --output {output:q} > {log:q} 2>&1"


rule featurize:
    """Read a raw dataset, extract its attributes and write {dataset}.h5 (vocabularies,
    flat train/test arrays, squared radii, provenance)."""
    input:
        source=dataset_source,
        code=code_of("crfsdca.cli.featurize"),
    output:
        f"{PROCESSED}/{{dataset}}.h5",
    log:
        f"{RESULTS}/logs/featurize/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/featurize/{{dataset}}.tsv"
    wildcard_constraints:
        dataset=_alternatives(DATASETS),
    conda:
        CONDA_ENV
    params:
        crfsdca=CRFSDCA,
        spec=featurize_spec,
    shell:
        "{params.crfsdca} featurize {wildcards.dataset} --spec {params.spec:q}"
        " --output {output:q} > {log:q} 2>&1"
