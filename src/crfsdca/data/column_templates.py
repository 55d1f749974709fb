"""CRF++'s and Wapiti's feature templates over column files (CoNLL-style data).

Not :mod:`crfsdca.data.templates` (CRFsuite's ``(field, offset)`` extractors of the
paper's reproduction): here the template is a *file* in CRF++'s or Wapiti's syntax, and
the data are whitespace-separated column files, as ``crf_learn template train.data``
and ``wapiti train -p template`` read them.

Column files: one token per line, its columns separated by spaces or TABs, the last
column the label; a blank (or all-whitespace) line between sequences. Every line of a
file has the same number of columns (CRF++ refuses a file otherwise); a line that does
not is an error naming it.

Templates, one per line (CRF++'s syntax; Wapiti's is a superset):

- ``U01:%x[-1,0]/%x[0,0]``: a unigram template. At token t it expands into one
  attribute, the line with every ``%x[row,col]`` replaced by column ``col`` of token
  ``t + row``: ``U01:He/reckons``. Columns count from 0; the label column cannot be read.
- ``B``: the transitions between consecutive labels, which crfsdca's chain always has.
  A ``B`` line that reads the input (``B01:%x[0,1]``: transitions that depend on the
  observations) expands at token t like a ``U`` line, into a transition attribute
  (named with :data:`~crfsdca.data.transitions.TRANSITION_PREFIX` before it) that scores
  the transition into t with every pair of labels; at the first token it is dropped.
- ``# ...`` comments and blank lines are skipped.
- Beyond the sequence's edges, ``%x`` reads CRF++'s padding tokens ``_B-1``, ``_B-2``...
  before the first token and ``_B+1``, ``_B+2``... after the last (CRF++'s
  ``feature.cpp``; offsets within -8..8, CRF++'s limit).

Wapiti's pattern files (``wapiti train -p``) are read with Wapiti's rules: the line's
first character ``u``, ``b`` or ``*`` (both) in either case, ``#`` starts a comment
anywhere on a line, ``%X`` lowercases what it reads, ``%x[@k,col]`` is an absolute
position (k-th token from the start, from the end for k < 0), and the padding tokens are
Wapiti's ``_x-1`` .. ``_x-4``, ``_x-#`` and ``_x+1`` .. ``_x+4``, ``_x+#``. Wapiti's
regular-expression commands ``%t`` and ``%m`` are refused. A file is read as Wapiti's
when asked (``dialect="wapiti"``) or when it uses something only Wapiti has (a line
starting with ``u``, ``b`` or ``*``, ``%X``, ``@``); otherwise as CRF++'s.

A template that cannot be read (an unknown line type or macro, a bad ``[row,col]``, an
offset out of range, no ``U`` line, nothing at all) stops with one
:class:`~crfsdca.errors.DataFormatError` naming the file and the line; so does a column
that the data lack when the template is applied.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..errors import DataFormatError
from .transitions import TRANSITION_PREFIX

DIALECTS = ("crfpp", "wapiti")
"""The template syntaxes read: CRF++'s and Wapiti's."""

CRFPP_MAX_OFFSET = 8
"""CRF++'s ``kMaxContextSize``: a ``%x`` row offset is within -8..8."""

_CRFPP_MACRO = re.compile(r"%x\[(-?[0-9]+),([0-9]+)\]")
_WAPITI_MACRO = re.compile(r"%([xX])\[(@?)\s*([+-]?[0-9]+)\s*,\s*([0-9]+)\]")


@dataclass(frozen=True)
class Macro:
    """One ``%x[offset,column]``: the column of the token ``offset`` away (or, with
    ``absolute``, of the ``offset``-th token of the sequence); ``lower``: Wapiti's ``%X``."""

    offset: int
    column: int
    absolute: bool = False
    lower: bool = False


@dataclass(frozen=True)
class TemplateLine:
    """A template line: its kind (``"U"`` unigram, ``"B"`` the transitions), its number
    in the file, its text (comments removed) and its pieces: literal strings and macros."""

    kind: str
    line: int
    text: str
    pieces: tuple = ()

    @property
    def macros(self) -> list[Macro]:
        """The ``%x`` macros of the line, in order."""
        return [p for p in self.pieces if isinstance(p, Macro)]


