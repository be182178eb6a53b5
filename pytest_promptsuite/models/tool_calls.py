"""Tool calls: what a model asked to call (``ToolCall``), one model step of a run (``Step``), and the
output a case's ``tool_results`` give back for a call."""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One call a model asked for: its ``id``, the tool's ``name`` and the ``arguments`` parsed as JSON;
    arguments that are not JSON are kept as they came, in ``arguments_text`` (``arguments`` is then None)."""

    id: str
    name: str
    arguments: Any = None
    arguments_text: str | None = None

    @property
    def valid_json(self) -> bool:
        """Tell whether the arguments came as JSON."""
        return self.arguments_text is None

    @classmethod
    def from_openai(cls, raw: Any, index: int) -> ToolCall:
        """Read one entry of an answer's ``message.tool_calls`` (``{"id", "function": {"name", "arguments"}}``)."""
        if not isinstance(raw, Mapping):
            return cls(f"call_{index}", "", arguments_text=json.dumps(raw, ensure_ascii=False))
        function = raw.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = function.get("name")
        ident = raw.get("id")
        arguments = function.get("arguments")
        ident = ident if isinstance(ident, str) and ident else f"call_{index}"
        name = name if isinstance(name, str) else ""
        if isinstance(arguments, str):
            return cls.with_arguments(ident, name, arguments)
        if arguments is None:
            return cls(ident, name, {})
        return cls(ident, name, arguments)  # a server that sent an object, not its JSON text

    @classmethod
    def with_arguments(cls, ident: str, name: str, text: str) -> ToolCall:
        """Make a call whose arguments are the JSON ``text`` (kept as text when it is not JSON)."""
        try:
            return cls(ident, name, json.loads(text) if text.strip() else {})
        except ValueError:
            return cls(ident, name, arguments_text=text)

    def to_openai(self) -> dict[str, Any]:
        """Return the call as an assistant message's ``tool_calls`` entry (arguments as JSON text)."""
        text = self.arguments_text if self.arguments_text is not None else _compact(self.arguments)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": text}}

    def to_dict(self) -> dict[str, Any]:
        """Return the call as rows, cassettes and the dashboard keep it."""
        if self.arguments_text is not None:
            return {"id": self.id, "name": self.name, "arguments_text": self.arguments_text}
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ToolCall:
        """Read a call back from :meth:`to_dict`'s form (TypeError when it is not one)."""
        ident, name, text = raw.get("id"), raw.get("name"), raw.get("arguments_text")
        if not isinstance(ident, str) or not isinstance(name, str) or not isinstance(text, (str, type(None))):
            raise TypeError("a tool call needs a string 'id' and 'name'")
        return cls(ident, name, raw.get("arguments") if text is None else None, text)

    def display(self) -> str:
        """Show the call as ``lookup_order({"order_id": "A1234"})``."""
        text = self.arguments_text if self.arguments_text is not None else _compact(self.arguments, spaced=True)
        return f"{self.name}({text})"


def _compact(value: Any, *, spaced: bool = False) -> str:
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(value, ensure_ascii=False, separators=separators)


def calls_from_dicts(raw: Any) -> tuple[ToolCall, ...]:
    """Read a list of :meth:`ToolCall.to_dict` forms (TypeError when it is not one)."""
    if not isinstance(raw, list):
        raise TypeError("'tool_calls' must be a list")
    return tuple(ToolCall.from_dict(item) for item in raw)


@dataclass(frozen=True)
class Step:
    """One model step of a run: the text it answered, the calls it asked for, and the results sent back."""

    text: str
    calls: tuple[ToolCall, ...] = ()
    results: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the step as a row's ``trajectory`` keeps it."""
        step: dict[str, Any] = {"text": self.text, "tool_calls": [c.to_dict() for c in self.calls]}
        if self.results:
            step["tool_results"] = list(self.results)
        return step

    @classmethod
    def from_dict(cls, raw: Any) -> Step:
        """Read a step back from :meth:`to_dict`'s form (TypeError when it is not one)."""
        if not isinstance(raw, Mapping) or not isinstance(raw.get("text"), str):
            raise TypeError("a trajectory step needs a string 'text'")
        results = raw.get("tool_results", [])
        if not isinstance(results, list) or not all(isinstance(r, str) for r in results):
            raise TypeError("a step's 'tool_results' must be a list of strings")
        return cls(raw["text"], calls_from_dicts(raw.get("tool_calls", [])), tuple(results))


def all_calls(steps: Iterable[Step]) -> list[ToolCall]:
    """Return every call of a trajectory, in the order they were made."""
    return [call for step in steps for call in step.calls]


def result_for(results: Mapping[str, Any], call: ToolCall) -> str | None:
    """Return the output to send back for ``call`` from a case's ``tool_results`` (None: none given).

    ``results`` maps a tool's name to its output, or to a list of ``{"arguments": {...}, "output": ...}``
    entries, the first whose arguments the call's contain (a ``{"output": ...}`` entry matches any call).
    """
    given = results.get(call.name)
    if given is None:
        return None
    if isinstance(given, list):
        for entry in given:
            if not isinstance(entry, Mapping) or "output" not in entry:
                continue
            wanted = entry.get("arguments")
            if wanted is None or (isinstance(wanted, Mapping) and partial_match(call.arguments, wanted)):
                return _as_text(entry["output"])
        return None
    return _as_text(given)


def partial_match(actual: Any, expected: Any) -> bool:
    """Tell whether ``actual`` holds every key of ``expected`` with an equal value, objects compared
    this way at every depth, arrays item by item (promptfoo's partial match); ``1`` is not ``"1"`` nor ``true``."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and partial_match(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(partial_match(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return _same_value(actual, expected)


def _same_value(actual: Any, expected: Any) -> bool:
    """Compare two JSON scalars: numbers by value, anything else only with its own type."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return actual == expected
    return type(actual) is type(expected) and bool(actual == expected)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
