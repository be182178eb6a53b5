"""Our ``loads`` and ``dumps``: :func:`decode` (bounded depth; strict: no duplicate keys, no ``NaN``),
:func:`encode` (round-trip safe, one line, scrubbed), and :func:`find_json` for JSON values in prose."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator
from typing import Any

from pytest_promptsuite.safety.limits import DEPTH
from pytest_promptsuite.safety.limits import Limit
from pytest_promptsuite.safety.scrub import scrub as scrub_text


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
        """The line of the first place, if any."""
        return self.places[0][0] if self.places else None

    def describe(self, *, single_line: bool = False) -> str:
        """Return the message with its places: ``(column 12)`` for one line, else ``(line 3, column 12)``."""
        if not self.places:
            return self.message
        if single_line:
            cols = [str(col) for _, col in self.places]
            where = ("column " if len(cols) == 1 else "columns ") + " and ".join(cols)
        else:
            where = " and ".join(f"line {line}, column {col}" for line, col in self.places)
        return f"{self.message} ({where})"


def _place(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _too_deep(text: str, limit: Limit, start: int = 0, *, one_value: bool = False) -> int | None:
    """Return where ``text`` (from ``start``; ``one_value``: to that value's end) nests deeper than ``limit``."""
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text, start):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit.value:
                return match.start()
        elif token in "]}":
            depth -= 1
            if one_value and depth <= 0:
                return None
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


_STRICT: dict[str, Any] = dict(object_pairs_hook=_unique, parse_float=_finite_float, parse_constant=_refuse_constant)


def _duplicate_error(text: str) -> JsonError:
    """Return an error naming both places of the first key an object repeats (run only on that error)."""
    stack: list[dict[str, int] | None] = []
    expect_key = False
    for match in _TOKENS.finditer(text):
        token = match.group()
        if not token.startswith('"'):  # a bracket, a comma or a colon
            expect_key = _after(token, stack)
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


def _after(token: str, stack: list[dict[str, int] | None]) -> bool:
    """Follow a bracket, comma or colon (opening or closing an object or array on ``stack``); return whether a
    key comes next."""
    if token in "{[":
        stack.append({} if token == "{" else None)
        return token == "{"
    if token in "}]":
        if stack:
            stack.pop()
        return False
    return token == "," and bool(stack) and stack[-1] is not None


def _not_finite_error(text: str) -> JsonError:
    for match in _STRING_OR_CONSTANT.finditer(text):
        token = match.group()
        if token.startswith('"'):
            continue
        if token.lstrip("-") in ("NaN", "Infinity"):
            return JsonError(
                f"{token} is not a JSON number (JSON has no NaN or Infinity)", (_place(text, match.start()),)
            )
        try:
            finite = math.isfinite(float(token))
        except ValueError:
            finite = True
        if not finite:
            return JsonError(f"{token} is too large for a number", (_place(text, match.start()),))
    return JsonError("a number that is not finite (JSON has no NaN or Infinity)")


def _parse_error(exc: ValueError | RecursionError, limit: Limit) -> JsonError:
    if isinstance(exc, json.JSONDecodeError):
        return JsonError(exc.msg, ((exc.lineno, exc.colno),))
    if isinstance(exc, RecursionError):  # the parser's own recursion; the depth scan should prevent it
        return JsonError(f"nested deeper than {limit}")
    return JsonError(str(exc))  # an integer with more digits than Python converts


def decode(text: str, *, strict: bool = True, limit: Limit = DEPTH) -> Any:
    """Parse ``text`` as JSON, or raise :class:`JsonError`; ``strict`` (files, not a model's answer)
    also refuses duplicate keys and non-finite numbers."""
    # the count first: a scan of every row of a baseline costs more than its parse
    if text.count("[") + text.count("{") > limit.value and (offset := _too_deep(text, limit)) is not None:
        raise JsonError(f"nested deeper than {limit}", (_place(text, offset),))
    try:
        return json.loads(text, **_STRICT) if strict else json.loads(text)
    except _Duplicate:
        raise _duplicate_error(text) from None
    except _NotFinite:
        raise _not_finite_error(text) from None
    except (ValueError, RecursionError) as exc:
        raise _parse_error(exc, limit) from None


