"""Arrays in their own mappings: in memory, or in a file that nothing leaves behind."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from crfsdca.errors import ResourceError
from crfsdca.runtime import jit
from crfsdca.runtime.jit import stream_copy, stream_empty


def test_a_store_in_a_file_reads_what_was_written_and_leaves_no_file(tmp_path):
    a = stream_empty(1000, np.float32, str(tmp_path))
    a[:] = np.arange(1000)
    b = stream_copy(np.arange(5.0), directory=str(tmp_path))
    assert a.dtype == np.float32 and a[999] == 999 and b.tolist() == [0, 1, 2, 3, 4]
    assert list(tmp_path.iterdir()) == []  # removed at once, mapped still


def test_a_directory_that_cannot_hold_the_store_is_one_error(tmp_path, monkeypatch):
    with pytest.raises(ResourceError, match="nope: cannot make a file there"):
        stream_empty(10, directory=str(tmp_path / "nope"))

    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(jit.os, "posix_fallocate", full, raising=False)
    with pytest.raises(ResourceError, match=r"cannot reserve 0.00 GiB there \(No space"):
        stream_empty(10, directory=str(tmp_path))
    assert list(tmp_path.iterdir()) == []
