"""Command-line interface: ``python -m crfsdca <command> ...`` (or the ``crfsdca`` script).

Each Snakemake rule's job is one call of a command here, so every step of the workflow
can also be run by hand. One module per command, each with ``add_arguments(parser)`` and
``run(args)`` (returns the exit code); adding a command is one module and its name and
help line in :data:`USER_COMMANDS` or :data:`WORKFLOW_COMMANDS`. Expected errors
(:class:`~crfsdca.errors.CrfsdcaError`) are printed as one line and exit with status 2.
Ctrl-C and SIGTERM end a command with status 130 and 143 and one line; ``train`` keeps the
run it has (status ``interrupted`` or ``terminated``), the others leave nothing behind
(every output is written atomically).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .. import __version__
from ..errors import CrfsdcaError, Terminated
from ..runtime.signals import EXIT_SIGINT, EXIT_SIGTERM, sigterm_raises

EXIT_SIGPIPE = 141
"""The exit status of a command whose output pipe closed (as if killed by SIGPIPE)."""

DESCRIPTION = ("crfsdca: linear-chain CRFs trained fast, with a certificate (a drop-in for "
               "CRFsuite's command line), and the reproduction of Le Priol et al., UAI 2018.")

USER_COMMANDS = {
    "learn": "train a CRF on CRFsuite-format files (CRFsuite's `crfsuite learn`), by SDCA",
    "tag": "tag CRFsuite-format data with a model (CRFsuite's `crfsuite tag`); -t evaluates",
    "dump": "print a model in plain text (CRFsuite's `crfsuite dump`)",
    "precompile": ("compile the kernels into numba's cache now (a container image, cluster "
                   "workers; the wheel ships them)"),
}
"""Training and tagging on your own data, as CRFsuite's command line: name -> help line."""
WORKFLOW_COMMANDS = {
    "download": "fetch a raw file and verify it",
    "featurize": "raw dataset -> featurized HDF5 file",
    "table1": "Table 1 (dataset sizes) from featurized files",
    "train": "train a CRF with one solver; write trace, weights and metadata",
    "crfsuite": "train CRFsuite's L-BFGS on the same objective, traced like train",
    "optimum": "reference optimum P* by a long L-BFGS run",
    "report": "figures, tables and report.md from run traces",
}
"""The stages of the paper's reproduction, which the Snakemake workflow's rules call."""
COMMANDS = {**USER_COMMANDS, **WORKFLOW_COMMANDS}
"""Command names, in the order ``--help`` lists them, with their help lines; each is the
module of that name."""

WORKFLOW_EXTRA = ("pandas", "seaborn", "yaml", "snakemake", "matplotlib", "jsonschema")
"""Modules of the reproduction's dependencies (``pip install 'crfsdca[workflow]'``)."""


def log(msg: str) -> None:
    """A progress or result line on standard error (standard output stays for data)."""
    print(msg, file=sys.stderr, flush=True)


def command_module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def _listing(title: str, names: tuple[str, ...]) -> str:
    width = max(map(len, COMMANDS)) + 2
    return "\n".join([title] + [f"  {n:<{width}}{COMMANDS[n]}" for n in names])


def build_parser(only: str | None = None, arguments: bool = True) -> argparse.ArgumentParser:
    """The parser of every command, or with ``only`` of that one command alone: a command
    then imports its own module and not the others' (``tag`` would pay 0.6 s for
    ``optimum``'s numba and h5py before reading its file). Without ``arguments``, the
    commands' names and help lines alone, no module imported: all that ``--help``,
    ``--version`` and a misspelt command need."""
    epilog = None if only else "\n\n".join([
        _listing("your own data (CRFsuite's command line):", USER_COMMANDS),
        _listing("the paper's reproduction (the workflow's stages; pip install "
                 "'crfsdca[workflow]'):", WORKFLOW_COMMANDS),
        "crfsdca COMMAND --help says more about each."])
    parser = argparse.ArgumentParser(prog="crfsdca", description=DESCRIPTION,
                                     epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"crfsdca {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="one of the commands below")
    for name in (only,) if only else COMMANDS:
        p = sub.add_parser(name, description=COMMANDS[name])
        if arguments:
            module = command_module(name)
            module.add_arguments(p)
            p.set_defaults(func=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (2 for bad arguments or expected errors)."""
    argv = sys.argv[1:] if argv is None else argv
    only = argv[0] if argv and argv[0] in COMMANDS else None  # else the whole listing
    try:
        args = build_parser(only, arguments=only is not None).parse_args(argv)
    except SystemExit as e:  # --help, --version, or argparse's one-line usage error
        return e.code if isinstance(e.code, int) else 2
    try:
        with sigterm_raises():
            return args.func(args)
    except CrfsdcaError as e:
        print(f"crfsdca {args.command}: error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in WORKFLOW_EXTRA:
            raise
        print(f"crfsdca {args.command}: error: needs {e.name}, one of the reproduction's "
              f"dependencies: pip install 'crfsdca[workflow]'", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `crfsdca dump MODEL | head`: the reader has gone, end quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more reaches the closed pipe
        return EXIT_SIGPIPE
    except (KeyboardInterrupt, Terminated) as e:
        what = "interrupted (Ctrl-C)" if isinstance(e, KeyboardInterrupt) else "terminated"
        print(f"crfsdca {args.command}: {what}; no output written", file=sys.stderr)
        return EXIT_SIGINT if isinstance(e, KeyboardInterrupt) else EXIT_SIGTERM
