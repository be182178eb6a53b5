"""Stage tests for ``checks.conversation_checks``: each ``conversation:*`` type on a transcript, through the
evaluator (a plain callable as the judge), its messages naming the turn; compile errors of their values."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.compile_checks import compile_case
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.errors import CheckError


TRANSCRIPT = (
    {"turn": 1, "user": "Hi", "reply": "What is your order number?"},
    {"turn": 2, "user": "It is A1234", "reply": "A1234 shipped."},
    {"turn": 3, "user": "Refund it", "reply": "Refund issued!"},
)


def _case(entries: list[dict[str, Any]], **fields: Any) -> PromptCase:
    return PromptCase("c", "hi", "s", assert_=entries, **fields)


def _run(entry: dict[str, Any], transcript: tuple[dict[str, Any], ...] = TRANSCRIPT, **settings: Any) -> Any:
    case = _case([entry], **settings.pop("case", {}))
    evaluator = Evaluator(**settings)
    [result] = evaluator.evaluate(case, "Refund issued!", compile_case(case), transcript=transcript)
    return result


@pytest.mark.parametrize(
    ("value", "passed", "found"),
    [(3, True, "3 turns"), ({"min": 4}, False, "3 turns"), ({"max": 3}, True, "3 turns"), (2, False, "3 turns")],
)
def test_turn_count(value: Any, passed: bool, found: str) -> None:
    result = _run({"type": "conversation:turn-count", "value": value})
    assert result.passed is passed and found in result.message


@pytest.mark.parametrize(
    ("entry", "passed", "said"),
    [
        ({"value": "A1234", "turn": 2}, True, "given in turn 2, used in turn 2"),
        ({"value": "A1234"}, False, "turn 3: the reply does not use it (given in turn 2)"),
        ({"value": "A\\d{4}", "regex": True, "turn": 2}, True, "used in turn 2"),
        ({"value": "B999"}, False, "no user turn gives it"),
        ({"value": "A1234", "turn": 1}, False, "turn 1 comes before turn 2"),
    ],
)
def test_keeps(entry: dict[str, Any], passed: bool, said: str) -> None:
    result = _run({"type": "conversation:keeps", **entry})
    assert result.passed is passed and said in result.message


def test_a_conversation_check_on_a_single_turn_case_is_skipped() -> None:
    assert _run({"type": "conversation:keeps", "value": "x"}, ()).skipped
    assert _run({"type": "conversation:goal-met"}, ()).skipped
    assert _run({"type": "conversation:role-adherence", "value": "a bot"}, ()).skipped


def test_goal_met_asks_the_judge_with_the_transcript_and_the_users_goal() -> None:
    asked: list[str] = []

    def judge(prompt: str) -> str:
        asked.append(prompt)
        return '{"pass": false, "score": 0.1, "reason": "no refund policy"}'

    result = _run({"type": "conversation:goal-met"}, judge=judge, case={"user": {"goal": "a refund"}})
    assert not result.passed
    assert "a refund" in asked[0] and "User: It is A1234\nAssistant: A1234 shipped." in asked[0]
    nogoal = _run({"type": "conversation:goal-met"}, judge=judge)
    assert not nogoal.passed and "no goal" in nogoal.message


def test_role_adherence_fails_at_the_first_reply_out_of_role_naming_its_turn() -> None:
    def judge(prompt: str) -> str:
        return '{"pass": false, "reason": "refunds"}' if "Refund issued" in prompt else '{"pass": true}'

    result = _run({"type": "conversation:role-adherence", "value": "never refunds"}, judge=judge)
    assert not result.passed and "turn 3:" in result.message
    kept = _run({"type": "conversation:role-adherence", "value": "never refunds"}, TRANSCRIPT[:2], judge=judge)
    assert kept.passed and "2 replies in role" in kept.message


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"type": "conversation:turn-count", "value": {"mni": 1}}, "unknown key 'mni'"),
        ({"type": "conversation:turn-count", "value": {}}, "needs 'min' or 'max'"),
        ({"type": "conversation:turn-count", "value": -1}, "whole number >= 0"),
        ({"type": "conversation:keeps", "value": ""}, "write the fact"),
        ({"type": "conversation:keeps", "value": "(", "regex": True}, "is no regex"),
    ],
)
def test_bad_values_fail_at_compile(entry: dict[str, Any], said: str) -> None:
    with pytest.raises(CheckError, match=said.replace("(", r"\(")):
        compile_case(_case([entry]))
