"""The source files a piece of the package depends on: its import closure, read statically.

The workflow lists them as each rule's ``code`` input, so that editing a module reruns
exactly the jobs whose code imports it (Snakemake compares checksums, so a bare touch
reruns nothing). Imports are read from the source with :mod:`ast`, wherever they are
(module level or inside a function), so nothing is executed and numba is not loaded.
Imports by name at run time (``importlib``) are not followed: the solver registry builds
solvers that way, so that each solver's runs depend on its own modules only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

PACKAGE = "crfsdca"
ROOT = Path(__file__).resolve().parent.parent
"""The package directory (``src/crfsdca``; this module is in its reproduction/ folder)."""


def module_path(module: str, root: Path = ROOT) -> Path | None:
    """The file of a module of the package (``crfsdca.solvers.sdca``) in the package
    directory ``root``, or None."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = Path(root).joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


@cache
def direct_imports(module: str, root: Path = ROOT, ancestors: bool = True) -> frozenset[str]:
    """The package's modules that ``module`` imports (and, with ``ancestors``, their parent
    packages, which Python runs first)."""
    path = module_path(module, root)
    if path is None:
        return frozenset()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    out = {m for m in found if module_path(m, root) is not None}
    for m in list(out) if ancestors else ():
        out.update(_ancestors(m))
    out.discard(module)
    return frozenset(out)


def closure(modules: Iterable[str], root: Path = ROOT) -> list[str]:
    """Every module of the package that ``modules`` import, transitively, themselves
    included (sorted); the sources are read from the package directory ``root``."""
    root = Path(root)
    todo = list(modules)
    seen: set[str] = set()
    while todo:
        m = todo.pop()
        if m in seen or module_path(m, root) is None:
            continue
        seen.add(m)
        seen.update(_ancestors(m))
        todo.extend(direct_imports(m, root))
    return sorted(seen)


def closure_files(modules: Iterable[str], source: str | Path | None = None) -> list[str]:
    """The files of :func:`closure` read from the checkout ``source`` (the directory
    holding ``src/``; default: the one this module is in), relative to it."""
    base = Path(source).resolve() if source is not None else ROOT.parent.parent
    root = base / "src" / PACKAGE
    return [module_path(m, root).relative_to(base).as_posix() for m in closure(modules, root)]
