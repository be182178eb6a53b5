"""Stage tests for ``checks.embedding``: ``similar`` by the embeddings of a model, as promptfoo does it."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.prompts.tool_set import ToolSet


def result_of(entry: dict[str, Any], output: str | Response | list[Step], **settings: Any) -> CheckResult:
    """The one result of one entry (no must_include, no threshold); a list of steps is a run's trajectory
    (the last step its answer), every run offering :data:`TOOLS`."""
    case = PromptCase(case_id="c", input="i", slice="s", assert_=[entry])
    trajectory: tuple[Step, ...] = ()
    if isinstance(output, list):
        trajectory, output = tuple(output), Response(output[-1].text, tool_calls=output[-1].calls)
    [result] = Evaluator(**settings).evaluate(case, output, trajectory=trajectory, tools=TOOLS)
    return result


ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}


TOOLS = ToolSet(
    (
        {"type": "function", "function": {"name": "lookup_order", "parameters": ORDER}},
        {"type": "function", "function": {"name": "issue_refund", "parameters": ORDER}},
    )
)


@pytest.mark.parametrize(
    ("entry", "output", "passes", "words"),
    [
        ({"type": "similar:cosine", "value": "refund issued today"}, "Your refund was issued today", True, "0.77"),
        ({"type": "similar:cosine", "value": ["no", "refund issued"], "threshold": 0.9}, "refund issued", True, "1.00"),
        ({"type": "similar:cosine", "value": "refund issued"}, "the weather is nice", False, "similarity 0.00"),
        ({"type": "not-similar:cosine", "value": "refund issued"}, "the weather is nice", True, "0.00"),
        ({"type": "similar:dot", "value": "a b", "threshold": 2}, "a b c", True, "similarity 2.00"),
        ({"type": "similar:euclidean", "value": "a b", "threshold": 0.75}, "a b c", False, "distance 1.00"),
        ({"type": "similar:euclidean", "value": "a b", "threshold": 1}, "a b c", True, "distance 1.00"),
    ],
)
def test_similar_by_embeddings_as_promptfoo(entry: dict[str, Any], output: str, passes: bool, words: str) -> None:
    # promptfoo's similar (= similar:cosine), default threshold 0.75; here on the fake model's word embedding
    from pytest_promptsuite.models.fake import FakeModel

    result = result_of(entry, output, embed=FakeModel().embed)
    assert (result.passed, words in result.message) == (passes, True), result.message


def test_similar_without_an_embedding_model_says_how_to_add_one() -> None:
    result = result_of({"type": "similar:cosine", "value": "refund"}, "refund")
    assert not result.passed and "no embedding model: add [models.embedding] to the suite config" in result.message
