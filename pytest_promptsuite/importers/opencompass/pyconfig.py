"""OpenCompass Python configs, evaluated, never executed.

A config is parsed with :mod:`ast` and walked by a small interpreter that knows the idioms the
configs use (``read_base()`` inheritance, ``type=`` class names, loops and comprehensions over
subsets, f-strings, prompt files read beside the config) and nothing else: no module is
imported (an imported name is a :class:`Ref`), no file outside the config tree is read, and the
walk is bounded in time (:data:`~..formats.limits.CONFIG_SECONDS`) and in the size of every value
it builds (:data:`~..formats.limits.CONFIG_VALUE`). Anything else is a ``path:line`` error.
"""

from __future__ import annotations

import ast
import operator
import time
from collections.abc import Callable
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_promptsuite.config.suite import confine
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.importers.opencompass.pyexpr import BINARY
from pytest_promptsuite.importers.opencompass.pyexpr import ConfigFile
from pytest_promptsuite.importers.opencompass.pyexpr import Opaque
from pytest_promptsuite.importers.opencompass.pyexpr import PyModule
from pytest_promptsuite.importers.opencompass.pyexpr import Ref
from pytest_promptsuite.importers.opencompass.pyexpr import evaluate_expr
from pytest_promptsuite.safety.limits import CONFIG_FILE_BYTES
from pytest_promptsuite.safety.limits import CONFIG_SECONDS
from pytest_promptsuite.safety.limits import CONFIG_VALUE


__all__ = ["Opaque", "Ref", "evaluate_config"]


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, dict, tuple, set)) else 0


