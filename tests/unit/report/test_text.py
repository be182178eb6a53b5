"""Stage tests for ``report.text``: the terminal lines of a run and the text of a failed case."""

from __future__ import annotations

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.content import must_checks
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.text import display_width
from pytest_promptsuite.report.text import failure_text
from pytest_promptsuite.report.text import summary_lines
from pytest_promptsuite.report.text import trim_output
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import summarize
from pytest_promptsuite.results.usage import usage_report
from tests.unit.report.support import baseline_rows
from tests.unit.report.support import markup_rows
from tests.unit.report.support import row


def _row(case_id: str, outcome: str = "passed", **kw: object) -> CaseResult:
    base: dict[str, object] = {"slice": "s", "location": "cases.jsonl:1", "output": f"out {case_id}"}
    base.update(kw)
    return CaseResult(case_id=case_id, outcome=outcome, **base)  # type: ignore[arg-type]


def test_the_terminal_prints_the_totals_line_after_the_slice_totals() -> None:
    rows = [_row("a", latency_ms=50.0)]
    lines = list(summary_lines(summarize(rows, ThresholdPolicy()), usage=usage_report(rows)))
    at = next(i for i, line in enumerate(lines) if line.startswith("total: "))
    assert lines[at + 1].startswith("totals: 1 call, 0 cache hits, tokens not reported")


def test_with_variants_the_slice_table_shows_the_rows_the_gate_judged() -> None:
    """The pooled row of a slice is followed by a row per variant: its own rate, interval, threshold, test
    against the baseline's rows of that variant, and gate (v2 fails its threshold while the pool does not)."""
    ids = [f"c{i}" for i in range(4)]
    rows = [row(c, "s", "passed", variant="v1") for c in ids]
    rows += [row(c, "s", "passed" if c == "c0" else "failed", variant="v2") for c in ids]
    base = [row(c, "s", "passed", variant=v) for c in ids for v in ("v1", "v2")]
    summary = summarize(rows, ThresholdPolicy(option=0.5), baseline=base, settings=GateSettings(regression="delta"))
    lines = list(summary_lines(summary))
    at = next(i for i, line in enumerate(lines) if line.startswith("s "))
    assert [line.split() for line in lines[at : at + 3]] == [
        ["s", "8", "5", "3", "0", "0", "62.5%", "31%-86%", "50%", "(option)", "REGRESSED", "FAIL"],
        ["s", "[v1]", "4", "4", "0", "0", "0", "100.0%", "51%-100%", "50%", "no", "drop", "PASS"],
        ["s", "[v2]", "4", "1", "3", "0", "0", "25.0%", "5%-70%", "50%", "REGRESSED", "FAIL"],
    ]
    against = lines.index("against the baseline:") + 2  # its header, then the same rows' comparisons
    assert [line.split() for line in lines[against : against + 3]] == [
        ["s", "100.0%", "-37.5", "-3/+0", "0.25", "0.125", "12.5"],
        ["s", "[v1]", "100.0%", "+0.0", "-0/+0", "-", "1", "25.0"],
        ["s", "[v2]", "100.0%", "-75.0", "-3/+0", "-", "0.125", "25.0"],
    ]
    assert (
        "the slice table: each slice's first row pools its prompt variants; the gate judges each variant's row" in lines
    )


def test_summary_lines_end_with_the_verdict_and_list_regressions_by_id() -> None:
    summary = summarize(
        markup_rows(),
        ThresholdPolicy(option=0.5),
        baseline=baseline_rows(),
        baseline_source="base",
        settings=GateSettings(regression="delta"),
    )
    lines = list(summary_lines(summary))
    assert lines[0].split() == [
        "slice",
        "cases",
        "passed",
        "failed",
        "error",
        "review",
        "pass",
        "rate",
        "95%",
        "CI",
        "threshold",
        "verdict",
        "gate",
    ]
    assert lines[2].split()[:7] == ["客服", "2", "1", "1", "0", "0", "50.0%"]
    assert lines[2].split()[-2:] == ["REGRESSED", "FAIL"]
    detail = lines.index("against the baseline:")
    assert lines[detail + 1].split() == ["slice", "baseline", "delta", "(pts)", "flips", "-/+", "p", "p", "drop"] + [
        "detectable",
        "(pts)",
    ]
    assert lines[detail + 3].split() == ["客服", "100.0%", "-50.0", "-1/+0", "1", "0.5", "50.0"]
    assert max(display_width(line) for line in lines[: detail + 4]) <= 120  # the tables fit 120 columns
    assert "regressions: xss-1" in lines
    # slice a|b shares no case with the baseline (gone-1 was removed, err-1 and rev-1 are new): no
    # drop is claimed there; its threshold still fails it
    assert lines[lines.index("promptsuite gate: FAILED") :] == [
        "promptsuite gate: FAILED",
        "  - slice 'a|b': pass rate 0.0% (0/1) is below its threshold 50.0% (option)",
        "  - slice '客服': pass rate dropped 50.0 points against the baseline (100.0% -> 50.0%), "
        "more than the allowed 0.0 points (default); McNemar p = 1; regressions: xss-1",
        "  - 1 case ended in an error (the model call or the rendering failed): err-1; errors always fail the run",
    ]
    ok = summarize([row("a", "s", "passed"), row("b", "s", "failed")], ThresholdPolicy(option=0.5))
    assert list(summary_lines(ok))[-1] == "promptsuite gate: PASSED (1 failed case within tolerance)"


def _case(**kwargs: object) -> PromptCase:
    return PromptCase(case_id="c", input="i", slice="s", **kwargs)  # type: ignore[arg-type]


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


def test_the_sequential_line_says_what_each_slice_saved() -> None:
    from dataclasses import replace

    from pytest_promptsuite.report.text import sequential_line

    summary = summarize([row("a", "s0", "passed")], ThresholdPolicy(option=0.0))
    assert sequential_line(summary) is None
    record = {"final_alpha": 0.04, "sequential_alpha": 0.01, "stopped": None, "calls_saved": 0, "started_unused": 0}
    groups = [
        {"slice": "s0", "variant": None, "cases": 10, "settled_after": None, "calls_saved": 0},
        {"slice": "s1", "variant": "v2", "cases": 10, "settled_after": 4, "calls_saved": 5},
    ]
    assert sequential_line(replace(summary, sequential={**record, "slices": groups[:1]})) == (
        "sequential: not settled before the last case; every case ran, judged by the fixed test at alpha 0.04 "
        "(the sequential test spent 0.01)"
    )
    partly = {**record, "slices": groups, "calls_saved": 5, "started_unused": 1}
    assert sequential_line(replace(summary, sequential=partly)) == (
        "sequential: settled before their last case: s1 [v2] after 4 of 10: 5 saved; 5 calls saved (those cases "
        "skipped), 1 more started ahead and not used (made, so not counted as saved); the rest ran every case, "
        "judged by the fixed test at alpha 0.04 (the sequential test spent 0.01)"
    )
    stopped = {**partly, "stopped": "verdict settled after 8 of 20 cases", "started_unused": 0}
    assert sequential_line(replace(summary, sequential=stopped)) == (
        "sequential: verdict settled after 8 of 20 cases (s1 [v2] after 4 of 10: 5 saved); 5 calls saved "
        "(those cases skipped)"
    )
