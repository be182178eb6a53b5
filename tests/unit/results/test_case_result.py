"""Stage tests for ``results.case_result``: a row round-trips through JSON with every field."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import CaseLocation
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.evaluator import evaluate
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.models.tool_calls import ToolCall
from pytest_promptsuite.results.case_result import CaseResult


def _case(entries: list[dict[str, Any]], **kwargs: Any) -> PromptCase:
    return PromptCase(case_id="c", input="i", slice=kwargs.pop("slice", "s"), assert_=entries, **kwargs)


def test_case_result_round_trips_scores_and_details() -> None:
    results = evaluate(
        _case([{"type": "similar", "value": "abc"}, {"type": "equals", "path": "$.a", "value": 1}]), '{"a": 1}'
    )
    row = CaseResult("c", "s", "failed", checks=results)
    again = CaseResult.from_json(row.to_json())
    assert again == row
    assert again.checks[0].score is not None and again.checks[1].details == {"path": "$.a"}


def test_case_result_round_trips_every_field() -> None:
    """Each field set to a value no other field has: ``from_dict`` builds the row positionally, so a
    field added out of order would land in its neighbour's place."""
    row = CaseResult(
        "c",
        "s",
        "review",
        location=CaseLocation(Path("cases.jsonl"), 7),
        variant="v2",
        repeat=3,
        output="out",
        checks=(CheckResult("content", "must_include", True, "found 'o'"),),
        error="boom",
        prompt=[{"role": "user", "content": "p"}],
        prompt_hash="abc123",
        latency_ms=12.5,
        usage={"prompt_tokens": 4},
        tags=("t1",),
        metadata={"m": 1},
        replies=("r1", "out"),
        cached=True,
        tool_calls=(ToolCall("call_1", "lookup_order", {"order_id": "A1"}), ToolCall("call_2", "x", None, "{bad")),
        trajectory=(Step("", (ToolCall("call_0", "lookup_order", {}),), ("found",)), Step("out")),
        tool_stop="stopped",
        judge_fingerprint="0123456789abcdef",
        turns=({"turn": 1, "user": "u", "reply": "out", "passed": True},),
    )
    assert {f.name for f in dataclasses.fields(CaseResult)} == set(row.to_dict()) - {"format_version"}
    assert CaseResult.from_json(row.to_json()) == row
    assert CaseResult.from_dict({"case_id": "c", "slice": "s", "outcome": "passed"}) == CaseResult("c", "s", "passed")
