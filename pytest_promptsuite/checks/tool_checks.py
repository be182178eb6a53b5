"""The tool checks, by promptfoo's names: are the calls valid (``is-valid-openai-tools-call``), the right
ones (``tool-call-f1``), and did the run's trajectory use, order and argue them as expected (``trajectory:*``)."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.check_api import json_equal
from pytest_promptsuite.checks.check_api import shorten
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.checks.structure import schema_mismatch
from pytest_promptsuite.checks.structure import schema_validator
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import describe_type
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.models.tool_calls import ToolCall
from pytest_promptsuite.models.tool_calls import partial_match
from pytest_promptsuite.prompts.tool_set import ToolSet
from pytest_promptsuite.safety.scrub import scrub_cut


def _steps(ctx: CheckContext) -> tuple[Step, ...]:
    """Return the run's steps: the trajectory, or the one response when the run had one step."""
    if ctx.trajectory:
        return ctx.trajectory
    response = ctx.response
    return (Step(ctx.output, response.tool_calls if response is not None else ()),)


def _numbered(ctx: CheckContext) -> list[tuple[int, ToolCall]]:
    """Return every call of the run with the (1-based) step that made it."""
    return [(i, call) for i, step in enumerate(_steps(ctx), start=1) for call in step.calls]


def _shown(calls: Sequence[tuple[int, ToolCall]]) -> str:
    """Show calls as ``step 1: lookup_order({"order_id": "A1"}), step 2: ...`` (``no tool calls``)."""
    if not calls:
        return "no tool calls"
    return ", ".join(f"step {i}: {_cut(call.display())}" for i, call in calls)


def _cut(text: str, limit: int = 120) -> str:
    """Cut a call's display to ``limit`` characters (scrubbed first), marking the cut."""
    kept, _, after = scrub_cut(text, limit)
    return kept + "..." if after else kept


def _matches(name: str, pattern: str) -> bool:
    return name == pattern or ("*" in pattern or "?" in pattern) and fnmatch.fnmatchcase(name, pattern)


class _ToolCheck(Check):
    """A check of the model's calls, not its text (``path`` does not apply)."""

    layer = Layer.STRUCTURE
    reads_output = False


class ValidToolsCall(_ToolCheck):
    """``is-valid-openai-tools-call``: the run called tools, each a defined one, its arguments JSON valid
    against that tool's ``parameters``."""

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = "tool calls that name defined tools, with arguments valid against their schemas"
        calls = _numbered(ctx)
        if not calls:
            return Verdict(False, expected, "no tool calls")
        for step, call in calls:
            problem = _tool_call_problem(call, ctx.tools)
            if problem is not None:
                return Verdict(False, expected, f"step {step}: {call.name or '(no name)'}{problem}")
        return Verdict(True, expected, f"{len(calls)} valid call{'s' if len(calls) != 1 else ''}: {_shown(calls)}")


def _tool_call_problem(call: ToolCall, tools: ToolSet | None) -> str | None:
    """Say what is wrong with a tool call (after its name): no such tool, or arguments that do not fit."""
    if tools is None or call.name not in tools.names:
        known = ", ".join(sorted(tools.names)) if tools is not None and tools.names else "none"
        return f" is not a defined tool (defined: {known})"
    problem = _arguments_problem(call, tools.parameters_of(call.name), "is-valid-openai-tools-call")
    return None if problem is None else f": {problem}"


class ValidFunctionCall(Check):
    """``is-valid-openai-function-call``: the model's function call (its tool calls, else the output as
    OpenAI's ``{name, arguments}`` or ``{function_call: ...}``) names one of ``functions`` (else of the
    tools the request offered), its arguments JSON valid against that function's ``parameters``."""

    layer = Layer.STRUCTURE

    def __init__(self, functions: list[dict[str, Any]] | None) -> None:
        self.functions = functions

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = "a function call that names a defined function, with arguments valid against its schema"
        calls = [call for _, call in _numbered(ctx)] or [c for c in (_output_call(value),) if c is not None]
        if not calls:
            return Verdict(False, expected, f"no function call: {shorten(value)}")
        schemas = self._schemas(ctx)
        if schemas is None:
            return Verdict(False, expected, "no functions to check the call against (give them as 'value')")
        problem = next((p for call in calls if (p := _function_call_problem(call, schemas)) is not None), None)
        if problem is not None:
            return Verdict(False, expected, problem)
        return Verdict(True, expected, ", ".join(_cut(call.display()) for call in calls))

    def _schemas(self, ctx: CheckContext) -> dict[str, Any] | None:
        """Return each function's ``parameters`` by name: the check's functions, else the request's tools."""
        if self.functions is not None:
            return {str(f.get("name")): f.get("parameters") for f in self.functions}
        if ctx.tools is not None:
            return {name: ctx.tools.parameters_of(name) for name in ctx.tools.names}
        return None


