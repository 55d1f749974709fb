"""Readers of the raw formats, one per format, into lists of :class:`Sentence`.

Every reader takes a *source* (a zip archive, a directory, or a single file, possibly
gzipped) and member names inside it, and returns a :class:`Corpus` (train and test
sentences). Malformed input raises :class:`~crfsdca.errors.DataFormatError` naming the
file (``archive.zip:member`` for archive members), the line number and what was expected.

Formats:

- ``ocr``: Taskar et al.'s ``letter.data(.gz)``: tab-separated id, letter, next_id,
  word_id, position, fold, then 128 binary pixels; one row per letter, the letters of a
  word on consecutive rows. Sequences are words; the test split is one fold.
- ``conll``: CoNLL shared-task column files (one token per line, whitespace-separated
  columns, last column the label, blank line between sentences), for CoNLL-2000 chunking
  and CoNLL-2002 NER. ``-DOCSTART-`` lines are kept as one-token sentences unless asked.
- ``treebank``: Penn Treebank WSJ files, tagged ``.pos`` (default) or parsed ``.mrg``;
  ``-NONE-`` tokens are dropped, ambiguous tags like ``VBG|NN`` resolve to the first.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from crfsdca.errors import ConfigError, DataFormatError, excerpt


class Sentence(NamedTuple):
    """One sequence: token fields by name (``w``, ``pos``...) and gold label strings.

    ``attributes``, when not None, are precomputed attribute strings per token (OCR's
    pixels); otherwise attributes come from templates over ``fields``.
    """

    fields: dict[str, list[str]]
    labels: list[str]
    attributes: list[list[str]] | None = None

    def __len__(self) -> int:  # number of tokens
        return len(self.labels)


@dataclass
class Corpus:
    """Train and test sentences of one dataset, as read from the raw files."""

    train: list[Sentence]
    test: list[Sentence] | None
    fixed_attributes: list[str] | None = None  # a fixed attribute vocabulary (OCR pixels)
    sources: list[Path] = field(default_factory=list)  # files read, for provenance


# ---------------------------------------------------------------------------------------
# Sources: zip archive, directory or plain file


class _Source:
    """A zip archive, a directory, or a single file whose members can be listed and read."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise DataFormatError(self.path, "no such file or directory")
        self.is_zip = self.path.is_file() and zipfile.is_zipfile(self.path)
        if self.path.is_file() and not self.is_zip and _looks_like_zip(self.path):
            raise DataFormatError(self.path, "a truncated or corrupt zip archive (it starts "
                                             "like one but has no readable central "
                                             "directory); fetch it again")
        self._zip = zipfile.ZipFile(self.path) if self.is_zip else None
        self.read_files: list[Path] = []  # files actually read, for provenance

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _note(self, path: Path) -> None:
        if path not in self.read_files:
            self.read_files.append(path)

    def label(self, member: str | None) -> str:
        if member is None:
            return str(self.path)
        return f"{self.path}:{member}" if self.is_zip else str(self.path / member)

    def members(self, pattern: str) -> list[str]:
        """Member names matching a glob ``pattern`` (``fnmatch`` on '/'-separated paths), sorted."""
        if self.is_zip:
            names = [n for n in self._zip.namelist() if not n.endswith("/")]
        elif self.path.is_dir():
            names = [p.relative_to(self.path).as_posix() for p in self.path.rglob("*")
                     if p.is_file()]
        else:
            raise DataFormatError(self.path, "expected a zip archive or a directory")
        return sorted(n for n in names if fnmatch.fnmatch(n, pattern))

    def read_text(self, member: str | None, encoding: str = "utf-8") -> str:
        """The decoded text of a member (or of the file itself when ``member`` is None)."""
        label = self.label(member)
        try:
            if member is None:
                if self.path.is_dir() or self.is_zip:
                    raise DataFormatError(self.path, "expected a single (possibly gzipped) file")
                data = self.path.read_bytes()
                self._note(self.path)
            elif self.is_zip:
                try:
                    data = self._zip.read(member)
                except KeyError:
                    raise DataFormatError(
                        self.path, f"the archive has no member {member!r}") from None
                self._note(self.path)
            elif self.path.is_dir():
                p = self.path / member
                if not p.is_file():
                    raise DataFormatError(p, "no such file")
                data = p.read_bytes()
                self._note(p)
            else:
                raise DataFormatError(self.path, f"expected a zip archive or a directory "
                                                 f"containing {member!r}")
            name = member if member is not None else self.path.name
            if name.endswith(".gz"):
                data = gzip.decompress(data)
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:
            raise DataFormatError(label, f"cannot read ({e})") from e
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as e:
            line = data[: e.start].count(b"\n") + 1
            raise DataFormatError(label, f"not valid {encoding} text ({e.reason} at byte "
                                         f"{e.start})", line) from None
        nul = text.find("\0")
        if nul >= 0:  # no field may hold one: HDF5 strings end at it
            raise DataFormatError(label, "a NUL character (\\0) in the text; expected "
                                         "text without control characters",
                                  text.count("\n", 0, nul) + 1)
        return text


