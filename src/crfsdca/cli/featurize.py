"""The ``featurize`` command: read a raw dataset, extract attributes, write ``{dataset}.h5``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ..errors import ConfigError
from ..reproduction.config import load_config
from ..runtime.io import check_writable
from . import log


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset name (a key of the config's 'datasets')")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", help="the dataset's spec as a JSON object (what the workflow "
                     "passes: reader, source, options, templates, min_count, subset)")
    src.add_argument("--config", type=Path, help="a config.yaml to read the spec from")
    p.add_argument("--raw-dir", type=Path, help="directory of relative sources "
                   "(default: the config's raw_dir, or the current directory with --spec)")
    p.add_argument("--output", required=True, type=Path, help="the .h5 file to write")


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..data.featurize import featurize, spec_from_config
    from ..data.hdf5 import write_dataset
    from ..data.table1 import dataset_row

    if args.spec is not None:
        try:
            spec = json.loads(args.spec)
        except json.JSONDecodeError as e:
            raise ConfigError(f"--spec is not valid JSON: {e}") from None
        raw_dir = args.raw_dir
    else:
        config = load_config(args.config)
        spec = spec_from_config(config, args.dataset)
        raw_dir = args.raw_dir or config.get("raw_dir")
    check_writable(args.output)
    t0 = time.perf_counter()
    ds = featurize(args.dataset, spec, raw_dir)
    write_dataset(args.output, ds)
    row = dataset_row(ds)
    n_test = ds.test.n_sequences if ds.test is not None else 0
    log(f"{args.dataset}: " + ", ".join(f"{k}={v}" for k, v in row.items())
        + f", test n={n_test}; wrote {args.output} in {time.perf_counter() - t0:.1f} s")
    return 0
