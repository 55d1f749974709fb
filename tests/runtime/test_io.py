"""crfsdca.runtime.io: stale temporary files of killed writers, and outputs checked before work."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from crfsdca.errors import OutputError
from crfsdca.runtime.io import atomic_write, check_writable


def test_a_killed_writer_leaves_a_temporary_file_that_the_next_write_removes(tmp_path):
    target = tmp_path / "trace.csv"
    script = ("import os, sys, time\n"
              "from crfsdca.runtime.io import atomic_write\n"
              "with atomic_write(sys.argv[1]) as f:\n"
              "    f.write('partial'); f.flush(); print('ready', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(target)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)  # kill -9: no cleanup runs
    proc.wait(timeout=30)
    stale = [p.name for p in tmp_path.iterdir()]
    assert len(stale) == 1 and stale[0].startswith(".trace.csv.") and not target.exists()
    other = tmp_path / ".trace.csv.otherhost-1.abc.tmp"  # another host's: never touched
    other.write_text("x")
    with atomic_write(target) as f:
        f.write("done")
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "trace.csv"]


def test_a_live_writer_keeps_its_temporary_file(tmp_path):
    target = tmp_path / "w.h5"
    with atomic_write(target) as f:  # our own (live) temporary file survives a nested write
        f.write("outer")
        with atomic_write(tmp_path / "w.h5") as g:
            g.write("inner")
        assert len([p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]) == 1
    assert target.read_text() == "outer"


def test_check_writable(tmp_path):
    check_writable(tmp_path / "new" / "deeper", directory=True)
    check_writable(tmp_path / "new" / "file.h5")
    assert list(tmp_path.iterdir()) == []  # creates nothing
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="is a file; expected a directory"):
        check_writable(tmp_path / "f", directory=True)
    with pytest.raises(OutputError, match="is a directory; expected a file"):
        check_writable(tmp_path, directory=False)
    with pytest.raises(OutputError, match="is a file, not a directory"):
        check_writable(tmp_path / "f" / "x.h5")


def test_check_writable_read_only(unwritable_dir):
    with pytest.raises(OutputError, match="cannot write in"):
        check_writable(unwritable_dir / "run", directory=True)