@dataclass(frozen=True)
class Template:
    """A parsed template file: its unigram lines, whether it has a bare ``B`` line, the
    dialect (``"crfpp"`` or ``"wapiti"``, which fixes the padding tokens), the file it
    came from (named in errors) and its ``B`` lines that read the input (transition
    attributes)."""

    unigrams: tuple[TemplateLine, ...]
    bigram: bool
    dialect: str
    path: str = "<template>"
    transitions: tuple[TemplateLine, ...] = ()

    @property
    def lines(self) -> tuple[TemplateLine, ...]:
        """Every line that generates attributes: the unigram lines, then the others."""
        return self.unigrams + self.transitions

    @property
    def max_column(self) -> int:
        """The largest column a ``%x`` reads (-1 when none does)."""
        return max((m.column for u in self.lines for m in u.macros), default=-1)

    def _column_line(self) -> TemplateLine:
        """The first line that reads :attr:`max_column`."""
        top = self.max_column
        return next(u for u in self.lines if any(m.column == top for m in u.macros))

    def check_columns(self, n_columns: int, where: str) -> None:
        """DataFormatError naming the template's line when rows of ``n_columns``
        observation columns (``where`` names them) lack a column the template reads."""
        if self.max_column >= n_columns:
            u = self._column_line()
            raise DataFormatError(self.path, f"{u.text!r} reads column {self.max_column}, "
                                             f"but {where} has {_columns(n_columns)} before "
                                             "the label", u.line)

    def sequence_attributes(self, rows: Sequence[Sequence[str]]) -> list[list[str]]:
        """The attributes of each token of one sequence of rows (each row its observation
        columns, without the label), one per unigram line, in the template's order, then
        one per ``B`` line that reads the input (named with ``TRANSITION_PREFIX``)."""
        T = len(rows)
        if T == 0:
            return []
        columns = list(zip(*rows, strict=True))
        per_line = []
        for u in self.lines:
            fmt, macros = _plan(u)
            if u.kind == "B":
                fmt = TRANSITION_PREFIX.replace("%", "%%") + fmt
            if not macros:
                per_line.append([fmt] * T)
                continue
            reads = [self._read(columns, m, T) for m in macros]
            per_line.append([fmt % values for values in zip(*reads, strict=True)])
        return [list(item) for item in zip(*per_line, strict=True)]

    def _read(self, columns: list, m: Macro, T: int) -> list[str]:
        """What macro ``m`` reads at each of the T positions."""
        col = columns[m.column]
        if m.absolute:
            pos = m.offset - 1 if m.offset > 0 else T + m.offset
            value = col[pos] if 0 <= pos < T else self.padding(pos, T)
            out = [value] * T
        else:
            o = m.offset
            lo, hi = max(0, -o), min(T, T - o)  # t + o within the sequence for lo <= t < hi
            if lo >= hi:
                out = [self.padding(t + o, T) for t in range(T)]
            else:
                out = ([self.padding(t + o, T) for t in range(lo)] + list(col[lo + o:hi + o])
                       + [self.padding(t + o, T) for t in range(hi, T)])
        return [v.lower() for v in out] if m.lower else out

    def padding(self, position: int, T: int) -> str:
        """The token read at ``position`` outside a sequence of T tokens: CRF++'s
        ``_B-1``, ``_B+1``... or Wapiti's ``_x-1``, ``_x+1``... (``_x-#`` beyond 4)."""
        if self.dialect == "crfpp":
            return f"_B-{-position}" if position < 0 else f"_B+{position - T + 1}"
        if position < 0:
            return f"_x-{-position}" if -position <= 4 else "_x-#"
        k = position - T + 1
        return f"_x+{k}" if k <= 4 else "_x+#"

    def items(self, X: Iterable[Sequence[Sequence[str]]]) -> list[list[list[str]]]:
        """The items of sequences of rows (observation columns, no label): each token a
        list of attribute names, what ``CRF.fit`` takes. DataFormatError
        naming the template's line where a row lacks a column it reads."""
        out = []
        for i, rows in enumerate(X):
            rows = [_row(r) for r in rows]
            if rows:
                short = min(range(len(rows)), key=lambda t: len(rows[t]))
                if len(rows[short]) <= self.max_column:
                    self.check_columns(len(rows[short]),
                                       f"token {short} of sequence {i}")
            out.append(self.sequence_attributes(rows))
        return out


def _columns(n: int) -> str:
    return "1 column" if n == 1 else f"{n} columns"


def _row(row) -> Sequence[str]:
    """A row as a sequence of column strings (a bare string is one column)."""
    return (row,) if isinstance(row, str) else row


def _plan(u: TemplateLine) -> tuple[str, list[Macro]]:
    """A unigram line as a %-format (literal ``%`` doubled) and its macros."""
    fmt = "".join("%s" if isinstance(p, Macro) else p.replace("%", "%%") for p in u.pieces)
    return fmt, u.macros


