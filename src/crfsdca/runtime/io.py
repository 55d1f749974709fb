"""File helpers: atomic writes and checksums.

Atomic writes: every artifact appears complete under its final name or not at all.

A temporary file is created in the destination's directory (same file system, so the
final ``os.replace`` is atomic), written, flushed to disk and renamed. If anything fails
before the rename, the temporary file is removed and the destination is left untouched.
A process killed outright (kill -9, the out-of-memory killer) cannot remove its
temporary file; the name carries the host and process id, so the next write of the same
destination removes those of dead processes of this host.

:func:`check_writable` tells before any work whether an output can be written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ..errors import DataFormatError, OutputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname()) or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove the temporary files of ``path`` left by dead processes of this host."""
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)"
                         r"\.[^.]*\.tmp$")
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            m = pattern.match(entry.name)
            if m and m["host"] == _host() and not _alive(int(m["pid"])):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it to ``path`` if the block succeeds.

    For writers that want a file name (h5py, ``urlretrieve``...). The temporary file exists
    (empty) when the block starts; the writer may truncate or replace it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.{_host()}-{os.getpid()}.",
                                    suffix=".tmp", dir=path.parent)
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


@contextlib.contextmanager
def read_hdf5(path: str | os.PathLike, what: str):
    """An HDF5 file open for reading, each failure a DataFormatError naming the file and
    ``what`` was expected: missing, not HDF5, truncated, an attribute or dataset absent or
    of the wrong kind (KeyError, ValueError and OSError raised inside the block)."""
    import h5py  # lazy: 0.1 s; atomic writes and checksums need no h5py

    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, f"no such file; expected {what}")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise DataFormatError(path, f"not an HDF5 file, or a truncated one ({e}); expected "
                                    f"{what}") from None
    try:
        with f:
            yield f
    except KeyError as e:
        raise DataFormatError(path, f"a missing entry ({e.args[0] if e.args else e}); "
                                    f"expected {what}") from None
    except (OSError, TypeError, ValueError) as e:
        if isinstance(e, DataFormatError):
            raise
        raise DataFormatError(path, f"cannot read ({e}); expected {what}") from None


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes (provenance of datasets, runs and optima)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def check_writable(path: str | os.PathLike, directory: bool = False) -> None:
    """Raise OutputError unless ``path`` (a file, or with ``directory`` a directory) can be
    written: nothing of another kind is in its way and its nearest existing directory takes
    a new file. Creates nothing; commands call it before their work, so that hours of
    training are never lost to an output that cannot be saved."""
    path = Path(path)
    kind = "directory" if directory else "file"
    if path.exists() and path.is_dir() != directory:
        raise OutputError(f"{path}: is a {'file' if directory else 'directory'}; expected a "
                          f"{kind} to write (remove it or choose another path)")
    base = path if path.is_dir() else path.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise OutputError(f"{path}: cannot create the {kind}: {base} is a file, not a "
                          "directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".crfsdca-probe.", dir=base)
    except OSError as e:
        raise OutputError(f"{path}: cannot write in {base} ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(probe)
