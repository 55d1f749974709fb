"""MkDocs hook: pages derived from the code at build time, never copied by hand.

``reference/cli.md`` is generated here on every build from

- ``crfsdca.cli.build_parser()``: the top-level ``--help`` and each command's
  ``format_help()``, in the order ``crfsdca --help`` lists them;
- ``crfsdca.cli.learn.PARAMETERS``: the ``-p NAME=VALUE`` names of ``learn`` and the
  estimator parameter each sets, with the estimator's defaults;
- ``crfsdca.solvers.registry.SOLVERS``: every solver's option table (name, run key and
  ``train`` flag, CRFsuite's name, the defaults, range or choices, help).

Pages also name generated values by placeholders, replaced on every build (an unknown
one fails the build):

- ``{{ default.NAME }}``: ``crfsdca.CRF()``'s default of ``NAME`` (``epsilon`` left at
  None is ``crfsdca.training.learn.DEFAULT_EPSILON``);
- ``{{ option.SOLVER.NAME }}``: a solver option's default for ``crfsdca.CRF``;
- ``{{ bench_current }}``, ``{{ bench_table }}``: the benchmark suite's newest stored
  run (``benchmarks/suite/publish.py``), in full or as the README's table;
- ``{{ bench_suite }}``: the suite's benchmark modules and what each measures (their
  docstrings); ``{{ studies }}``: the frozen studies' headers (question, date, commit,
  answer; ``tests/integration/test_benchmarks.py`` fails on a study without all four).

Registered in ``mkdocs.yml`` (``hooks:``); ``make docs`` runs ``mkdocs build --strict``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

CLI_PAGE = "reference/cli.md"
ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "suite"
STUDIES = ROOT / "benchmarks" / "studies"
DATA_NAMES = {"ner": "Dutch NER", "esp": "Spanish NER", "chunk": "CoNLL-2000",
              "pos": "POS (treebank sample)"}
"""The studies' dataset keys, as the generated tables name them."""
HEADER = ("Question", "Date", "Commit", "Answer")
"""The fields of a study's header, in its docstring, each opening a line."""
PLACEHOLDER = re.compile(r"\{\{ ([a-z_][a-z0-9_.]*) \}\}")
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
    from crfsdca import CRF
    from crfsdca.cli.learn import PARAMETERS

    defaults = CRF().get_params()

    lines = ["| `-p` name | `crfsdca.CRF` parameter | type | default |",
             "|---|---|---|---|"]
    for name, (key, kind) in PARAMETERS.items():
        lines.append(f"| {_code(name)} | {_code(key)} | {kind.__name__} | "
                     f"{_value(defaults.get(key))} |")
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


def _number(value) -> str:
    """A default as a reader writes it: 3e-4, not 0.0003; 1, not 1.0."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if value != 0 and abs(value) < 1e-2:
        mantissa, exponent = f"{value:.6e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    return f"{value:g}"


def default(name: str) -> str:
    """``crfsdca.CRF()``'s default of ``name``, as a reader writes it."""
    from crfsdca import CRF
    from crfsdca.training.learn import DEFAULT_EPSILON

    params = CRF().get_params()
    if name not in params:
        raise PluginError(f"{{{{ default.{name} }}}}: CRF has no parameter {name!r}")
    value = params[name]
    if name == "epsilon" and value is None:
        value = DEFAULT_EPSILON
    return _number(value)


def option(solver: str, name: str) -> str:
    """A solver option's default for ``crfsdca.CRF`` (CRFsuite's where it has one)."""
    from crfsdca.solvers.registry import SOLVERS

    if solver not in SOLVERS:
        raise PluginError(f"{{{{ option.{solver}.{name} }}}}: no solver {solver!r}")
    found = [o for o in SOLVERS[solver].options if o.name == name]
    if not found:
        raise PluginError(f"{{{{ option.{solver}.{name} }}}}: {solver} has no option {name!r}")
    o = found[0]
    return _number(o.crfsuite_default if o.crfsuite_default is not None else o.default)


