"""Stage tests for the content layer and the failure text."""

from __future__ import annotations

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.content import must_checks
from pytest_promptsuite.report.text import failure_text
from pytest_promptsuite.report.text import trim_output
from pytest_promptsuite.results.case_result import CaseResult


def _case(**kwargs: object) -> PromptCase:
    return PromptCase(case_id="c", input="i", slice="s", **kwargs)  # type: ignore[arg-type]


def test_every_missing_and_every_forbidden_text_is_reported() -> None:
    case = _case(must_include=["a", "b", "c"], must_not_include=["x", "y"])
    results = list(must_checks(case, "a x y"))
    failed = [r.message for r in results if not r.passed]
    assert failed == [
        "missing required text 'b'",
        "missing required text 'c'",
        "found forbidden text 'x' at offset 2",
        "found forbidden text 'y' at offset 4",
    ]
    assert all(r.layer == "content" for r in results)


def test_checks_are_case_sensitive_substrings() -> None:
    [result] = must_checks(_case(must_include=["Refund"]), "refund granted")
    assert not result.passed


def test_failure_text_names_case_slice_checks_and_output() -> None:
    case = _case(must_include=["未提供"])
    checks = tuple(must_checks(case, "已为您退款"))
    result = CaseResult(
        case_id="c", slice="信息不足", outcome="failed", location="cases.jsonl:3", output="已为您退款", checks=checks
    )
    assert failure_text(result).splitlines() == [
        "cases.jsonl:3: c [slice 信息不足] failed 1 check",
        "  content   must_include  missing required text '未提供'",
        "output (5 chars):",
        "  已为您退款",
    ]


def test_long_output_is_trimmed_around_the_forbidden_text() -> None:
    output = "a" * 2000 + "SECRET" + "b" * 2000
    case = _case(must_not_include=["SECRET"])
    result = CaseResult(
        case_id="c", slice="s", outcome="failed", output=output, checks=tuple(must_checks(case, output))
    )
    text = failure_text(result)
    assert "SECRET" in text
    assert "[... " in text and len(text) < 1000


def test_trim_output_keeps_short_output_whole() -> None:
    assert trim_output("short") == "short"
    trimmed = trim_output("x" * 100 + "HERE" + "y" * 100, focus=100, limit=30)
    assert "HERE" in trimmed and trimmed.startswith("[... ") and trimmed.endswith(" chars]")
