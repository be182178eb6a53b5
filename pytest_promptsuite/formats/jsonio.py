"""Our ``loads`` and ``dumps``: :func:`decode` (bounded depth; strict: no duplicate keys, no
``NaN``), :func:`encode` (round-trip safe, one line, scrubbed), and JSON values found in prose."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from pytest_promptsuite.safety.limits import DEPTH
from pytest_promptsuite.safety.limits import Limit
from pytest_promptsuite.safety.scrub import scrub as scrub_text


__all__ = [
    "JsonError",
    "decode",
    "encode",
    "find_json",
    "lone_surrogate",
    "raw_decode",
]

_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]', re.DOTALL)
_STRING_OR_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN|-?\d[\d.eE+-]*', re.DOTALL)
#: Characters JSON may hold raw that break a line for some reader, or that UTF-8 cannot encode.
_UNSAFE = re.compile("[\x85\u2028\u2029\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE = re.compile("[\ud800-\udfff]")
_DECODER = json.JSONDecoder()


class JsonError(ValueError):
    """A JSON text we refuse: ``message``, and the 1-based (line, column) of each place it names."""

    def __init__(self, message: str, places: tuple[tuple[int, int], ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.places = places

    @property
    def line(self) -> int | None:
        """The line of the first place, if known."""
        return self.places[0][0] if self.places else None

    def describe(self, *, single_line: bool = False) -> str:
        """The message with its places: ``(column 12)`` for one line, ``(line 3, column 12)``."""
        if not self.places:
            return self.message
        if single_line:
            cols = [str(col) for _, col in self.places]
            where = f"column {cols[0]}" if len(cols) == 1 else f"columns {' and '.join(cols)}"
        else:
            parts = [f"line {line}, column {col}" for line, col in self.places]
            where = " and ".join(parts)
        return f"{self.message} ({where})"


def _place(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _too_deep(text: str, limit: Limit) -> int | None:
    """The offset where ``text`` nests deeper than ``limit``, or None (a fast count first)."""
    if text.count("[") + text.count("{") <= limit.value:
        return None
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit.value:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


class _Duplicate(Exception):
    pass


class _NotFinite(Exception):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Duplicate()
    return obj


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite()
    return value


def _refuse_constant(text: str) -> Any:
    raise _NotFinite()


def _duplicate_error(text: str) -> JsonError:
    """Both places of the first key an object repeats (a token walk, run only on this error)."""
    stack: list[dict[str, int] | None] = []
    expect_key = False
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "{[":
            stack.append({} if token == "{" else None)
            expect_key = token == "{"
        elif token in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif token in ",:":
            expect_key = token == "," and bool(stack) and stack[-1] is not None
        elif expect_key and stack and stack[-1] is not None:
            key = json.loads(token)
            seen = stack[-1]
            if key in seen:
                return JsonError(
                    f"duplicate key {key!r}: a key may appear once in an object",
                    (_place(text, seen[key]), _place(text, match.start())),
                )
            seen[key] = match.start()
            expect_key = False
    return JsonError("duplicate key in an object")


def _not_finite_error(text: str) -> JsonError:
    for match in _STRING_OR_CONSTANT.finditer(text):
        token = match.group()
        if token.startswith('"'):
            continue
        if token.lstrip("-") in ("NaN", "Infinity"):
            return JsonError(f"{token} is not a JSON number (JSON has no NaN or Infinity)",
                             (_place(text, match.start()),))
        if not _is_finite_number(token):
            return JsonError(f"{token} is too large for a number", (_place(text, match.start()),))
    return JsonError("a number that is not finite (JSON has no NaN or Infinity)")


def _is_finite_number(token: str) -> bool:
    try:
        return math.isfinite(float(token))
    except ValueError:
        return True


def _depth_error(text: str, offset: int, limit: Limit) -> JsonError:
    return JsonError(f"nested deeper than {limit}", (_place(text, offset),))


def decode(text: str, *, strict: bool = True, limit: Limit = DEPTH) -> Any:
    """``text`` as a JSON value, or :class:`JsonError`. ``strict``: also refuse duplicate keys
    and non-finite numbers (for files; a model's answer is read with ``strict=False``)."""
    offset = _too_deep(text, limit)
    if offset is not None:
        raise _depth_error(text, offset, limit)
    try:
        if strict:
            return json.loads(text, object_pairs_hook=_unique, parse_float=_finite_float,
                              parse_constant=_refuse_constant)
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonError(exc.msg, ((exc.lineno, exc.colno),)) from None
    except _Duplicate:
        raise _duplicate_error(text) from None
    except _NotFinite:
        raise _not_finite_error(text) from None
    except RecursionError:  # a parser's own recursion; the depth scan above should prevent it
        raise JsonError(f"nested deeper than {limit}") from None
    except ValueError as exc:  # an integer with more digits than Python converts
        raise JsonError(str(exc)) from None


def _deeper_from(text: str, start: int, limit: Limit) -> bool:
    """Whether the value that opens at ``start`` nests deeper than ``limit`` (a scan that stops
    at the value's end or one bracket past the limit, so a bomb costs ``limit`` steps)."""
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text, start):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit.value:
                return True
        elif token in "]}":
            depth -= 1
            if depth <= 0:
                return False
    return False


