"""The workflow's ``config.yaml`` read by a command (``featurize --config``) as the workflow
reads it: the same JSON schema (``workflow/schemas/config.schema.yaml``), so that a value
the workflow refuses (``test_fold: 42``, a misspelt key) is refused by hand too, with one
line naming the file, the entry and what was expected.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError, DataFormatError

SCHEMA = Path("workflow") / "schemas" / "config.schema.yaml"
"""The schema, relative to the workflow's directory (the Snakefile's)."""


def find_schema(config_path: str | os.PathLike) -> Path | None:
    """The schema of the workflow beside ``config_path``, else of this package's checkout."""
    for base in (Path(config_path).resolve().parent, Path(__file__).resolve().parents[3]):
        if (base / SCHEMA).is_file():
            return base / SCHEMA
    return None


def schema_problem(config: dict, schema_path: str | os.PathLike) -> str | None:
    """The most relevant violation of the schema, as ``entry.path: message``, or None."""
    # optional dependencies (workflow extra): only featurize --config checks a config
    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "top level"
    message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
    return f"{where}: {message}"


def load_config(path: str | os.PathLike) -> dict:
    """``config.yaml`` as a mapping, checked against the workflow's schema when found.

    Missing, unreadable, empty, invalid YAML, not a mapping, or against the schema: a
    ConfigError or DataFormatError naming the file (and the line, or the entry).
    """
    import yaml  # optional dependency (workflow extra): only featurize --config

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read the config ({e})") from None
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = " ".join(str(getattr(e, "problem", None) or e).split())  # one line
        raise DataFormatError(path, f"not valid YAML ({problem})",
                              mark.line + 1 if mark is not None else None) from None
    if not isinstance(config, dict):
        got = "nothing (an empty file)" if config is None else type(config).__name__
        raise ConfigError(f"{path}: expected a mapping of config sections (raw_dir, "
                          f"datasets...), got {got}")
    schema = find_schema(path)
    problem = schema_problem(config, schema) if schema is not None else None
    if problem is not None:
        raise ConfigError(f"{path}: {problem} (schema {schema})")
    return config