def _looks_like_zip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"PK\x03\x04"


def _lines(text: str) -> Iterator[tuple[int, str]]:
    return enumerate(io.StringIO(text), 1)


# ---------------------------------------------------------------------------------------
# OCR

OCR_PIXELS = 128
OCR_COLUMNS = 6 + OCR_PIXELS
OCR_ATTRIBUTES = [f"p_{j // 8}_{j % 8}" for j in range(OCR_PIXELS)]  # 16 rows x 8 columns


def read_ocr(source: str | Path, test_fold: int | None = 9) -> Corpus:
    """Read ``letter.data(.gz)``; words of fold ``test_fold`` are the test split.

    A token's attributes are its 'on' pixels, named ``p_<row>_<col>`` (rows 0-15, columns
    0-7), so the attribute vocabulary is the 128 pixels in order.
    """
    with _Source(source) as src:
        text = src.read_text(None)
        label = src.label(None)
        read = src.read_files
    train: list[Sentence] = []
    test: list[Sentence] = []
    cur_word = None
    cur_fold = None
    letters: list[str] = []
    pixels: list[list[str]] = []

    def close():
        if cur_word is not None:
            s = Sentence({}, letters, pixels)
            (test if cur_fold == test_fold else train).append(s)

    for lineno, line in _lines(text):
        line = line.rstrip("\r\n\t ")
        if not line:
            raise DataFormatError(label, "empty line; expected one letter per line", lineno)
        parts = line.split("\t")
        if len(parts) != OCR_COLUMNS:
            raise DataFormatError(label, f"expected {OCR_COLUMNS} tab-separated columns (id, "
                                         f"letter, next_id, word_id, position, fold, "
                                         f"{OCR_PIXELS} pixels), got {len(parts)}", lineno)
        letter = parts[1]
        if len(letter) != 1 or not ("a" <= letter <= "z"):
            raise DataFormatError(label, f"column 2: expected a letter a-z, got "
                                         f"{excerpt(letter)}", lineno)
        try:
            word, pos, fold = int(parts[3]), int(parts[4]), int(parts[5])
        except ValueError:
            raise DataFormatError(label, "columns 4-6 (word_id, position, fold): expected "
                                         f"integers, got {excerpt(str(parts[3:6]))}",
                                  lineno) from None
        px = parts[6:]
        on = [OCR_ATTRIBUTES[j] for j, v in enumerate(px) if v == "1"]
        if len(on) + px.count("0") != OCR_PIXELS:
            bad = next(v for v in px if v not in ("0", "1"))
            raise DataFormatError(label, f"pixel columns: expected 0 or 1, got {excerpt(bad)}",
                                  lineno)
        if word != cur_word:
            close()
            if pos != 1:
                raise DataFormatError(label, f"word {word} starts at position {pos}, "
                                             "expected 1", lineno)
            cur_word, cur_fold, letters, pixels = word, fold, [], []
        else:
            if pos != len(letters) + 1:
                raise DataFormatError(label, f"word {word}: position {pos} follows position "
                                             f"{len(letters)}, expected {len(letters) + 1}",
                                      lineno)
            if fold != cur_fold:
                raise DataFormatError(label, f"word {word}: fold {fold} differs from the "
                                             f"word's fold {cur_fold}", lineno)
        letters.append(letter)
        pixels.append(on)
    close()
    if not train:
        raise DataFormatError(label, "no training words (is the file empty, or is every "
                                     f"word in test fold {test_fold}?)")
    return Corpus(train, test if test_fold is not None else None,
                  fixed_attributes=list(OCR_ATTRIBUTES), sources=read)


