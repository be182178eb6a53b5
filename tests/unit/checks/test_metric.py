"""Stage tests for ``checks.metric``: ``llm-rubric`` and the judge model that grades an output."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.checks.evaluator import evaluate
from pytest_promptsuite.checks.metric import ModelJudge
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.fake import FakeRule
from pytest_promptsuite.models.runner import ModelRunner


def _case(entries: list[dict[str, Any]], **kwargs: Any) -> PromptCase:
    return PromptCase(case_id="c", input="i", slice=kwargs.pop("slice", "s"), assert_=entries, **kwargs)


def _judge(reply: str) -> ModelJudge:
    return ModelJudge(FakeModel([FakeRule(re.compile("rubric"), reply)]), ModelRunner())


@pytest.mark.parametrize(
    ("reply", "threshold", "passes", "found"),
    [
        ('{"reason": "Polite and complete.", "pass": true, "score": 0.9}', None, True, "pass, score 0.9: Polite"),
        ('Verdict: {"reason": "Rude.", "pass": false, "score": 0.2}', None, False, "fail, score 0.2: Rude."),
        ('{"reason": "Mostly fine.", "pass": true, "score": 0.6}', 0.8, False, "pass, score 0.6"),
        ('{"reason": "ok", "pass": true}', 0.8, True, "pass, score 1: ok"),
    ],
)
def test_llm_rubric_records_the_judges_verdict(reply: str, threshold: float | None, passes: bool, found: str) -> None:
    entry: dict[str, Any] = {"type": "llm-rubric", "value": "Is polite"}
    if threshold is not None:
        entry["threshold"] = threshold
    [result] = Evaluator(judge=_judge(reply), judge_name="fake:judge.json").evaluate(_case([entry]), "Thanks!")
    assert result.passed is passes
    assert result.layer == "metric"
    assert found in result.message
    assert result.details is not None and result.details["judge"] == "fake:judge.json"
    assert {"verdict", "score", "reason"} <= set(result.details)
    assert result.score == result.details["score"]


def test_llm_rubric_sends_the_rubric_and_the_output() -> None:
    seen: list[str] = []

    def judge(prompt: str) -> str:
        seen.append(prompt)
        return '{"reason": "r", "pass": true, "score": 1}'

    evaluate(
        _case([{"type": "llm-rubric", "value": "Mentions the refund", "path": "$.a"}]),
        '{"a": "refund ok"}',
        judge=judge,
    )
    assert "<rubric>\nMentions the refund\n</rubric>" in seen[0]
    assert "<output>\nrefund ok\n</output>" in seen[0]


@pytest.mark.parametrize(
    ("judge", "found"),
    [
        (None, "no judge model: configure [models.judge]"),
        (lambda prompt: "I think it is fine", "an unreadable judge reply (no JSON object with a boolean 'pass'"),
        (lambda prompt: '{"pass": true, "score": "high"}', "'score' is 'high', not a number"),
    ],
)
def test_llm_rubric_fails_clearly_without_a_usable_judge(judge: Any, found: str) -> None:
    [result] = evaluate(_case([{"type": "llm-rubric", "value": "Is polite"}]), "x", judge=judge)
    assert not result.passed and found in result.message


def test_llm_rubric_judge_errors_fail_the_check() -> None:
    def broken(prompt: str) -> str:
        raise ModelError("HTTP 503 from the judge")

    [result] = evaluate(_case([{"type": "llm-rubric", "value": "Is polite"}]), "x", judge=broken)
    assert result.message.endswith("found the judge call failed: HTTP 503 from the judge")
