"""The expressions of an imported Python config (:mod:`.pyconfig`): literals, names, f-strings,
operators, comprehensions, lambdas, a few pure builtins and the methods of plain values.

Nothing here imports or runs anything of the config's: an imported name is a :class:`Ref`, a
function it defines an :class:`Opaque`, and only ``open()`` (through the host, inside the config
tree) and ``os.path``'s string functions touch the outside.
"""

from __future__ import annotations

import ast
import builtins
import copy
import operator
import os.path
import string
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from typing import Protocol

from pytest_promptsuite.errors import ConfigError


__all__ = ["BINARY", "ConfigFile", "Opaque", "PyModule", "Ref", "evaluate_expr", "plain"]


@dataclass(frozen=True)
class Ref:
    """A name imported from a module that is not evaluated (``PromptTemplate``, ``AccEvaluator``)."""

    module: str
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Opaque:
    """A function the config defines, or the result of calling an imported one: kept, never run."""

    name: str


class PyModule:
    """``import os`` and the like: an attribute is a :class:`Ref` (``os.path`` a module)."""

    def __init__(self, name: str) -> None:
        self.name = name


class ConfigFile:
    """A file an ``open()`` read: ``read()``, ``readlines()`` and iteration give its text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def read(self) -> str:
        """The whole text."""
        return self.text

    def readlines(self) -> list[str]:
        """The lines, with their ends."""
        return self.text.splitlines(keepends=True)

    def __iter__(self) -> Any:
        return iter(self.readlines())


class _Host(Protocol):
    env: dict[str, Any]

    def fail(self, message: str, node: ast.AST | None = None) -> ConfigError: ...

    def tick(self, node: ast.AST) -> None: ...

    def bounded(self, value: Any, node: ast.AST) -> Any: ...

    def binary(self, op: Callable[[Any, Any], Any], left: Any, right: Any, node: ast.AST) -> Any: ...

    def open_file(self, raw: Any, node: ast.AST) -> ConfigFile: ...

    def assign(self, target: ast.expr, value: Any) -> None: ...


BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.BitOr: operator.or_, ast.BitAnd: operator.and_,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in ("dict", "list", "tuple", "set", "str", "int", "float", "bool", "len", "zip",
                 "enumerate", "sorted", "reversed", "min", "max", "sum", "any", "all", "abs", "round",
                 "isinstance", "map", "filter", "ord", "chr", "True", "False", "None")
}
_BUILTINS["print"] = lambda *args, **kwargs: None
_OS_PATH: dict[str, Callable[..., Any]] = {
    "join": os.path.join, "dirname": os.path.dirname, "basename": os.path.basename,
    "splitext": os.path.splitext, "normpath": os.path.normpath, "abspath": os.path.normpath,
    "realpath": os.path.normpath,
}
_COPY: dict[tuple[str, str], Callable[..., Any]] = {
    ("copy", "deepcopy"): copy.deepcopy, ("copy", "copy"): copy.copy,
}
#: Methods that build a string as wide as their argument asks.
_WIDENING = frozenset({"ljust", "rjust", "center", "zfill", "expandtabs"})
_PLAIN = (str, list, dict, tuple, set, int, float, ConfigFile)
_RANGE_MAX = 1_000_000


def _range(host: _Host, node: ast.AST, *args: Any) -> range:
    values = range(*args)
    if len(values) > _RANGE_MAX:
        raise host.fail(f"range() of more than {_RANGE_MAX:,} numbers is not evaluated", node)
    return values


def _attribute(host: _Host, value: Any, name: str, node: ast.AST) -> Any:
    if isinstance(value, PyModule):
        if value.name in ("os", "os.path") and name == "path":
            return PyModule("os.path")
        if value.name == "os.path" and name in _OS_PATH:
            return _OS_PATH[name]
        return Ref(value.name, name)
    if isinstance(value, Ref):
        return Ref(value.module, f"{value.name}.{name}")
    if name.startswith("_") or not isinstance(value, _PLAIN) or name in _WIDENING:
        raise host.fail(f"the attribute {name!r} of a {type(value).__name__} is not evaluated", node)
    if isinstance(value, str) and name in ("format", "format_map"):
        fields = [f for _, f, _, _ in string.Formatter().parse(value) if f]
        if any("." in f or "[" in f for f in fields):
            raise host.fail("str.format with attribute or item access in a field is not evaluated", node)
    return getattr(value, name)


def _elements(host: _Host, nodes: list[ast.expr]) -> list[Any]:
    """The values of a list display or call's arguments, ``*starred`` ones spread."""
    items: list[Any] = []
    for elt in nodes:
        if isinstance(elt, ast.Starred):
            items.extend(evaluate_expr(host, elt.value))
        else:
            items.append(evaluate_expr(host, elt))
    return items


