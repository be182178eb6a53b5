"""A case: ``PromptCase`` (one line of a case file) and the rules its keys follow, ``CaseKey``,
``CaseLocation`` and ``CaseRef`` (where its line is, to read it back)."""

from __future__ import annotations

import functools
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import MISSING
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from pathlib import Path
from typing import Any
from typing import Union

from pytest_promptsuite.cases.conversation_fields import conversation_problems
from pytest_promptsuite.cases.conversation_fields import string_list_problems
from pytest_promptsuite.errors import CaseFileError
from pytest_promptsuite.errors import describe_type
from pytest_promptsuite.errors import did_you_mean


#: One ``Path`` per file name: every row of a baseline parses its location.
_path = functools.lru_cache(maxsize=256)(Path)


@dataclass(frozen=True)
class CaseLocation:
    """Where a case was read: the file and its 1-based line."""

    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    @classmethod
    def parse(cls, text: str) -> CaseLocation | None:
        """Parse a results row's ``"path:line"``; None for ``""``."""
        if not text:
            return None
        path, sep, line = text.rpartition(":")
        if not sep or not line.isdigit():
            return cls(_path(text), 0)
        return cls(_path(path), int(line))


@dataclass(frozen=True)
class CaseKey:
    """Which run of which case: its id, prompt variant (None without variants) and repeat (from 0)."""

    case_id: str
    variant: str | None = None
    repeat: int = 0

    def name(self, *, with_repeat: bool) -> str:
        """Return ``case_id[variant][repeat-i]``, each suffix where it applies (the item's name)."""
        name = self.case_id
        if self.variant is not None:
            name += f"[{self.variant}]"
        if with_repeat:
            name += f"[repeat-{self.repeat}]"
        return name


@dataclass(frozen=True)
class PromptCase:
    """One line of a case file: what to send, what to check, and which slice it counts in.
    Built in code, it is checked as a line is (ValueError). ``CaseLine`` describes each field."""

    case_id: str
    input: Union[str, list[str]]
    slice: str
    must_include: list[str] = field(default_factory=list)
    must_not_include: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    answer: Union[str, list[Any], None] = None
    assert_: list[dict[str, Any]] = field(default_factory=list, metadata={"key": "assert"})
    threshold: Union[float, None] = None
    review: Union[bool, str] = False
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Union[str, dict[str, Any], None] = None
    tool_results: dict[str, Any] = field(default_factory=dict)
    turns: list[dict[str, Any]] = field(default_factory=list)
    user: Union[dict[str, Any], None] = None

    _location: CaseLocation | None = field(default=None, repr=False, compare=False, kw_only=True)
    _ref: CaseRef | None = field(default=None, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        _refuse_bad(self.to_dict(), self.location)
        if self.threshold is not None:  # a JSON 1 is the number 1.0
            object.__setattr__(self, "threshold", float(self.threshold))

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, location: CaseLocation | None = None) -> PromptCase:
        """Build the case a line holds (its JSON keys), or raise ValueError listing its problems."""
        _refuse_bad(data, location or CaseLocation(Path("<memory>"), 0))
        return build_case(data, location, None)

    def to_dict(self) -> dict[str, Any]:
        """Return the case as a line holds it: its JSON keys, defaults included, None left out."""
        return {key: value for key, name in _KEYS.items() if (value := getattr(self, name)) is not None}

    @property
    def is_conversation(self) -> bool:
        """Tell whether the case is a conversation: scripted ``turns`` or a simulated ``user``."""
        return bool(self.turns) or self.user is not None

    @property
    def location(self) -> CaseLocation:
        """Where the case was read (``<memory>:0`` for a case built in code)."""
        return self._location or CaseLocation(Path("<memory>"), 0)

    @property
    def ref(self) -> CaseRef | None:
        """Where its line is, to read it back (None for a case built in code)."""
        return self._ref


_BLOCK_BYTES = 1 << 16
#: The last block read: the file (its loaded ``Path``, by identity), the offset, the bytes.
_last_block: tuple[Path | None, int, bytes] = (None, 0, b"")


def _read_back(path: Path, offset: int, length: int, crc: int) -> bytes:
    """Read ``length`` bytes at ``offset``: items run in file order, so one block serves many cases."""
    global _last_block
    file, start, data = _last_block
    at = offset - start
    if file is path and 0 <= at and at + length <= len(data):
        raw = data[at : at + length]
        if zlib.crc32(raw) == crc:
            return raw
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))  # a third of an io file's cost
    try:
        os.lseek(fd, offset, os.SEEK_SET)  # not os.pread: Windows has none
        data = os.read(fd, max(length, _BLOCK_BYTES))
    finally:
        os.close(fd)
    _last_block = (path, offset, data)
    return data[:length]


class CaseRef:
    """Where a case's line is: its number, offset, length and CRC-32 (an item keeps this, not the case)."""

    __slots__ = ("path", "line", "offset", "length", "crc")

    def __init__(self, path: Path, line: int, offset: int, length: int, crc: int) -> None:
        self.path, self.line, self.offset, self.length, self.crc = path, line, offset, length, crc

    def read(self, display: str | None = None) -> PromptCase:
        """Parse the case again from its line; CaseFileError when the line changed since collection."""
        file = display or self.path
        try:
            raw = _read_back(self.path, self.offset, self.length, self.crc)
        except OSError as exc:
            raise CaseFileError([f"{file}:{self.line}: cannot read the case file: {exc.strerror}"]) from exc
        if zlib.crc32(raw) != self.crc or len(raw) != self.length:
            raise CaseFileError([f"{file}:{self.line}: the case file changed after it was collected; run again"])
        # the bytes that passed every check when collected: plain json.loads
        text = raw.decode("utf-8-sig" if self.offset == 0 else "utf-8")
        return build_case(json.loads(text), CaseLocation(self.path, self.line), self)


