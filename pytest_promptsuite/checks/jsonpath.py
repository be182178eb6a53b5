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
            for pattern in (_KEY, _INDEX, _QUOTED):
                match = pattern.match(text, at)
                if match:
                    break
            else:
                raise CheckError(
                    f"'path' {text!r}: cannot read {text[at:]!r} at position {at + 1} (supported: .key, [0], ['key'])"
                )
            if pattern is _INDEX:
                steps.append(int(match.group(1)))
            elif pattern is _QUOTED:
                raw = match.group(1) if match.group(1) is not None else match.group(2)
                steps.append(re.sub(r"\\(.)", r"\1", raw))
            else:
                steps.append(match.group(1))
            at = match.end()
        return cls(text, tuple(steps))

    def __str__(self) -> str:
        return self.text

    def find(self, data: Any) -> Any:
        """Return the value at this path in ``data``; :class:`PathMissing` says where it stopped."""
        current = data
        walked = "$"
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(current, list):
                    raise PathMissing(f"{walked} is {json_kind(current)}, not an array")
                if not -len(current) <= step < len(current):
                    raise PathMissing(f"{walked} has {len(current)} items, no index {step}")
                current = current[step]
                walked += f"[{step}]"
            else:
                if not isinstance(current, dict):
                    raise PathMissing(f"{walked} is {json_kind(current)}, not an object")
                if step not in current:
                    keys = ", ".join(repr(k) for k in list(current)[:10])
                    raise PathMissing(f"{walked} has no key {step!r} (keys: {keys or 'none'})")
                current = current[step]
                walked += f".{step}" if _KEY.fullmatch(f".{step}") else f"[{step!r}]"
        return current
