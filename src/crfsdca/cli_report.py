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

from .errors import ConfigError

FIGURE_NAMES = ("fig2_sampling", "fig3_nonuniformity", "fig4_methods", "fig7_test_error",
                "fig8_line_search", "fig9_gap_estimate", "subprecision", "wallclock")
TABLE_NAMES = ("time_to_target", "subprecision", "optimum", "crfsuite_speed")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, type=Path,
                   help="run directories, their meta.json, or directories to search")
    p.add_argument("--optimum", nargs="*", default=[], type=Path,
                   help="reference optimum files (results/optimum/{dataset}.h5)")


def _args_report(p: argparse.ArgumentParser) -> None:
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


def cmd_report(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from .report.load import load_runs

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    log = logging.getLogger("crfsdca.report")
    rs = load_runs(args.runs, args.optimum)
    if args.what == "figure":
        from .report.figures import draw, save_figure

        if args.png is None and args.pdf is None:
            raise ConfigError("give --png and/or --pdf")
        fig = draw(args.name, rs.frame)
        save_figure(fig, args.png, args.pdf, dpi=args.dpi)
        log.info("%s from %d runs -> %s", args.name, len(rs.runs),
                 " ".join(str(p) for p in (args.png, args.pdf) if p is not None))
    elif args.what == "table":
        from .report.tables import TABLES, write_table

        if args.csv is None and args.md is None:
            raise ConfigError("give --csv and/or --md")
        table, md = TABLES[args.name](rs)
        write_table(table, md, args.csv, args.md)
        log.info("%s (%d rows) from %d runs -> %s", args.name, len(table), len(rs.runs),
                 " ".join(str(p) for p in (args.csv, args.md) if p is not None))
    else:
        from .report.markdown import write_report

        write_report(rs, args.out, args.figures_dir, args.tables, args.table1)
        log.info("report from %d runs -> %s", len(rs.runs), args.out)
    return 0
