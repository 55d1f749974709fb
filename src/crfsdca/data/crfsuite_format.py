"""CRFsuite's data format (what ``crfsuite learn`` and ``crfsuite tag`` read), read and written.

One item per line: the label, then its attributes, separated by TABs (several TABs count
as one); an attribute is ``name`` (weight 1) or ``name:weight``; in names and labels
``\\:`` stands for a colon and ``\\\\`` for a backslash. A blank line ends a sequence. A
line ``@weight:w`` declares the weight of its sequence (CRFsuite's instance weight: the
sequence's loss counts w times; a finite number >= 0, once per sequence, alone on its
line). Anything else that CRFsuite would read silently in some odd way (a second
colon, a weight that is not a number, an empty name) stops the reading with the file, the
line and what was wrong. A name or label ends at its first NUL, as CRFsuite's C strings
do (``a\\0b`` is the attribute ``a``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import DataFormatError


@dataclass
class Instances:
    """Sequences read from CRFsuite files: items (lists of attributes: a name, or a
    (name, weight) pair), labels, the group (file number from 0) and the weight
    (``@weight``, else 1) of each sequence."""

    X: list[list[list]] = field(default_factory=list)
    y: list[list[str]] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)

    def extend(self, other: Instances) -> None:
        self.X += other.X
        self.y += other.y
        self.groups += other.groups
        self.weights += other.weights

    def close_sequence(self, xseq: list, yseq: list, group: int, weight: float = 1.0) -> None:
        """Add the items and labels read so far as a sequence of ``group`` and ``weight``
        (none if empty), and empty the two lists for the next one."""
        if xseq:
            self.X.append(list(xseq))
            self.y.append(list(yseq))
            self.groups.append(group)
            self.weights.append(weight)
            xseq.clear()
            yseq.clear()

    @property
    def weighted(self) -> bool:
        """Whether a sequence has a weight other than 1."""
        return any(w != 1.0 for w in self.weights)


def _unescape(text: str, where: str, path, line: int) -> list[str]:
    """Split a field at its unescaped colons, resolving ``\\:`` and ``\\\\``."""
    parts, cur, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in ":\\":
            cur.append(text[i + 1])
            i += 2
            continue
        if c == ":":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


_BACKSLASH, _COLON, _SEPARATOR = "\ue000", "\ue001", "\ue002"  # private-use stand-ins
_STAND_INS = (_BACKSLASH, _COLON, _SEPARATOR)


def _swap_escapes(text: str) -> str:
    """``\\\\`` and ``\\:`` swapped for stand-ins, left to right as :func:`_unescape` reads
    them (a run of backslashes pairs up before a colon can take the last one)."""
    return text.replace("\\\\", _BACKSLASH).replace("\\:", _COLON)


def _restore_escapes(text: str) -> str:
    """The stand-ins of :func:`_swap_escapes` turned back into what they stand for."""
    return text.replace(_BACKSLASH, "\\").replace(_COLON, ":")


def _field(text: str, path, line: int) -> list[str]:
    """A field split at its unescaped colons (a field holding a stand-in already goes the
    character-by-character way)."""
    if "\\" not in text:
        return text.split(":")
    if any(c in text for c in _STAND_INS):
        return _unescape(text, "field", path, line)
    return [_restore_escapes(part) for part in _swap_escapes(text).split(":")]


def parse_lines(lines, path, group: int = 0, first_line: int = 1) -> Instances:
    """Instances from an iterable of text lines (``path`` names them in errors, the first
    being line ``first_line``)."""
    out = Instances()
    xseq: list[list] = []
    yseq: list[str] = []
    declared: list[int] = []  # the line of this sequence's @weight, if any
    weight = 1.0

    def close():
        nonlocal weight
        out.close_sequence(xseq, yseq, group, weight)
        weight = 1.0
        declared.clear()

    for number, raw in enumerate(lines, start=first_line):
        text = raw.rstrip("\n").rstrip("\r")
        if not text.strip():
            close()
            continue
        fields = [f for f in text.split("\t") if f]
        label_parts = _field(fields[0], path, number)
        if label_parts[0].startswith("@"):
            weight = _declared_weight(fields, label_parts, declared, path, number)
            declared.append(number)
            continue
        label = label_parts[0].partition("\0")[0]  # a C string, as CRFsuite reads it
        if len(label_parts) != 1 or not label:
            raise DataFormatError(path, f"bad label {fields[0]!r} (an empty label, or a colon "
                                        "not escaped as \\:)", number)
        item: list = []
        for f in fields[1:]:
            parts = _field(f, path, number)
            name = parts[0].partition("\0")[0]
            if not name:
                raise DataFormatError(path, f"attribute {f!r} has an empty name", number)
            if len(parts) == 1:
                item.append(name)
            elif len(parts) == 2:
                if not parts[1]:
                    item.append(name)
                    continue
                try:
                    value = float(parts[1])
                except ValueError:
                    raise DataFormatError(path, f"attribute {f!r}: weight {parts[1]!r} is not "
                                                "a number (escape a colon in a name as \\:)",
                                          number) from None
                if not math.isfinite(value):
                    raise DataFormatError(path, f"attribute {f!r}: weight {parts[1]!r} is not "
                                                "a finite number", number)
                item.append(name if value == 1.0 else (name, value))
            else:
                raise DataFormatError(path, f"attribute {f!r} has more than one unescaped "
                                            "colon (escape a colon in a name as \\:)", number)
        xseq.append(item)
        yseq.append(label)
    close()
    return out


def _declared_weight(fields: list[str], parts: list[str], declared: list[int], path,
                     number: int) -> float:
    """The weight of a ``@weight:w`` line; DataFormatError for any other declaration, a
    weight that is not a finite number >= 0, a second one in a sequence or more fields
    on its line (CRFsuite would read the next field as a label)."""
    if parts[0] != "@weight" or len(parts) != 2:
        raise DataFormatError(path, f"unrecognized declaration {fields[0]!r}", number)
    try:
        weight = float(parts[1])
    except ValueError:
        raise DataFormatError(path, f"instance weight {parts[1]!r} is not a number",
                              number) from None
    if not (math.isfinite(weight) and weight >= 0):
        raise DataFormatError(path, f"instance weight {parts[1]!r} must be a finite number "
                                    ">= 0", number)
    if len(fields) > 1:
        raise DataFormatError(path, "a @weight declaration stands alone on its line (no "
                                    "label or attributes after it)", number)
    if declared:
        raise DataFormatError(path, f"a second @weight in one sequence (the first on line "
                                    f"{declared[0]})", number)
    return weight


def _separated(text: str) -> str | None:
    """``text`` with its escapes resolved (the escaped pairs to stand-ins, every colon
    left to a separator stand-in, then the escaped ones back: a field splits at most
    once, and needs no unescaping), or None where it holds a NUL or
    a stand-in character itself (the line reader's case)."""
    if "\x00" in text or any(c in text for c in _STAND_INS):
        return None
    return _restore_escapes(_swap_escapes(text).replace(":", _SEPARATOR))


def _plain_weight(text: str) -> float | None:
    """The weight after a field's separator (none written: 1), or None where it is not a
    finite number (the line reader reports it)."""
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _parse_plain(text: str, group: int) -> Instances | None:
    """The instances of a whole file in the common case, or None where any line needs
    :func:`parse_lines` (a declaration, or something it reports as an error; a NUL or a
    stand-in character anywhere). The escapes are resolved over the whole text at once
    (:func:`_separated`): a file of sklearn-crfsuite's features escapes the colon of every
    ``key:value`` name."""
    text = _separated(text)
    if text is None:
        return None
    out = Instances()
    xseq: list[list] = []
    yseq: list[str] = []

    def close():
        out.close_sequence(xseq, yseq, group)

    values: dict[str, float] = {}  # each distinct weight parsed once
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line.strip():
            close()
            continue
        fields = [f for f in line.split("\t") if f]
        label = fields[0]
        if _SEPARATOR in label or label.startswith("@"):
            return None
        item: list = []
        for f in fields[1:]:
            if _SEPARATOR not in f:
                item.append(f)
                continue
            name, _, weight = f.partition(_SEPARATOR)
            if not name or _SEPARATOR in weight:
                return None
            value = values.get(weight)
            if value is None:
                value = values[weight] = _plain_weight(weight)
                if value is None:
                    return None
            item.append(name if value == 1.0 else (name, value))
        xseq.append(item)
        yseq.append(label)
    close()
    return out


class FlatItems(NamedTuple):
    """A file's items as the encoder's flat arrays (:func:`flat_items`): the items of
    each sequence, each item's label and number of entries, and each entry's attribute
    id (-1: one the vocabulary lacks) and weight."""

    lengths: np.ndarray
    labels: list[str]
    counts: np.ndarray
    attr_ids: np.ndarray
    weights: np.ndarray


def flat_items(text: str, ids: dict[str, int]) -> FlatItems | None:
    """The items of a whole file's ``text`` with the attribute ids of ``ids``, in the
    cases :func:`_parse_plain` reads, or None where it or :func:`parse_lines` must (and
    report what is wrong). Tagging needs no per-item lists: the names are looked up in
    one pass over all of them, and only those not found (unseen, or with a weight) are
    looked at one by one."""
    text = _separated(text)
    if text is None:
        return None
    labels: list[str] = []
    counts: list[int] = []
    lengths: list[int] = []
    fields: list[str] = []
    open_items = 0
    for line in text.split("\n"):
        if not line.strip():
            if open_items:
                lengths.append(open_items)
                open_items = 0
            continue
        parts = line.rstrip("\r").split("\t")
        if "" in parts:
            parts = [f for f in parts if f]
        labels.append(parts[0])
        counts.append(len(parts) - 1)
        fields += parts[1:]
        open_items += 1
    if open_items:
        lengths.append(open_items)
    if any(_SEPARATOR in lab or lab[0] == "@" for lab in labels):
        return None
    weighted = text.count(_SEPARATOR)  # in the attributes' fields: no label has one
    n = len(fields)
    if n and weighted == n and np.all(np.fromiter(
            map(str.count, fields, repeat(_SEPARATOR, n)), dtype=np.int64, count=n) == 1):
        found = _weighted_fields(fields, ids)  # every field name:weight, one separator each
    else:
        found = _mixed_fields(fields, ids, weighted > 0)
    if found is None:
        return None
    attr_ids, weights = found
    return FlatItems(np.asarray(lengths, dtype=np.int64), labels,
                     np.asarray(counts, dtype=np.int64), attr_ids, weights)


def _weighted_fields(fields: list[str], ids: dict[str, int]):
    """(ids, weights) of fields that are all ``name`` SEPARATOR ``weight``, split at once,
    each distinct weight parsed once; None where a name is empty or a weight is not a
    finite number (:func:`_parse_plain`'s tests)."""
    pieces = _SEPARATOR.join(fields).split(_SEPARATOR)
    names, texts = pieces[0::2], pieces[1::2]
    if "" in names:
        return None
    values = {text: _plain_weight(text) for text in set(texts)}
    if None in values.values():
        return None
    n = len(names)
    return (np.fromiter(map(ids.get, names, repeat(-1, n)), dtype=np.int64, count=n),
            np.fromiter(map(values.__getitem__, texts), dtype=np.float64, count=n))


def _mixed_fields(fields: list[str], ids: dict[str, int], weighted: bool):
    """(ids, weights) of fields with and without weights: every field looked up whole at
    once, then those not found one by one; None where :func:`_parse_plain` would defer to
    the line reader."""
    n = len(fields)
    attr_ids = np.fromiter(map(ids.get, fields, repeat(-2, n)), dtype=np.int64, count=n)
    weights = np.ones(n)
    missing = np.flatnonzero(attr_ids == -2)
    attr_ids[missing] = -1
    if not weighted:
        return attr_ids, weights
    for j in missing.tolist():
        f = fields[j]
        if _SEPARATOR not in f:
            continue
        name, _, weight = f.partition(_SEPARATOR)
        value = _plain_weight(weight)
        if not name or _SEPARATOR in weight or value is None:
            return None
        weights[j] = value
        attr_ids[j] = ids.get(name, -1)
    return attr_ids, weights


def read_text(path: str) -> str:
    """The text of a CRFsuite data file (``-``: standard input), UTF-8."""
    if path == "-":  # its bytes: a text stream may decode them with surrogate escapes
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:  # a text stream without one (a test's StringIO)
            return sys.stdin.read()
        try:
            return raw.read().decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataFormatError("<stdin>", f"not UTF-8 text ({e.reason} at byte "
                                             f"{e.start})") from None
    with open(_data_file(path), encoding="utf-8", newline="\n") as f:  # a file, a pipe
        try:
            text = f.read()
        except UnicodeDecodeError as e:
            raise DataFormatError(path, f"not UTF-8 text ({e.reason} at byte {e.start} of a "
                                        "block)") from None
    return text


def read_file(path: str, group: int = 0) -> Instances:
    """Instances of one CRFsuite data file (``-``: standard input), UTF-8."""
    text = read_text(path)
    parsed = _parse_plain(text, group)
    return parsed if parsed is not None else parse_lines(
        text.split("\n"), "<stdin>" if path == "-" else path, group)


BLOCK_CHARS = 1 << 22
"""About how much text :func:`read_blocks` parses at a time (4 Mi characters)."""


def read_blocks(path: str, group: int = 0, block_chars: int | None = None):
    """The instances of one CRFsuite data file (``-``: standard input), a block of about
    ``block_chars`` characters (default :data:`BLOCK_CHARS`) at a time, each ending at a
    blank line: a file of any size is read in the memory of one block (errors name the
    line in the whole file, as :func:`read_file`'s)."""
    limit = BLOCK_CHARS if block_chars is None else block_chars
    name = "<stdin>" if path == "-" else path
    for text, first_line in _text_blocks(path, name, limit):
        parsed = _parse_plain(text, group)
        yield parsed if parsed is not None else parse_lines(text.split("\n"), name, group,
                                                             first_line)


def _text_blocks(path: str, name: str, limit: int):
    """(text, number of its first line) of the file's blocks: lines gathered until a
    blank line past ``limit`` characters (``name``: the file's in errors)."""
    stream = getattr(sys.stdin, "buffer", sys.stdin) if path == "-" else open(
        _data_file(path), "rb")  # bytes; standard input's text where it has no bytes
    try:
        lines: list[str] = []
        size, first, number, offset = 0, 1, 0, 0
        for raw in stream:
            number += 1
            if isinstance(raw, bytes):  # a text stream without bytes (a test's StringIO)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise DataFormatError(name, f"not UTF-8 text ({e.reason} at byte "
                                                f"{offset + e.start})") from None
                offset += len(raw)
            else:
                line = raw
            lines.append(line)
            size += len(line)
            if size >= limit and not line.strip():
                yield "".join(lines), first
                lines, size, first = [], 0, number + 1
        if lines:
            yield "".join(lines), first
    finally:
        if path != "-":
            stream.close()


