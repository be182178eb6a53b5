"""The JSONPath subset of a check's ``path`` (``$``, ``.key``, ``[n]``, ``['key']``, ``["key"]``): a path
names exactly one value."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from typing import Union

from pytest_promptsuite.checks.check_api import json_kind
from pytest_promptsuite.errors import CheckError


Step = Union[str, int]

_KEY = re.compile(r"\.([A-Za-z_\u00a0-\uffff][\w\u00a0-\uffff-]*)")
_INDEX = re.compile(r"\[(-?\d+)\]")
_QUOTED = re.compile(r"""\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\]""")


class PathMissing(Exception):
    """The path does not lead to a value; the message says where it stopped and what was there."""


@dataclass(frozen=True)
class JsonPath:
    """A parsed path such as ``$.refund.items[0]['unit price']``."""

    text: str
    steps: tuple[Step, ...]

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        """Parse ``text`` or raise :class:`CheckError` naming the position that is wrong."""
        if not isinstance(text, str) or not text.startswith("$"):
            raise CheckError(f"'path' must be a JSONPath starting with '$' (like '$.refund.amount'), got {text!r}")
        steps: list[Step] = []
        at = 1
        while at < len(text):
            step, at = _step(text, at)
            steps.append(step)
        return cls(text, tuple(steps))

    def __str__(self) -> str:
        return self.text

    def find(self, data: Any) -> Any:
        """Return the value at this path in ``data``; :class:`PathMissing` says where it stopped."""
        current = data
        walked = "$"
        for step in self.steps:
            if isinstance(step, int):
                current = _item(current, step, walked)
                walked += f"[{step}]"
            else:
                current = _member(current, step, walked)
                walked += f".{step}" if _KEY.fullmatch(f".{step}") else f"[{step!r}]"
        return current


def _step(text: str, at: int) -> tuple[Step, int]:
    """Read the step of ``text`` at ``at`` (``.key``, ``[0]`` or ``['key']``); return it and where the next starts."""
    for pattern in (_KEY, _INDEX, _QUOTED):
        match = pattern.match(text, at)
        if match:
            break
    else:
        raise CheckError(
            f"'path' {text!r}: cannot read {text[at:]!r} at position {at + 1} (supported: .key, [0], ['key'])"
        )
    if pattern is _INDEX:
        return int(match.group(1)), match.end()
    if pattern is _QUOTED:
        raw = match.group(1) if match.group(1) is not None else match.group(2)
        return re.sub(r"\\(.)", r"\1", raw), match.end()
    return match.group(1), match.end()


def _item(current: Any, step: int, walked: str) -> Any:
    """Return item ``step`` of the array at ``walked``."""
    if not isinstance(current, list):
        raise PathMissing(f"{walked} is {json_kind(current)}, not an array")
    if not -len(current) <= step < len(current):
        raise PathMissing(f"{walked} has {len(current)} items, no index {step}")
    return current[step]


def _member(current: Any, step: str, walked: str) -> Any:
    """Return the value of key ``step`` of the object at ``walked``."""
    if not isinstance(current, dict):
        raise PathMissing(f"{walked} is {json_kind(current)}, not an object")
    if step not in current:
        keys = ", ".join(repr(k) for k in list(current)[:10])
        raise PathMissing(f"{walked} has no key {step!r} (keys: {keys or 'none'})")
    return current[step]
