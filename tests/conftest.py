"""Shared fixtures: paths of the repository and a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "data" / "raw"


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


def load_common(config: dict | None = None, root: Path = ROOT) -> SimpleNamespace:
    """The names of ``workflow/rules/common.smk`` (RUNS, GROUPS, train_mem_mb...) as the
    workflow in ``root`` defines them for ``config`` (default: its config.yaml), after the
    schema's validation and defaults, as the Snakefile does."""
    from snakemake.utils import validate

    if config is None:
        config = yaml.safe_load((root / "config.yaml").read_text())
    validate(config, str(root / "workflow" / "schemas" / "config.schema.yaml"))
    common = root / "workflow" / "rules" / "common.smk"
    names = {"workflow": SimpleNamespace(basedir=str(root)), "config": config}
    exec(compile(common.read_text(), str(common), "exec"), names)
    return SimpleNamespace(**names)


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