def _data_file(path: str) -> Path:
    """``path`` as a data file to open: DataFormatError where there is none, or a
    directory."""
    p = Path(path)
    if not p.exists():
        raise DataFormatError(path, "no such file")
    if p.is_dir():
        raise DataFormatError(path, "a directory, not a data file")
    return p


def read_files(paths: list[str]) -> Instances:
    """Instances of several files; file k (from 0) is group k."""
    out = Instances()
    for k, path in enumerate(paths):
        out.extend(read_file(path, k))
    return out


def escape(text: str) -> str:
    """A name or label as CRFsuite's format writes it (``\\`` and ``:`` escaped)."""
    return text.replace("\\", "\\\\").replace(":", "\\:")


def format_item(label: str, attributes) -> str:
    """One line: the label and the attributes (names, or (name, weight) pairs). A line
    that would end with a carriage return gets a TAB after it: the readers take a CR at
    the end of a line for a CRLF line end, not for a part of the last name. ValueError
    for a line that would read as a blank one (a blank label, no attribute)."""
    fields = [escape(label)]
    for a in attributes:
        if isinstance(a, tuple):
            fields.append(f"{escape(a[0])}:{a[1]:.17g}")
        else:
            fields.append(escape(a))
    line = "\t".join(fields)
    if not line.strip():
        raise ValueError(f"label {label!r} without attributes: CRFsuite's format would "
                         "read its line as a blank line")
    return line + "\t" if line.endswith("\r") else line


def write_sequences(stream, X, y, weights=None) -> None:
    """Write sequences in CRFsuite's format (a blank line after each), with a ``@weight``
    line first where ``weights`` (one per sequence) gives one other than 1."""
    for i, (xseq, yseq) in enumerate(zip(X, y, strict=True)):
        if weights is not None and weights[i] != 1.0:
            stream.write(f"@weight:{float(weights[i]):.17g}\n")
        for item, label in zip(xseq, yseq, strict=True):
            stream.write(format_item(label, item) + "\n")
        stream.write("\n")
