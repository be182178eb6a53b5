"""The package's shape, kept by tests: one owner per concept, data flowing one way.

No import circle (lazy imports inside functions count; ``TYPE_CHECKING`` imports do not), no
module over 450 lines, no function over 60 lines, pytest imported only by the three modules that
glue us to it, and a docstring on every public function, class and method.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest


PACKAGE = Path(__file__).parents[1] / "pytest_promptsuite"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60
PYTEST_MODULES = {"pytest_promptsuite.items", "pytest_promptsuite.plugin", "pytest_promptsuite.hookspecs"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """Every module of the package that ``name`` imports (at any depth but TYPE_CHECKING)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    source = path.read_text(encoding="utf-8")
    lazy = path.name == "__init__.py" and "lazy_exports(" in source

    def walk(body: list[ast.stmt]) -> Iterator[tuple[str, int]]:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not lazy:
                continue  # but a lazy package's names (``lazy_exports``) are imports made later
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
                if submodules and len(submodules) == len(node.names):
                    yield from ((m, node.lineno) for m in submodules)  # ``from . import x``
                elif target in MODULES:
                    yield target, node.lineno
            elif isinstance(node, ast.Import):
                yield from ((a.name, node.lineno) for a in node.names if a.name in MODULES)
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    yield from walk(inner)

    yield from walk(ast.parse(source).body)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for target, _ in _imports(name, path):
            if target != name and not name.startswith(target + "."):  # a package's own parents load first
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    assert _cycles(_graph()) == []


def test_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_size(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines"


def test_function_size() -> None:
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{name}:{node.lineno} {node.name} ({length} lines)")
    assert long == []


def test_only_the_glue_imports_pytest() -> None:
    importers = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("pytest", "_pytest") for a in node.names):
                importers.add(name)
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("pytest", "_pytest"):
                importers.add(name)
    assert importers <= PYTEST_MODULES


def _public(module: object) -> Iterator[tuple[str, object]]:
    for attr, value in vars(module).items():
        if attr.startswith("_") or getattr(value, "__module__", None) != getattr(module, "__name__", None):
            continue
        if inspect.isfunction(value):
            yield attr, value
        elif inspect.isclass(value):
            yield attr, value
            for member, inner in vars(value).items():
                if member.startswith("_") or not (
                    inspect.isfunction(inner) or isinstance(inner, (property, classmethod, staticmethod))
                ):
                    continue
                yield f"{attr}.{member}", getattr(value, member)


def test_public_api_has_docstrings() -> None:
    missing = []
    for name in MODULES:
        if any(part.startswith("_") and part != "__init__" for part in name.split(".")):
            continue
        module = importlib.import_module(name)
        for attr, value in _public(module):
            doc = inspect.getdoc(value.fget if isinstance(value, property) else value)
            if not doc:
                missing.append(f"{name}.{attr}")
    assert missing == []
