"""The docstrings of the modules with an API page render on the site: no Sphinx role
(``:func:`x```, ``:class:`x```...), which mkdocstrings prints as it is; cross-references
are autorefs' ``[text][crfsdca.x.y]``. The modules are those that ``docs/reference/*.md``
render (``::: name``), and every public object of theirs has a docstring."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from helpers.paths import ROOT

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|data|attr|exc|obj|const|ref|term):`")


def _path(module: str):
    base = ROOT / "src" / Path(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()),
                None)


def _module_of(name: str) -> str:
    """The module of a rendered name (``crfsdca.estimator.CRF`` -> ``crfsdca.estimator``)."""
    parts = name.split(".")
    while parts and _path(".".join(parts)) is None:
        parts.pop()
    return ".".join(parts)


RENDERED = sorted(line.split(":::", 1)[1].strip()
                  for page in (ROOT / "docs" / "reference").glob("*.md")
                  for line in page.read_text().splitlines() if line.startswith(":::"))
"""What the API pages render: modules, or single objects (``crfsdca.estimator.CRF``)."""
MODULES = sorted({_module_of(name) for name in RENDERED})


def _docstrings(tree: ast.Module):
    """(line, name, docstring) of the module, its classes and functions, and the string
    statements after assignments (attribute docstrings)."""
    yield 1, "module", ast.get_docstring(tree) or ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.lineno, node.name, ast.get_docstring(node) or ""
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for before, after in zip(body, body[1:], strict=False):
                if isinstance(before, (ast.Assign, ast.AnnAssign)) and \
                        isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) \
                        and isinstance(after.value.value, str):
                    yield after.lineno, "attribute", after.value.value


def _source(module: str) -> ast.Module:
    return ast.parse(_path(module).read_text())


def test_the_reference_pages_render_the_public_modules():
    assert {"crfsdca.estimator", "crfsdca.tagger", "crfsdca.metrics", "crfsdca.scorers",
            "crfsdca.model_file", "crfsdca.formats.crfsuite_model"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_no_sphinx_role_in_a_public_module(module):
    found = [f"{module}:{line} ({name}): {m.group(0)}..."
             for line, name, text in _docstrings(_source(module))
             for m in ROLE.finditer(text)]
    assert not found, "Sphinx roles, which the site prints raw:\n" + "\n".join(found)


def _defined(tree: ast.Module) -> dict[str, str]:
    """The names a module defines at its top level, each with its docstring ("" if none):
    functions and classes, and assignments followed by a string (attribute docstrings)."""
    out: dict[str, str] = {}
    for node, after in zip(tree.body, [*tree.body[1:], None], strict=True):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = ast.get_docstring(node) or ""
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            doc = (after.value.value if isinstance(after, ast.Expr)
                   and isinstance(after.value, ast.Constant)
                   and isinstance(after.value.value, str) else "")
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = doc
    return out


@pytest.mark.parametrize("name", RENDERED)
def test_every_rendered_name_has_a_docstring(name):
    """A rendered module's public names (its ``__all__``, else those not starting with
    _), or the rendered object itself."""
    module = _module_of(name)
    defined = _defined(_source(module))
    if name == module:
        wanted = getattr(importlib.import_module(module), "__all__", None) or \
            [n for n in defined if not n.startswith("_")]
    else:
        wanted = [name[len(module) + 1:]]
    missing = [n for n in wanted if n in defined and not defined[n].strip()]
    assert not missing, f"{module}: no docstring for {missing}"
