"""Rows the results tests spool and read back: texts with line separators, usage, a cache hit."""

from __future__ import annotations

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.results.case_result import CaseResult


def row(case_id: str, slice_: str, outcome: str, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, **kw)  # type: ignore[arg-type]


SPOOLED = [
    row(
        "a",
        "退款",
        "passed",
        output="out a\u2028x",
        prompt="prompt a",
        variant="v1",
        location="cases.jsonl:1",
        latency_ms=12.5,
        usage={"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        tags=("t",),
    ),
    row(
        "b",
        "s",
        "failed",
        output="out b",
        prompt=[{"role": "user", "content": "hi"}],
        repeat=1,
        checks=(CheckResult("content", "must_include", False, "missing required text 'x'"),),
        cached=True,
        usage={"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5},
        metadata={"k": [1, 2]},
    ),
    row("c", "s", "error", error="HTTP 401 with Authorization: Bearer sk0123456789abcdef", location="cases.jsonl:3"),
    row("d", "s", "passed", output="last", replies=("first", "last"), latency_ms=float("nan")),
]
