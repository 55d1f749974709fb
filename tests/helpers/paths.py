"""Where the repository is, for tests at any depth of ``tests/``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root (the folder of pyproject.toml)."""
RAW = ROOT / "data" / "raw"
"""The vendored raw files of the workflow."""
