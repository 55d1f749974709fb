"""HDF5 files that carry their own checksum (crfsdca's model and dual files, its datasets
and corpora): a header in the file's user block (the bytes that the HDF5 library skips
before its superblock) names the format and holds the sha256 of everything after it::

    crfsdca-model\\n
    sha256 <64 hex digits>\\n
    (NUL bytes up to USERBLOCK)

The header is checked before the HDF5 library reads a byte: libhdf5 is not hardened
against damaged files (a damaged heap can crash it, or make it loop forever), so a
truncated, altered or half-copied file is refused here, in one line. Older files, written
before the header, start with HDF5's own signature: :func:`check_seal` says they carry no
checksum (their reader isolates libhdf5 in a child process). h5py and crfsdca versions
that know nothing of the header read these files as any HDF5 file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from ..errors import DataFormatError

USERBLOCK = 512
"""Bytes before the HDF5 superblock (the smallest user block HDF5 allows)."""
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_CHUNK = 2**20
H5PY_ERRORS = (OSError, RuntimeError, TypeError, ValueError, KeyError)
"""What h5py raises on a damaged file (a bad header, an attribute of an odd type, a
missing object)."""


def _digest(path: Path) -> str:
    """sha256 of the file after its user block."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(USERBLOCK)
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def seal(path: str | os.PathLike, fmt: str) -> None:
    """Write the header of ``path``, an HDF5 file made with a user block of
    :data:`USERBLOCK` bytes (``h5py.File(..., userblock_size=USERBLOCK)``)."""
    path = Path(path)
    header = f"{fmt}\nsha256 {_digest(path)}\n".encode("ascii")
    with open(path, "r+b") as f:
        f.write(header.ljust(USERBLOCK, b"\0"))


@contextlib.contextmanager
def sealed_hdf5(path: str | os.PathLike, fmt: str):
    """A new HDF5 file at ``path`` to write into, sealed (:func:`seal`) once closed."""
    import h5py  # lazy: the estimator imports this module, and a fit may write no file

    with h5py.File(path, "w", userblock_size=USERBLOCK) as f:
        yield f
    seal(path, fmt)


def check_seal(path: str | os.PathLike, fmt: str,
               kinds: str = "neither HDF5 nor a CRFsuite model") -> bool:
    """True if ``path`` carries the header of ``fmt`` and its content matches the header's
    sha256; False for a file that starts with HDF5's signature (written before headers
    were; unverified). DataFormatError for anything else, naming the file (``kinds``
    says what else a file of ``fmt``'s readers may be)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(USERBLOCK)
    except FileNotFoundError:
        raise DataFormatError(path, "no such file") from None
    except OSError as e:
        raise DataFormatError(path, f"cannot read it ({e.strerror or e})") from None
    if head.startswith(HDF5_SIGNATURE):
        return False
    name, _, rest = head.partition(b"\n")
    if not name.startswith(b"crfsdca-") or len(head) < USERBLOCK:
        raise DataFormatError(path, f"not a {fmt} file ({kinds})")
    if name != fmt.encode("ascii"):
        raise DataFormatError(path, f"not a {fmt} file (a {name.decode('ascii', 'replace')!r} "
                                    "file)")
    line, _, padding = rest.partition(b"\n")
    if not line.startswith(b"sha256 ") or len(line) != 71 or padding.strip(b"\0"):
        raise DataFormatError(path, f"damaged {fmt} file: its header is not "
                                    f"{fmt}, sha256 <digest>")
    if line[7:].decode("ascii", "replace") != _digest(path):
        raise DataFormatError(path, f"damaged {fmt} file: its content does not match the "
                                    "sha256 in its header (a truncated or altered copy)")
    return True
