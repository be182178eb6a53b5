"""Stage tests for ``results.review_book``: human review decisions and the rows they apply to."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.review_book import ReviewBook
from pytest_promptsuite.results.review_book import ReviewDecision
from pytest_promptsuite.results.review_book import load_reviews
from pytest_promptsuite.results.review_book import output_sha256


FAIL = CheckResult("content", "must_include", False, "missing required text 'refund'")
MARK = CheckResult("review", "review", True, "marked for human review: legal", details={"review": "legal"})


def _row(case_id: str, outcome: str = "passed", **kw: object) -> CaseResult:
    base: dict[str, object] = {"slice": "s", "location": "cases.jsonl:1", "output": f"out {case_id}"}
    base.update(kw)
    return CaseResult(case_id=case_id, outcome=outcome, **base)  # type: ignore[arg-type]


def test_a_decision_applies_only_to_the_same_output_of_the_same_case() -> None:
    review = _row("r1", "review", checks=(MARK,), output="refunds within 30 days")
    book = ReviewBook(
        [ReviewDecision("r1", output_sha256("refunds within 30 days"), "fail", reviewer="bo", comment="wrong window")]
    )
    decided = book.apply(review)
    assert decided.outcome.value == "failed"
    assert decided.checks[-1].message == "bo decided fail: wrong window"
    assert decided.checks[-1].details["output_sha256"] == output_sha256("refunds within 30 days")  # type: ignore[index]
    changed = dataclasses.replace(review, output="refunds within 14 days")
    assert book.apply(changed).outcome.value == "review"
    other_case = _row("r2", "review", checks=(MARK,), output="refunds within 30 days")
    assert book.apply(other_case) is other_case
    # another failure is never overruled by a review decision
    failing = _row("r1", "failed", checks=(FAIL, MARK), output="refunds within 30 days")
    assert ReviewBook([ReviewDecision("r1", output_sha256("refunds within 30 days"), "pass")]).apply(failing) is failing
    # [review] outcome = "failed": the mark alone fails the case; a pass decision passes it
    marked_failed = _row(
        "r1",
        "failed",
        output="refunds within 30 days",
        checks=(CheckResult("review", "review", False, "marked", details={"review": "x"}),),
    )
    passed = ReviewBook([ReviewDecision("r1", output_sha256("refunds within 30 days"), "pass")]).apply(marked_failed)
    assert passed.outcome.value == "passed"


def test_a_decisions_file_with_bad_lines_names_each(tmp_path: Path) -> None:
    file = tmp_path / "decisions.jsonl"
    good = {"case_id": "a", "output_sha256": "0" * 64, "decision": "pass", "reviewer": "al"}
    file.write_text(
        "\n".join(
            [
                json.dumps(good),
                json.dumps({**good, "decision": "maybe"}),
                json.dumps({**good, "output_sha256": "abc"}),
                json.dumps({**good, "reviwer": "x"}),
                "{not json",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_reviews(file)
    lines = str(info.value).splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [f"{file}:{n}" for n in (2, 3, 4, 5)]
    assert "'decision' must be 'pass' or 'fail', got 'maybe'" in lines[0]
    assert "unknown key 'reviwer'" in lines[2]
    file.write_text(json.dumps(good) + "\n", encoding="utf-8")
    assert len(load_reviews(file)) == 1
