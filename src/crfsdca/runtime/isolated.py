"""A reader run in a child process, for files that a library not hardened against damage
must parse unverified (libhdf5 on an HDF5 model without a checksum: on a damaged heap it
can crash the process or loop forever).

:func:`read_isolated` returns what the reader returns, raises the package error it
raises, and turns a crash, a hang or an allocation past a bound (derived from the file's
size) into one DataFormatError naming the file. The child is ``python -m
crfsdca.runtime.isolated``: the call comes on its standard input, the answer goes back on
its standard output, both pickled.
"""

from __future__ import annotations

import importlib
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

from ..errors import CrfsdcaError, DataFormatError, ResourceError
from . import memory

SECONDS = 20.0
BYTES_PER_SECOND = 20e6
"""The child's time: SECONDS, and a second more for each BYTES_PER_SECOND of the file."""
MEMORY = 2**30
EXPANSION = 2200
"""The child may allocate MEMORY, and EXPANSION bytes more per byte of the file (twice
deflate's largest ratio: a dataset decompressed, then its copy)."""


def read_isolated(path: str | os.PathLike, what: str, reader, *args):
    """``reader(path, *args)`` run in a child process (``reader`` a module-level function
    that takes the path first); ``what`` names the file's kind in errors."""
    path = Path(path)
    size = path.stat().st_size
    call = pickle.dumps((reader.__module__, reader.__qualname__, str(path), args))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    timeout = SECONDS + size / BYTES_PER_SECOND
    try:
        child = subprocess.run([sys.executable, "-m", __name__, str(MEMORY + EXPANSION * size)],
                               input=call, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise DataFormatError(path, f"damaged {what}: the HDF5 library did not finish "
                                    f"reading it in {timeout:.0f} s") from None
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        raise DataFormatError(path, f"damaged {what}: the HDF5 library crashed reading it "
                                    f"({name})")
    try:
        kind, value = pickle.loads(child.stdout)
    except Exception:  # noqa: BLE001 (no answer: the child died before it could give one)
        last = (child.stderr.decode("utf-8", "replace").strip().splitlines() or ["?"])[-1]
        raise DataFormatError(path, f"damaged {what}: its reader failed ({last[:200]})") \
            from None
    if kind == "ok":
        return value
    if kind == "memory":
        raise DataFormatError(path, f"damaged {what}: reading it takes more than "
                                    f"{value / 2**30:.1f} GiB, more than a file of {size:,} "
                                    "bytes can hold")
    if kind == "ResourceError":
        raise ResourceError(value)
    raise DataFormatError(path, value.removeprefix(f"{path}: "))


def _child(max_bytes: int) -> None:
    """Read the call from standard input, answer on standard output: ("ok", result),
    (error class, message) for a package error, ("memory", bound) past the bound."""
    module, name, path, args = pickle.loads(sys.stdin.buffer.read())
    reader = getattr(importlib.import_module(module), name)
    memory.limit_address_space(max_bytes)
    try:
        answer = ("ok", reader(Path(path), *args))
    except CrfsdcaError as e:
        answer = (type(e).__name__, str(e))
    except MemoryError:
        answer = ("memory", max_bytes)
    sys.stdout.buffer.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    _child(int(sys.argv[1]))