def _publish(what: str) -> str:
    """``benchmarks/suite/publish.py --print what``: the suite's newest stored run."""
    done = subprocess.run([sys.executable, str(SUITE / "publish.py"), "--print", what],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise PluginError(f"benchmarks/suite/publish.py --print {what}: {done.stderr}")
    return done.stdout.rstrip("\n")


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def suite_table() -> str:
    """The suite's modules and what each measures: the first paragraph of each one's
    docstring."""
    lines = ["| module | what it measures |", "|---|---|"]
    for path in sorted(SUITE.glob("test_*.py")):
        first = " ".join(_docstring(path).split("\n\n")[0].split())
        lines.append(f"| `benchmarks/suite/{path.name}` | {first} |")
    return "\n".join(lines)


def study_header(path: Path) -> dict[str, str]:
    """The header of a frozen study: its four fields, read from its docstring."""
    fields: dict[str, str] = {}
    key = None
    for line in _docstring(path).split("\n"):
        head = line.split(":", 1)[0]
        if head in HEADER and ":" in line:
            key = head
            fields[key] = line.split(":", 1)[1].strip()
        elif key is not None and line.startswith("    "):
            fields[key] += " " + line.strip()
        else:
            key = None
    missing = [f for f in HEADER if not fields.get(f)]
    if missing:
        raise PluginError(f"{path.relative_to(ROOT)}: a study's header needs "
                          f"{', '.join(missing)} (question, date, commit, answer)")
    return fields


def studies() -> list[Path]:
    """The frozen studies: the scripts of ``benchmarks/studies/`` with a main (the others
    are their helpers)."""
    return [path for path in sorted(STUDIES.glob("*.py"))
            if 'if __name__ == "__main__":' in path.read_text()]


def studies_table() -> str:
    """One row per study; one still without its header (a study being written) says so,
    and ``tests/integration/test_benchmarks.py`` fails on it."""
    lines = ["| script | question | date, commit | answer |", "|---|---|---|---|"]
    for path in studies():
        try:
            h = study_header(path)
        except PluginError:
            lines.append(f"| `{path.name}` | (no header yet) | | |")
            continue
        lines.append(f"| `{path.name}` | {h['Question']} | {h['Date']}, {h['Commit']} | "
                     f"{h['Answer']} |")
    return "\n".join(lines)


def epochs_table(run_name: str, key: str, what: str) -> str:
    """A stored run of epochs against a parallel scheme's size ``key`` (``minibatch.json``:
    B, ``partitions.json``: P): per dataset and c2, the epochs (or the relative gap at the
    budget) of each size, and their ratio to size 1's."""
    run = json.loads((STUDIES / "runs" / run_name).read_text())
    rows = run["rows"]
    sizes = sorted({r[key] for r in rows})
    lines = ["| data | c1 | c2 | " + " | ".join(f"{key} = {p}" for p in sizes) + " |",
             "|---|---|---|" + "---|" * len(sizes)]
    for cell_key in dict.fromkeys((r["dataset"], r["c1"], r["c2"]) for r in rows):
        cell = {r[key]: r for r in rows if (r["dataset"], r["c1"], r["c2"]) == cell_key}
        one = cell.get(1)
        out = []
        for p in sizes:
            r = cell.get(p)
            if r is None:
                out.append("")
            elif r["status"] != "converged":
                out.append(f"> {r['epochs']:g} (gap {r['relative_gap']:.1e})")
            elif one is not None and one["status"] == "converged" and p > 1:
                ratio = r["epochs"] / one["epochs"]
                out.append(f"{r['epochs']:g} ({ratio:.2f}x)")
            else:
                out.append(f"{r['epochs']:g}")
        name = DATA_NAMES.get(cell_key[0], cell_key[0])
        lines.append(f"| {name} | {cell_key[1]:g} | {cell_key[2]:g} | " + " | ".join(out)
                     + " |")
    lines.append("")
    lines.append(f"Epochs of {what} to the default certified relative gap, one thread, a "
                 f"budget of {run['budget']} epochs ('>': not reached, the gap at the "
                 f"budget); in brackets the epochs over those of {key} = 1; "
                 f"{run['machine']}.")
    return "\n".join(lines)


def templates_table() -> str:
    """``benchmarks/studies/templates_vs_wapiti.py``'s stored run: per tool (each fit of
    CRF++'s chunking template on CoNLL-2000 at the same L2 regularization), its test chunk
    F1, the objective crfsdca evaluates at its weights, the tool's own, its iterations (or
    epochs) and seconds."""
    run = json.loads((STUDIES / "runs" / "templates_vs_wapiti.json").read_text())
    reg = run["regularization"]
    lines = ["| tool | algorithm | test chunk F1 | objective (crfsdca's) | objective (its own) "
             "| iterations | seconds |", "|---|---|---|---|---|---|---|"]
    for r in run["rows"]:
        steps = (f"{r['epochs']:g} epochs" if "epochs" in r else
                 f"{r['iterations']}" if r.get("iterations") is not None else "")
        own = r.get("own_objective", r.get("objective"))
        mine, f1 = r.get("objective"), r.get("test_chunk_f1")
        lines.append(f"| {r['tool']} | {r['algorithm']} | {'' if f1 is None else f'{f1:.2f}'} "
                     f"| {'' if mine is None else f'{mine:.4f}'} | "
                     f"{'' if own is None else f'{own:g}'} | {steps} | {r['seconds']:.1f} |")
    lines += ["", f"{run['data']}; {run['template']}; CRF++'s C = {reg['crfpp_C']:g} "
                  f"(crfsdca's c2 = {reg['crfsdca_c2']:g}, Wapiti's rho1 = "
                  f"{reg['wapiti_rho1']:g}, rho2 = {reg['wapiti_rho2']:g}); the objective "
                  f"{reg['objective']}. One thread each; {run['machine']}, {run['date']}. "
                  f"{run['note'][0].upper()}{run['note'][1:]}."]
    return "\n".join(lines)


def transitions_table() -> str:
    """``benchmarks/studies/transitions_vs_wapiti.py``'s stored run: per fit (crfsdca's
    three, Wapiti's) of a template with B lines that read the input, its test chunk F1,
    objective, weights, iterations and seconds."""
    run = json.loads((STUDIES / "runs" / "transitions_vs_wapiti.json").read_text())
    reg = run["regularization"]
    lines = ["| tool | how | test chunk F1 | objective | certified relative gap | weights "
             "| iterations (epochs) | seconds |", "|---|---|---|---|---|---|---|---|"]
    for r in run["rows"]:
        how = r.get("algorithm") or ", ".join(f"{k} {v:g}" if isinstance(v, float) else
                                              f"{k} {v}" for k, v in r["parameters"].items())
        gap = r.get("relative_gap")
        lines.append(f"| {r['tool']} | {how or 'defaults (sdca)'} | "
                     f"{r['test_chunk_f1']:.2f} | {r['objective']:.4f} | "
                     f"{'' if gap is None else f'{gap:.2g}'} | {r['weights']:,} | "
                     f"{r['iterations']} | {r['seconds']:.1f} |")
    lines += ["", f"{run['data']}; {run['template']}; CRF++'s C = {reg['crfpp_C']:g} "
                  f"(crfsdca's c2 = {reg['crfsdca_c2']:g}, Wapiti's rho2 = "
                  f"{reg['wapiti_rho2']:g}). The objective sum NLL + c2 ||w||^2: crfsdca's "
                  "by its own pass, Wapiti's as it prints it (two decimals). One thread "
                  f"each; {run['machine']}, {run['date']}."]
    return "\n".join(lines)


def templates_speed_table() -> str:
    """``benchmarks/studies/templates_speed.py``'s stored run: per fit (crfsdca's default
    and at epsilon 1e-7, Wapiti's L-BFGS) and thread count, its median seconds over the
    rounds (each round's in brackets), Wapiti's median over it, its objective, test chunk
    F1 and epochs or iterations."""
    run = json.loads((STUDIES / "runs" / "templates_speed.json").read_text())
    groups: dict = {}
    for r in run["rows"]:
        key = (r["tool"], r["threads"], r.get("epsilon"))
        groups.setdefault(key, []).append(r)
    wapiti = {t: statistics.median(x["process_seconds"] for x in rows)
              for (tool, t, _), rows in groups.items() if tool == "wapiti"}
    lines = ["| fit | threads | seconds: median (each round) | Wapiti's seconds / these | "
             "objective | test chunk F1 | epochs (iterations) |",
             "|---|---|---|---|---|---|---|"]
    for (tool, threads, eps), rows in groups.items():
        secs = [x["process_seconds"] for x in rows]
        med = statistics.median(secs)
        name = (f"crfsdca, epsilon {eps:g}" + (" (default)" if eps == 3e-4 else "")
                if tool == "crfsdca" else "Wapiti L-BFGS (-e 1e-6 -w 0)")
        ratio = f"{wapiti[threads] / med:.1f}x" if tool != "wapiti" and threads in wapiti \
            else ""
        objectives = sorted({x["objective"] for x in rows})
        steps = sorted({x.get("epochs", x.get("iterations")) for x in rows})
        lines.append(f"| {name} | {threads} | {med:.1f} ("
                     + ", ".join(f"{x:.1f}" for x in secs) + f") | {ratio} | "
                     + " - ".join(f"{o:.4f}" for o in objectives) + " | "
                     + " - ".join(f"{f:.2f}" for f in sorted({x['test_chunk_f1']
                                                              for x in rows}))
                     + " | " + " - ".join(f"{x:g}" for x in steps) + " |")
    reg = run["regularization"]
    lines += ["", f"{run['data']}; {run['template']}; CRF++'s C = {reg['crfpp_C']:g} "
                  f"(crfsdca's c2 = {reg['crfsdca_c2']:g}, Wapiti's rho2 = "
                  f"{reg['wapiti_rho2']:g}). Seconds: the wall time of each training "
                  "process (start, column files, template, fit), rounds alternated; the "
                  "objective sum NLL + c2 ||w||^2 by crfsdca's pass at each fit's weights; "
                  f"{run['machine']}, {run['date']}."]
    return "\n".join(lines)


def minibatch_wall_table(name: str = "minibatch_wall") -> str:
    """``benchmarks/studies/minibatch_wall.py``'s stored run ``runs/<name>.json``: seconds
    per SDCA epoch for each batch size and thread count, and for each batch size run on
    one and on two threads, the ratio of the two in each round (alternated)."""
    run = json.loads((STUDIES / "runs" / f"{name}.json").read_text())
    lines = ["| batch size x threads | seconds an epoch (median) | speed-up over 1 x 1 | "
             "rounds |", "|---|---|---|---|"]
    rounds = {}
    for r in run["rows"]:
        rounds[r["B x threads"]] = r["rounds"]
        lines.append(f"| {r['B x threads']} | {r['median s']:.3f} | {r['vs 1x1']:.2f}x | "
                     + ", ".join(f"{x:.3f}" for x in r["rounds"]) + " |")
    lines += ["", f"{DATA_NAMES[run.get('dataset', 'ner')]}, c2 = {run['c2']:g}, c1 = 0, "
              f"one solver per row, epochs alternated; {run['machine']}."]
    for spec, one in rounds.items():
        two = rounds.get(spec.replace("x1", "x2")) if spec.endswith("x1") else None
        if two:
            ratios = sorted(a / b for a, b in zip(one, two, strict=True))
            lines[-1] += (f" Batch {spec[:-2]}, two threads over one in each round: median "
                          f"{statistics.median(ratios):.2f}x ({ratios[0]:.2f}-"
                          f"{ratios[-1]:.2f}x).")
    return "\n".join(lines)


def every_core_table(name: str = "every_core") -> str:
    """``benchmarks/studies/every_core.py``'s stored run ``runs/<name>.json``: per dataset
    and (c1, c2), each tool's median fit seconds (the spread in brackets), its speed-up
    over sklearn-crfsuite's tutorial call, its objective and test F1."""
    run = json.loads((STUDIES / "runs" / f"{name}.json").read_text())
    tools = [("sk-100", "sklearn-crfsuite"), ("ours", f"default, {run['cores']} threads"),
             ("ours-1", "default, 1 thread"),
             ("ours-seq", f"sequential SDCA, {run['cores']} threads"),
             ("ours-seq-1", "sequential SDCA, 1 thread"),
             ("ours-lbfgs", f"lbfgs, {run['cores']} threads")]
    lines = ["| data | c1 | c2 | fit | seconds (runs) | speed-up | objective | F1 | measured |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in run["rows"]:
        when = f"{r['commit']}, {r['date']}" if "commit" in r else ""
        for key, label in tools:
            if f"{key} s" not in r:
                continue
            runs = ", ".join(f"{x:.1f}" for x in r[f"{key} runs"])
            up = r.get(f"{key} speed-up")
            lines.append(f"| {DATA_NAMES.get(r['dataset'], r['dataset'])} | {r['c1']:g} | "
                         f"{r['c2']:g} | {label} | {r[f'{key} s']:.1f} ({runs}) | "
                         f"{'' if up is None else f'{up:.2f}x'} | {r[f'{key} obj']:.1f} | "
                         f"{r[f'{key} F1']:.4f} | {when} |")
            when = ""  # once per cell
    note = run.get("note", "")
    lines += ["", f"Medians of {run['rounds']} alternated fits, one process per cell; the "
              "objective in CRFsuite's scale at each tool's weights, F1 the tutorial's "
              f"(weighted, labels but O) on the test set; {run['machine']}. 'Measured': the "
              "package's commit and the day."
              + (f" {note[0].upper()}{note[1:]}." if note else "")]
    return "\n".join(lines)


def pipeline_table() -> str:
    """Pipelined against sequential SDCA in ``runs/every_core.json``: per dataset and
    (c1, c2), the epochs of each and their fits' median seconds on every core and on one
    thread, with the ratios (sequential over pipelined: above 1, the pipeline is sooner)."""
    run = json.loads((STUDIES / "runs" / "every_core.json").read_text())
    cores = run["cores"]
    lines = [f"| data | c1 | c2 | epochs pipelined / sequential | {cores} threads: pipelined / "
             "sequential s | ratio | 1 thread: pipelined / sequential s | ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for r in run["rows"]:
        if "ours-seq s" not in r or "ours-seq-1 s" not in r:
            continue
        lines.append(f"| {DATA_NAMES.get(r['dataset'], r['dataset'])} | {r['c1']:g} | "
                     f"{r['c2']:g} | {r['ours epochs']:.1f} / {r['ours-seq epochs']:.1f} | "
                     f"{r['ours s']:.1f} / {r['ours-seq s']:.1f} | "
                     f"{r['ours-seq s'] / r['ours s']:.2f}x | "
                     f"{r['ours-1 s']:.1f} / {r['ours-seq-1 s']:.1f} | "
                     f"{r['ours-seq-1 s'] / r['ours-1 s']:.2f}x |")
    lines += ["", f"Whole fits (encoding, set-up, solver, model), medians of {run['rounds']} "
              "alternated fits (their spreads: the table above); the default fit with "
              f"`pipeline=False` as the sequential one; {run['machine']}."]
    return "\n".join(lines)


def contraction_table() -> str:
    """``benchmarks/studies/catalyst_contraction.py``'s stored run: per dataset, c2 and
    Catalyst's floor, the epochs to the certified gap, the outer rate 1 - sqrt(q), the
    gap's contraction per round and the median step over the run's second half."""
    run = json.loads((STUDIES / "runs" / "catalyst_contraction.json").read_text())
    lines = ["| data | c2 | kappa n at least | epochs | 1 - sqrt(q) | contraction per round "
             "| median step | seconds |", "|---|---|---|---|---|---|---|---|"]
    for r in run["rows"]:
        epochs = r["epochs"] if r["certified"] else f"> {r['epochs']}"
        lines.append(f"| {DATA_NAMES.get(r['dataset'], r['dataset'])} | {r['c2']:g} | "
                     f"{r['floor']:g} | {epochs} | {r['outer_rate']:.3f} | "
                     f"{r['contraction']:.3f} | {r['median_step']:.2f} | {r['seconds']:.0f} |")
    lines += ["", f"SDCA-GAP with Catalyst (`catalyst` 3), c1 = 0, to a certified relative gap "
              f"of {run['epsilon']:g}, one thread; contraction and median step over the second "
              f"half of the run's rounds; seconds indicative; {run['machine']}."]
    return "\n".join(lines)


def _cells_by(rows: list[dict], column: str) -> list[tuple[tuple, dict]]:
    """The (dataset, c1, c2) cells of a study that fits each cell once per value of one
    setting (``column``), Dutch first, each with its rows by that value."""
    keys = sorted(dict.fromkeys((r["dataset"], r["c1"], r["c2"]) for r in rows),
                  key=lambda k: (k[0] != "ner", k[1], k[2]))
    return [(key, {r[column]: r for r in rows if (r["dataset"], r["c1"], r["c2"]) == key})
            for key in keys]


def _epochs_shown(r: dict | None) -> str:
    """A fit's epochs to the certified gap ('>': its budget ran out first); '' for none."""
    return "" if r is None else f"{r['epochs']:g}" if r["certified"] else f"> {r['epochs']:g}"


def momentum_table() -> str:
    """``benchmarks/studies/catalyst_momentum.py``'s stored run: per dataset, c1 and c2, the
    epochs to the certified relative gap with each share of Catalyst's momentum, and the
    column the library's default is."""
    from crfsdca.solvers.catalyst import momentum_share

    run = json.loads((STUDIES / "runs" / "catalyst_momentum.json").read_text())
    rows = run["rows"]
    names = [m for m in ("lambda", "half", "none", "estimate")
             if any(r["momentum"] == m for r in rows)]
    heads = {"lambda": "lambda's (1)", "half": "half (0.5)", "none": "none (0)",
             "estimate": "estimate (93f8878)"}
    lines = ["| data | c1 | c2 | " + " | ".join(heads[m] for m in names) + " | default |",
             "|---|---|---|" + "---|" * (len(names) + 1)]
    for key, cell in _cells_by(rows, "momentum"):
        out = [_epochs_shown(cell.get(m)) for m in names]
        default = {1.0: "lambda", 0.5: "half", 0.0: "none"}[momentum_share(None, key[1])]
        lines.append(f"| {DATA_NAMES.get(key[0], key[0])} | {key[1]:g} | {key[2]:g} | "
                     + " | ".join(out) + f" | {default} |")
    lines += ["", f"Epochs to a certified relative gap of {run['epsilon']:g}, the default fit "
              "with `catalyst_momentum` set, one thread; the default keeps lambda's momentum "
              f"without L1 and half of it with L1; {run['machine']}."]
    return "\n".join(lines)


def non_uniformity_table() -> str:
    """``benchmarks/studies/non_uniformity.py``'s stored run: per dataset, c1 and c2, the
    epochs to the certified relative gap at each non-uniformity theta of the gap sampler,
    and the column the library's default is."""
    from crfsdca.solvers.registry import SDCA_OPTIONS

    run = json.loads((STUDIES / "runs" / "non_uniformity.json").read_text())
    rows = run["rows"]
    thetas = sorted({r["theta"] for r in rows})
    chosen = SDCA_OPTIONS["non_uniformity"].crfsuite_default
    lines = ["| data | c1 | c2 | " + " | ".join(f"theta {t:g}" for t in thetas) + " |",
             "|---|---|---|" + "---|" * len(thetas)]
    totals = dict.fromkeys(thetas, 0.0)
    for key, cell in _cells_by(rows, "theta"):
        out = [_epochs_shown(cell.get(t)) for t in thetas]
        for t in cell:
            totals[t] += cell[t]["epochs"]
        lines.append(f"| {DATA_NAMES.get(key[0], key[0])} | {key[1]:g} | {key[2]:g} | "
                     + " | ".join(out) + " |")
    lines.append("| all cells | | | " + " | ".join(f"{totals[t]:.1f}" for t in thetas)
                 + " |")
    lines += ["", f"Epochs to a certified relative gap of {run['epsilon']:g}, the default fit "
              f"with `non_uniformity` set, one thread; the library's default is theta "
              f"{chosen:g} (the paper's 0.8 in the reproduction); {run['machine']}."]
    return "\n".join(lines)


def floor_table() -> str:
    """``benchmarks/studies/catalyst_floor.py``'s stored run: per dataset, c1 and c2, the
    epochs to the certified relative gap at each ``catalyst_floor`` (the fewest in bold;
    the library's default floor named in the caption)."""
    from crfsdca.solvers.registry import SDCA_OPTIONS

    run = json.loads((STUDIES / "runs" / "catalyst_floor.json").read_text())
    rows = run["rows"]
    floors = sorted({r["floor"] for r in rows})
    lines = ["| data | c1 | c2 | " + " | ".join(f"{f:g}" for f in floors) + " |",
             "|---|---|---|" + "---|" * len(floors)]
    for key, cell in _cells_by(rows, "floor"):
        best = min(r["epochs"] for r in cell.values() if r["certified"])
        out = []
        for f in floors:
            r = cell.get(f)
            text = _epochs_shown(r)
            out.append(f"**{text}**" if r is not None and r["certified"]
                       and r["epochs"] == best else text)
        lines.append(f"| {DATA_NAMES.get(key[0], key[0])} | {key[1]:g} | {key[2]:g} | "
                     + " | ".join(out) + " |")
    default = SDCA_OPTIONS["catalyst_floor"].crfsuite_default
    lines += ["", f"Epochs to a certified relative gap of {run['epsilon']:g} by "
              f"`catalyst_floor` (kappa = max(3 lambda, floor / n); the default fit's floor "
              f"is {default:g}), one thread, commit {rows[0]['commit']}; "
              f"{run['machine']}. A floor at or below 3 lambda n (0.0156 at c2 = 0.0026, "
              "0.06 at c2 = 0.01) leaves kappa to the ratio."]
    return "\n".join(lines)


def tune_table() -> str:
    """``benchmarks/studies/catalyst_tune.py``'s stored run: per dataset, c1 and c2, the
    epochs to the certified relative gap with kappa fixed and moved by the run
    (``catalyst_tune``), their ratio, and the kappa n the moved run ended at."""
    run = json.loads((STUDIES / "runs" / "catalyst_tune.json").read_text())
    rows = run["rows"]
    lines = ["| data | c1 | c2 | fixed kappa: epochs | moved: epochs | moved / fixed "
             "| kappa n at the end |", "|---|---|---|---|---|---|---|"]
    cells = sorted(dict.fromkeys((r["dataset"], r["c1"], r["c2"]) for r in rows),
                   key=lambda k: (["ner", "chunk", "esp"].index(k[0])
                                  if k[0] in ("ner", "chunk", "esp") else 3, k[1], k[2]))
    for key in cells:
        cell = {r["tune"]: r for r in rows if (r["dataset"], r["c1"], r["c2"]) == key}
        off, on = cell.get(False), cell.get(True)
        ratio = (f"{on['epochs'] / off['epochs']:.2f}" if off and on and off["certified"]
                 and on["certified"] else "")
        lines.append(f"| {DATA_NAMES.get(key[0], key[0])} | {key[1]:g} | {key[2]:g} | "
                     f"{_epochs_shown(off)} | {_epochs_shown(on)} | {ratio} | "
                     f"{'' if on is None else format(on['kappa_n'], 'g')} |")
    commits = ", ".join(dict.fromkeys(r["commit"] for r in rows))
    lines += ["", f"Epochs to a certified relative gap of {run['epsilon']:g}, the default "
              "fit with `catalyst_tune` off (kappa n = max(3 lambda n, 0.3)) and on, one "
              f"thread, commit {commits}; {run['machine']}."]
    return "\n".join(lines)


def routes_table() -> str:
    """``benchmarks/studies/small_c2_routes.py``'s stored run: per dataset, c1 and c2, the
    oracle passes (and seconds) of each route to the certified relative gap, or the gap it
    ended at."""
    run = json.loads((STUDIES / "runs" / "small_c2_routes.json").read_text())
    rows = run["rows"]
    routes = list(dict.fromkeys(r["route"] for r in rows))
    lines = ["| data | c1 | c2 | " + " | ".join(routes) + " |",
             "|---|---|---|" + "---|" * len(routes)]
    for cell_key in dict.fromkeys((r["dataset"], r["c1"], r["c2"]) for r in rows):
        cell = {r["route"]: r for r in rows if (r["dataset"], r["c1"], r["c2"]) == cell_key}
        out = []
        for name in routes:
            r = cell.get(name)
            if r is None:
                out.append("")
            elif r["certified"]:
                out.append(f"{r['passes']:g} ({r['seconds']:.0f} s)")
            else:
                out.append(f"> {r['passes']:g} (gap {r['relative_gap']:.1e})")
        lines.append(f"| {DATA_NAMES.get(cell_key[0], cell_key[0])} | {cell_key[1]:g} | "
                     f"{cell_key[2]:g} | " + " | ".join(out) + " |")
    lines += ["", f"Oracle passes to a certified relative gap of {run['epsilon']:g} (solver "
              "seconds in brackets), one thread; '>': not certified within the budget "
              f"({run['budget']} SDCA epochs, {run['lbfgs_budget']} L-BFGS iterations), "
              f"the certified gap it ended at; the hybrids hand over after {run['handover']} "
              f"SDCA epochs or {run['lbfgs_handover']} L-BFGS iterations; {run['machine']}."]
    return "\n".join(lines)


def path_epsilon_table() -> str:
    """``benchmarks/tuning.py --only crfcv``'s stored runs at several ``path_epsilon`` and
    ``refine`` (``benchmarks/results/tuning/esp_path_epsilon.jsonl``): the path's epochs,
    the CPU seconds, the choice and its scores."""
    path = ROOT / "benchmarks" / "results" / "tuning" / "esp_path_epsilon.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    lines = ["| path_epsilon | refine | epochs (per point) | CPU s | chosen (c1, c2) | best CV "
             "F1 | refit's test F1 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        p, b = r["path"], r["best_params"]
        lines.append(f"| {p['path_epsilon']:g} | {p['refine']} | {p['epochs']:.0f} "
                     f"({p['epochs_per_point']:.1f}) | {r['cpu_seconds']:.0f} | "
                     f"({b['c1']:.3g}, {b['c2']:.3g}) | {r['best_cv_f1']:.4f} | "
                     f"{r['test_f1']:.4f} |")
    return "\n".join(lines)


def tuning_searches_table() -> str:
    """``benchmarks/tuning.py``'s stored runs of both searches
    (``benchmarks/results/tuning/searches.jsonl``): wall and CPU seconds, how much sooner
    ``CRFCV`` is than the tutorial's search, the choice and its scores; the newest run of
    each search on each data set and number of jobs."""
    path = ROOT / "benchmarks" / "results" / "tuning" / "searches.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    newest = {}  # (lang, jobs, tool) -> its newest run (a later line is a later run)
    for r in rows:
        newest[(r["lang"], r["jobs"], r["tool"])] = r
    lines = ["| data | jobs | search | commit | wall s | CPU s | sooner | chosen (c1, c2) "
             "| best CV F1 | refit's test F1 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (lang, jobs, tool), r in newest.items():
        theirs = newest.get((lang, jobs, "sklearn-crfsuite"))
        sooner = (f"{theirs['seconds'] / r['seconds']:.1f}x" if theirs is not None
                  and tool != "sklearn-crfsuite" else "")
        b = r["best_params"]
        lines.append(f"| CoNLL-2002 {lang} | {jobs} | {tool} | {r.get('commit', '')} | "
                     f"{r['seconds']:,.0f} | {r['cpu_seconds']:,.0f} | {sooner} | "
                     f"({b['c1']:.3g}, {b['c2']:.3g}) | {r['best_cv_f1']:.4f} | "
                     f"{r['test_f1']:.4f} |")
    return "\n".join(lines)


def peak_memory_table() -> str:
    """``benchmarks/studies/peak_memory.py``'s stored run: the peak resident memory of each
    fit's process, and each crfsdca fit's as a multiple of sklearn-crfsuite's."""
    run = json.loads((STUDIES / "runs" / "peak_memory.json").read_text())
    rows = run["rows"]
    tools = [t for t in dict.fromkeys(r["tool"] for r in rows)]
    ours = [t for t in tools if t.startswith(("crfsdca", "numba"))]
    lines = ["| data | n | K | " + " | ".join(_TOOL_NAMES.get(t, t) for t in tools) + " |",
             "|---|---|---|" + "---|" * len(tools)]
    for name in dict.fromkeys(r["dataset"] for r in rows):
        got = {r["tool"]: r for r in rows if r["dataset"] == name}
        first = next(iter(got.values()))
        theirs = got.get("sklearn-crfsuite", {}).get("peak_mib")
        cells = []
        for t in tools:
            r = got.get(t)
            if r is None:
                cells.append("")
            elif t in ours and theirs:
                cells.append(f"{r['peak_mib']:,.0f} ({r['peak_mib'] / theirs:.2f}x)")
            else:
                cells.append(f"{r['peak_mib']:,.0f}")
        lines.append(f"| {DATA_NAMES.get(name, name)} | {first['sequences']:,} | "
                     f"{first['labels']} | " + " | ".join(cells) + " |")
    note = run.get("note", "")
    lines += ["", "Peak resident memory (MiB, the process's own high-water mark, VmHWM) of a "
              "process that reads the items from a file a pair at a time and fits, in "
              "brackets as a multiple of sklearn-crfsuite's; 'items only' reads them into "
              f"lists and stops; {run['machine']}." + (f" {note}" if note else "")]
    return "\n".join(lines)


_TOOL_NAMES = {"items": "items only", "crfsdca": "crfsdca (lists)",
               "crfsdca-float32": "crfsdca (lists, float32 store)",
               "crfsdca-exact": "crfsdca (lists, the paper's store)",
               "crfsdca-compact": "crfsdca (lists, compact store)",
               "crfsdca-stream": "crfsdca (a generator)",
               "crfsdca-corpus": "crfsdca (a Corpus)",
               "numba-alone": "numba alone (one function, no data)",
               "sklearn-crfsuite": "sklearn-crfsuite (lists)"}
"""The tools of the memory studies, as the tables name them."""


def memory_limit_table() -> str:
    """``benchmarks/studies/memory_limit.py``'s stored run: the least cgroup limit each fit
    ends under (and as a multiple of sklearn-crfsuite's), the store it took there, its
    objective and seconds against the unlimited fit's."""
    run = json.loads((STUDIES / "runs" / "memory_limit.json").read_text())
    lines = ["| data | fit | commit | least limit, MiB | store there | objective there "
             "(without a limit) | relative gap there | seconds there (without a limit) | peak "
             "without a limit, MiB |",
             "|---|---|---|---|---|---|---|---|---|"]
    theirs = {r["dataset"]: r["least_mib"] for r in run["rows"]
              if r["tool"] == "sklearn-crfsuite" and "at" not in r}
    for r in run["rows"]:
        if "at" in r:  # one run under a given limit
            at = r["at"]["report"] or {}
            least = (f"ends under {r['at']['limit_mib']:,}" if r["at"]["returncode"] == 0
                     else f"killed under {r['at']['limit_mib']:,}")
        else:
            at = r["at_least"] or {}
            least = "none" if r["least_mib"] is None else f"{r['least_mib']:,}"
            if r["least_mib"] and r["tool"] != "sklearn-crfsuite" and theirs.get(r["dataset"]):
                least += f" ({r['least_mib'] / theirs[r['dataset']]:.2f}x)"
        free = r["unlimited"] or {}
        store = ("" if "store_dtype" not in at else
                 f"{at['store_dtype']}, {'in a file' if at['store_dir'] else 'in memory'}")
        gap = f"{at['relative_gap']:.1e}" if "relative_gap" in at else ""
        data = DATA_NAMES.get(r["dataset"], r["dataset"])
        if r.get("copies", 1) > 1:
            data += f", {r['copies']} times over"
        seconds = " ".join([f"{at['seconds']:.0f}" if "seconds" in at else "",
                            f"({free['seconds']:.0f})" if "seconds" in free else ""]).strip()
        loss = " ".join([f"{at['loss']:.3f}" if "loss" in at else "",
                         f"({free['loss']:.3f})" if "loss" in free else ""]).strip()
        peak = f"{free['peak_rss_mib']:,.0f}" if "peak_rss_mib" in free else ""
        lines.append(f"| {data} | {_TOOL_NAMES.get(r['tool'], r['tool'])} | "
                     f"{r.get('commit', '')} | {least} | {store} | {loss} | {gap} | {seconds} "
                     f"| {peak} |")
    lines += ["", f"The least hard limit (a cgroup's, found by bisection to "
              f"{run['resolution_mib']} MiB) under which the fit's process ends, in brackets "
              "as a multiple of sklearn-crfsuite's; commit: crfsdca's where the row ran (a "
              "sklearn-crfsuite row without one: 2026-11-29); the objective is the training "
              "loss each "
              "tool reports; seconds are the fit's (on a generator, making the items "
              f"included), indicative; {run['machine']}."]
    return "\n".join(lines)


def store_windows_table() -> str:
    """``benchmarks/studies/store_windows.py``'s stored run: epochs to the default gap with
    no window and with windows at each spill (the store in memory), then the default fit
    on a generator under a cgroup limit with the windows and without."""
    run = json.loads((STUDIES / "runs" / "store_windows.json").read_text())
    rows = [r for r in run["rows"] if r["part"] == "epochs"]
    spills = sorted({r["window_spill"] for r in rows if r["store_window"]})
    window = f"{run['window_mib']:g} MiB"
    lines = ["| data | c2 | no window | " + " | ".join(
                 f"{window}, spill {s:g}" for s in spills) + " |",
             "|---|---|---|" + "---|" * len(spills)]
    target = float(default("epsilon"))

    def cell(r):
        if r is None:
            return ""
        if r["relative_gap"] > target:
            return f"> {r['epochs']:.0f} (gap {r['relative_gap']:.1e})"
        return f"{r['epochs']:.1f}"

    for name, c2 in dict.fromkeys((r["dataset"], r["c2"]) for r in rows):
        mine = [r for r in rows if (r["dataset"], r["c2"]) == (name, c2)]
        by = {(r["store_window"] or 0.0, r["window_spill"]): r for r in mine}
        cells = [cell(by.get((0.0, None)))] + [
            cell(by.get((run["window_mib"], s))) for s in spills]
        lines.append(f"| {DATA_NAMES.get(name, name)} | {c2:g} | " + " | ".join(cells) + " |")
    lines += ["", "Epochs to the default certified relative gap, one thread, c1 = 0, a float32 "
              "store in memory (the windows are the same there as in a file); > N: not "
              "reached in the budget of N epochs, the gap it ended at in brackets."]
    limited = [r for r in run["rows"] if r["part"] == "limit"]
    if limited:
        lines += ["", "| data | limit | fit | ends? | seconds | relative gap | objective |",
                  "|---|---|---|---|---|---|---|"]
        for r in limited:
            rep = r["report"] or {}
            ends = ("yes" if r["returncode"] == 0 else
                    f"stopped after {r['wall_seconds']:.0f} s" if r["returncode"] == "timeout"
                    else f"killed or failed ({r['returncode']})")
            lines.append(
                f"| {DATA_NAMES.get(r['dataset'], r['dataset'])} | "
                + (f"{r['limit_mib']:,} MiB" if r["limit_mib"] else "none") + " | "
                f"{r['fit']} | {ends} | "
                + (f"{rep['seconds']:.0f}" if "seconds" in rep else "") + " | "
                + (f"{rep['relative_gap']:.1e}" if "relative_gap" in rep else "") + " | "
                + (f"{rep['loss']:.3f}" if "loss" in rep else "") + " |")
        lines += ["", "The default fit, `CRF(c1=0.1, c2=0.1, all_possible_transitions=True)`, "
                  "on a generator in a cgroup of that limit, where it takes a float32 store in "
                  "a file; \"no window\": the same with `store_window=0`; \"no limit\": "
                  "the default fit without a limit (its store in memory). Seconds are the "
                  f"fit's, making the items included; {run['machine']}."]
    return "\n".join(lines)


def compact_dual_table() -> str:
    """``benchmarks/studies/compact_dual.py``'s stored run: per cell, each store's floats
    and its epochs to certified relative gaps, and the last primal value it reached."""
    run = json.loads((STUDIES / "runs" / "compact_dual.json").read_text())
    tols = ("0.01", "0.001", "0.0003", "0.0001")
    lines = ["| data | n | K | c2 | store | floats | " + " | ".join(
        f"epochs to {float(t):g}" for t in tols) + " | last P |",
        "|---|---|---|---|---|---|" + "---|" * len(tols) + "---|"]
    for r in run["rows"]:
        exact = next(x for x in run["rows"] if x["dataset"] == r["dataset"]
                     and x["c2"] == r["c2"] and x["method"] == "exact")
        cells = []
        for t in tols:
            got, ref = r["epochs_to"][t], exact["epochs_to"][t]
            cells.append(f"> {r['trace'][-1]['epoch']}" if got is None else
                         f"{got}" if r is exact or not ref else f"{got} ({got / ref:.2f}x)")
        size = f"{r['store_floats'] / 1e6:.1f} M"
        if r is not exact:
            size += f" ({exact['store_floats'] / r['store_floats']:.1f}x smaller)"
        lines.append(f"| {DATA_NAMES.get(r['dataset'], r['dataset'])} | {r['sequences']:,} | "
                     f"{r['labels']} | {r['c2']:g} | {r['method']} | {size} | "
                     + " | ".join(cells) + f" | {r['trace'][-1]['primal']:.7f} |")
    lines += ["", "SDCA on the full model, c1 = 0, uniform draws, one seed, the Dirac start, no "
              "Catalyst; 'exact' is the paper's store and line search, 'chord' and 'chord+js' "
              "the compact store with its entropy bound; every gap a certificate (P from "
              f"scratch minus the dual's bound); at most {run['max_epochs']} epochs; "
              f"{run['machine']}."]
    return "\n".join(lines)


def compact_store_table() -> str:
    """``benchmarks/studies/compact_store.py``'s stored run: per cell, the default fit's
    epochs, seconds, objective and test F1 on the exact and the compact store."""
    run = json.loads((STUDIES / "runs" / "compact_store.json").read_text())
    lines = ["| data | c1 | c2 | epochs: exact / compact | seconds: exact / compact "
             "(spread) | objective: exact / compact | test F1: exact / compact |",
             "|---|---|---|---|---|---|---|"]
    for r in run["rows"]:
        spread = " / ".join(f"{min(r[f'{s} runs']):.1f}-{max(r[f'{s} runs']):.1f}"
                            for s in ("exact", "compact"))
        lines.append(
            f"| {DATA_NAMES.get(r['dataset'], r['dataset'])} | {r['c1']:g} | {r['c2']:g} | "
            f"{r['exact epochs']:.1f} / {r['compact epochs']:.1f} ({r['epochs ratio']:.2f}x) | "
            f"{r['exact s']:.1f} / {r['compact s']:.1f} ({r['time ratio']:.2f}x; {spread}) | "
            f"{r['exact obj']:,.3f} / {r['compact obj']:,.3f} | "
            f"{r['exact F1']:.4f} / {r['compact F1']:.4f} |")
    lines += ["", f"`crfsdca.CRF(c1, c2, all_possible_transitions=True, threads=1)` with "
              f"each `dual_store`, medians of {run['rounds']} alternated fits (the spread: "
              f"the fastest and slowest), each to its certified relative gap 3e-4; objective "
              f"in CRFsuite's scale; {run['machine']}; commit {run['commit']}."]
    return "\n".join(lines)


def placeholder(name: str) -> str:
    """The text of ``{{ name }}``."""
    parts = name.split(".")
    if parts[0] == "default" and len(parts) == 2:
        return default(parts[1])
    if parts[0] == "option" and len(parts) == 3:
        return option(parts[1], parts[2])
    generated = {"bench_current": lambda: _publish("site"),
                 "bench_table": lambda: _publish("table"),
                 "bench_suite": suite_table, "studies": studies_table,
                 "templates_vs_wapiti": templates_table,
                 "transitions_vs_wapiti": transitions_table,
                 "templates_speed": templates_speed_table,
                 "minibatch": lambda: epochs_table("minibatch.json", "B", "mini-batch SDCA"),
                 "minibatch_wall": minibatch_wall_table,
                 "minibatch_wall_chunk": lambda: minibatch_wall_table("minibatch_wall_chunk"),
                 "every_core": every_core_table, "small_c2_routes": routes_table,
                 "catalyst_momentum": momentum_table, "catalyst_floor": floor_table,
                 "catalyst_tune": tune_table, "non_uniformity": non_uniformity_table,
                 "pipeline": pipeline_table,
                 "every_core_small_c2": lambda: every_core_table("every_core_small_c2"),
                 "catalyst_contraction": contraction_table,
                 "path_epsilon": path_epsilon_table, "peak_memory": peak_memory_table,
                 "tuning_searches": tuning_searches_table,
                 "compact_dual": compact_dual_table,
                 "compact_store": compact_store_table,
                 "memory_limit": memory_limit_table, "store_windows": store_windows_table,
                 "partitions": lambda: epochs_table("partitions.json", "P",
                                                    "partitioned SDCA (CoCoA+)")}
    if name not in generated:
        raise PluginError(f"unknown placeholder {{{{ {name} }}}}")
    return generated[name]()


def on_page_markdown(markdown, page, config, files):
    """Replace each page's placeholders by what the code and the stored results say."""
    return PLACEHOLDER.sub(lambda m: placeholder(m.group(1)), markdown)


def on_files(files, config):
    """Add the generated command-line reference to the site's files."""
    files.append(File.generated(config, CLI_PAGE, content=cli_page()))
    return files
