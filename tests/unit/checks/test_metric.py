"""Stage tests for ``checks.metric``: ``llm-rubric`` and the judge model that grades an output."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.calibration import JudgeGate
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.checks.evaluator import evaluate
from pytest_promptsuite.checks.evaluator import outcome_of
from pytest_promptsuite.checks.metric import ModelJudge
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.cache import CachingModel
from pytest_promptsuite.models.cache import ResponseCache
from pytest_promptsuite.models.cache import cache_key
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.fake import FakeRule
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import Usage
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.runner import ModelRunner
from tests.loopback import LoopbackServer


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


class _Changing:
    """A judge model whose verdict depends on which ask it is (its ``repeat``): pass on the asks in ``passes``."""

    spec = "changing"

    def __init__(self, passes: set[int]) -> None:
        self.passes = passes
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> Response:
        self.requests.append(request)
        verdict = "true" if request.repeat in self.passes else "false"
        return Response(f'{{"reason": "ask {request.repeat}", "pass": {verdict}}}', usage=Usage(10, 2, 12))


@pytest.mark.parametrize(("passes", "majority"), [({0, 2}, True), ({1}, False), ({0, 1, 2}, True)])
def test_a_repeated_judge_takes_the_majority(passes: set[int], majority: bool) -> None:
    runner = ModelRunner()
    try:
        model = _Changing(passes)
        judge = ModelJudge(runner.attach(model), runner, {"temperature": 0.7}, repeat=3)
        [result] = Evaluator(judge=judge, judge_name="changing").evaluate(
            _case([{"type": "llm-rubric", "value": "Is polite"}]), "Thanks!"
        )
    finally:
        runner.close()
    assert result.passed is majority
    assert result.details is not None
    assert result.details["verdicts"] == [i in passes for i in range(3)]
    assert f"({len(passes)} of 3 asks passed)" in result.message
    assert result.details["judge_usage"] == {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
    assert sorted(r.repeat for r in model.requests) == [0, 1, 2]
    assert {r.salt for r in model.requests} == {judge.fingerprint}


def test_the_judges_fingerprint_is_part_of_its_cache_key() -> None:
    request = ModelRequest(prompt="p", params={"temperature": 0})
    salted = ModelRequest(prompt="p", params={"temperature": 0}, salt="0123456789abcdef")
    assert cache_key({"model": "m"}, request) != cache_key({"model": "m"}, salted)


def test_the_model_name_the_endpoint_serves_is_part_of_the_fingerprint_not_of_the_cache_key(
    loopback: LoopbackServer, runner: ModelRunner, tmp_path: Path
) -> None:
    """An alias that moved on (the endpoint says another model answered) is another judge; the cache key is the
    one asked for, and a cache hit gives the served name back, so a replay has the same fingerprint offline."""

    def judge(cache: Path) -> ModelJudge:
        model = CachingModel(OpenAIModel("judge", base_url=loopback.base_url), cache=ResponseCache(cache))
        return ModelJudge(model, runner)

    early, later = judge(tmp_path / "a"), judge(tmp_path / "b")
    assert early.fingerprint == later.fingerprint  # before any answer: the same judge asked for
    case = _case([{"type": "llm-rubric", "value": "Is polite"}])
    loopback.knobs.served = "judge-2026-01"
    [result] = Evaluator(judge=early, judge_name="judge").evaluate(case, "Hello")
    loopback.knobs.served = "judge-2026-06"
    later.ask("rubric prompt")
    assert (early.served, later.served) == ("judge-2026-01", "judge-2026-06")
    assert early.fingerprint != later.fingerprint and early.salt == later.salt
    assert result.details is not None and result.details["judge_fingerprint"] == early.fingerprint
    requests, loopback.knobs.served = loopback.stats.requests, "judge-2026-12"
    replayed = judge(tmp_path / "a")
    Evaluator(judge=replayed, judge_name="judge").evaluate(case, "Hello")
    assert loopback.stats.requests == requests  # answered by the cache
    assert replayed.served == "judge-2026-01" and replayed.fingerprint == early.fingerprint


def test_an_uncalibrated_judge_leaves_a_review_mark() -> None:
    judge = _judge('{"reason": "Rude.", "pass": false}')
    judge.gate = JudgeGate(0.6, 30, "calibration.json")
    case = _case([{"type": "llm-rubric", "value": "Is polite"}])
    [result] = Evaluator(judge=judge, judge_name="fake").evaluate(case, "Go away")
    assert (result.layer, result.passed, result.gating) == ("review", True, True)
    assert result.message.startswith("not gated: the judge is not calibrated: no calibration.json")
    assert result.message.endswith("(the check would fail)")
    assert result.details is not None and result.details["rubric"] == "Is polite"
    assert outcome_of(case, (result,), error=None) is Outcome.REVIEW


def test_an_uncalibrated_judges_unreadable_reply_does_not_gate_either() -> None:
    judge = _judge("I cannot say")
    judge.gate = JudgeGate(0.6, 30, "calibration.json")
    case = _case([{"type": "llm-rubric", "value": "Is polite"}])
    [result] = Evaluator(judge=judge, judge_name="fake").evaluate(case, "Go away")
    assert (result.layer, result.passed) == ("review", True)
    assert "an unreadable judge reply" in result.message and "(the check would fail)" in result.message
    assert outcome_of(case, (result,), error=None) is Outcome.REVIEW
