"""The package's shape, read from its own imports (statically, as the workflow reads them).

- the top level holds what users import; everything else is in a folder by role;
- no import circle, counting the imports inside functions;
- ``runtime/`` (how the package runs) imports nothing of the package but its errors;
- ``reproduction/`` (what only the paper's reproduction needs) is imported by the command
  line and itself only;
- the layers below the estimator (``data/``, ``model/``, ``solvers/``) import neither
  ``training/``, ``formats/``, ``cli/`` nor the public modules;
- an import inside a function, any import (of the package, of the standard library or of
  a dependency), says why in a comment (import time, an optional dependency): on its
  line or on the line above its group;
- the tests mirror the package: ``tests/<folder>/test_<subject>.py``, one folder per
  folder of the package plus ``integration/``, each basename once (pytest imports test
  files by basename), and the paths ``make test-oldest`` leaves out exist.
"""

from __future__ import annotations

import ast
import io
import tokenize

import oldest_versions
import pytest
from helpers.paths import ROOT as REPO

from crfsdca.reproduction.sources import PACKAGE, ROOT, direct_imports

FACE = {"estimator", "cv", "corpus", "tagger", "metrics", "scorers", "model_file", "errors",
        "eli5_support", "templates"}
"""The top-level modules: what users import (besides ``__init__`` and ``__main__``)."""
FOLDERS = {"cli", "data", "formats", "model", "reproduction", "runtime", "solvers",
           "training"}
LOWER = ("data", "model", "solvers")
"""Layers that the training loop, the formats and the estimator build on."""


def _modules() -> list[str]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


MODULES = _modules()


def _folder(module: str) -> str | None:
    """The folder of ``crfsdca.X.…`` (X), None for the top level and the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FOLDERS) else None


def _edges(module: str) -> set[str]:
    """The package's modules that ``module`` names in an import (without the package
    itself, whose only import is the lazy ``crfsdca.CRF``)."""
    return set(direct_imports(module, ancestors=False)) - {PACKAGE, module}


def test_top_level_is_what_users_import():
    top = {m.split(".")[1] for m in MODULES if m.count(".") == 1}
    assert top - FOLDERS == FACE | {"__main__"}
    assert {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()} == FOLDERS


def test_no_import_circle():
    graph = {m: _edges(m) for m in MODULES}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                circle = stack[stack.index(n):] + [n]
                pytest.fail("import circle: " + " -> ".join(circle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in MODULES:
        if m not in state:
            visit(m)


@pytest.mark.parametrize("module", [m for m in MODULES if _folder(m) == "runtime"])
def test_runtime_imports_nothing_but_errors(module):
    outside = {n for n in _edges(module) if _folder(n) != "runtime"}
    assert outside <= {f"{PACKAGE}.errors"}, f"{module} imports {sorted(outside)}"


def test_only_the_command_line_imports_the_reproduction():
    for m in MODULES:
        if _folder(m) in ("cli", "reproduction"):
            continue
        found = sorted(n for n in _edges(m) if _folder(n) == "reproduction")
        assert not found, f"{m} imports {found}"


def test_lower_layers_do_not_import_upper_ones():
    upper = {"training", "formats", "cli", "reproduction"}
    face = {f"{PACKAGE}.{name}" for name in FACE - {"errors"}}
    for m in MODULES:
        if _folder(m) not in LOWER:
            continue
        found = sorted(n for n in _edges(m) if _folder(n) in upper or n in face)
        assert not found, f"{m} imports {found}"


def _comment_lines(source: str) -> set[int]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0] for t in tokens if t.type == tokenize.COMMENT}


def _path(module: str):
    base = ROOT.parent.joinpath(*module.split("."))
    return next(p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file())


def _silent_imports(module: str) -> dict[str, list[int]]:
    """``{file:function: [lines]}``: the imports (any: relative, of the package, of the
    standard library or of a dependency) inside a function of ``module`` that have no
    comment on their lines nor on the line above their group (the import and blank lines
    around them), by the innermost function holding them."""
    path = _path(module)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    comments = _comment_lines(source)
    blank = {i for i, line in enumerate(source.splitlines(), 1) if not line.strip()}
    import_lines = blank | {line for node in ast.walk(tree)
                            if isinstance(node, (ast.Import, ast.ImportFrom))
                            for line in range(node.lineno, node.end_lineno + 1)}
    where = path.relative_to(ROOT).as_posix()
    silent: dict[str, list[int]] = {}

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if function is not None and isinstance(child, (ast.Import, ast.ImportFrom)):
                start = child.lineno
                while start - 1 in import_lines:
                    start -= 1
                own = set(range(child.lineno, child.end_lineno + 1))
                if not (own | {start - 1}) & comments:
                    silent.setdefault(f"{where}:{function}", []).append(child.lineno)
            visit(child, function)

    visit(tree, None)
    return silent


@pytest.mark.parametrize("module", MODULES)
def test_an_import_inside_a_function_says_why(module):
    silent = _silent_imports(module)
    assert not silent, f"imports inside functions without a reason: {silent}"


TESTS = REPO / "tests"
TEST_FOLDERS = FOLDERS | {"integration"}
"""The folders of tests/ that hold test files: the package's folders and integration/."""


def test_the_tests_mirror_the_package():
    files = [p.relative_to(TESTS) for p in TESTS.rglob("test_*.py")
             if "__pycache__" not in p.parts and p.parts[len(TESTS.parts)] != "fuzz"]
    misplaced = [str(f) for f in files if len(f.parts) != 2 or f.parts[0] not in TEST_FOLDERS]
    assert not misplaced, f"test files outside tests/<{'|'.join(sorted(TEST_FOLDERS))}>/"
    names = [f.name for f in files]
    assert len(set(names)) == len(names), sorted({n for n in names if names.count(n) > 1})
    assert {f.parts[0] for f in files} == TEST_FOLDERS
    assert not [str(p) for p in TESTS.rglob("__init__.py")
                if p.parent.name in TEST_FOLDERS], "test folders are not packages"


def test_the_tests_make_test_oldest_leaves_out_exist():
    for name in oldest_versions.THEIR_TESTS:
        path, _, test = name.partition("::")
        assert (REPO / path).is_file(), name
        if test:
            assert f"def {test}(" in (REPO / path).read_text(), name
