"""Stage tests for ``checks.evaluator``: layered evaluation's order, JSON paths, skipping, weights, thresholds,
assert-sets, suite-level checks, review, output transforms, and outcomes."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.checks.compile_checks import compile_suite_checks
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.checks.evaluator import evaluate
from pytest_promptsuite.checks.evaluator import outcome_of
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.config.config_schema import validate
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.results.case_result import CaseResult


def _case(entries: list[dict[str, Any]], **kwargs: Any) -> PromptCase:
    return PromptCase(case_id="c", input="i", slice=kwargs.pop("slice", "s"), assert_=entries, **kwargs)


def _summary(results: tuple[CheckResult, ...]) -> list[tuple[str, str, bool, bool]]:
    return [(r.layer, r.name, r.passed, r.skipped) for r in results]


def test_layers_run_in_order_and_every_failure_is_reported() -> None:
    case = _case(
        [
            {"type": "latency", "threshold": 10},
            {"type": "contains", "value": "refund"},
            {"type": "human-review", "value": "tone"},
            {"type": "is-json"},
            {"type": "word-count", "value": {"max": 1}},
        ],
        must_include=["ok"],
    )
    results = evaluate(case, "no refund here")
    assert _summary(results) == [
        ("content", "must_include", False, False),
        ("structure", "is-json", False, False),
        ("structure", "word-count", False, False),
        ("content", "contains", True, False),
        ("review", "human-review", True, False),
        ("metric", "latency", False, True),
    ]
    assert outcome_of(case, results, error=None).value == "failed"


ORDER = '{"refund": {"amount": 12, "currency": "EUR", "items": [{"sku": "A"}, {"sku": "B"}]}}'


@pytest.mark.parametrize(
    ("path", "value", "passes", "message"),
    [
        ("$.refund.amount", 12, True, "$.refund.amount: expected equals 12; found 12"),
        ("$.refund.amount", 12.0, True, "found 12"),
        ("$.refund.amount", "12", False, "$.refund.amount: expected equals '12'; found 12 (a number, not a string)"),
        ("$.refund.currency", "EUR", True, "found 'EUR'"),
        ("$.refund.items[1].sku", "B", True, "found 'B'"),
        ("$['refund']['items'][-1]['sku']", "B", True, "found 'B'"),
        ("$.refund.items[0]", {"sku": "A"}, True, '{"sku":"A"}'),
        ("$.refund", {"amount": 12}, False, 'expected equals {"amount":12}; found {"amount":12,'),
    ],
)
def test_equals_through_a_path_compares_json_values(path: str, value: Any, passes: bool, message: str) -> None:
    [result] = evaluate(_case([{"type": "equals", "path": path, "value": value}]), ORDER)
    assert result.passed is passes
    assert message in result.message
    assert result.details == {"path": path}


def test_text_checks_through_a_path_read_the_value() -> None:
    results = evaluate(
        _case(
            [
                {"type": "contains", "path": "$.refund.currency", "value": "EU"},
                {"type": "not-contains", "path": "$.refund.amount", "value": "1"},
                {"type": "regex", "path": "$.refund.items", "value": '"sku":"B"'},
            ]
        ),
        ORDER,
    )
    assert [(r.passed, r.message) for r in results] == [
        (True, "$.refund.currency: expected contains 'EU'; found 'EU' at offset 0"),
        (False, "$.refund.amount: expected not contains '1'; found '1' at offset 0"),
        (True, '$.refund.items: expected matches /"sku":"B"/; found \'"sku":"B"\' at offset 14'),
    ]


def test_a_missing_path_fails_naming_where_it_stopped() -> None:
    results = evaluate(
        _case(
            [
                {"type": "equals", "path": "$.refund.total", "value": 1},
                {"type": "equals", "path": "$.refund.items[5].sku", "value": "x"},
                {"type": "equals", "path": "$.refund.amount.value", "value": 1},
            ]
        ),
        ORDER,
    )
    assert [r.message for r in results] == [
        "$.refund.total: cannot read it: $.refund has no key 'total' (keys: 'amount', 'currency', 'items')",
        "$.refund.items[5].sku: cannot read it: $.refund.items has 2 items, no index 5",
        "$.refund.amount.value: cannot read it: $.refund.amount is a number, not an object",
    ]
    assert not any(r.passed or r.skipped for r in results)


def test_a_path_check_after_a_failed_structure_check_is_skipped_not_failed() -> None:
    case = _case(
        [
            {"type": "equals", "path": "$.refund.amount", "value": 12},
            {"type": "is-json"},
            {"type": "contains", "value": "refund"},
        ]
    )
    results = evaluate(case, "Sure! refund of 12")
    assert _summary(results) == [
        ("structure", "is-json", False, False),
        ("content", "equals", False, True),
        ("content", "contains", True, False),
    ]
    assert results[1].message == (
        "$.refund.amount: skipped: output is not JSON (Expecting value at line 1 column 1), "
        "and structure check 'is-json' failed"
    )
    assert CaseResult("c", "s", "failed", checks=results).failed_checks == [results[0]]


def test_a_path_check_on_non_json_output_fails_when_no_structure_check_did() -> None:
    [result] = evaluate(_case([{"type": "equals", "path": "$.a", "value": 1}]), "plain text")
    assert (result.passed, result.skipped) == (False, False)
    assert result.message == "$.a: cannot read it: output is not JSON (Expecting value at line 1 column 1)"


def test_weight_zero_records_without_gating() -> None:
    case = _case([{"type": "contains", "value": "x", "weight": 0}, {"type": "contains", "value": "a"}])
    results = evaluate(case, "abc")
    assert results[0].passed is False and results[0].gating is False
    assert results[0].message.endswith("(weight 0: recorded only)")
    assert outcome_of(case, results, error=None).value == "passed"


@pytest.mark.parametrize(("threshold", "outcome"), [(0.5, "failed"), (0.3, "passed"), (0.0, "passed")])
def test_case_threshold_weighs_the_assert_entries(threshold: float, outcome: str) -> None:
    # promptfoo's example: equals (weight 2) fails, contains (weight 1) passes -> 1/3
    case = _case(
        [{"type": "equals", "value": "Hello world", "weight": 2}, {"type": "contains", "value": "world"}],
        threshold=threshold,
    )
    results = evaluate(case, "Goodbye world")
    assert [r.gating for r in results] == [False, False, True]
    last = results[-1]
    assert last.name == "threshold"
    assert last.score == pytest.approx(1 / 3)
    assert last.message == (
        f"case: expected a weighted share >= {threshold:g}; found 1 of 2 passed, weighted share 0.33 (failed: equals)"
    )
    assert outcome_of(case, results, error=None).value == outcome


def test_must_include_gates_even_under_a_threshold() -> None:
    case = _case([{"type": "contains", "value": "x"}], threshold=0.0, must_include=["zzz"])
    assert outcome_of(case, evaluate(case, "abc"), error=None).value == "failed"


def test_assert_set_passes_on_its_own_threshold() -> None:
    entry = {
        "type": "assert-set",
        "threshold": 0.5,
        "assert": [{"type": "contains", "value": "a"}, {"type": "contains", "value": "z"}],
    }
    case = _case([entry, {"type": "starts-with", "value": "a"}])
    results = evaluate(case, "abc")
    assert _summary(results) == [
        ("content", "contains", True, False),
        ("content", "contains", False, False),
        ("content", "starts-with", True, False),
        ("content", "assert-set", True, False),
    ]
    assert [r.gating for r in results] == [False, False, True, True]
    assert results[1].details == {"in": "assert[0] assert-set"}
    assert results[3].message == (
        "assert[0]: expected a weighted share >= 0.5; found 1 of 2 passed, weighted share 0.50 (failed: contains)"
    )
    assert outcome_of(case, results, error=None).value == "passed"


def test_assert_set_without_threshold_needs_every_member() -> None:
    entry = {"type": "assert-set", "assert": [{"type": "contains", "value": "a"}, {"type": "contains", "value": "z"}]}
    case = _case([entry])
    results = evaluate(case, "abc")
    assert results[-1].message.startswith("assert[0]: expected every weighted check passes; found 1 of 2 passed")
    assert outcome_of(case, results, error=None).value == "failed"


def test_assert_set_counts_in_the_case_threshold_with_its_weight() -> None:
    entries = [
        {"type": "assert-set", "weight": 3, "assert": [{"type": "contains", "value": "a"}]},
        {"type": "contains", "value": "z"},
    ]
    results = evaluate(_case(entries, threshold=0.75), "abc")
    assert results[-1].passed and results[-1].score == pytest.approx(0.75)


def test_suite_checks_apply_by_slice_and_gate_on_their_own() -> None:
    config = validate(
        SuiteConfig,
        {
            "checks": [
                {"slice": "*", "assert": [{"type": "not-contains", "value": "sk-"}]},
                {"slice": "json-*", "assert": [{"type": "is-json"}]},
                {"slice": "other", "assert": [{"type": "contains", "value": "never"}]},
            ]
        },
    )
    suite = compile_suite_checks(config.checks, make_builtin_check, base_dir=config.root, source="promptsuite.toml")
    evaluator = Evaluator(suite=suite)
    case = _case([{"type": "contains", "value": "nope"}], slice="json-extract", threshold=0.0)
    results = evaluator.evaluate(case, '{"key": "sk-123"}')
    assert _summary(results) == [
        ("structure", "is-json", True, False),
        ("content", "contains", False, False),
        ("content", "not-contains", False, False),
        ("metric", "threshold", True, False),
    ]
    assert results[2].gating and results[2].details == {"in": "suite [[checks]][0].assert[0]"}
    assert outcome_of(case, results, error=None).value == "failed"
    plain = evaluator.evaluate(_case([], slice="chat"), "fine")
    assert _summary(plain) == [("content", "not-contains", True, False)]


@pytest.mark.parametrize(
    ("review", "entries", "review_fails", "outcome"),
    [
        (True, [], False, "review"),
        ("check the tone", [], False, "review"),
        (False, [{"type": "human-review", "value": "legal wording"}], False, "review"),
        (False, [{"type": "human-review", "value": "legal wording", "weight": 0}], False, "passed"),
        (True, [{"type": "contains", "value": "zzz"}], False, "failed"),
        (True, [], True, "failed"),
        (False, [{"type": "human-review", "value": "x"}, {"type": "contains", "value": "zz"}], False, "failed"),
        (False, [{"type": "human-review", "value": "legal wording"}], True, "failed"),
    ],
)
def test_review_marks(review: Any, entries: list[dict[str, Any]], review_fails: bool, outcome: str) -> None:
    case = _case(entries, review=review)
    results = Evaluator(review_fails=review_fails).evaluate(case, "abc")
    assert outcome_of(case, results, error=None).value == outcome
    marks = [r for r in results if r.layer == "review"]
    assert all("review" in (r.details or {}) for r in marks)
    if review_fails:
        assert any("(review.outcome = 'failed' in the suite config)" in r.message for r in marks)


def test_human_review_marks_a_case_with_a_threshold_and_is_not_weighed() -> None:
    case = _case([{"type": "human-review", "value": "tone"}, {"type": "contains", "value": "a"}], threshold=1.0)
    results = evaluate(case, "abc")
    assert [(r.name, r.gating) for r in results] == [("contains", False), ("human-review", True), ("threshold", True)]
    assert results[-1].message.endswith("found 1 of 1 passed, weighted share 1.00")
    assert outcome_of(case, results, error=None).value == "review"


def test_case_review_reason_is_recorded() -> None:
    results = evaluate(_case([], review="check the tone"), "abc")
    assert _summary(results) == [("review", "review", True, False)]
    assert results[0].message == "marked for human review: check the tone"


def test_error_comes_first() -> None:
    case = _case([], review=True)
    assert outcome_of(case, (), error="HTTP 500").value == "error"


def test_transform_rewrites_what_the_checks_see() -> None:
    def strip_think(output: str, case: PromptCase, response: Response | None) -> str | None:
        return re.sub(r"<think>.*?</think>\s*", "", output, flags=re.DOTALL)

    case = _case([{"type": "is-json"}, {"type": "not-contains", "value": "secret"}])
    output = '<think>the secret plan</think>\n{"a": 1}'
    assert all(r.passed for r in Evaluator(transform=strip_think).evaluate(case, output))
    assert not any(r.passed for r in Evaluator().evaluate(case, output))
