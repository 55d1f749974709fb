"""MkDocs hook: pages derived from the code at build time, never copied by hand.

``reference/cli.md`` is generated here on every build from

- ``crfsdca.cli.build_parser()``: the top-level ``--help`` and each command's
  ``format_help()``, in the order ``crfsdca --help`` lists them;
- ``crfsdca.cli.learn.PARAMETERS``: the ``-p NAME=VALUE`` names of ``learn`` and the
  estimator parameter each sets, with the estimator's defaults;
- ``crfsdca.solvers.registry.SOLVERS``: every solver's option table (name, run key and
  ``train`` flag, CRFsuite's name, the defaults, range or choices, help).

Registered in ``mkdocs.yml`` (``hooks:``); ``make docs`` runs ``mkdocs build --strict``.
"""

from __future__ import annotations

import argparse
import os

from mkdocs.structure.files import File

CLI_PAGE = "reference/cli.md"
HELP_WIDTH = "88"  # argparse wraps to $COLUMNS: the page must not depend on the terminal


def _escape(text: str) -> str:
    """Plain text made safe inside a Markdown table cell (no emphasis, links or HTML)."""
    for ch in ("\\", "|", "*", "_", "[", "]", "<", ">", "`"):
        text = text.replace(ch, "\\" + ch)
    return text


def _code(text: object) -> str:
    return f"`{text}`"


def _fence(text: str) -> str:
    return "```text\n" + text.rstrip() + "\n```\n"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _value(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, str):
        return _code(repr(value))
    return _code(value)


def _range(option) -> str:
    if option.choices is not None:
        return ", ".join(_code(c) for c in option.choices)
    if option.bounds is not None:
        return _code(option.bounds)
    if option.kind is bool:
        return "true, false"
    return ""


def _parameters_table() -> list[str]:
    from crfsdca.cli.learn import PARAMETERS
    from crfsdca.estimator import _BASE_PARAMETERS

    lines = ["| `-p` name | `crfsdca.CRF` parameter | type | default |",
             "|---|---|---|---|"]
    for name, (key, kind) in PARAMETERS.items():
        lines.append(f"| {_code(name)} | {_code(key)} | {kind.__name__} | "
                     f"{_value(_BASE_PARAMETERS.get(key))} |")
    return lines


def _options_tables() -> list[str]:
    from crfsdca.solvers.registry import SOLVERS

    out: list[str] = []
    tables = dict.fromkeys(s.options for s in SOLVERS.values())
    for table in tables:
        users = [s for s in SOLVERS.values() if s.options is table]
        names = ", ".join(_code(s.name) for s in users)
        offered = [s.name for s in users if s.offered]
        hidden = [s.name for s in users if not s.offered]
        out.append(f"### {', '.join(s.name for s in users)}")
        out.append("")
        note = f"Solvers: {names} ({', '.join(s.label for s in users)})."
        if hidden:
            note += (" " + ", ".join(_code(h) for h in hidden)
                     + " is offered by `crfsdca train` only, not by `crfsdca.CRF` or "
                     "`crfsdca learn`.")
        if offered:
            note += (" L1 term (`c1` > 0): " + ("yes" if users[0].supports_l1 else "no")
                     + "; no L2 term (`c2` = 0): "
                     + ("no" if getattr(users[0], "needs_l2", True) else "yes")
                     + "; threads: " + ("yes" if users[0].supports_threads else "no")
                     + "; continues from: " + (users[0].continues_from or "nothing")
                     + ".")
        budgets = {s.default_epochs for s in users if s.offered}
        if budgets != {None}:
            note += (" `max_iterations` left at None: " + ", ".join(str(b) for b in budgets)
                     + " epochs (CRFsuite's default).")
        out.append(note)
        out.append("")
        out.append("| option | run key / `train` flag | CRFsuite name | default (`train`) "
                   "| default (`CRF`, `learn`) | range / choices | help |")
        out.append("|---|---|---|---|---|---|---|")
        for o in table:
            crfsuite = _code(o.crfsuite) if o.crfsuite else ""
            estimator_default = o.crfsuite_default if o.crfsuite_default is not None \
                else o.default
            out.append(
                f"| {_code(o.name)} | {_code(table.key(o.name))} / {_code(table.flag(o.name))}"
                f" | {crfsuite} | {_value(o.default)} | {_value(estimator_default)} | "
                f"{_range(o)} | {_escape(o.help)} |")
        out.append("")
    return out


def cli_page() -> str:
    """The Markdown of the command-line reference."""
    os.environ["COLUMNS"] = HELP_WIDTH
    from crfsdca.cli import USER_COMMANDS, WORKFLOW_COMMANDS, build_parser

    parser = build_parser()
    commands = _subparsers(parser)
    lines = [
        "# Command line",
        "",
        "Generated from the code when the site is built (`docs/hooks.py`): the output of",
        "`crfsdca --help` and of each command's `--help`, the `-p` names of `learn`, and",
        "every solver's option table (`crfsdca.solvers.registry.SOLVERS`). The guide to",
        "these commands is [the command line](../guide/command-line.md).",
        "",
        "## crfsdca",
        "",
        _fence(parser.format_help()),
        "## Your own data",
        "",
    ]
    for group in (USER_COMMANDS, None, WORKFLOW_COMMANDS):
        if group is None:
            lines += ["## The reproduction's commands", "",
                      "The stages of the [workflow](../reproduction/workflow.md); they need "
                      "`pip install 'crfsdca[workflow]'`.", ""]
            continue
        for name in group:
            lines += [f"### crfsdca {name}", "", _fence(commands[name].format_help())]
            if name == "learn":
                lines += ["`-p NAME=VALUE` names (CRFsuite's where it has them; the defaults "
                          "are the estimator's). Every solver option is also a `-p` name, by "
                          "its run key or its CRFsuite name ([solver options](#solver-options)"
                          "); `crfsdca learn -a ALGORITHM -H` lists the algorithm's.", "",
                          *_parameters_table(), ""]
    lines += [
        "## Solver options",
        "",
        "One table per solver (`crfsdca.solvers.options.OptionTable`). Each option is:",
        "",
        "- a flag of `crfsdca train` (the run key with dashes) and a key of an experiment "
        "run in `config.yaml` (the run key);",
        "- a parameter of `crfsdca.CRF` and a `-p` name of `crfsdca learn`, by its run key "
        "and, where it is one of CRFsuite's parameters, also by CRFsuite's name "
        "(`num_memories`, `linesearch`; CRFsuite's value names such as `MoreThuente` are "
        "translated). Left at None, an option takes the default of the column "
        "\"default (`CRF`, `learn`)\": CRFsuite's where the option is CRFsuite's, else the "
        "table's.",
        "",
        *_options_tables(),
    ]
    return "\n".join(lines) + "\n"


def on_files(files, config):
    """Add the generated command-line reference to the site's files."""
    files.append(File.generated(config, CLI_PAGE, content=cli_page()))
    return files
