"""Typed tables: the suite config's frozen dataclasses, filled from TOML data and checked against
their type hints. Our own few rules rather than pydantic's: a run without a config file validates
nothing, and one with a config pays microseconds, not pydantic's import and schema build.

A field's type is one of ``str``, ``bool``, ``int``, ``float``, ``Any``, a ``Literal``, a
``Union`` (``X | None``), ``list[T]``, ``tuple[T, ...]``, ``dict[str, T]`` or another table; a
number may carry :class:`Range` bounds (``Annotated[float, Range(gt=0)]``). A field's TOML key is
its name, or ``metadata={"key": ...}`` (``assert``); ``metadata={"internal": True}`` marks a
field no file sets (the config's own path).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple
from typing import TypeVar


__all__ = ["Range", "TableError", "TableProblem", "fill", "set_keys"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Range:
    """Bounds of a number field, as ``Annotated[float, Range(ge=0, le=1)]`` says them."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def problem(self, value: float) -> str | None:
        """What is wrong with ``value`` (pydantic's wording, which our messages always used)."""
        if self.gt is not None and not value > self.gt:
            return f"Input should be greater than {self.gt}"
        if self.ge is not None and not value >= self.ge:
            return f"Input should be greater than or equal to {self.ge}"
        if self.lt is not None and not value < self.lt:
            return f"Input should be less than {self.lt}"
        if self.le is not None and not value <= self.le:
            return f"Input should be less than or equal to {self.le}"
        return None


class TableProblem(NamedTuple):
    """One thing wrong with the data: where (keys and list indexes) and what. For an unknown
    key, ``known`` holds the keys its table takes (for a did-you-mean hint); ``wrong_type``: the
    value is not of the type at all (a union then tries its other members' rules)."""

    loc: tuple[str | int, ...]
    message: str
    known: tuple[str, ...] | None = None
    wrong_type: bool = False


class TableError(ValueError):
    """The data does not fit the table: every problem, in the order of the data."""

    def __init__(self, problems: list[TableProblem]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, p.loc))}: {p.message}" for p in problems))
        self.problems = problems


def fill(cls: type[T], data: Any) -> T:
    """A ``cls`` table from ``data`` (a TOML table), or :class:`TableError` naming every problem."""
    problems: list[TableProblem] = []
    value = _table(cls, data, (), problems)
    if problems:
        raise TableError(problems)
    return typing.cast(T, value)


def set_keys(table: Any) -> frozenset[str]:
    """The fields of an override table that say something (not None: TOML has no null, so a
    key a file sets is never None)."""
    return frozenset(f.name for f in dataclasses.fields(table) if getattr(table, f.name) is not None)


@functools.cache
def _fields(cls: Any) -> dict[str, dataclasses.Field[Any]]:
    return {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


_BAD = object()
_Loc = tuple[str | int, ...]


def _table(cls: Any, data: Any, loc: _Loc, problems: list[TableProblem]) -> Any:
    if not isinstance(data, Mapping):
        problems.append(TableProblem(loc, "Input should be a valid dictionary", wrong_type=True))
        return _BAD
    fields, hints, before = _fields(cls), _hints(cls), len(problems)
    values: dict[str, Any] = {}
    for key, raw in data.items():
        field = fields.get(key)
        if field is None:
            problems.append(TableProblem((*loc, key), "Extra inputs are not permitted", tuple(fields)))
            continue
        values[field.name] = _value(hints[field.name], raw, (*loc, key), problems)
    for key, field in fields.items():
        if key not in data and field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            problems.append(TableProblem((*loc, key), "Field required"))
    return _BAD if len(problems) > before else cls(**values)


#: How a message names each type a value can have.
_NAMES: dict[Any, str] = {
    str: "a valid string", bool: "a valid boolean", int: "a valid integer", float: "a valid number",
    list: "a valid list", tuple: "a valid list", dict: "a valid dictionary",
}


def _value(hint: Any, raw: Any, loc: _Loc, problems: list[TableProblem]) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return raw
    if origin is typing.Annotated:
        value = _value(args[0], raw, loc, problems)
        for bound in args[1:]:
            problem = bound.problem(value) if isinstance(bound, Range) and value is not _BAD else None
            if problem is not None:
                problems.append(TableProblem(loc, problem))
                return _BAD
        return value
    if origin is typing.Union or origin is types.UnionType:
        return _union(args, raw, loc, problems)
    if origin is typing.Literal:
        if any(raw == a and type(raw) is type(a) for a in args):
            return raw
        choices = [repr(a) for a in args]
        said = choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"
        problems.append(TableProblem(loc, f"Input should be {said}"))
        return _BAD
    if dataclasses.is_dataclass(hint):
        return _table(typing.cast(type, hint), raw, loc, problems)
    return _container(origin or hint, args, raw, loc, problems)


def _union(args: tuple[Any, ...], raw: Any, loc: _Loc, problems: list[TableProblem]) -> Any:
    if raw is None and type(None) in args:
        return None
    members = [a for a in args if a is not type(None)]
    if len(members) == 1:
        return _value(members[0], raw, loc, problems)
    tried: list[list[TableProblem]] = []
    for member in members:
        own: list[TableProblem] = []
        value = _value(member, raw, loc, own)
        if not own:
            return value
        tried.append(own)
    deeper = [own for own in tried if own[0].loc != loc or not own[0].wrong_type]
    if len(deeper) == 1:  # the value has one member's shape but breaks its rules: say those
        problems.extend(deeper[0])
    else:
        names = dict.fromkeys(_NAMES.get(typing.get_origin(m) or m, "a valid table") for m in members)
        problems.append(TableProblem(loc, "Input should be " + " or ".join(names), wrong_type=True))
    return _BAD


def _container(kind: Any, args: tuple[Any, ...], raw: Any, loc: _Loc, problems: list[TableProblem]) -> Any:
    if kind is float:
        ok = isinstance(raw, (int, float)) and not isinstance(raw, bool)
        if ok and not math.isfinite(raw):
            problems.append(TableProblem(loc, "Input should be a finite number"))
            return _BAD
        value: Any = float(raw) if ok else _BAD
    elif kind is int:
        value = raw if isinstance(raw, int) and not isinstance(raw, bool) else _BAD
    elif kind in (str, bool):
        value = raw if isinstance(raw, kind) else _BAD
    elif kind in (list, tuple) and isinstance(raw, (list, tuple)):
        value = kind(_value(args[0] if args else Any, item, (*loc, i), problems) for i, item in enumerate(raw))
    elif kind is dict and isinstance(raw, Mapping):
        value = {k: _value(args[1] if args else Any, v, (*loc, k), problems) for k, v in raw.items()}
    elif kind in _NAMES:
        value = _BAD
    else:
        raise TypeError(f"a table field cannot have the type {kind!r}")
    if value is _BAD:
        problems.append(TableProblem(loc, f"Input should be {_NAMES[kind]}", wrong_type=True))
    return value
