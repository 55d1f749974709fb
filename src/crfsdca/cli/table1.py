"""The ``table1`` command: Table 1 (dataset sizes, ours and the paper's) from featurized files."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import log


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", type=Path, help="featurized dataset files (.h5)")
    p.add_argument("--csv", required=True, type=Path, help="CSV output")
    p.add_argument("--md", required=True, type=Path, help="Markdown output")


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..data.hdf5 import load_dataset
    from ..data.table1 import table_rows, write_table1

    rows = table_rows(load_dataset(p) for p in args.inputs)
    write_table1(rows, args.csv, args.md)
    log(f"wrote {args.csv} and {args.md}")
    return 0
