"""Shared fixtures: a local HTTP server on 127.0.0.1 and a directory nothing can be
written to.

The tests mirror the package: ``tests/<folder>/test_<subject>.py`` for the folder of
``src/crfsdca`` under test (solvers, model, data, formats, runtime, training,
reproduction, cli), and ``tests/integration/`` for the public modules used whole, the
workflow, the wheel and checks of the repository itself. Plain helpers (paths, reference
computations, the workflow's clone) are in ``tests/helpers/``, imported as ``helpers.x``:
pyproject's ``pythonpath = ["tests"]`` puts this folder on ``sys.path``. Test folders have
no ``__init__.py`` (pytest's default ``prepend`` import mode), so a test file's basename
must be unique across folders; integration/test_package_layout.py checks it. Never
``from conftest import``: pytest reloads ``conftest`` per folder."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def http_dir(tmp_path):
    """(directory served, base URL): files put in the directory are served over HTTP."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def unwritable_dir(tmp_path):
    """A directory that takes no new file: a mode-0555 one, or for root (who writes into
    those) /proc/1, a directory of the kernel's that nobody can add a file to."""
    import os

    if os.geteuid() == 0:
        return Path("/proc/1")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    return locked