# ---------------------------------------------------------------------------------------
# CoNLL column files

DOCSTART = "-DOCSTART-"


def parse_conll(text: str, label: str, columns: list[str],
                keep_docstart: bool = True) -> list[Sentence]:
    """Parse CoNLL column text: ``columns`` names the fields, the last one is the label."""
    ncol = len(columns)
    names = columns[:-1]
    sentences: list[Sentence] = []
    rows: list[list[str]] = []

    def close():
        if rows:
            if keep_docstart or rows[0][0] != DOCSTART:
                cols = list(zip(*rows, strict=True))
                sentences.append(Sentence({n: list(c) for n, c in zip(names, cols, strict=False)},
                                          list(cols[-1])))
            rows.clear()

    for lineno, line in _lines(text):
        parts = line.split()
        if not parts:
            close()
            continue
        if len(parts) != ncol:
            raise DataFormatError(label, f"expected {ncol} whitespace-separated columns "
                                         f"({' '.join(columns)}), got {len(parts)}: "
                                         f"{excerpt(line.strip())}", lineno)
        rows.append(parts)
    close()
    return sentences


def read_conll(source: str | Path, train: str, test: str | None = None,
               columns: list[str] | None = None, keep_docstart: bool = True,
               encoding: str = "utf-8") -> Corpus:
    """Read CoNLL train/test members of ``source`` (zip or directory)."""
    columns = list(columns or ["w", "pos", "y"])
    if len(columns) < 2:
        raise ConfigError("conll reader: 'columns' needs at least a field and the label")
    with _Source(source) as src:
        tr = parse_conll(src.read_text(train, encoding), src.label(train), columns, keep_docstart)
        te = None
        if test is not None:
            te = parse_conll(src.read_text(test, encoding), src.label(test), columns,
                             keep_docstart)
        read = src.read_files
    if not tr:
        raise DataFormatError(f"{source}:{train}", "no sentences")
    return Corpus(tr, te, sources=read)


# ---------------------------------------------------------------------------------------
# Penn Treebank (WSJ) .pos / .mrg

_WSJ_NUMBER = re.compile(r"wsj_(\d{4})")
# Tokens that may follow a sentence-final '.'-tagged token and still belong to its sentence.
_CLOSER_TAGS = {"''", ")", "-RRB-"}
_LEAF = re.compile(r"\(([^\s()]+)\s+([^\s()]+)\)")


def _unescape(word: str) -> str:
    return word.replace("\\/", "/").replace("\\*", "*")


def _resolve_tag(tag: str) -> str:
    return tag.split("|", 1)[0]


def parse_pos(text: str, label: str) -> list[Sentence]:
    """Parse a tagged ``.pos`` file (``word/TAG`` tokens, ``[ ]`` chunk brackets).

    Sentence boundaries are not marked in these files; a sentence ends after a token tagged
    ``.`` (plus any closing quote or bracket right after it), at a ``=====`` separator line
    and at the end of the file. On the public sample this gives 3,939 sentences where the
    parsed ``.mrg`` files have 3,914 (98% of the boundaries agree).
    """
    sentences: list[Sentence] = []
    words: list[str] = []
    tags: list[str] = []
    ended = False

    def close():
        nonlocal ended
        if words:
            sentences.append(Sentence({"w": list(words)}, list(tags)))
            words.clear()
            tags.clear()
        ended = False

    for lineno, line in _lines(text):
        if line.startswith("======"):
            close()
            continue
        for tok in line.split():
            if tok in ("[", "]"):
                continue
            word, sep, tag = tok.rpartition("/")
            if not sep or not word or not tag:
                raise DataFormatError(label, f"expected a token 'word/TAG', got {excerpt(tok)}",
                                      lineno)
            tag = _resolve_tag(tag)
            if tag == "-NONE-":
                continue
            if ended and tag not in _CLOSER_TAGS:
                close()
            words.append(_unescape(word))
            tags.append(tag)
            if tag == ".":
                ended = True
    close()
    return sentences


