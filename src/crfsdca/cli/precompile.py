"""The ``precompile`` command: the library's kernels compiled into numba's cache now,
not on their first use (:mod:`crfsdca.precompile`)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="workloads compiled in N processes at a time (default 1)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="this workload only (an algorithm, or 'command-line'); repeatable")
    p.add_argument("-q", "--quiet", action="store_true", help="no line per workload")


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..precompile import precompile
    from . import log

    if args.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, not {args.jobs}")
    try:
        seconds = precompile(jobs=args.jobs, only=args.only,
                             log=(lambda _msg: None) if args.quiet else log)
    except (ValueError, RuntimeError) as e:
        raise ConfigError(str(e)) from None
    if not args.quiet:
        log(f"kernels compiled into numba's cache in {seconds:.1f} s")
    return 0
