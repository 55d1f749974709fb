"""Atomic writes: every artifact appears complete under its final name or not at all.

A temporary file is created in the destination's directory (same file system, so the
final ``os.replace`` is atomic), written, flushed to disk and renamed. If anything fails
before the rename, the temporary file is removed and the destination is left untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it to ``path`` if the block succeeds.

    For writers that want a file name (h5py, ``urlretrieve``...). The temporary file exists
    (empty) when the block starts; the writer may truncate or replace it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        # mkstemp creates the file with mode 0600; give the artifact the usual permissions.
        os.chmod(tmp, 0o666 & ~_umask())
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w",
                 encoding: str | None = "utf-8", newline: str | None = None) -> Iterator[IO]:
    """Open a temporary file next to ``path`` for writing; rename it to ``path`` on success.

    ``mode`` is ``"w"`` (text, ``encoding``) or ``"wb"`` (binary).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', not {mode!r}")
    with atomic_path(path) as tmp:
        if mode == "wb":
            with open(tmp, "wb") as f:
                yield f
        else:
            with open(tmp, "w", encoding=encoding, newline=newline) as f:
                yield f
