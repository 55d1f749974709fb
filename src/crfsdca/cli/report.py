"""The ``report`` command: figures, tables and the markdown report from run directories.

::

    crfsdca report figure NAME --runs DIR [DIR ...] [--optimum FILE ...] --png OUT.png --pdf OUT.pdf
    crfsdca report table NAME --runs DIR [DIR ...] [--optimum FILE ...] --csv OUT.csv --md OUT.md
    crfsdca report markdown --runs DIR [DIR ...] [--optimum FILE ...] --figures-dir DIR
                            [--tables DIR] [--table1 FILE] --out results/report.md

``--runs`` takes run directories (holding meta.json and trace.csv), their meta.json or
trace.csv files, or parent directories searched recursively. ``--optimum`` takes the
reference optimum files ``results/optimum/{dataset}.h5`` (without one, a dataset's P* is
its best traced primal, and the report says so).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ..errors import ConfigError
from ..reproduction.report import catalog

FIGURE_NAMES = tuple(catalog.FIGURES)
TABLE_NAMES = tuple(catalog.TABLES)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, type=Path,
                   help="run directories, their meta.json, or directories to search")
    p.add_argument("--optimum", nargs="*", default=[], type=Path,
                   help="reference optimum files (results/optimum/{dataset}.h5)")
    p.add_argument("--skip-unfinished", action="store_true",
                   help="leave out (and list) runs that did not finish (interrupted, "
                   "terminated, diverged) instead of refusing them")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    f = sub.add_parser("figure", help="one figure as PNG and PDF",
                       description="Draw one figure: " + ", ".join(FIGURE_NAMES))
    f.add_argument("name", choices=FIGURE_NAMES)
    _common(f)
    f.add_argument("--png", type=Path, help="PNG output")
    f.add_argument("--pdf", type=Path, help="PDF output")
    f.add_argument("--dpi", type=int, default=150)
    t = sub.add_parser("table", help="one table as CSV and markdown",
                       description="Write one table: " + ", ".join(TABLE_NAMES))
    t.add_argument("name", choices=TABLE_NAMES)
    _common(t)
    t.add_argument("--csv", type=Path, help="CSV output")
    t.add_argument("--md", type=Path, help="markdown output")
    m = sub.add_parser("markdown", help="the markdown report (results/report.md)")
    _common(m)
    m.add_argument("--figures-dir", type=Path, help="directory of the figures ({name}.png/pdf)")
    m.add_argument("--tables", type=Path, help="directory of the tables (table1_datasets.md, "
                   "time_to_target.csv...)")
    m.add_argument("--table1", type=Path, help="Table 1 markdown (default: "
                   "TABLES/table1_datasets.md)")
    m.add_argument("--out", required=True, type=Path, help="the report to write")


def run(args: argparse.Namespace) -> int:
    import matplotlib  # optional dependency (workflow extra, via seaborn); not for --help

    matplotlib.use("Agg")
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..reproduction.report.load import load_runs

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    log = logging.getLogger("crfsdca.report")
    rs = load_runs(args.runs, args.optimum, skip_unfinished=args.skip_unfinished)
    if not len(rs.runs):
        raise ConfigError(f"no finished run under {' '.join(map(str, args.runs))} (a run "
                          "directory holds meta.json and a non-empty trace.csv)")
    if args.what == "figure":
        # loaded when the command runs, not for its --help (numpy, numba, h5py)
        from ..reproduction.report.figures import draw, has_data, save_figure

        if args.png is None and args.pdf is None:
            raise ConfigError("give --png and/or --pdf")
        fig = draw(args.name, rs.frame)
        if not has_data(fig):
            raise ConfigError(f"figure {args.name}: none of the {len(rs.runs)} runs given "
                              f"is one it draws ({catalog.FIGURES[args.name].title})")
        save_figure(fig, args.png, args.pdf, dpi=args.dpi)
        log.info("%s from %d runs -> %s", args.name, len(rs.runs),
                 " ".join(str(p) for p in (args.png, args.pdf) if p is not None))
    elif args.what == "table":
        # loaded when the command runs, not for its --help (numpy, numba, h5py)
        from ..reproduction.report.tables import TABLES, write_table

        if args.csv is None and args.md is None:
            raise ConfigError("give --csv and/or --md")
        table, md = TABLES[args.name](rs)
        if not len(table):
            raise ConfigError(f"table {args.name}: none of the {len(rs.runs)} runs given is "
                              f"one it reads ({catalog.TABLES[args.name].title})")
        write_table(table, md, args.csv, args.md)
        log.info("%s (%d rows) from %d runs -> %s", args.name, len(table), len(rs.runs),
                 " ".join(str(p) for p in (args.csv, args.md) if p is not None))
    else:
        # loaded when the command runs, not for its --help (numpy, numba, h5py)
        from ..reproduction.report.markdown import write_report

        write_report(rs, args.out, args.figures_dir, args.tables, args.table1)
        log.info("report from %d runs -> %s", len(rs.runs), args.out)
    return 0
