"""Stage tests for ``report.pr_comment``: the size limit at 50,000 cases, the verdict word, judge fingerprints,
the baseline's age, the marker."""

from __future__ import annotations

import time
from datetime import UTC
from datetime import datetime
from pathlib import Path

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.cli.comment import run_comment
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.pr_comment import CaseNote
from pytest_promptsuite.report.pr_comment import CommentSource
from pytest_promptsuite.report.pr_comment import comment_markdown
from pytest_promptsuite.report.pr_comment import marker
from pytest_promptsuite.report.pr_comment import verdict
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import summarize
from pytest_promptsuite.safety.scrub import register


def _rows(n: int, failing: bool) -> list[CaseResult]:
    """Return ``n`` cases in 200 slices with long ids; with ``failing`` every other one fails a long check."""
    rows = []
    message = "expected <b>the answer</b> | " + "x" * 3000
    for i in range(n):
        bad = failing and i % 2 == 0
        check = CheckResult("content", "must_include", not bad, message if bad else "found")
        rows.append(
            CaseResult(
                case_id=f"case-{i:06d}-" + "long-id-" * 20,
                slice=f"slice {i % 200} " + "名前" * 40,
                outcome="failed" if bad else "passed",  # type: ignore[arg-type]
                output="out",
                checks=(check,),
                usage={"prompt_tokens": 10, "completion_tokens": 2 + bad},
                latency_ms=5.0,
            )
        )
    return rows


@pytest.mark.slow
def test_a_comment_on_50000_cases_stays_under_githubs_limit(tmp_path: Path) -> None:
    base_rows, rows = _rows(50_000, False), _rows(50_000, True)
    write_report(tmp_path / "base", base_rows, summarize(base_rows))
    write_report(tmp_path / "report", rows, summarize(rows, baseline=base_rows))
    started = time.perf_counter()
    text = run_comment(tmp_path / "report", tmp_path / "base")
    elapsed = time.perf_counter() - started
    assert len(text.encode("utf-16-le")) // 2 < 65_536
    assert "promptsuite: regressed" in text and "**Newly failing (25,000)**" in text
    assert "and 24,980 more (all in the report's summary.json)" in text
    assert "and 150 more slices" in text
    assert "| tokens per case | 12.0 | 12.5 | +4% |" in text
    print(f"comment on 50,000 cases: {elapsed:.2f} s")  # a figure to read, never asserted


def _report(passed: bool = True, verdicts: tuple[str, ...] = ()) -> dict[str, object]:
    slices = [{"slice": f"s{i}", "verdict": v, "gate": "pass"} for i, v in enumerate(verdicts)]
    return {"gate": {"passed": passed, "reasons": [] if passed else ["slice 's0': below"]}, "slices": slices}


def test_the_verdict_word_is_the_gates() -> None:
    assert verdict(_report()) == "passed"
    assert verdict(_report(True, ("no evidence of a drop", "inconclusive"))) == "inconclusive"
    assert verdict(_report(False, ("regressed", "inconclusive"))) == "regressed"
    assert verdict(_report(False, ("inconclusive",))) == "failed"  # a threshold or an error failed it


def test_a_judge_fingerprint_change_is_named_and_its_absence_is_fine() -> None:
    new = {**_report(), "baseline": {}, "judge_fingerprint": "judge-b-1234"}
    old = {**_report(), "run": {"judge_fingerprint": "judge-a-5678"}}
    text = comment_markdown(CommentSource(new, old))
    assert "- judge changed: fingerprint judge-a-5678 → judge-b-1234" in text
    assert "judge changed" not in comment_markdown(CommentSource(new, _report()))
    in_run = {**new, "baseline_run": {"judge_fingerprint": "judge-b-1234"}}
    assert "judge changed" not in comment_markdown(CommentSource(in_run))


