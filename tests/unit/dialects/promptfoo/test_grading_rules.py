"""promptfoo 0.123.1's rules for what a code assert returns (its ``validateResult``, ``isGradingResult`` and
``normalizeScriptResult``), each case checked against what promptfoo gave on the same value."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.dialects.promptfoo.grading_rules import is_grading_result
from pytest_promptsuite.dialects.promptfoo.grading_rules import javascript_rule
from pytest_promptsuite.dialects.promptfoo.grading_rules import json_value
from pytest_promptsuite.dialects.promptfoo.grading_rules import python_rule


GRADED = {"pass": True, "score": 0.4, "reason": "ok"}


@pytest.mark.parametrize(
    ("value", "threshold", "passed"),
    [
        (True, None, True),
        (False, None, False),
        (0, None, False),
        (0.3, 0.2, True),
        (0.1, 0.2, False),
        (GRADED, 0.5, True),  # a GradingResult's pass stands: the threshold is not applied
        ({"pass": False, "score": 1, "reason": ""}, None, False),
    ],
)
def test_what_a_javascript_assert_returns_passes_as_in_promptfoo(
    value: Any, threshold: float | None, passed: bool
) -> None:
    rule = javascript_rule(value, threshold, from_file=False)
    assert rule.refused is None and rule.passed is passed


@pytest.mark.parametrize(
    "value",
    [{"pass": True, "score": 1}, "yes", None, [1], {"pass": 1, "score": 1, "reason": "r"}, {**GRADED, "comment": None}],
)
def test_what_promptfoo_refuses_from_a_javascript_assert_is_refused(value: Any) -> None:
    refused = javascript_rule(value, None, from_file=False).refused
    assert refused is not None and refused.startswith("Custom function must return a boolean, number, or GradingResult")


def test_a_javascript_file_returning_text_is_refused_as_promptfoo_says() -> None:
    refused = javascript_rule("text", None, from_file=True).refused
    assert refused == 'Custom function must return a boolean, number, or object object. Got type string: "text"'


@pytest.mark.parametrize(
    ("value", "threshold", "passed", "score"),
    [
        (True, None, True, 1.0),
        ("TRUE", None, True, 1.0),
        ("false", None, False, 0.0),
        ("0.7", 0.5, True, 0.7),
        (" 3abc", None, True, 3.0),  # parseFloat reads the number at the start
        (0, None, False, 0.0),
        ({"pass_": True, "score": 1, "reason": "snake"}, None, True, 1.0),
        ({"pass": True, "score": 0.4, "reason": "ok"}, 0.5, False, 0.4),  # under the threshold: failed
        ('{"pass": false, "score": 0, "reason": "json text"}', None, False, 0.0),
    ],
)
def test_what_a_python_assert_returns_passes_as_in_promptfoo(
    value: Any, threshold: float | None, passed: bool, score: float
) -> None:
    rule = python_rule(value, threshold)
    assert (rule.refused, rule.passed, rule.score) == (None, passed, score)


@pytest.mark.parametrize("value", [{"pass": True, "score": 1}, "maybe", None, [1], "[1]", "{not json"])
def test_what_promptfoo_refuses_from_a_python_assert_is_refused(value: Any) -> None:
    assert python_rule(value, None).refused is not None


def test_a_python_score_under_its_threshold_says_so_as_promptfoo_does() -> None:
    assert python_rule(GRADED, 0.5).reason == "Python score 0.4 is less than threshold 0.5: ok"


def test_a_grading_result_may_carry_promptfoos_optional_keys() -> None:
    full = {**GRADED, "namedScores": None, "tokensUsed": {}, "componentResults": [], "comment": "c", "assertion": None}
    assert is_grading_result(full)
    assert not is_grading_result({**GRADED, "componentResults": None})


def test_a_python_value_reaches_the_rules_as_json_carries_it() -> None:
    assert json_value((1, 2)) == [1, 2]
    assert json_value(float("nan")) is None