def _function_call_problem(call: ToolCall, schemas: dict[str, Any]) -> str | None:
    """Say what is wrong with a function call: no such function, or arguments that do not fit."""
    if call.name not in schemas:
        return f"called {call.name!r}, but there is no function with that name"
    problem = _arguments_problem(call, schemas[call.name], "is-valid-openai-function-call")
    return None if problem is None else f"{call.name}: {problem}"


def _arguments_problem(call: ToolCall, schema: Any, check: str) -> str | None:
    """Say what is wrong with a call's arguments against its function's ``parameters`` schema (None: nothing)."""
    if not call.valid_json:
        return f"arguments are not JSON: {shorten(call.arguments_text)}"
    if schema is None:
        return None
    problem = schema_mismatch(schema_validator(schema, check), call.arguments)
    return None if problem is None else f"arguments do not fit its parameters: {problem}"


def _output_call(value: Any) -> ToolCall | None:
    """Read the output as OpenAI's function call, ``{name, arguments}`` (arguments a JSON string), as
    promptfoo's ``validateFunctionCall`` does; None when it is not one."""
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if isinstance(data, dict) and "function_call" in data:
        data = data["function_call"]
    if not (isinstance(data, dict) and isinstance(data.get("name"), str) and isinstance(data.get("arguments"), str)):
        return None
    try:  # not ToolCall.with_arguments: promptfoo's JSON.parse refuses empty arguments
        return ToolCall("output", data["name"], json.loads(data["arguments"]))
    except ValueError:
        return ToolCall("output", data["name"], arguments_text=data["arguments"])


class ToolCallF1(_ToolCheck):
    """``tool-call-f1``: the F1 score of the tool names called against the expected ones (as sets)."""

    def __init__(self, expected: list[str], threshold: float) -> None:
        self.expected = frozenset(expected)
        self.threshold = threshold

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        called = frozenset(call.name for _, call in _numbered(ctx))
        hit = len(self.expected & called)
        precision = hit / len(called) if called else 0.0
        recall = hit / len(self.expected)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        expected = f"tool-call F1 >= {self.threshold:g} for [{', '.join(sorted(self.expected))}]"
        found = (
            f"F1 {f1:.3f} (precision {precision:.3f}, recall {recall:.3f}); "
            f"called [{', '.join(sorted(called)) or '(none)'}]"
        )
        return Verdict(f1 >= self.threshold, expected, found, score=f1)


class ToolUsed(_ToolCheck):
    """``trajectory:tool-used``: every named tool was called (a list); or one tool, ``min``/``max`` times.
    Its ``not-`` form: none of the named tools was called (or the count is outside the bounds)."""

    def __init__(
        self, names: list[str], low: int | None, high: int | None, *, counted: bool, any_of: bool = False
    ) -> None:
        self.names, self.low, self.high, self.counted, self.any_of = names, low, high, counted, any_of

    def negated(self) -> Check:
        """Return the form ``not-`` flips: any of the listed tools called."""
        if self.counted:
            return self
        return ToolUsed(self.names, self.low, self.high, counted=False, any_of=True)

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        calls = _numbered(ctx)
        if self.counted:
            return self._count(calls)
        used = [n for n in self.names if any(_matches(c.name, n) for _, c in calls)]
        listed = ", ".join(repr(n) for n in self.names)
        if self.any_of:
            vacuous = None if calls else _no_call_possible(ctx.tools)
            if vacuous is not None:  # ``not-``: a pass would say nothing
                return Verdict.skipped(f"{vacuous}, so not calling {listed} shows nothing")
            return Verdict(bool(used), f"any of {listed} called", _shown(calls))
        return self._every(calls, used, listed)

    def _every(self, calls: list[tuple[int, ToolCall]], used: list[str], listed: str) -> Verdict:
        missing = [n for n in self.names if n not in used]
        shown = _shown(calls) if not missing else f"{', '.join(map(repr, missing))} not called; {_shown(calls)}"
        return Verdict(not missing, f"{listed} called", shown)

    def _count(self, calls: list[tuple[int, ToolCall]]) -> Verdict:
        name = self.names[0]
        low = 1 if self.low is None else self.low
        found = [c for c in calls if _matches(c[1].name, name)]
        bounds = f"at least {low}" if self.high is None else f"{low} to {self.high}"
        passed = len(found) >= low and (self.high is None or len(found) <= self.high)
        return Verdict(passed, f"{name!r} called {bounds} times", f"{len(found)} calls ({_shown(found)})")


