"""Rows the report tests render: user text that must stay inert (markup, separators, non-ASCII slices), a baseline."""

from __future__ import annotations

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.results.case_result import CaseResult


SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=\"document.body.dataset.pwned='1'\">"


def row(case_id: str, slice_: str, outcome: str, line: int = 1, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, location=f"cases.jsonl:{line}", **kw)  # type: ignore[arg-type]


def markup_rows() -> list[CaseResult]:
    fail = CheckResult("content", "must_not_include", False, "forbidden text '<script>' at offset 0")
    return [
        row("ok-1", "客服", "passed", 1, output="fine", prompt="hello"),
        row("xss-1", "客服", "failed", 2, output=SCRIPT, prompt=[{"role": "user", "content": IMG}], checks=(fail,)),
        row("rev-1", "a|b", "review", 3, output="look at me"),
        row("err-1", "a|b", "error", 4, error="HTTP 500: </script><script>alert(1)</script>"),
    ]


def baseline_rows() -> list[CaseResult]:
    return [
        row("ok-1", "客服", "passed", 1, output="fine"),
        row("xss-1", "客服", "passed", 2, output="was fine", prompt=[{"role": "user", "content": "old"}]),
        row("gone-1", "a|b", "passed", 5),
    ]