def raw_decode(text: str, start: int, *, limit: Limit = DEPTH) -> tuple[Any, int]:
    """The JSON value that begins at ``start`` of ``text`` and where it ends (for finding JSON in
    prose); :class:`JsonError` when there is none or it nests deeper than ``limit``."""
    if text[start:start + 1] in ("[", "{") and _deeper_from(text, start, limit):
        raise JsonError(f"nested deeper than {limit}")
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise JsonError(exc.msg, ((exc.lineno, exc.colno),)) from None
    except RecursionError:
        raise JsonError(f"nested deeper than {limit}") from None
    except ValueError as exc:
        raise JsonError(str(exc)) from None


_OPEN_RUN = re.compile(r"[\[{](?:\s*[\[{])*")


def _after_failure(text: str, start: int, limit: Limit) -> int:
    """Where to look for the next value after none began at ``start``: past the opening
    brackets of a run too long to be a value (each of them opens more than ``limit`` levels)."""
    run = _OPEN_RUN.match(text, start)
    if run is None:
        return start + 1
    opens = [run.start() + i for i, ch in enumerate(run.group()) if ch in "[{"]
    return opens[len(opens) - int(limit.value)] if len(opens) > limit.value else start + 1


def find_json(text: str, *, opening: str = "[{", nested: bool = False,
              limit: Limit = DEPTH) -> Iterator[tuple[Any, int, int]]:
    """Each JSON value that begins at one of the ``opening`` characters in ``text``, with where
    it begins and ends, in order: after a value the search goes on past it (``nested``: inside
    it). A run of brackets deeper than ``limit`` is skipped in one step, so a bracket bomb costs
    linear time instead of a failed parse per bracket."""
    starts = re.compile("[" + re.escape(opening) + "]")
    at = 0
    while (found := starts.search(text, at)) is not None:
        start = found.start()
        try:
            value, end = raw_decode(text, start, limit=limit)
        except JsonError as exc:
            deep = exc.message.startswith("nested")
            at = _after_failure(text, start, limit) if deep else start + 1
            continue
        yield value, start, end
        at = start + 1 if nested else end


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


#: One encoder per (indent, sort_keys, compact), made on first use: ``json.dumps`` with any
#: argument builds a new ``JSONEncoder`` for every call, a third of the time of a row-sized one.
_ENCODERS: dict[tuple[int | None, bool, bool], json.JSONEncoder] = {}


def _encoder(indent: int | None, sort_keys: bool, compact: bool) -> json.JSONEncoder:
    key = (indent, sort_keys, compact)
    encoder = _ENCODERS.get(key)
    if encoder is None:
        separators = (",", ":") if compact else None
        encoder = _ENCODERS[key] = json.JSONEncoder(
            ensure_ascii=False, indent=indent, sort_keys=sort_keys, separators=separators, allow_nan=False)
    return encoder


def encode(
    value: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    compact: bool = False,
    scrub: bool = True,
) -> str:
    """``value`` as JSON text that :func:`decode` reads back unchanged, safe to write anywhere:
    one line unless ``indent`` (U+0085, U+2028, U+2029 and lone surrogates escaped, so also valid
    UTF-8), ``NaN`` and infinities as ``null``, secrets scrubbed. ``compact`` drops the spaces
    after ``,`` and ``:``; ``scrub=False`` only for text that is hashed, never written."""
    encoder = _encoder(indent, sort_keys, compact)
    try:
        text = encoder.encode(value)
    except ValueError:  # NaN or Infinity somewhere: JSON has neither
        text = encoder.encode(_finite(value))
    if _may_be_unsafe(text) and _UNSAFE.search(text) is not None:
        text = _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return scrub_text(text) if scrub else text


def _may_be_unsafe(text: str) -> bool:
    """Whether ``text`` may hold an :data:`_UNSAFE` character: a test several times quicker than
    the pattern's search (which takes ~10 ns a character), run on every row a run writes."""
    if text.isascii():
        return False
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        return True
    try:
        text.encode("utf-8")  # only a lone surrogate fails
    except UnicodeEncodeError:
        return True
    return False


def lone_surrogate(text: str, value: Any) -> tuple[str, str] | None:
    """(where, ``\\udXXX``) of the first lone surrogate in ``value`` (decoded from ``text``):
    valid JSON, but no character, so it cannot be sent, shown or written as UTF-8."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return None
    todo: list[tuple[str, Any]] = [("", value)]
    while todo:
        where, item = todo.pop(0)
        if isinstance(item, str):
            found = _LONE.search(item)
            if found is not None:
                return where, f"\\u{ord(found.group()):04x}"
        elif isinstance(item, dict):
            for key, inner in item.items():
                path = f"{where}.{key}" if where else str(key)
                todo.extend(((path, key), (path, inner)))  # a key is a string too
        elif isinstance(item, list):
            todo.extend((f"{where}[{i}]", inner) for i, inner in enumerate(item))
    return None