def parse_mrg(text: str, label: str) -> list[Sentence]:
    """Parse a bracketed ``.mrg`` file: a top-level bracket per sentence, leaves ``(TAG word)``."""
    sentences: list[Sentence] = []
    depth = 0
    start = 0
    start_line = 1
    lineno = 1
    for i, ch in enumerate(text):
        if ch == "\n":
            lineno += 1
        elif ch == "(":
            if depth == 0:
                start, start_line = i, lineno
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise DataFormatError(label, "unbalanced ')': expected '(' first", lineno)
            if depth == 0:
                leaves = [(t, w) for t, w in _LEAF.findall(text, start, i + 1)]
                words = [_unescape(w) for t, w in leaves if t != "-NONE-"]
                tags = [_resolve_tag(t) for t, w in leaves if t != "-NONE-"]
                if words:
                    sentences.append(Sentence({"w": words}, tags))
        elif depth == 0 and not ch.isspace():
            raise DataFormatError(label, f"unexpected {ch!r} outside brackets; expected '('",
                                  lineno)
    if depth != 0:
        raise DataFormatError(label, "unbalanced '(': the file ends inside the sentence that "
                                     "starts on this line", start_line)
    return sentences


def _in_ranges(x: int, ranges: list[list[int]]) -> bool:
    return any(lo <= x <= hi for lo, hi in ranges)


def _norm_ranges(r) -> list[list[int]]:
    if r is None:
        return []
    if len(r) == 2 and all(isinstance(v, int) for v in r):
        return [list(r)]
    return [list(x) for x in r]


# Default splits: the public sample by file number, the full WSJ treebank by section.
DEFAULT_RANGES = {"file": ([1, 179], [180, 199]), "section": ([0, 18], [22, 24])}


def read_treebank(source: str | Path, pattern: str = "*.pos", format: str | None = None,
                  split_by: str = "file", train_range=None, test_range=None,
                  encoding: str = "utf-8") -> Corpus:
    """Read WSJ ``.pos`` (or ``.mrg``) files from a zip or a directory.

    Files are named ``wsj_SSNN.pos``; the split is by file number SSNN (``split_by: file``)
    or by section SS (``split_by: section``): files in ``train_range`` (an inclusive pair,
    or a list of pairs) are the training set, files in ``test_range`` the test set, other
    files are not read. ``pattern`` selects member paths (``fnmatch``: ``*`` also matches
    ``/``). Default ranges: by file, the public sample's wsj_0001-0179 / wsj_0180-0199; by
    section, the full treebank's sections 0-18 / 22-24. ``format`` (pos or mrg) defaults
    to each file's extension.
    """
    if split_by not in DEFAULT_RANGES:
        raise ConfigError(f"treebank reader: split_by must be 'file' or 'section', "
                          f"not {split_by!r}")
    default_train, default_test = DEFAULT_RANGES[split_by]
    train_r = _norm_ranges(default_train if train_range is None else train_range)
    test_r = _norm_ranges(default_test if test_range is None else test_range)
    train: list[Sentence] = []
    test: list[Sentence] = []
    with _Source(source) as src:
        members = src.members(pattern)
        if not members:
            raise DataFormatError(source, f"no file matches {pattern!r}")
        for m in members:
            num = _WSJ_NUMBER.search(Path(m).name)
            if num is None:
                raise DataFormatError(src.label(m), "expected a file name like wsj_0001.pos")
            key = int(num.group(1)) if split_by == "file" else int(num.group(1)) // 100
            dest = train if _in_ranges(key, train_r) else test if _in_ranges(key, test_r) else None
            if dest is None:
                continue
            kind = format or ("mrg" if m.endswith(".mrg") else "pos")
            parse = parse_mrg if kind == "mrg" else parse_pos
            dest.extend(parse(src.read_text(m, encoding), src.label(m)))
        read = src.read_files
    if not train:
        raise DataFormatError(source, f"no training sentence: no file matching {pattern!r} "
                                      f"has a {split_by} number in {train_r}")
    return Corpus(train, test or None, sources=read)


# ---------------------------------------------------------------------------------------

READERS = {"ocr": read_ocr, "conll": read_conll, "treebank": read_treebank}


def reader_columns(reader: str, options: dict) -> tuple[str, ...] | None:
    """The token fields a reader gives for its options (the label column left out), which
    templates can use; None for OCR (fixed pixel attributes, no templates)."""
    if reader == "conll":
        return tuple(list(options.get("columns") or ["w", "pos", "y"])[:-1])
    if reader == "treebank":
        return ("w", "pos")
    return None
