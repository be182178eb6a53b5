"""The suite config's tables validated by pydantic, its errors as ``path:line: key: ...`` messages, and its
JSON Schema for editors."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import TypeVar

from pydantic import TypeAdapter
from pydantic_core import ErrorDetails
from pydantic_core import SchemaValidator
from pydantic_core import ValidationError

from pytest_promptsuite.config.tables import Override
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.formats.tomlio import place


T = TypeVar("T")
_Loc = tuple[str | int, ...]

#: The dialect of the JSON Schemas ``promptsuite schema`` prints.
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: A module name as ``[checks] python_modules`` takes it (``myapp.checks``).
_MODULE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"

#: pydantic's words for a key a table does not take (a dataclass's, and a model's).
_UNKNOWN = ("unexpected_keyword_argument", "extra_forbidden")


@functools.cache
def _validator(table: type) -> SchemaValidator:
    """Build ``table``'s validator: strict values, but a table may be a dict, as TOML's are."""
    schema = TypeAdapter(table).core_schema
    todo: list[Any] = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("type") == "dataclass":
                node["strict"] = False
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return SchemaValidator(schema)


def validate(table: type[T], data: Any) -> T:
    """Validate ``data`` as a ``table`` (pydantic's ValidationError, a ValueError, when it is not one)."""
    return typing.cast(T, _validator(typing.cast(type, table)).validate_python(data))


def read_tables(table: type[T], data: Mapping[str, Any], *, path: Path, prefix: str, lines: dict[str, int]) -> T:
    """Validate the tables of the config file at ``path`` as a ``table``.

    A ConfigError names every problem, each ``path:line: key: ...``, in the order of the file's keys
    (``prefix``: ``tool.promptsuite`` of a ``pyproject.toml``; ``lines``: each key's line).
    """
    try:
        return validate(table, data)
    except ValidationError as exc:
        problems = []
        for loc, kind, message in _problems(exc.errors(), data):
            dotted = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
            where, at = f"{prefix}.{dotted}" if prefix else dotted, place(path, lines, dotted)
            if kind in _UNKNOWN:
                problems.append(f"{at}: unknown key {where!r}" + did_you_mean(str(loc[-1]), _keys_at(table, loc[:-1])))
            else:
                problems.append(f"{at}: {where}: {message}")
        raise ConfigError("\n".join(problems)) from exc


def _problems(errors: Sequence[ErrorDetails], data: Mapping[str, Any]) -> list[tuple[_Loc, str, str]]:
    """List each problem as (its place in ``data``, pydantic's error type, the message), in the data's order.
    A union's members each report an error under a tag that is no key: they become one message."""
    found: list[tuple[tuple[int, ...], _Loc, str, list[str]]] = []
    last_union: _Loc | None = None
    for error in errors:
        order, loc, tagged = _located(error, data)
        message = "Input should be a valid dictionary" if error["type"] == "dataclass_type" else error["msg"]
        if tagged and last_union == tuple(loc):
            found[-1][3].append(message)
        else:
            found.append((tuple(order), tuple(loc), error["type"], [message]))
        last_union = tuple(loc) if tagged else None
    found.sort(key=lambda problem: problem[0])
    return [(loc, kind, _one_message(said)) for _, loc, kind, said in found]


def _located(error: ErrorDetails, data: Mapping[str, Any]) -> tuple[list[int], list[str | int], bool]:
    """Return where an error is in ``data`` (each part's position, what problems are sorted by), its place
    without a union member's tag, and whether it had one."""
    loc: list[str | int] = []
    order: list[int] = []
    tagged = False
    value: Any = data
    for part in error["loc"]:
        if isinstance(value, Mapping) and part in value:
            order.append(list(value).index(part))
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            order.append(part)
            value = value[part]
        elif error["type"] == "missing" and isinstance(value, Mapping):
            order.append(len(value))
        else:
            tagged = True  # a union member's tag
            continue
        loc.append(part)
    return order, loc, tagged


def _one_message(said: list[str]) -> str:
    """Join the messages of a union's members into one (``Input should be a or b``)."""
    if len(said) == 1:
        return said[0]
    return "Input should be " + " or ".join(dict.fromkeys(m.removeprefix("Input should be ") for m in said))


def _keys_at(table: type[Any], loc: _Loc) -> list[str]:
    """List the keys the table at ``loc`` of a ``table`` takes (for a did-you-mean)."""
    hint: Any = _container(table)
    for part in loc:
        if dataclasses.is_dataclass(hint):
            hint = typing.get_type_hints(hint)[_fields(hint)[str(part)]]
        else:
            hint = typing.get_args(hint)[-1]  # a dict's or a list's items
        hint = _container(hint)
    return list(_fields(hint)) if dataclasses.is_dataclass(hint) else []


def _container(hint: Any) -> Any:
    """Return the table, dict or list type a value of type ``hint`` is (``X | None``, ``Override[X]``)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Override:
        return Override.table(args[0])
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        tables = [m for m in members if dataclasses.is_dataclass(m) or typing.get_origin(m) in (dict, list, Override)]
        return _container((tables or members)[0])
    return hint


def _fields(table: Any) -> dict[str, str]:
    """Map each TOML key of a table to the field it sets."""
    return {f.metadata.get("alias", f.name): f.name for f in dataclasses.fields(table)}


def table_json_schema(tables: type) -> dict[str, Any]:
    """Return the JSON Schema of a config file whose tables are ``tables``, from their pydantic schema, for
    editors. ``[checks]`` is also the table that holds ``python_modules`` and ``[[checks.rules]]``."""
    schema = TypeAdapter(tables).json_schema()
    rules = schema["properties"]["checks"]
    modules = {
        "description": "Modules that python and pydantic checks may import (with their submodules).",
        "items": {"pattern": _MODULE_NAME, "type": "string"},
        "type": "array",
    }
    table = {
        "additionalProperties": False,
        "properties": {"python_modules": modules, "rules": {**rules, "title": "Rules"}},
        "type": "object",
    }
    array = {k: v for k, v in rules.items() if k in ("items", "type")}
    schema["properties"]["checks"] = {
        "anyOf": [array, table],
        "description": rules["description"] + " A [checks] table holds python_modules and [[checks.rules]].",
        "title": "Checks",
    }
    return {"$schema": JSON_SCHEMA_DIALECT, **schema, "title": "promptsuite.toml"}