def _call(host: _Host, node: ast.Call) -> Any:
    func = node.func
    args = _elements(host, node.args)
    kwargs: dict[str, Any] = {}
    for keyword in node.keywords:
        value = evaluate_expr(host, keyword.value)
        if keyword.arg is None:
            kwargs.update(value)
        else:
            kwargs[keyword.arg] = value
    if isinstance(func, ast.Name) and func.id not in host.env:
        if func.id == "open":
            return host.open_file(args[0] if args else None, node)
        if func.id in ("locals", "globals"):  # sum((v for k, v in locals().items() ...), [])
            return dict(host.env)
        if func.id == "range":
            return _range(host, node, *args)
        if func.id in _BUILTINS:
            return host.bounded(_BUILTINS[func.id](*args, **kwargs), node)
        raise host.fail(f"{func.id}() is not evaluated in an imported config", node)
    target = evaluate_expr(host, func)
    if isinstance(target, Ref) and (target.module, target.name) in _COPY:
        return _COPY[target.module, target.name](*args)
    if isinstance(target, Ref) and not target.module.startswith(("opencompass", "mmengine")):
        raise host.fail(f"{target.module}.{target.name}() is not evaluated in an imported config", node)
    if isinstance(target, (Ref, Opaque)):  # read_base(), a dataset helper: kept by name, never run
        return Opaque(f"{target}()")
    if isinstance(target, _Lambda) or callable(target):
        return host.bounded(target(*args, **kwargs), node)
    raise host.fail(f"{type(target).__name__} is not callable", node)


class _Lambda:
    """A ``lambda`` of the config, evaluated by the host when called."""

    def __init__(self, host: _Host, node: ast.Lambda) -> None:
        self.host, self.node = host, node

    def __call__(self, *args: Any) -> Any:
        names = [a.arg for a in self.node.args.args]
        saved = {n: self.host.env[n] for n in names if n in self.host.env}
        self.host.env.update(zip(names, args, strict=False))
        try:
            return evaluate_expr(self.host, self.node.body)
        finally:
            for n in names:
                self.host.env.pop(n, None)
            self.host.env.update(saved)


def _comprehension(host: _Host, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> Any:
    out: list[Any] = []
    saved = dict(host.env)

    def walk(index: int) -> None:
        if index == len(node.generators):
            host.tick(node)
            if isinstance(node, ast.DictComp):
                out.append((evaluate_expr(host, node.key), evaluate_expr(host, node.value)))
            else:
                out.append(evaluate_expr(host, node.elt))
            host.bounded(out, node)
            return
        gen = node.generators[index]
        for item in list(evaluate_expr(host, gen.iter)):
            host.assign(gen.target, item)
            if all(evaluate_expr(host, cond) for cond in gen.ifs):
                walk(index + 1)

    try:
        walk(0)
    finally:
        host.env.clear()
        host.env.update(saved)
    if isinstance(node, ast.DictComp):
        return dict(out)
    return set(out) if isinstance(node, ast.SetComp) else out


def _fstring(host: _Host, node: ast.JoinedStr) -> str:
    parts: list[str] = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue):
            item = evaluate_expr(host, value.value)
            if value.conversion == ord("r"):
                item = repr(item)
            elif value.conversion == ord("s"):
                item = str(item)
            spec = _fstring(host, value.format_spec) if isinstance(value.format_spec, ast.JoinedStr) else ""
            if any(ch.isdigit() for ch in spec) and max(int(d) for d in "".join(
                    c if c.isdigit() else " " for c in spec).split()) > 10_000:
                raise host.fail("a format width above 10,000 is not evaluated", node)
            parts.append(format(item, spec))
    text = "".join(parts)
    host.bounded(text, node)
    return text


