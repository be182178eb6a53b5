"""Placeholder substitution: each ``{key}`` of the row replaced in one left-to-right pass, anything
else left as written (docs/templates.md, "Filling ``{name}``")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pytest_promptsuite.errors import TemplateError


def value_text(value: Any) -> str:
    """Return a row value as a prompt shows it: Python's ``str()`` (``None``, ``True``, ``['a', 1]``)."""
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except ValueError as exc:  # an integer longer than Python's str() digit limit
        raise TemplateError(f"a row value cannot be turned into text: {exc}") from exc


@lru_cache(maxsize=256)
def _pattern(keys: tuple[str, ...]) -> re.Pattern[str]:
    ordered = sorted(keys, key=len, reverse=True)
    return re.compile("\\{(" + "|".join(re.escape(k) for k in ordered) + ")\\}")


def substitute(text: str, row: Mapping[str, Any]) -> str:
    """Replace every ``{key}`` of ``row`` in ``text`` by its value, in a single pass."""
    keys = tuple(k for k in row if isinstance(k, str))
    if not keys or "{" not in text:
        return text
    return _pattern(keys).sub(lambda m: value_text(row[m.group(1)]), text)
