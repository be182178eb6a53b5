"""Stage tests for ``checks.content``: the content layer, every missing and every forbidden text reported."""

from __future__ import annotations

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.content import must_checks


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
