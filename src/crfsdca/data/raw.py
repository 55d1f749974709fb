"""Raw data files: checksums, integrity checks and download with verification.

A raw file is accepted when its sha256 equals the expected one. For a file whose
canonical copy differs from the vendored one byte-wise but not in content (OCR's
``letter.data.gz``, see ``../shared/datasets/README.md``), a content check (number of
rows and of tab-separated columns) is accepted instead. A download is written to a
temporary file next to its destination and renamed only once verified, so a failed
download leaves no file behind.
"""

from __future__ import annotations

import gzip
import os
import urllib.error
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from crfsdca.errors import ChecksumError, DataFormatError, DownloadError
from crfsdca.runtime.io import atomic_path, sha256_file

CHUNK = 1 << 20


@dataclass(frozen=True)
class ContentCheck:
    """Accept a file whose (gunzipped) text has ``rows`` lines of ``columns`` tab-separated
    fields."""

    rows: int
    columns: int


def read_checksums(path: str | os.PathLike) -> dict[str, str]:
    """Parse a ``sha256sum``-style file (``<hex>  <name>`` per line) into {name: hex}."""
    sums: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 2 or len(parts[0]) != 64:
                raise DataFormatError(path, "expected '<64 hex digits>  <file name>'", lineno)
            sums[parts[1].lstrip("*")] = parts[0].lower()
    return sums


def archive_problem(path: str | os.PathLike, name: str | None = None) -> str | None:
    """Return why ``path`` is not a complete archive (zip or gzip, by ``name``'s suffix), or None.

    Other files are not checked (None).
    """
    name = name or str(path)
    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                bad = zf.testzip()
            if bad is not None:
                return f"member {bad} of the zip archive is corrupt (CRC mismatch)"
        elif name.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                while f.read(CHUNK):
                    pass
    except (zipfile.BadZipFile, gzip.BadGzipFile, zlib.error, EOFError, OSError, ValueError) as e:
        kind = "zip" if name.endswith(".zip") else "gzip"
        return f"not a complete {kind} archive (truncated or corrupt: {e})"
    return None


def content_problem(path: str | os.PathLike, check: ContentCheck,
                    name: str | None = None) -> str | None:
    """Return why the tab-separated file fails ``check``, or None.

    The file is gunzipped if ``name`` (default: ``path``) ends with ``.gz``.
    """
    opener = gzip.open if (name or str(path)).endswith(".gz") else open
    rows = 0
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for rows, line in enumerate(f, 1):  # noqa: B007 (rows is used after the loop)
                ncol = len(line.rstrip("\r\n\t ").split("\t"))
                if ncol != check.columns:
                    return f"line {rows} has {ncol} tab-separated columns, expected {check.columns}"
    except (OSError, EOFError, UnicodeDecodeError, ValueError, zlib.error) as e:
        return f"cannot be read as text ({e})"
    if rows != check.rows:
        return f"has {rows} rows, expected {check.rows}"
    return None


def verify_file(path: str | os.PathLike, sha256: str | None, content: ContentCheck | None = None,
                name: str | None = None, source: str | None = None) -> str:
    """Check a raw file; return how it was accepted ('sha256' or 'content'), else raise.

    ``name`` is the file name used in messages and to pick the archive check (defaults to
    ``path``); ``source`` (a URL) is mentioned in the error when given.
    Raises :class:`ChecksumError` naming the file, the expected and the actual sha256.
    """
    name = name or str(path)
    actual = sha256_file(path)
    problem = archive_problem(path, name)
    if sha256 is not None and actual == sha256.lower() and problem is None:
        return "sha256"
    if content is not None and problem is None:
        cproblem = content_problem(path, content, name)
        if cproblem is None:
            return "content"
    else:
        cproblem = None
    msg = f"{name}: checksum mismatch: expected sha256 {sha256}, actual sha256 {actual}"
    if source:
        msg += f" (fetched from {source})"
    if problem:
        msg += f"; the file is {problem}"
    if cproblem:
        msg += f"; content check failed: {cproblem}"
    raise ChecksumError(msg)


def download(url: str, dest: str | os.PathLike, sha256: str | None,
             content: ContentCheck | None = None, timeout: float = 60.0) -> str:
    """Fetch ``url`` into ``dest`` and verify it; return how it was accepted.

    The data goes to a temporary file in ``dest``'s directory and is renamed to ``dest``
    only after :func:`verify_file` accepts it; on any error nothing is left behind.
    """
    dest = Path(dest)
    with atomic_path(dest) as tmp:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:
                expected_len = resp.headers.get("Content-Length")
                got = 0
                while chunk := resp.read(CHUNK):
                    out.write(chunk)
                    got += len(chunk)
        except urllib.error.HTTPError as e:
            raise DownloadError(f"{dest.name}: cannot fetch {url}: HTTP {e.code} {e.reason}") from e
        except (urllib.error.URLError, OSError) as e:
            raise DownloadError(f"{dest.name}: cannot fetch {url}: {e}") from e
        if expected_len is not None and int(expected_len) != got:
            raise ChecksumError(
                f"{dest.name}: truncated download from {url}: got {got} bytes, the server "
                f"announced {expected_len}; expected sha256 {sha256}, actual sha256 "
                f"{sha256_file(tmp)}")
        return verify_file(tmp, sha256, content, name=dest.name, source=url)
