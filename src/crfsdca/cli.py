"""Command-line interface: ``python -m crfsdca <command> ...`` (or the ``crfsdca`` script).

Each Snakemake rule's job is one call of a command here, so every step of the workflow
can also be run by hand. Commands:

- ``download``: fetch a raw file from its address and verify it (sha256 or content);
- ``featurize``: read a raw dataset, extract attributes, write ``{dataset}.h5``;
- ``table1``: Table 1 (dataset sizes, ours and the paper's) from featurized files;
- ``train``: one solver run on a featurized dataset (:mod:`crfsdca.cli_train`);
- ``crfsuite``: CRFsuite's L-BFGS on the same objective (:mod:`crfsdca.cli_crfsuite`);
- ``optimum``: the reference optimum P* by L-BFGS (:mod:`crfsdca.cli_optimum`);
- ``report``: figures, tables and ``report.md`` from traces (:mod:`crfsdca.cli_report`).

Adding a command: write ``_args_<name>(parser)`` (its arguments) and ``cmd_<name>(args)``
(returns an exit code), and register both in ``COMMANDS``. Expected errors
(:class:`~crfsdca.errors.CrfsdcaError`) are printed as one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from crfsdca import __version__
from crfsdca.cli_crfsuite import _args_crfsuite, cmd_crfsuite
from crfsdca.cli_optimum import _args_optimum, cmd_optimum
from crfsdca.cli_report import _args_report, cmd_report
from crfsdca.cli_train import _args_train, cmd_train
from crfsdca.errors import ConfigError, CrfsdcaError


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- download

def _args_download(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", required=True, help="address to fetch")
    p.add_argument("--output", required=True, type=Path, help="destination file")
    p.add_argument("--sha256", help="expected sha256 of the file")
    p.add_argument("--rows", type=int, help="content check: expected number of rows "
                   "(accepts a file whose sha256 differs)")
    p.add_argument("--columns", type=int, help="content check: expected tab-separated columns")
    p.add_argument("--timeout", type=float, default=60.0, help="network timeout in seconds")


def cmd_download(args: argparse.Namespace) -> int:
    from crfsdca.data.raw import ContentCheck, download

    if (args.rows is None) != (args.columns is None):
        raise ConfigError("--rows and --columns go together")
    if args.sha256 is None and args.rows is None:
        raise ConfigError("give --sha256 and/or --rows/--columns: a download is always verified")
    content = ContentCheck(args.rows, args.columns) if args.rows is not None else None
    how = download(args.url, args.output, args.sha256, content, timeout=args.timeout)
    _log(f"downloaded {args.url} -> {args.output} (verified by {how})")
    return 0


# --------------------------------------------------------------------------- featurize

def _args_featurize(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset name (a key of the config's 'datasets')")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", help="the dataset's spec as a JSON object (what the workflow "
                     "passes: reader, source, options, templates, min_count, subset)")
    src.add_argument("--config", type=Path, help="a config.yaml to read the spec from")
    p.add_argument("--raw-dir", type=Path, help="directory of relative sources "
                   "(default: the config's raw_dir, or the current directory with --spec)")
    p.add_argument("--output", required=True, type=Path, help="the .h5 file to write")


def cmd_featurize(args: argparse.Namespace) -> int:
    from crfsdca.data.featurize import featurize, spec_from_config
    from crfsdca.data.hdf5 import write_dataset
    from crfsdca.data.table1 import dataset_row

    if args.spec is not None:
        try:
            spec = json.loads(args.spec)
        except json.JSONDecodeError as e:
            raise ConfigError(f"--spec is not valid JSON: {e}") from None
        raw_dir = args.raw_dir
    else:
        import yaml

        with open(args.config, encoding="utf-8") as f:
            config = yaml.safe_load(f)
        spec = spec_from_config(config, args.dataset)
        raw_dir = args.raw_dir or config.get("raw_dir")
    t0 = time.perf_counter()
    ds = featurize(args.dataset, spec, raw_dir)
    write_dataset(args.output, ds)
    row = dataset_row(ds)
    n_test = ds.test.n_sequences if ds.test is not None else 0
    _log(f"{args.dataset}: " + ", ".join(f"{k}={v}" for k, v in row.items())
         + f", test n={n_test}; wrote {args.output} in {time.perf_counter() - t0:.1f} s")
    return 0


# --------------------------------------------------------------------------- table1

def _args_table1(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", type=Path, help="featurized dataset files (.h5)")
    p.add_argument("--csv", required=True, type=Path, help="CSV output")
    p.add_argument("--md", required=True, type=Path, help="Markdown output")


def cmd_table1(args: argparse.Namespace) -> int:
    from crfsdca.data.hdf5 import load_dataset
    from crfsdca.data.table1 import table_rows, write_table1

    rows = table_rows(load_dataset(p) for p in args.inputs)
    write_table1(rows, args.csv, args.md)
    _log(f"wrote {args.csv} and {args.md}")
    return 0


# --------------------------------------------------------------------------- main

Command = tuple[str, str, Callable[[argparse.ArgumentParser], None],
                Callable[[argparse.Namespace], int]]

COMMANDS: list[Command] = [
    ("download", "fetch a raw file and verify it", _args_download, cmd_download),
    ("featurize", "raw dataset -> featurized HDF5 file", _args_featurize, cmd_featurize),
    ("table1", "Table 1 (dataset sizes) from featurized files", _args_table1, cmd_table1),
    ("train", "train a CRF with one solver; write trace, weights and metadata",
     _args_train, cmd_train),
    ("crfsuite", "train CRFsuite's L-BFGS on the same objective, traced like train",
     _args_crfsuite, cmd_crfsuite),
    ("optimum", "reference optimum P* by a long L-BFGS run", _args_optimum, cmd_optimum),
    ("report", "figures, tables and report.md from run traces", _args_report, cmd_report),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crfsdca", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"crfsdca {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_, add_args, run in COMMANDS:
        p = sub.add_parser(name, help=help_, description=help_)
        add_args(p)
        p.set_defaults(func=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CrfsdcaError as e:
        print(f"crfsdca {args.command}: error: {e}", file=sys.stderr)
        return 2
