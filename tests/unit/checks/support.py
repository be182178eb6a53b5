"""What the check tests share: one entry evaluated on an output or on a run's trajectory, with the tools
every run offers."""

from __future__ import annotations

from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.prompts.tool_set import ToolSet


def result_of(
    entry: dict[str, Any], output: str | Response | list[Step] | tuple[dict[str, Any], ...], **settings: Any
) -> CheckResult:
    """The one result of one entry (no must_include, no threshold); a list of steps is a run's trajectory
    (the last step its answer), a tuple of turns a conversation's transcript, every run offering :data:`TOOLS`."""
    case = PromptCase(case_id="c", input="i", slice="s", assert_=[entry])
    trajectory: tuple[Step, ...] = ()
    transcript: tuple[dict[str, Any], ...] = ()
    if isinstance(output, list):
        trajectory, output = tuple(output), Response(output[-1].text, tool_calls=output[-1].calls)
    if isinstance(output, tuple):  # a conversation's transcript (the last reply its answer)
        transcript, output = output, str(output[-1]["reply"])
    [result] = Evaluator(**settings).evaluate(case, output, trajectory=trajectory, tools=TOOLS, transcript=transcript)
    return result


ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
TOOLS = ToolSet(
    (
        {"type": "function", "function": {"name": "lookup_order", "parameters": ORDER}},
        {"type": "function", "function": {"name": "issue_refund", "parameters": ORDER}},
    )
)
