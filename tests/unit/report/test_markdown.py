"""Stage tests for ``report.markdown``: ``summary.md``, its verdict first and user text escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.markdown import md_escape
from pytest_promptsuite.report.markdown import summary_markdown
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import summarize
from tests.unit.report.support import baseline_rows
from tests.unit.report.support import markup_rows


FAIL = CheckResult("content", "must_include", False, "missing required text 'refund'")


def _row(case_id: str, outcome: str = "passed", **kw: object) -> CaseResult:
    base: dict[str, object] = {"slice": "s", "location": "cases.jsonl:1", "output": f"out {case_id}"}
    base.update(kw)
    return CaseResult(case_id=case_id, outcome=outcome, **base)  # type: ignore[arg-type]


def test_summary_md_lists_failing_and_regressed_cases_collapsed_below_the_verdict(tmp_path: Path) -> None:
    rows = [_row("ok"), _row("bad", "failed", checks=(FAIL,)), _row("err", "error", output=None, error="HTTP 500: x")]
    baseline = [_row("ok"), _row("bad"), _row("err")]
    summary = summarize(rows, ThresholdPolicy(option=0.0), baseline=baseline, baseline_source="main")
    write_report(tmp_path, rows, summary)
    md = (tmp_path / "summary.md").read_text("utf-8")
    assert md.startswith("## \u274c promptsuite gate: FAILED")
    assert md.index("| slice |") < md.index("<details><summary>Failing cases (2)</summary>")
    assert "| bad | s | failed | must\\_include: missing required text 'refund' |" in md
    assert "| err | s | error | error: HTTP 500: x |" in md
    regressed = md[md.index("<details><summary>Regressed cases (2, passed in the baseline)") :]
    assert "| bad | s | passed \u2192 failed | must\\_include: missing required text 'refund' |" in regressed
    assert "| err | s | passed \u2192 error | an error (see the failing cases) |" in regressed
    assert md.count("<details>") == md.count("</details>")
    assert "totals: 2 calls" in md


def test_summary_md_puts_the_verdict_first_and_escapes_user_text() -> None:
    summary = summarize(markup_rows(), ThresholdPolicy(option=0.5), baseline=baseline_rows(), baseline_source="base")
    md = summary_markdown(summary)
    lines = md.splitlines()
    assert lines[0] == "## \u274c promptsuite gate: FAILED"
    assert "| slice | cases | passed | failed | error | review |" in md
    assert "| a\\|b | 2 | 0 | 0 | 1 | 1 |" in md  # the pipe of a slice name is escaped
    assert "### Regressions (passed, now not) (1)" in md and "- xss-1" in md
    # the only markup is our own collapsed sections; user text stays escaped
    ours = md.replace("<details><summary>", "").replace("</summary>", "").replace("</details>", "")
    assert "<" not in ours.replace("&lt;", "")
    assert "http" not in md and "](" not in md


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("1. first", "1\\. first"),  # would start an ordered list
        ("- item", "\\- item"),
        ("# title", "\\# title"),
        ("50.0% ok", "50.0% ok"),
        ("a|b_c*d`e", "a\\|b\\_c\\*d\\`e"),
        ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))"),
        ("<img src=x onerror=y>", "&lt;img src=x onerror=y&gt;"),
        ("at https://evil.example, www.evil.example", "at https\\://evil.example, www\\.evil.example"),
        ("two\nlines", "two lines"),
    ],
)
def test_markdown_escaping_keeps_user_text_literal(text: str, shown: str) -> None:
    assert md_escape(text) == shown