#: The fields of a case line, in order (the rules below and the schema read them).
LINE_FIELDS = tuple(f for f in fields(PromptCase) if f.init and not f.kw_only)
_KEYS = {f.metadata.get("key", f.name): f.name for f in LINE_FIELDS}
_FRESH = {f.name: f.default_factory for f in fields(PromptCase) if f.default_factory is not MISSING}
_FIXED = {f.name: f.default for f in fields(PromptCase) if f.default is not MISSING}
_KNOWN_KEYS = tuple(_KEYS)
_REQUIRED = tuple(k for k, n in _KEYS.items() if n not in _FIXED and n not in _FRESH)
_STRING_LISTS = tuple(k for k, f in zip(_KEYS, LINE_FIELDS, strict=True) if f.type == "list[str]")
_OBJECTS = tuple(k for k, f in zip(_KEYS, LINE_FIELDS, strict=True) if f.type == "dict[str, Any]")


def _refuse_bad(data: dict[str, Any], location: CaseLocation) -> None:
    problems = list(shape_problems(data))
    if problems:
        raise ValueError(f"{location}: " + "; ".join(problems))


def build_case(data: dict[str, Any], location: CaseLocation | None, ref: CaseRef | None) -> PromptCase:
    """Build a case from a line :func:`shape_problems` passed, without checking it again."""
    case = object.__new__(PromptCase)
    values = case.__dict__  # filled in place: the per-case hot path
    values.update(_FIXED)
    for name, make in _FRESH.items():
        values[name] = make()
    values["_location"], values["_ref"] = location, ref
    for key, value in data.items():
        values[_KEYS[key]] = value
    if values["threshold"] is not None:
        values["threshold"] = float(values["threshold"])
    return case


def shape_problems(data: dict[str, Any]) -> Iterator[str]:
    """Yield every way ``data`` does not fit ``PromptCase``, as messages without the location."""
    for key in data:
        if key not in _KNOWN_KEYS:
            yield f"unknown key {key!r}" + did_you_mean(key, _KNOWN_KEYS)
    for key in _REQUIRED:
        if key not in data:
            yield f"missing required field {key!r}"
    for key in ("case_id", "slice"):
        if key in data:
            yield from _line_problems(key, data[key])
    if "input" in data:
        yield from _input_problems(data["input"])
    yield from _optional_problems(data)


def _line_problems(key: str, value: Any) -> Iterator[str]:
    if not isinstance(value, str):
        yield f"{key!r} must be a string, got {describe_type(value)}"
    elif not value.strip():
        yield f"{key!r} is empty"
    elif "\n" in value or "\r" in value:
        yield f"{key!r} must be one line"


def _input_problems(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if not value.strip():
            yield "'input' is empty"
    elif isinstance(value, list):
        if not value:
            yield "'input' is an empty list (a multi-turn case needs at least one turn)"
        for i, turn in enumerate(value):
            if not isinstance(turn, str):
                yield f"'input[{i}]' must be a string, got {describe_type(turn)}"
            elif not turn.strip():
                yield f"'input[{i}]' is empty (every turn needs text, as 'input' does)"
    else:
        yield f"'input' must be a string or a list of strings, got {describe_type(value)}"


def _optional_problems(data: dict[str, Any]) -> Iterator[str]:
    for key in _STRING_LISTS:
        yield from string_list_problems(data.get(key, []), key)
    for key in _OBJECTS:
        value = data.get(key, {})
        if not isinstance(value, dict):
            yield f"{key!r} must be an object, got {describe_type(value)}"
    if "answer" in data and not isinstance(data["answer"], (str, list, type(None))):
        yield f"'answer' must be a string or a list, got {describe_type(data['answer'])}"
    if "assert" in data:
        yield from _object_list_problems("assert", data["assert"], "a list of checks")
    if "threshold" in data:
        yield from _threshold_problems(data["threshold"])
    if "review" in data and not isinstance(data["review"], (bool, str)):
        yield f"'review' must be true, false or a reason, got {describe_type(data['review'])}"
    yield from _tool_problems(data)
    yield from conversation_problems(data)


def _tool_problems(data: dict[str, Any]) -> Iterator[str]:
    if "tools" in data:
        yield from _object_list_problems("tools", data["tools"], "a list of function tools")
    if "tool_choice" in data and not isinstance(data["tool_choice"], (str, dict)):
        yield f"'tool_choice' must be a string or an object, got {describe_type(data['tool_choice'])}"


def _object_list_problems(key: str, value: Any, what: str) -> Iterator[str]:
    if not isinstance(value, list):
        yield f"{key!r} must be {what}, got {describe_type(value)}"
        return
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            yield f"'{key}[{i}]' must be an object, got {describe_type(item)}"


def _threshold_problems(value: Any) -> Iterator[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        yield f"'threshold' must be a number from 0 to 1, got {describe_type(value)}"
    elif not 0 <= value <= 1:
        yield f"'threshold' must be from 0 to 1, got {value!r}"
