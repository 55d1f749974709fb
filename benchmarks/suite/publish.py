"""The current numbers, written from the newest stored run (``store.newest``): the README's
block between its two markers, and the site's section (``docs/hooks.py`` calls
:func:`site_section` when the site is built).

    python benchmarks/suite/publish.py          # rewrite README.md's block
    python benchmarks/suite/publish.py --check  # exit 1 if README.md's block is not that
    python benchmarks/suite/publish.py --print site   # the site's section (or: table)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import store

README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN = ("<!-- current numbers: written by `python benchmarks/suite/publish.py` from "
         "benchmarks/results; do not edit -->")
END = "<!-- end of current numbers -->"
COMMAND = "make bench"


def seconds(x: float) -> str:
    """Three significant digits: 7.00 s, 0.699 s, 122 s."""
    return f"{x:#.3g}".rstrip(".") + " s"


def small(x: float) -> str:
    """A small number as a reader writes it: 2.9e-4."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _fit(b: dict) -> str:
    e = b["extra_info"]
    return (f"{seconds(b['stats']['median'])}, F1 {e['f1']:.3f}, certified relative gap "
            f"{small(e['relative_gap'])}, {round(e['epochs'], 1):g} epochs")


def _fit_reference(b: dict) -> str:
    e = b["extra_info"]
    return f"{seconds(e['reference_median'])}, F1 {e['reference_f1']:.3f}"


def _lbfgs(b: dict) -> str:
    e = b["extra_info"]
    return f"{seconds(b['stats']['median'])}, F1 {e['f1']:.3f}, {e['iterations']} iterations"


def _median(b: dict) -> str:
    return seconds(b["stats"]["median"])


def _reference(b: dict) -> str:
    return seconds(b["extra_info"]["reference_median"])


def _oracle(b: dict) -> str:
    rate = b["extra_info"]["tokens_per_second"] / 1e6
    return f"{_median(b)} ({rate:.2f} M tokens/s)"


def _epoch(b: dict) -> str:
    return f"{_median(b)} ({b['extra_info']['passes_per_epoch']:.2f} oracle passes)"


@dataclass(frozen=True)
class Figure:
    """A row of the table: the benchmark it reads, what it measures (formatted with the
    benchmark's ``extra_info``), the reference."""

    benchmark: str
    measured: str
    reference: str
    ours: Callable[[dict], str] = _median
    theirs: Callable[[dict], str] = _reference


FIGURES = (
    Figure("test_default_fit", "`CRF()`'s fit with the tutorial's arguments, {sentences:,} "
           "sentences", "sklearn-crfsuite's tutorial call", _fit, _fit_reference),
    Figure("test_default_fit_on_every_core", "the same on every core ({threads} threads)",
           "sklearn-crfsuite's tutorial call (one)", _fit, _fit_reference),
    Figure("test_tutorial_call", "the tutorial's call unchanged (`algorithm='lbfgs'`)",
           "sklearn-crfsuite's", _lbfgs, _fit_reference),
    Figure("test_tutorial_call_on_every_core", "the same on every core ({threads} threads)",
           "sklearn-crfsuite's (one)", _lbfgs, _fit_reference),
    Figure("test_predict[predict]", "`predict`, {sentences:,} test sentences",
           "sklearn-crfsuite's"),
    Figure("test_predict[predict_single]", "`predict_single`, item by item",
           "sklearn-crfsuite's"),
    Figure("test_predict[predict_marginals]", "`predict_marginals`", "sklearn-crfsuite's"),
    Figure("test_tag", "`crfsdca tag` on the test file, a whole process",
           "CRFsuite's `crfsuite tag`"),
    Figure("test_first_fit_in_a_fresh_process", "a fresh process: import, `CRF().fit` "
           "on {sentences:,} sentences, `predict` on {test_sentences}", "sklearn-crfsuite's"),
    Figure("test_oracle_pass", "one oracle pass (forward-backward, all marginals) over "
           "the training set", "", _oracle),
    Figure("test_sdca_epoch", "one SDCA-GAP epoch", "", _epoch),
)