def test_the_baseline_line_says_its_commit_age_and_run() -> None:
    origin = {
        "commit": "abcdef0123456789",
        "branch": "main",
        "created_at": "2026-12-07T20:00:00Z",
        "run_url": "https://github.com/o/r/actions/runs/7",
    }
    now = datetime(2026, 12, 8, 1, 0, tzinfo=UTC)
    text = comment_markdown(CommentSource({**_report(), "baseline": {}}, origin=origin, now=now))
    assert (
        "Baseline: commit `abcdef012345`, on main, 5 hours old, [run](https://github.com/o/r/actions/runs/7)." in text
    )
    later = datetime(2026, 12, 11, 1, 0, tzinfo=UTC)
    assert "3 days old" in comment_markdown(CommentSource({**_report(), "baseline": {}}, origin=origin, now=later))
    odd = {"created_at": "yesterday", "run_url": "javascript:alert(1)"}
    assert "Baseline: commit and age unknown." in comment_markdown(
        CommentSource({**_report(), "baseline": {}}, origin=odd)
    )


def test_the_marker_is_hidden_and_a_key_cannot_close_it() -> None:
    assert marker() == "<!-- promptsuite-comment -->"
    assert marker("a --> <b>") == "<!-- promptsuite-comment:a --&gt; &lt;b&gt; -->"


def test_what_does_not_fit_is_left_out_whole_and_said() -> None:
    reasons = [f"slice 's{i}': " + "y" * 500 for i in range(30)]
    report = {
        "gate": {"passed": False, "reasons": reasons},
        "slices": [],
        "regressions": [f"{i}" + "a" * 200 for i in range(40)],
    }
    text = comment_markdown(CommentSource(report), limit=11_000)
    assert len(text) < 11_000
    assert "and 10 more reasons" in text and "Newly failing" not in text
    assert "No baseline: nothing to compare with" in text  # a later part that fits is kept
    assert text.rstrip().endswith("the job summary has them._")


def test_a_registered_secret_in_a_reason_is_scrubbed_by_the_command(tmp_path: Path) -> None:
    secret = "ghp_" + "Zz9" * 12
    register(secret)
    rows = [CaseResult(case_id="a", slice="s", outcome="error", error=f"HTTP 401: bad token {secret}")]  # type: ignore[arg-type]
    write_report(tmp_path / "r", rows, summarize(rows, ThresholdPolicy(option=0.5)))
    assert secret not in run_comment(tmp_path / "r")


def test_repeated_cases_show_no_interval_and_costs_show_in_dollars() -> None:
    test = {"against": "baseline", "slice": "s", "repeats": 3, "cases": 4, "baseline_pass_rate": 1.0}
    slices = [{"slice": "s", "verdict": "no evidence of a drop", "gate": "pass", "pass_rate": 1.0}]
    usage = {"total": {"calls": 4, "cost_usd": 0.0123, "tokens_per_case": 12.5, "latency_p95_ms": 840.0}}
    report = {**_report(), "slices": slices, "baseline": {}, "regression_tests": [test], "usage": usage}
    base = {"usage": {"total": {"calls": 4, "cost_usd": 0.01, "tokens_per_case": 10.0, "latency_p95_ms": 800.0}}}
    text = comment_markdown(CommentSource(report, base, origin={"created_at": "2026-12-07T00:00:00"}))
    assert "| s | - | 100.0% | - | no drop |" in text
    assert "| cost | $0.01 | $0.0123 | +23% |" in text and "| p95 latency | 800 ms | 840 ms | +5% |" in text
    assert "Baseline: " in text and "old." in text
    alone = comment_markdown(CommentSource({**report, "baseline": None}))
    assert "**Cost** (no baseline figures): calls 4, tokens per case 12.5, cost $0.0123, p95 latency 840 ms" in alone


def test_newly_passing_cases_are_listed_by_case_and_slice() -> None:
    notes = {"b": CaseNote("s", "must_include: gone"), "a": CaseNote("s", "-")}
    report = {**_report(), "baseline": {}, "regressions": ["b"], "fixes": ["a", "c"]}
    text = comment_markdown(CommentSource(report, notes=notes))
    assert (
        "**Newly failing (1)**\n\n| case | slice | first failed check |\n|---|---|---|\n| b | s | must_include: gone |"
        in text
    )
    assert "**Newly passing (2)**\n\n| case | slice |\n|---|---|\n| a | s |\n| c | - |" in text