class _Evaluator:
    """One walk of one config file; base configs get their own, sharing the deadline and cache."""

    def __init__(self, path: Path, root: Path, deadline: float, cache: dict[Path, dict[str, Any]],
                 where: dict[int, str]) -> None:
        self.path, self.root, self.deadline, self.cache = path, root, deadline, cache
        #: ``path:line`` of each dict the config built, by ``id`` (for the importer's messages)
        self.where = where
        self.env: dict[str, Any] = {"__file__": str(path), "__name__": "config"}
        self.line = 0

    def fail(self, message: str, node: ast.AST | None = None) -> ConfigError:
        line = getattr(node, "lineno", None) or self.line or 1
        return ConfigError(f"{self.path}:{line}: {message}")

    def tick(self, node: ast.AST) -> None:
        self.line = getattr(node, "lineno", self.line)
        if time.monotonic() > self.deadline:
            raise self.fail(f"evaluation stopped at {CONFIG_SECONDS}")

    def bounded(self, value: Any, node: ast.AST) -> Any:
        if isinstance(value, dict):
            self.where.setdefault(id(value), f"{self.path}:{getattr(node, 'lineno', None) or self.line or 1}")
        if _size(value) > CONFIG_VALUE.value:
            raise self.fail(f"a value larger than {CONFIG_VALUE}", node)
        return value

    # -- statements --------------------------------------------------------------------------

    def run(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            self.tick(stmt)
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:  # noqa: C901 (one branch per statement kind)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                top = alias.name if alias.asname else alias.name.split(".")[0]
                self.env[alias.asname or top] = PyModule(top)
        elif isinstance(stmt, ast.ImportFrom):
            self.import_from(stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            if stmt.value is not None:
                value = self.expr(stmt.value)
                for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    self.assign(target, value)
        elif isinstance(stmt, ast.AugAssign):
            op = BINARY.get(type(stmt.op))
            if op is None:
                raise self.fail("this operator is not evaluated", stmt)
            current = self.expr(stmt.target)
            self.assign(stmt.target, self.binary(op, current, self.expr(stmt.value), stmt))
        elif isinstance(stmt, ast.Expr):
            self.expr(stmt.value)
        elif isinstance(stmt, ast.For):
            self.for_loop(stmt)
        elif isinstance(stmt, ast.If):
            self.run(stmt.body if self.expr(stmt.test) else stmt.orelse)
        elif isinstance(stmt, ast.With):
            self.with_block(stmt)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    self.env.pop(target.id, None)
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            self.env[stmt.name] = Opaque(stmt.name)
        elif isinstance(stmt, ast.Break):
            raise _Break
        elif isinstance(stmt, ast.Continue):
            raise _Continue
        elif not isinstance(stmt, (ast.Pass, ast.Assert)):
            raise self.fail(f"a {type(stmt).__name__} statement is not evaluated in an imported config", stmt)

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(value)
            if len(items) != len(target.elts):
                raise self.fail(f"cannot unpack {len(items)} values into {len(target.elts)} names", target)
            for sub, item in zip(target.elts, items, strict=False):
                self.assign(sub, item)
        elif isinstance(target, ast.Subscript):
            container = self.expr(target.value)
            if not isinstance(container, (dict, list)):
                raise self.fail("only a dict or list item can be assigned", target)
            container[self.expr(target.slice)] = value
        else:
            raise self.fail("this assignment target is not evaluated", target)

    def for_loop(self, stmt: ast.For) -> None:
        for item in list(self.expr(stmt.iter)):
            self.tick(stmt)
            self.assign(stmt.target, item)
            try:
                self.run(stmt.body)
            except _Break:
                return
            except _Continue:
                continue
        self.run(stmt.orelse)

    def with_block(self, stmt: ast.With) -> None:
        for item in stmt.items:
            value = self.expr(item.context_expr)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, value)
        self.run(stmt.body)

    def import_from(self, stmt: ast.ImportFrom) -> None:
        module = stmt.module or ""
        source = self.module_file(module, stmt.level, stmt)
        if source is None:
            for alias in stmt.names:
                self.env[alias.asname or alias.name] = Ref(module, alias.name)
            return
        names = self.load(source, stmt)
        for alias in stmt.names:
            if alias.name == "*":
                self.env.update({k: v for k, v in names.items() if not k.startswith("_")})
            elif alias.name not in names:
                raise self.fail(f"{source.name} defines no {alias.name!r}", stmt)
            else:
                self.env[alias.asname or alias.name] = names[alias.name]

    def module_file(self, module: str, level: int, node: ast.AST) -> Path | None:
        """The config file a ``from ... import`` names (None: a module that is not evaluated)."""
        parts = module.split(".") if module else []
        if level:
            base = self.path.parent
            for _ in range(level - 1):
                base = base.parent
        elif parts[:2] == ["opencompass", "configs"] or parts[:1] == ["configs"]:
            parts = parts[2:] if parts[0] == "opencompass" else parts[1:]
            base = self.root
        else:
            return None
        if not parts:
            raise self.fail("a bare relative import is not evaluated", node)
        relative = Path(*parts).with_suffix(".py")
        target = confine(self.root, base / relative)
        if target is None or not target.is_file():
            raise self.fail(f"{module or '.'}: no config file {relative} inside {self.root}", node)
        return target

    def load(self, source: Path, node: ast.AST) -> dict[str, Any]:
        if source not in self.cache:
            self.cache[source] = {}  # a config importing itself sees nothing, not a loop
            self.cache[source] = _Evaluator(source, self.root, self.deadline, self.cache, self.where).evaluate()
        return self.cache[source]

    def evaluate(self) -> dict[str, Any]:
        """The config's names after its statements ran (imports and private names left out)."""
        text = self.read_text(self.path, None)
        try:
            tree = ast.parse(text, filename=str(self.path))
        except (SyntaxError, ValueError, RecursionError) as exc:
            line = getattr(exc, "lineno", None) or 1
            raise ConfigError(f"{self.path}:{line}: not valid Python: {getattr(exc, 'msg', exc)}") from None
        try:
            self.run(tree.body)
        except ConfigError:
            raise
        except RecursionError:
            raise self.fail("nested too deeply to evaluate") from None
        except (_Break, _Continue):
            raise self.fail("break or continue outside a loop") from None
        except Exception as exc:  # what a builtin raised on the config's values
            raise self.fail(f"{type(exc).__name__}: {exc}") from None
        return {k: v for k, v in self.env.items() if not isinstance(v, (PyModule, Ref))}

    def read_text(self, path: Path, node: ast.AST | None) -> str:
        try:
            size = path.stat().st_size
            if size > CONFIG_FILE_BYTES.value:
                raise self.fail(f"{path}: larger than {CONFIG_FILE_BYTES}", node)
            return path.read_bytes().decode("utf-8-sig")
        except OSError as exc:
            raise self.fail(f"cannot read {path}: {exc.strerror}", node) from None
        except UnicodeDecodeError as exc:
            raise self.fail(f"{path} is not UTF-8 text: {exc.reason}", node) from None

    # -- expressions -------------------------------------------------------------------------

    def expr(self, node: ast.expr) -> Any:
        return self.bounded(evaluate_expr(self, node), node)

    def binary(self, op: Callable[[Any, Any], Any], left: Any, right: Any, node: ast.AST) -> Any:
        if op is operator.mul and isinstance(right, int) and _size(left) * max(right, 0) > CONFIG_VALUE.value:
            raise self.fail(f"a value larger than {CONFIG_VALUE}", node)
        if op is operator.mul and isinstance(left, int) and _size(right) * max(left, 0) > CONFIG_VALUE.value:
            raise self.fail(f"a value larger than {CONFIG_VALUE}", node)
        if op is operator.pow and isinstance(right, int) and abs(right) > 64:
            raise self.fail("a power above 64 is not evaluated", node)
        return self.bounded(op(left, right), node)

    def open_file(self, raw: Any, node: ast.AST) -> ConfigFile:
        """``open(path)``: a file inside the config tree, read at once."""
        if not isinstance(raw, str):
            raise self.fail("open() needs a path string", node)
        target = confine(self.root, self.path.parent / raw)
        if target is None:
            raise self.fail(f"reads {raw!r}, outside the config tree {self.root}", node)
        return ConfigFile(self.read_text(target, node))


def config_root(path: Path) -> Path:
    """The config tree: the nearest ancestor folder named ``configs``, else the config's folder."""
    for parent in path.resolve().parents:
        if parent.name == "configs":
            return parent
    return path.resolve().parent


def evaluate_config(path: Path, *, root: Path | None = None, seconds: float | None = None,
                    where: dict[int, str] | None = None) -> dict[str, Any]:
    """The top-level names of the config at ``path`` (a ``path:line`` ConfigError when it cannot
    be evaluated); base configs and files it reads must lie inside ``root`` (:func:`config_root`);
    the walk stops after ``seconds`` (default :data:`CONFIG_SECONDS`); ``where`` is filled with the
    ``path:line`` of every dict the config built, by ``id``."""
    resolved = path.resolve()
    tree = (root or config_root(path)).resolve()
    if confine(tree, resolved) is None:
        raise ConfigError(f"{path}: the config is not inside its config tree {tree}")
    deadline = time.monotonic() + (CONFIG_SECONDS.value if seconds is None else seconds)
    return _Evaluator(resolved, tree, deadline, {}, where if where is not None else {}).evaluate()