def table(run: store.Run) -> list[str]:
    """The figures of ``run`` as a Markdown table (rows whose benchmark did not run left
    out)."""
    lines = ["| measured (CoNLL-2002 Dutch, the tutorial's features, one thread unless said) "
             "| crfsdca "
             "| reference | speed-up |", "|---|---|---|---|"]
    benchmarks = run.benchmarks
    for f in FIGURES:
        b = benchmarks.get(f.benchmark)
        if b is None:
            continue
        speedup = b["extra_info"].get("speedup")
        reference = f"{f.reference}: {f.theirs(b)}" if f.reference else ""
        measured = f.measured.format(**b["extra_info"])
        lines.append(f"| {measured} | {f.ours(b)} | {reference} | "
                     f"{f'{speedup:.2f}x' if speedup else ''} |")
    return lines


def caption(run: store.Run) -> str:
    rounds = sorted({b["stats"]["rounds"] for b in run.benchmarks.values()})
    return (f"Medians of {rounds[0]}-{rounds[-1]} rounds, each alternated with its "
            f"reference in one process (speed-up: the reference's median over crfsdca's). "
            f"Measured on {run.describe()}, by `{COMMAND}`.")


def readme_block(run: store.Run | None) -> list[str]:
    if run is None:
        return [BEGIN, "", f"No stored run yet: `{COMMAND}` stores one.", "", END]
    return [BEGIN, "", *table(run), "", caption(run), "", END]


def site_section(run: store.Run | None) -> str:
    """The site's current numbers: the README's table, then each benchmark's rounds,
    reference and recorded facts."""
    if run is None:
        return f"No stored run yet: `{COMMAND}` stores one.\n"
    lines = [*table(run), "", caption(run) + f" The stored run: `{run.path.name}`.", "",
             "| benchmark | rounds | min | median | max | reference median | recorded |",
             "|---|---|---|---|---|---|---|"]
    for name, b in run.benchmarks.items():
        s, e = b["stats"], dict(b["extra_info"])
        ref = e.pop("reference_median", None)
        for key in ("reference_seconds", "speedup", "threads", "cores", "usable_cores"):
            e.pop(key, None)
        facts = "; ".join(f"{_plain(k)}: {_plain(v)}" for k, v in e.items())
        lines.append(f"| `{name}` | {s['rounds']} | {seconds(s['min'])} | "
                     f"{seconds(s['median'])} | {seconds(s['max'])} | "
                     f"{seconds(ref) if ref is not None else ''} | {facts} |")
    packages = run.machine.get("packages", {})
    lines += ["", "Installed: " + ", ".join(f"{k} {v}" for k, v in packages.items() if v)
              + "; threads: 1 for every tool."]
    return "\n".join(lines) + "\n"


def _plain(value) -> str:
    """A recorded value as plain text in a Markdown table cell (no emphasis, no links)."""
    if isinstance(value, dict):
        return ", ".join(f"{_plain(k)} {_plain(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.4g}"
    text = str(value)
    for ch in ("\\", "|", "*", "_", "[", "]", "<", ">", "`"):
        text = text.replace(ch, "\\" + ch)
    return text


def rewrite(text: str, block: list[str]) -> str:
    """``text`` with the lines from BEGIN to END replaced by ``block``."""
    lines = text.split("\n")
    try:
        start, end = lines.index(BEGIN), lines.index(END)
    except ValueError:
        raise SystemExit(f"{README}: no block between the markers {BEGIN!r} and {END!r}") from None
    return "\n".join([*lines[:start], *block, *lines[end + 1:]])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if README.md's block differs from the stored results'")
    ap.add_argument("--print", choices=("site", "table"), dest="show",
                    help="print the site's section, or the table and its caption")
    ap.add_argument("--results", type=Path, default=store.RESULTS,
                    help="the folder of stored runs (default: benchmarks/results)")
    args = ap.parse_args(argv)
    run = store.newest(args.results)
    if args.show == "site":
        print(site_section(run), end="")
        return 0
    if args.show == "table":
        print("\n".join(readme_block(run)[2:-2]))
        return 0
    text = README.read_text()
    new = rewrite(text, readme_block(run))
    if args.check:
        if new != text:
            print(f"{README}: the current numbers differ from the newest stored run; "
                  "run python benchmarks/suite/publish.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
