"""Writing TOML (the ``promptsuite.toml`` an importer writes), checked to read back as it was written."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.tomlio import parse_toml


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise ConfigError(f"a TOML key must be a string, got {key!r}")
    return key if _BARE.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    # JSON may leave DEL and the C1 controls raw; TOML wants them escaped
    return re.sub(r"[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", encoded)


def _value(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"TOML written by promptsuite holds no {value!r}")
        return repr(value)
    if isinstance(value, str):
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            raise ConfigError(f"a string with a lone surrogate cannot be written to TOML: {value!r}")
        return _string(value)
    raise ConfigError(f"a {type(value).__name__} cannot be written to TOML: {value!r}")


def _nested(data: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Return the tables as TOML reads them back: dotted names nested, None values left out."""
    expected: dict[str, Any] = {}
    for section, table in data.items():
        node = expected
        for part in section.split("."):
            node = node.setdefault(part, {})
        node.update({k: v for k, v in table.items() if v is not None})
    return expected


def dump_toml(data: Mapping[str, Mapping[str, Any]], *, header: str = "") -> str:
    """Write ``data`` (tables of values) as TOML text, with ``header`` as leading comment lines.

    A value with no TOML form is a ConfigError; the text is parsed back and compared.
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    for section, table in data.items():
        if lines:
            lines.append("")
        lines.append(f"[{'.'.join(_key(part) for part in section.split('.'))}]")
        lines.extend(f"{_key(k)} = {_value(v)}" for k, v in table.items() if v is not None)
    text = "\n".join(lines) + "\n"
    parsed, _ = parse_toml(text.encode("utf-8"), "promptsuite.toml")
    if parsed != json.loads(json.dumps(_nested(data))):
        raise ConfigError("the TOML written does not read back as the values given")  # pragma: no cover
    return text