def raw_decode(text: str, start: int, *, limit: Limit = DEPTH) -> tuple[Any, int]:
    """Parse the JSON value that begins at ``start`` of ``text``; return it and where it ends."""
    if text[start : start + 1] in ("[", "{") and _too_deep(text, limit, start, one_value=True) is not None:
        raise JsonError(f"nested deeper than {limit}")
    try:
        return _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError) as exc:
        raise _parse_error(exc, limit) from None


_OPEN_RUN = re.compile(r"[\[{](?:\s*[\[{])*")


def _after_failure(text: str, start: int, limit: Limit) -> int:
    """Return where to look on after no value began at ``start``: past a run of brackets too deep to open one."""
    run = _OPEN_RUN.match(text, start)
    if run is None:
        return start + 1
    opens = [run.start() + i for i, ch in enumerate(run.group()) if ch in "[{"]
    return opens[len(opens) - int(limit.value)] if len(opens) > limit.value else start + 1


def find_json(
    text: str, *, opening: str = "[{", nested: bool = False, limit: Limit = DEPTH
) -> Iterator[tuple[Any, int, int]]:
    """Yield each JSON value that begins at one of the ``opening`` characters in ``text``, with where it
    begins and ends; the search goes on past a value (``nested``: inside it). A bracket bomb costs linear time."""
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


@functools.cache  # json.dumps with arguments builds an encoder a call: a third of a row's time
def _encoder(indent: int | None, sort_keys: bool, compact: bool) -> json.JSONEncoder:
    separators = (",", ":") if compact else None
    return json.JSONEncoder(
        ensure_ascii=False, indent=indent, sort_keys=sort_keys, separators=separators, allow_nan=False
    )


def encode(
    value: Any, *, indent: int | None = None, sort_keys: bool = False, compact: bool = False, scrub: bool = True
) -> str:
    """Return ``value`` as JSON that :func:`decode` reads back unchanged, safe to write anywhere: one line
    unless ``indent``, U+0085, U+2028, U+2029 and lone surrogates escaped, ``NaN`` as ``null``, secrets
    scrubbed. ``compact`` drops the spaces after ``,`` and ``:``; ``scrub=False`` only for hashed text."""
    encoder = _encoder(indent, sort_keys, compact)
    try:
        text = encoder.encode(value)
    except ValueError:  # NaN or Infinity somewhere: JSON has neither
        text = encoder.encode(_finite(value))
    if _may_be_unsafe(text) and _UNSAFE.search(text) is not None:
        text = _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return scrub_text(text) if scrub else text


def _may_be_unsafe(text: str) -> bool:
    # several times quicker than _UNSAFE.search, on every row a run writes
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
    """Return (where, ``\\udXXX``) of the first lone surrogate in ``value`` (decoded from ``text``), or None."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return None
    todo: list[tuple[str, Any]] = [("", value)]
    while todo:
        where, item = todo.pop(0)
        if isinstance(item, str):
            found = _LONE.search(item)
            if found is not None:
                return where, f"\\u{ord(found.group()):04x}"
        else:
            todo.extend(_inside(where, item))
    return None


def _inside(where: str, item: Any) -> list[tuple[str, Any]]:
    """Return what an object (its keys too: a key is a string) or an array holds, each with where it is."""
    if isinstance(item, dict):
        inside: list[tuple[str, Any]] = []
        for key, inner in item.items():
            path = f"{where}.{key}" if where else str(key)
            inside += ((path, key), (path, inner))
        return inside
    if isinstance(item, list):
        return [(f"{where}[{i}]", inner) for i, inner in enumerate(item)]
    return []
