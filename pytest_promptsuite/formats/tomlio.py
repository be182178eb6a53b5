"""Reading TOML files (``promptsuite.toml``, ``pyproject.toml``), bounded, each problem a ``path:line``."""

from __future__ import annotations

import codecs
import datetime
import math
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.safety.limits import DEPTH


_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]', re.DOTALL
)
_DATES = (datetime.date, datetime.time)


def _too_deep(text: str) -> int | None:
    """Return the offset where brackets outside strings and comments nest deeper than :data:`DEPTH`."""
    if text.count("[") + text.count("{") <= DEPTH.value:
        return None
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > DEPTH.value:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


def parse_toml(data: bytes, where: str) -> tuple[dict[str, Any], str]:
    """Parse a TOML file's bytes into its document and text.

    A ConfigError names ``where`` and the line for bytes that are not UTF-8, nesting deeper than
    :data:`DEPTH`, or invalid TOML.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"{where}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); save the file as UTF-8"
        ) from None
    offset = _too_deep(text)
    if offset is not None:
        raise ConfigError(f"{where}:{text.count(chr(10), 0, offset) + 1}: nested deeper than {DEPTH}")
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\s*\(at line (\d+), column \d+\)|\s*\(at end of document\)", str(exc))
        if found is None:
            raise ConfigError(f"{where}: invalid TOML: {exc}") from None
        line = int(found.group(1)) if found.group(1) else text.count("\n") + 1
        raise ConfigError(f"{where}:{line}: invalid TOML: {str(exc).replace(found.group(0), '')}") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested deeper than {DEPTH}") from None


def load_toml(path: Path, *, what: str = "the suite config") -> tuple[dict[str, Any], str]:
    """Read and parse the TOML file at ``path`` (a ConfigError when it cannot be read)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror}") from exc
    return parse_toml(data, str(path))


def _walk(value: Any, where: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    todo = [(where, value)]
    while todo:
        path, item = todo.pop()
        if isinstance(item, dict):
            todo.extend((path + (str(k),), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            todo.extend(
                (path[:-1] + (f"{path[-1]}[{i}]",) if path else (f"[{i}]",), v)
                for i, v in reversed(list(enumerate(item)))
            )
        else:
            yield path, item


def line_of(text: str, key: str, value: str = "") -> int | None:
    """Find the first line of ``text`` that sets ``key`` (bare or quoted), showing ``value`` after the ``=``."""
    name = re.escape(key.split("[")[0])
    pattern = rf"(?:^|[\s{{,.])(?:{name}|\"{name}\"|'{name}')\s*=" + (rf"[^\n]*?{value}" if value else "")
    match = re.search(pattern, text, re.MULTILINE)
    return None if match is None else text.count("\n", 0, match.start()) + (text[match.start()] == "\n") + 1


_PART = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\')'
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_HEADER = re.compile(rf"\s*(\[\[?)\s*({_DOTTED})\s*\]")
_KEY = re.compile(rf"\s*({_DOTTED})\s*=")
_INLINE_KEY = re.compile(rf"[{{,]\s*({_DOTTED})\s*=")


def _parts(dotted: str) -> list[str]:
    return [p.strip().strip("\"'") for p in re.findall(_PART, dotted)]


def key_lines(text: str) -> dict[str, int]:
    """Map each key of a TOML document to the line (1-based) where it is set.

    Keys are dotted paths as errors name them (``thresholds.default``, ``checks[0].assert``,
    ``model.params.temperature``); keys of inline tables get their line too.
    """
    lines: dict[str, int] = {}
    counts: dict[str, int] = {}
    table: list[str] = []
    in_string = False
    for number, line in enumerate(text.split("\n"), start=1):
        opens = line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1
        if in_string:  # inside a multi-line string: no key here
            in_string = not opens
            continue
        in_string = opens
        header = _HEADER.match(line)
        if header:
            name = ".".join(_parts(header.group(2)))
            if header.group(1) == "[[":
                index = counts[name] = counts.get(name, -1) + 1
                name = f"{name}[{index}]"
            table = [name]
            lines.setdefault(name, number)
            continue
        key = _KEY.match(line)
        if key is None:
            continue
        dotted = ".".join(table + _parts(key.group(1)))
        lines.setdefault(dotted, number)
        for inner in _INLINE_KEY.finditer(line, key.end()):
            lines.setdefault(f"{dotted}.{'.'.join(_parts(inner.group(1)))}", number)
    return lines


def place(path: object, lines: dict[str, int], dotted: str) -> str:
    """Return ``path:line`` of the line that sets ``dotted`` (:func:`line_of_key`), or ``path`` alone."""
    line = line_of_key(lines, dotted)
    return f"{path}:{line}" if line is not None else str(path)


def line_of_key(lines: dict[str, int], dotted: str) -> int | None:
    """Return the line of ``dotted`` in :func:`key_lines`, else of the nearest table or key above it."""
    while dotted:
        if dotted in lines:
            return lines[dotted]
        cut = max(dotted.rfind("."), dotted.rfind("["))
        dotted = dotted[:cut] if cut > 0 else ""
    return None


def check_values(data: Any, text: str, where: str, prefix: tuple[str, ...] = ()) -> None:
    """Refuse ``nan``, ``inf`` and dates or times anywhere in ``data``, which no setting takes.
    The ConfigError names the key, and its line when it can be found in ``text``."""
    for path, value in _walk(data, prefix):
        dotted = ".".join(path)
        if isinstance(value, float) and not math.isfinite(value):
            line = line_of(text, path[-1], r"(?<![\w.])[+-]?(?:nan|inf)\b")
            problem = f"{dotted} = {value}: not a finite number"
        elif isinstance(value, _DATES):
            line = line_of(text, path[-1], r"\d\d:\d\d|\d{4}-\d\d-\d\d")
            problem = f"{dotted} = {value.isoformat()}: a date or time, which no setting takes"
        else:
            continue
        raise ConfigError(f"{where}:{line}: {problem}" if line else f"{where}: {problem}")