def _wapiti_like(lines: list[tuple[int, str]]) -> bool:
    """Whether a template uses what only Wapiti has: a ``u``/``b``/``*`` line type,
    ``%X``, ``%t``, ``%m`` or an absolute ``[@k,col]``."""
    return any(text[0] in "ub*" or re.search(r"%[XtTmM]|%x\[@", text) for _, text in lines)


def parse_template(text: str, path: str = "<template>", dialect: str | None = None
                   ) -> Template:
    """A ``Template`` from a template file's text (``path`` names it in errors);
    ``dialect`` ``"crfpp"`` or ``"wapiti"`` (None: Wapiti's where the text uses what
    only Wapiti has, else CRF++'s)."""
    if dialect is not None and dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)} or None, got "
                         f"{dialect!r}")
    raw = [(number, line.rstrip("\r"))
           for number, line in enumerate(text.split("\n"), start=1)]
    candidates = [(n, t.strip()) for n, t in raw if t.strip() and not t.strip().startswith("#")]
    if dialect is None:
        dialect = "wapiti" if _wapiti_like(candidates) else "crfpp"
    lines = []
    for number, line in raw:
        if dialect == "wapiti":
            line = line.split("#", 1)[0]
        elif line.lstrip().startswith("#"):
            continue
        line = line.strip()
        if line and dialect == "wapiti":
            line = line[0].lower() + line[1:]  # as Wapiti's rdr_loadpat, before compiling
        if line:
            lines.append((number, line))
    if not lines:
        raise DataFormatError(path, "empty template: no U line (attributes) and no B line")
    unigrams: list[TemplateLine] = []
    transitions: list[TemplateLine] = []
    bigram_line = None
    for number, line in lines:
        kind = line[0].upper() if dialect == "wapiti" else line[0]
        if kind not in ("U", "B", "*") or (kind == "*" and dialect != "wapiti"):
            expected = "U, B or * (either case)" if dialect == "wapiti" else "U or B"
            raise DataFormatError(path, f"{line!r}: unknown template type {line[0]!r} "
                                        f"(a line starts with {expected})", number)
        pieces = _pieces(line, path, number, dialect)
        has_macro = any(isinstance(p, Macro) for p in pieces)
        if kind in ("U", "*"):
            unigrams.append(TemplateLine("U", number, line, tuple(pieces)))
        if kind in ("B", "*") and has_macro:  # transitions that read the input
            transitions.append(TemplateLine("B", number, line, tuple(pieces)))
        elif kind in ("B", "*"):
            if bigram_line is not None:
                raise DataFormatError(path, f"{line!r}: a second B line without "
                                            f"observations (the first on line {bigram_line}): "
                                            "crfsdca's chain has one set of transitions",
                                      number)
            bigram_line = number
    if not unigrams and not transitions:
        raise DataFormatError(path, "no U line: the template generates no attribute (a B "
                                    "line alone gives the transitions only)", lines[0][0])
    return Template(tuple(unigrams), bigram_line is not None, dialect, str(path),
                    tuple(transitions))


def _pieces(line: str, path: str, number: int, dialect: str) -> list:
    """The literal strings and macros of one template line."""
    pieces: list = []
    pos = 0
    while True:
        at = line.find("%", pos)
        if at < 0:
            if pos < len(line):
                pieces.append(line[pos:])
            return pieces
        if at > pos:
            pieces.append(line[pos:at])
        macro, pos = _macro(line, at, path, number, dialect)
        pieces.append(macro)