def _subscript(host: _Host, node: ast.Subscript) -> Any:
    value = evaluate_expr(host, node.value)
    if isinstance(node.slice, ast.Slice):
        bounds = [evaluate_expr(host, b) if b is not None else None
                  for b in (node.slice.lower, node.slice.upper, node.slice.step)]
        return value[slice(*bounds)]
    return value[evaluate_expr(host, node.slice)]


def _operators(host: _Host, node: ast.expr) -> Any:
    if isinstance(node, ast.BinOp):
        op = BINARY.get(type(node.op))
        if op is None:
            raise host.fail(f"the operator {type(node.op).__name__} is not evaluated", node)
        return host.binary(op, evaluate_expr(host, node.left), evaluate_expr(host, node.right), node)
    if isinstance(node, ast.UnaryOp):
        operand = evaluate_expr(host, node.operand)
        if isinstance(node.op, ast.Not):
            return not operand
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BoolOp):
        result: Any = isinstance(node.op, ast.And)
        for sub in node.values:
            result = evaluate_expr(host, sub)
            if bool(result) != isinstance(node.op, ast.And):
                return result
        return result
    assert isinstance(node, ast.Compare)
    left = evaluate_expr(host, node.left)
    for cmp, comparator in zip(node.ops, node.comparators, strict=False):
        right = evaluate_expr(host, comparator)
        if not _COMPARE[type(cmp)](left, right):
            return False
        left = right
    return True


def evaluate_expr(host: _Host, node: ast.expr) -> Any:  # noqa: C901 (one branch per node kind)
    """The value of one expression of the config, or a ``path:line`` ConfigError from ``host``."""
    host.tick(node)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in host.env:
            return host.env[node.id]
        if node.id in _BUILTINS:
            return _BUILTINS[node.id]
        raise host.fail(f"name {node.id!r} is not defined", node)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = _elements(host, node.elts)
        return items if isinstance(node, ast.List) else tuple(items) if isinstance(node, ast.Tuple) else set(items)
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=False):
            if key is None:
                out.update(evaluate_expr(host, value))
            else:
                out[evaluate_expr(host, key)] = evaluate_expr(host, value)
        return host.bounded(out, node)
    if isinstance(node, ast.JoinedStr):
        return _fstring(host, node)
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare)):
        return _operators(host, node)
    if isinstance(node, ast.IfExp):
        return evaluate_expr(host, node.body if evaluate_expr(host, node.test) else node.orelse)
    if isinstance(node, ast.Call):
        return _call(host, node)
    if isinstance(node, ast.Attribute):
        return _attribute(host, evaluate_expr(host, node.value), node.attr, node)
    if isinstance(node, ast.Subscript):
        return _subscript(host, node)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return _comprehension(host, node)
    if isinstance(node, ast.Lambda):
        return _Lambda(host, node)
    raise host.fail(f"a {type(node).__name__} expression is not evaluated in an imported config", node)


def plain(value: Any, where: str) -> Any:
    """An evaluated value as TOML can hold it: class names as strings, keys as strings."""
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, Opaque):
        raise ConfigError(f"{where}: {value.name} is computed by code that is not evaluated")
    if isinstance(value, Mapping):
        return {str(k): plain(v, f"{where}[{k!r}]") for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v, where) for v in value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ConfigError(f"{where}: a {type(value).__name__} has no place in a suite config")
