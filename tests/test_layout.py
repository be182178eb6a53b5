"""The package's shape, kept by tests: one owner per concept, data flowing one way.

No import circle (imports inside functions count; ``TYPE_CHECKING`` imports do not), no core module importing
a dialect, at most eight modules at the root, no two module names alike, pytest imported only by the three
glue modules, a docstring on every public function, class and method, and small blocks (radon's complexity).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


PACKAGE = Path(__file__).parents[1] / "pytest_promptsuite"
#: One concept per module, with the size it needs: past this, a warning asks whether it holds two.
LONG_MODULE_LINES = 800
MAX_ROOT_MODULES = 8
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

    def walk(body: list[ast.stmt]) -> Iterator[tuple[str, int]]:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
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


#: Where the dialects are registered (as llm registers its default plugins): the one core module that names them.
DIALECT_REGISTRATION = "pytest_promptsuite.run.registration"
#: The old homes of the promptfoo runtime, forwarding the imports of suites written before the dialects moved.
FORWARDS = {"pytest_promptsuite.importers.promptfoo.runtime", "pytest_promptsuite.prompts.files.promptfoo_code"}


def _dialect(name: str) -> bool:
    return name.startswith("pytest_promptsuite.dialects.") or name == "pytest_promptsuite.dialects"


def test_no_core_module_imports_a_dialect() -> None:
    """The core holds what every suite uses; each dialect is a plugin of its hooks, as a third party's is."""
    reach = [
        f"{name} imports {target} (line {line})"
        for name, path in MODULES.items()
        if not _dialect(name) and name != DIALECT_REGISTRATION and name not in FORWARDS
        for target, line in _imports(name, path)
        if _dialect(target)
    ]
    assert reach == []


def test_the_dialect_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from pytest_promptsuite.dialects.nemo import nemo_prompt\n", encoding="utf-8")
    assert [target for target, _ in _imports("pytest_promptsuite.prompts.m", module)] == [
        "pytest_promptsuite.dialects.nemo.nemo_prompt"
    ]


def test_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.filterwarnings("default::UserWarning")
def test_long_modules_are_flagged() -> None:
    """A module past ~800 lines may hold two concepts: a warning, not a limit."""
    for name, path in MODULES.items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LONG_MODULE_LINES:
            warnings.warn(f"{name} has {lines} lines: does it hold one concept?", UserWarning, stacklevel=1)


def test_the_root_holds_at_most_eight_modules() -> None:
    root = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def _near(a: str, b: str) -> bool:
    """Tell whether two names are a plural or one added letter apart (``suite``/``suites``)."""
    if a == b:
        return False
    if a + "s" == b or b + "s" == a or a + "es" == b or b + "es" == a:
        return True
    short, long_ = sorted((a, b), key=len)
    return len(long_) - len(short) == 1 and any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def test_no_two_modules_share_a_basename() -> None:
    """One name, one module: ``compile.py`` in two folders makes every traceback and import ambiguous."""
    names: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if path.name != "__init__.py":
            names.setdefault(path.name, []).append(name)
    assert {base: where for base, where in names.items() if len(where) > 1} == {}


def test_no_two_module_names_a_letter_or_a_plural_apart() -> None:
    names = sorted({name.rpartition(".")[2] for name in MODULES if name != "pytest_promptsuite"})
    close = [(a, b) for a, b in itertools.combinations(names, 2) if _near(a, b)]
    assert close == []


def test_near_names_are_found() -> None:
    assert [
        _near(a, b)
        for a, b in [
            ("suite", "suites"),
            ("case", "cases"),
            ("plugin", "plugins"),
            ("row", "rows"),
            ("model", "mode"),
            ("filters", "filter"),
            ("base", "case"),
            ("case", "case"),
            ("cases", "checks"),
        ]
    ] == [True, True, True, True, True, True, False, False, False]


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


#: errors.py draws the exception family tree in its docstring (STYLE example 13, httpx's ``_exceptions.py``).
TREE_DOCSTRINGS = {"pytest_promptsuite.errors"}
#: Words a docstring that starts with a verb never starts with.
NOT_VERBS = frozenset(
    "a an the what which whether how where when one each every this these that its our all no any some if".split()
)


def test_module_docstrings_say_what_the_module_holds_in_three_lines() -> None:
    long = {}
    for name, path in MODULES.items():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or ""
        if len(doc.strip().splitlines()) > 3 and name not in TREE_DOCSTRINGS:
            long[name] = len(doc.strip().splitlines())
    assert long == {}


def test_function_docstrings_start_with_a_verb() -> None:
    """Functions and methods say what they do (``Return ...``); properties and dunders may not."""
    nouns = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("__"):
                continue
            if any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list):
                continue
            doc = ast.get_docstring(node)
            if doc and doc.split()[0].strip("`*(").rstrip(",.:").lower() in NOT_VERBS:
                nouns.append(f"{name}:{node.lineno} {node.name}: {doc.splitlines()[0][:60]}")
    assert nouns == []


def test_no_docstring_cites_a_spec_outside_the_repository() -> None:
    cites = [name for name, path in MODULES.items() if "SPEC §" in path.read_text(encoding="utf-8")]
    assert cites == []


#: radon's ranks of a block too complex to keep outside the dialects (D: a cyclomatic complexity of 21 or more).
TOO_COMPLEX = frozenset("DEF")
#: The package's mean complexity stays under this, over every block as ``radon cc -a`` counts them.
MAX_MEAN_COMPLEXITY = 4.0


def _complexity_blocks() -> list[tuple[str, Any]]:
    """Every block radon measures (functions, methods and classes), with its module."""
    pytest.importorskip("radon")  # in the lint extra; CI installs .[test,lint]
    from radon.complexity import cc_visit

    return [(name, block) for name, path in MODULES.items() for block in cc_visit(path.read_text(encoding="utf-8"))]


def _shown(name: str, block: Any) -> str:
    from radon.complexity import cc_rank

    return f"{name}:{block.lineno} {block.fullname} {cc_rank(block.complexity)} ({block.complexity})"


def test_no_block_outside_the_dialects_is_ranked_d_or_worse() -> None:
    """Split such a block along its seams (a helper per concept); the dialects may keep a few."""
    blocks = _complexity_blocks()  # skips where radon is not installed (the lower-bounds run)
    from radon.complexity import cc_rank

    core = [(name, b) for name, b in blocks if name.partition(".dialects")[1] != ".dialects"]
    assert core, "no block measured"
    assert [_shown(name, b) for name, b in core if cc_rank(b.complexity) in TOO_COMPLEX] == []


def test_mean_complexity_is_under_four() -> None:
    """The mean ``radon cc -a -s pytest_promptsuite`` prints, over functions, methods and classes."""
    blocks = _complexity_blocks()
    mean = sum(b.complexity for _, b in blocks) / len(blocks)
    worst = sorted(blocks, key=lambda item: -item[1].complexity)[:10]
    assert mean < MAX_MEAN_COMPLEXITY, (
        f"mean complexity {mean:.3f} over {len(blocks)} blocks; the most complex: "
        + "; ".join(_shown(name, b) for name, b in worst)
    )