def _no_call_possible(tools: ToolSet | None) -> str | None:
    """Say why a run that called no tool could not have called one (no tool offered, or ``tool_choice =
    "required"`` ignored by the endpoint); None when the model chose not to."""
    if tools is None or not tools.tools:
        return "no tool was offered to the model (no tools in the case or its [template])"
    if tools.tool_choice == "required":
        return (
            'tool_choice "required" was sent and the model called no tool: the endpoint ignored it (llama.cpp\'s '
            "server needs --jinja; a model without tool support never calls)"
        )
    return None


class ToolSequence(_ToolCheck):
    """``trajectory:tool-sequence``: the calls follow ``steps`` in order, as a subsequence (``mode =
    "in_order"``, the default) or exactly (``mode = "exact"``); a failure names the call that broke it."""

    def __init__(self, steps: list[str], exact: bool) -> None:
        self.steps, self.exact = steps, exact

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        calls = _numbered(ctx)
        order = " -> ".join(self.steps)
        if self.exact:
            return self._exactly(calls, f"exactly the tool sequence {order}")
        expected = f"the tool sequence {order} in order"
        at = 0
        for _, call in calls:
            if at < len(self.steps) and _matches(call.name, self.steps[at]):
                at += 1
        if at == len(self.steps):
            return Verdict(True, expected, _shown(calls))
        after = f" after {self.steps[at - 1]}" if at else ""
        return Verdict(False, expected, f"{self.steps[at]} never called{after}; {_shown(calls)}")

    def _exactly(self, calls: list[tuple[int, ToolCall]], expected: str) -> Verdict:
        for i, wanted in enumerate(self.steps):
            if i >= len(calls):
                return Verdict(False, expected, f"call {i + 1} ({wanted}) never made; {_shown(calls)}")
            step, call = calls[i]
            if not _matches(call.name, wanted):
                return Verdict(False, expected, f"call {i + 1} (step {step}) was {call.name}, not {wanted}")
        if len(calls) > len(self.steps):
            step, extra = calls[len(self.steps)]
            return Verdict(False, expected, f"an extra call {len(self.steps) + 1} (step {step}): {extra.name}")
        return Verdict(True, expected, _shown(calls))


class ToolArgsMatch(_ToolCheck):
    """``trajectory:tool-args-match``: some call of the tool ``name`` has the arguments ``args`` (``mode``
    ``partial``, the default: these keys with these values; ``exact``: these and no more), or arguments
    valid against the JSON Schema ``schema``."""

    def __init__(self, name: str, args: Any, exact: bool, schema: Any | None) -> None:
        self.name, self.args, self.exact, self.schema = name, args, exact, schema

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        calls = [(i, c) for i, c in _numbered(ctx) if _matches(c.name, self.name)]
        if self.schema is not None:
            expected = f"a call of {self.name} with arguments valid against the schema"
        else:
            how = "exactly" if self.exact else "including"
            expected = f"a call of {self.name} with arguments {how} {shorten(self.args)}"
        if not calls:
            return Verdict(False, expected, f"{self.name} never called; {_shown(_numbered(ctx))}")
        problems = []
        for step, call in calls:
            problem = self._misfit(call)
            if problem is None:
                return Verdict(True, expected, f"step {step}: {call.display()}")
            problems.append(f"step {step}: {problem}")
        return Verdict(False, expected, "; ".join(problems))

    def _misfit(self, call: ToolCall) -> str | None:
        """Say how a call's arguments miss (None: they fit the schema, or the args)."""
        if not call.valid_json:
            return "arguments are not JSON"
        if self.schema is not None:
            return schema_mismatch(self.schema, call.arguments)
        fits = json_equal(call.arguments, self.args) if self.exact else partial_match(call.arguments, self.args)
        return None if fits else _cut(call.display())


class StepCount(_ToolCheck):
    """``trajectory:step-count``: how many model steps the run took (``value`` exactly, or ``min``/``max``)."""

    def __init__(self, low: int | None, high: int | None) -> None:
        self.low, self.high = low, high

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        count = len(_steps(ctx))
        if self.low == self.high:
            expected = f"{self.low} model steps"
        elif self.high is None:
            expected = f"at least {self.low} model steps"
        elif self.low is None:
            expected = f"at most {self.high} model steps"
        else:
            expected = f"{self.low} to {self.high} model steps"
        passed = (self.low is None or count >= self.low) and (self.high is None or count <= self.high)
        return Verdict(passed, expected, f"{count} steps ({_shown(_numbered(ctx))})")


def _names(value: Any, p: Params, what: str) -> list[str]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")] if p.name == "tool-call-f1" else [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise CheckError(f"'value' of {p.name!r} must be {what}, got {describe_type(value)}")
    return [v.strip() for v in value]


def _bound(table: dict[str, Any], key: str, name: str) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckError(f"'{key}' of {name!r} must be a whole number >= 0, got {describe_type(value)}")
    return value