def _macro(line: str, at: int, path: str, number: int, dialect: str) -> tuple[Macro, int]:
    """The macro at ``line[at]`` (a ``%``) and the position after it."""
    command = line[at + 1:at + 2]
    if dialect == "wapiti" and command in ("t", "T", "m", "M"):
        raise DataFormatError(path, f"{line!r}: Wapiti's regular-expression command "
                                    f"%{command} is not supported (only %x and %X)", number)
    allowed = ("x", "X") if dialect == "wapiti" else ("x",)
    if command not in allowed:
        raise DataFormatError(path, f"{line!r}: unknown macro {line[at:at + 2]!r} at "
                                    f"character {at + 1} (only "
                                    f"{' and '.join('%' + c for c in allowed)})", number)
    if dialect == "crfpp":
        m = _CRFPP_MACRO.match(line, at)
        if m is None:
            raise DataFormatError(path, f"{line!r}: bad macro at character {at + 1}: "
                                        "expected %x[row,col], row an integer (-8..8), col a "
                                        "column number, without spaces", number)
        offset, column = int(m.group(1)), int(m.group(2))
        if abs(offset) > CRFPP_MAX_OFFSET:
            raise DataFormatError(path, f"{line!r}: row offset {offset} out of CRF++'s "
                                        f"range -{CRFPP_MAX_OFFSET}..{CRFPP_MAX_OFFSET}",
                                  number)
        return Macro(offset, column), m.end()
    m = _WAPITI_MACRO.match(line, at)
    if m is None:
        raise DataFormatError(path, f"{line!r}: bad macro at character {at + 1}: expected "
                                    "%x[row,col] or %x[@pos,col], row and pos integers, col "
                                    "a column number", number)
    offset, column = int(m.group(3)), int(m.group(4))
    if m.group(2) and offset == 0:
        raise DataFormatError(path, f"{line!r}: absolute position @0: positions count from "
                                    "@1 (the first token) or @-1 (the last)", number)
    return Macro(offset, column, absolute=bool(m.group(2)), lower=m.group(1) == "X"), m.end()


def read_template(path, dialect: str | None = None) -> Template:
    """A ``Template`` from a template file (UTF-8)."""
    p = Path(path)
    if not p.is_file():
        raise DataFormatError(path, "no such template file" if not p.exists() else
                              "not a template file (a directory?)")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(path, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    return parse_template(text, str(path), dialect)


class Columns(NamedTuple):
    """Sequences read from a column file: each a list of rows (the observation columns of
    a token, without the label), the labels (None for a file read without them), and
    the file line of each sequence's first token."""

    X: list[list[list[str]]]
    y: list[list[str]] | None
    lines: list[int]


def parse_columns(text: str, path: str = "<columns>", labeled: bool = True) -> Columns:
    """``Columns`` from a column file's text: whitespace-separated columns, the
    last the label when ``labeled``, a blank line between sequences. DataFormatError
    naming the line where a line's number of columns differs from the first line's
    (or a labeled line has a single column)."""
    X: list[list[list[str]]] = []
    y: list[list[str]] | None = [] if labeled else None
    starts: list[int] = []
    rows: list[list[str]] = []
    labels: list[str] = []
    width = first = None
    for number, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if not fields:
            if rows:
                X.append(rows)
                if y is not None:
                    y.append(labels)
                rows, labels = [], []
            continue
        if width is None:
            width, first = len(fields), number
            if labeled and width < 2:
                raise DataFormatError(path, "1 column: a labeled column file has the "
                                            "observations, then the label, on each line",
                                      number)
        elif len(fields) != width:
            raise DataFormatError(path, f"{_columns(len(fields))}, but line {first} has "
                                        f"{width}: every line of a column file has the same "
                                        "number of columns", number)
        if not rows:
            starts.append(number)
        if labeled:
            rows.append(fields[:-1])
            labels.append(fields[-1])
        else:
            rows.append(fields)
    if rows:
        X.append(rows)
        if y is not None:
            y.append(labels)
    return Columns(X, y, starts)


def read_columns(path, labeled: bool = True) -> Columns:
    """``Columns`` from a column file (UTF-8; ``-``: standard input)."""
    # the CRFsuite reader's file checks and UTF-8 messages, standard input included
    from .crfsuite_format import read_text

    text = read_text(str(path))
    return parse_columns(text, "<stdin>" if str(path) == "-" else str(path), labeled)


def column_items(template: Template, data: Columns, path: str = "<columns>"
                 ) -> list[list[list[str]]]:
    """The items of a column file read by ``read_columns`` (``path`` names it):
    DataFormatError naming the template's line, and the file's first line, where the
    file lacks a column the template reads."""
    if data.X:
        template.check_columns(len(data.X[0][0]), f"{path}:{data.lines[0]}")
    return [template.sequence_attributes(rows) for rows in data.X]


def frequent_attributes(items, min_freq: int) -> set[str]:
    """The attributes that occur at least ``min_freq`` times in ``items`` (CRF++'s
    ``-f``: a cut-off on each generated string, whatever its label)."""
    counts: dict[str, int] = {}
    for seq in items:
        for item in seq:
            for a in item:
                counts[a] = counts.get(a, 0) + 1
    return {a for a, c in counts.items() if c >= min_freq}


def keep_attributes(items, kept: set[str]) -> list[list[list[str]]]:
    """``items`` with only the attributes of ``kept``."""
    return [[[a for a in item if a in kept] for item in seq] for seq in items]
