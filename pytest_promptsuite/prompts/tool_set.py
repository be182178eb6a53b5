"""The tools a request offers (``ToolSet``: OpenAI function tools, ``tool_choice``, the most model steps),
and the static checks of tools, choices and a case's ``tool_results``."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any


#: How many model steps a case with ``tool_results`` takes at most, unless ``[template] max_steps`` says.
DEFAULT_MAX_STEPS = 5


@dataclass(frozen=True)
class ToolSet:
    """What a request offers: the ``tools`` (OpenAI function tools), ``tool_choice`` and the most model steps."""

    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: Any = None
    max_steps: int = DEFAULT_MAX_STEPS
    names: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(tool_name(t) for t in self.tools))

    def params(self) -> dict[str, Any]:
        """Return the request body's ``tools`` and ``tool_choice`` (nothing without tools)."""
        if not self.tools:
            return {}
        params: dict[str, Any] = {"tools": [dict(t) for t in self.tools]}
        if self.tool_choice is not None:
            params["tool_choice"] = self.tool_choice
        return params

    def parameters_of(self, name: str) -> Any:
        """Return the JSON Schema of the tool ``name``'s parameters (None: no such tool, or none given)."""
        for tool in self.tools:
            if tool_name(tool) == name:
                function = tool.get("function")
                return function.get("parameters") if isinstance(function, Mapping) else None
        return None


def tool_name(tool: Mapping[str, Any]) -> str:
    """Return a function tool's name (``""`` for a definition without one)."""
    function = tool.get("function")
    name = function.get("name") if isinstance(function, Mapping) else None
    return name if isinstance(name, str) else ""


def tool_problems(tools: Any, where: str) -> list[str]:
    """Return what is wrong with a list of OpenAI function tools: its shape, and each tool's ``parameters``
    as a JSON Schema (checked by the jsonschema library)."""
    if not isinstance(tools, list):
        return [f"{where} must be a list of function tools, got {type(tools).__name__}"]
    problems: list[str] = []
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        problems += _tool_problems(tool, f"{where}[{i}]", seen)
    return problems


def _tool_problems(tool: Any, at: str, seen: set[str]) -> list[str]:
    """Return what is wrong with one function tool (``seen``: the names defined before it, its own added)."""
    function = tool.get("function") if isinstance(tool, Mapping) else None
    if not isinstance(tool, Mapping) or tool.get("type") != "function" or not isinstance(function, Mapping):
        return [f'{at} must be {{"type": "function", "function": {{"name": ..., "parameters": ...}}}}']
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return [f"{at}.function.name must be a non-empty string"]
    problems = [f"{at}: the tool {name!r} is defined twice"] if name in seen else []
    seen.add(name)
    parameters = function.get("parameters")
    problem = None if parameters is None else schema_problem(parameters)
    if problem is not None:
        problems.append(f"{at} ({name}): 'parameters' is not a valid JSON Schema: {problem}")
    return problems


def schema_problem(schema: Any) -> str | None:
    """Say why ``schema`` is not a valid JSON Schema (None when it is one), by the jsonschema library."""
    if not isinstance(schema, dict):
        return f"a JSON Schema is an object, got {type(schema).__name__}"
    import jsonschema  # here: it costs ~0.1 s at every pytest start

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def result_problems(results: Any, names: Sequence[str] | frozenset[str] | None, where: str) -> list[str]:
    """Return what is wrong with a case's ``tool_results``: its shape, and (given the defined ``names``)
    each tool it names that no tool definition has."""
    if not isinstance(results, Mapping):
        return [f"{where} must be an object mapping a tool's name to its output"]
    problems: list[str] = []
    for name, given in results.items():
        if names is not None and name not in names:
            known = ", ".join(sorted(names)) or "none"
            problems.append(f"{where} names the tool {name!r}, which is not defined (defined: {known})")
        if isinstance(given, list):
            problems += [p for i, entry in enumerate(given) if (p := _entry_problem(entry, f"{where}.{name}[{i}]"))]
    return problems


def _entry_problem(entry: Any, at: str) -> str | None:
    """Say what is wrong with one entry of a tool's list of results (``{arguments, output}``)."""
    if not isinstance(entry, Mapping) or "output" not in entry or set(entry) - {"arguments", "output"}:
        return f'{at} must be {{"arguments": {{...}}, "output": ...}}'
    if "arguments" in entry and not isinstance(entry["arguments"], Mapping):
        return f"{at}.arguments must be an object"
    return None


def choice_name(tool_choice: Any) -> str | None:
    """Return the tool a ``tool_choice`` forces (``{"type": "function", "function": {"name": ...}}``), if any."""
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        return name if isinstance(name, str) else ""
    return None


def choice_problem(tool_choice: Any, where: str) -> str | None:
    """Say what is wrong with a ``tool_choice`` (None: ``auto``, ``none``, ``required`` or a named function)."""
    if tool_choice in ("auto", "none", "required"):
        return None
    if choice_name(tool_choice):
        return None
    return f'{where} must be \'auto\', \'none\', \'required\' or {{"type": "function", "function": {{"name": ...}}}}'