def _table(p: Params, allowed: set[str], what: str) -> dict[str, Any]:
    value = p.raw("value", required=True, what=what)
    if not isinstance(value, dict):
        raise CheckError(f"'value' of {p.name!r} must be {what}, got {describe_type(value)}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise CheckError(f"'value' of {p.name!r}: unknown key {unknown[0]!r} (its keys: {', '.join(sorted(allowed))})")
    return value


def make_valid_tools_call(p: Params) -> Check:
    """Make ``is-valid-openai-tools-call``: every call names a defined tool, its arguments valid JSON for it."""
    return ValidToolsCall()


def make_valid_function_call(p: Params) -> Check:
    """Make ``is-valid-openai-function-call``: ``value`` the functions (OpenAI's ``{name, parameters}``),
    else the tools the request offered."""
    functions = p.raw("value", what="a list of functions ({name, parameters})")
    if functions is not None and (
        not isinstance(functions, list)
        or not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in functions)
    ):
        raise CheckError(
            f"'value' of {p.name!r} must be a list of functions ({{name, parameters}}), got {describe_type(functions)}"
        )
    for f in functions or ():
        if f.get("parameters") is not None:
            schema_validator(f["parameters"], p.name)  # a bad schema is an error at collection
    return ValidFunctionCall(functions)


def make_tool_call_f1(p: Params) -> Check:
    """Make ``tool-call-f1``: the expected tool names (``value``: a list or ``"a, b"``), ``threshold`` (1)."""
    names = _names(p.raw("value", required=True, what="tool names"), p, "a list of tool names or 'a, b'")
    threshold = p.number("threshold", minimum=0, maximum=1, what="a score from 0 to 1")
    return ToolCallF1(names, 1.0 if threshold is None else threshold)


def make_tool_used(p: Params) -> Check:
    """Make ``trajectory:tool-used``: ``value`` a tool's name, a list of names, or ``{name, min, max}``."""
    what = "a tool name, a list of names, or {name, min, max}"
    value = p.raw("value", required=True, what=what)
    if isinstance(value, dict):
        table = _table(p, {"name", "min", "max"}, what)
        name = table.get("name")
        if not isinstance(name, str) or not name:
            raise CheckError(f"'value' of {p.name!r} needs a tool 'name'")
        low, high = _bound(table, "min", p.name), _bound(table, "max", p.name)
        return ToolUsed([name], low, high, counted=True)
    return ToolUsed(_names(value, p, what), None, None, counted=False)


def make_tool_sequence(p: Params) -> Check:
    """Make ``trajectory:tool-sequence``: ``value`` the names in order, or ``{steps, mode}`` (in_order, exact)."""
    what = "a list of tool names or {steps = [...], mode = 'in_order' | 'exact'}"
    value = p.raw("value", required=True, what=what)
    mode = "in_order"
    if isinstance(value, dict):
        table = _table(p, {"steps", "mode"}, what)
        mode = table.get("mode", "in_order")
        if mode not in ("in_order", "exact"):
            raise CheckError(f"'mode' of {p.name!r} must be 'in_order' or 'exact', got {mode!r}")
        value = table.get("steps")
    return ToolSequence(_names(value, p, what), exact=mode == "exact")


def make_tool_args_match(p: Params) -> Check:
    """Make ``trajectory:tool-args-match``: ``value`` ``{name, args, mode}`` or ``{name, schema}``."""
    what = "{name, args, mode = 'partial' | 'exact'} or {name, schema}"
    table = _table(p, {"name", "args", "arguments", "mode", "schema"}, what)
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise CheckError(f"'value' of {p.name!r} needs a tool 'name'")
    mode = table.get("mode", "partial")
    if mode not in ("partial", "exact"):
        raise CheckError(f"'mode' of {p.name!r} must be 'partial' or 'exact', got {mode!r}")
    args = table.get("args", table.get("arguments"))
    schema = table.get("schema")
    if (args is None) == (schema is None):
        raise CheckError(f"'value' of {p.name!r} needs exactly one of 'args' and 'schema'")
    validator = schema_validator(schema, p.name) if schema is not None else None
    return ToolArgsMatch(name, args, mode == "exact", validator)


def make_step_count(p: Params) -> Check:
    """Make ``trajectory:step-count``: ``value`` the number of model steps, or ``{min, max}``."""
    what = "a number of steps or {min, max}"
    value = p.raw("value", required=True, what=what)
    if isinstance(value, dict):
        table = _table(p, {"min", "max"}, what)
        low, high = _bound(table, "min", p.name), _bound(table, "max", p.name)
        if low is None and high is None:
            raise CheckError(f"'value' of {p.name!r} needs 'min' or 'max'")
        return StepCount(low, high)
    exact = _bound({"value": value}, "value", p.name)
    return StepCount(exact, exact)
