"""Reports people read: totals of calls, tokens, cost and latency; ``summary.md``'s collapsed
sections; history trends; review decisions; ``[model] prices``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.cli.main import main as cli_main
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.report.text import summary_lines
from pytest_promptsuite.report.text import totals_line
from pytest_promptsuite.report.trends import history_lines
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.frames import read_history
from pytest_promptsuite.results.history import load_history
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.review_book import ReviewBook
from pytest_promptsuite.results.review_book import ReviewDecision
from pytest_promptsuite.results.review_book import load_reviews
from pytest_promptsuite.results.review_book import output_sha256
from pytest_promptsuite.results.summary import summarize
from pytest_promptsuite.results.usage import percentile
from pytest_promptsuite.results.usage import usage_report


FAIL = CheckResult("content", "must_include", False, "missing required text 'refund'")
MARK = CheckResult("review", "review", True, "marked for human review: legal", details={"review": "legal"})


def _row(case_id: str, outcome: str = "passed", **kw: object) -> CaseResult:
    base: dict[str, object] = {"slice": "s", "location": "cases.jsonl:1", "output": f"out {case_id}"}
    base.update(kw)
    return CaseResult(case_id=case_id, outcome=outcome, **base)  # type: ignore[arg-type]


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([], 50) is None
    assert percentile([10.0], 95) == 10.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([float(v) for v in range(1, 101)], 95) == pytest.approx(95.05)


def test_usage_counts_calls_hits_tokens_cost_and_latency_per_slice_and_variant() -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    rows = [
        _row("a", variant="v1", latency_ms=100.0, usage=usage),
        _row("b", variant="v1", latency_ms=300.0, usage=usage, slice="t"),
        _row("c", variant="v2", cached=True, usage=usage),  # a hit: no call, no cost, no latency
        _row("d", "error", variant="v2", output=None, error="HTTP 500"),
    ]
    run = RunInfo(
        version="x", models={"v1": {"spec": "s", "prices": {"prompt": 1.0, "completion": 2.0}}, "v2": {"spec": "s"}}
    )
    report = usage_report(rows, run)
    total = report.total
    assert (total.rows, total.calls, total.cache_hits) == (4, 2, 1)
    assert (total.prompt_tokens, total.completion_tokens, total.tokens) == (3000, 1500, 4500)
    assert total.cost_usd == pytest.approx(2 * (1000 * 1.0 + 500 * 2.0) / 1e6)
    assert (total.latency_p50_ms, total.latency_p95_ms) == (200.0, 290.0)
    assert [(s.name, s.calls) for s in report.slices] == [("s", 1), ("t", 1)]
    assert [(v.name, v.cost_usd) for v in report.variants] == [("v1", total.cost_usd), ("v2", None)]
    assert totals_line(report) == (
        "totals: 2 calls, 1 cache hit, 4,500 tokens (3,000 prompt + 1,500 completion), cost $0.004, p95 latency 290 ms"
    )
    unpriced = usage_report(rows)
    assert "cost unknown (no [model] prices)" in totals_line(unpriced)
    assert "p95 latency not measured" in totals_line(usage_report([_row("x")]))


def test_the_terminal_prints_the_totals_line_after_the_slice_totals() -> None:
    rows = [_row("a", latency_ms=50.0)]
    lines = list(summary_lines(summarize(rows, ThresholdPolicy()), usage=usage_report(rows)))
    at = next(i for i, line in enumerate(lines) if line.startswith("total: "))
    assert lines[at + 1].startswith("totals: 1 call, 0 cache hits, tokens not reported")


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


def _summary_json(folder: Path, rates: dict[str, tuple[int, int]], passed: bool = True) -> None:
    rows = []
    for name, (ok, n) in rates.items():
        rows += [_row(f"{name}-{i}", "passed" if i < ok else "failed", slice=name) for i in range(n)]
    summary = summarize(rows, ThresholdPolicy(option=0.0))
    write_report(folder, rows, summary)


def test_history_orders_runs_by_path_with_numbers_as_numbers(tmp_path: Path) -> None:
    for n, ok in ((10, 6), (9, 8), (2, 10)):
        _summary_json(tmp_path / f"run-{n}" / "report", {"退款": (ok, 10)})
    history = load_history([tmp_path])
    assert [r.label for r in history.runs] == ["run-2/report", "run-9/report", "run-10/report"]
    assert [r.slices["退款"].pass_rate for r in history.runs] == [1.0, 0.8, 0.6]
    lines = list(history_lines(read_history(tmp_path)))
    assert lines[0].split() == ["slice", "run-2/report", "run-9/report", "run-10/report", "change"]
    assert lines[1].split()[0] == "退款"
    assert lines[1].endswith("-40.0 pts over 3 runs, 2 drops")
    assert len(load_history([tmp_path], limit=2).runs) == 2


def test_history_with_the_current_run_reaches_summary_md_and_the_dashboard(tmp_path: Path) -> None:
    _summary_json(tmp_path / "h" / "1", {"a": (10, 10)})
    _summary_json(tmp_path / "h" / "2", {"a": (9, 10)})
    rows = [_row(f"c{i}", "passed" if i < 7 else "failed", slice="a") for i in range(10)]
    summary = summarize(rows, ThresholdPolicy(option=0.0))
    write_report(tmp_path / "rep", rows, summary, history=load_history([tmp_path / "h"]))
    md = (tmp_path / "rep" / "summary.md").read_text("utf-8")
    assert "<details><summary>Pass rate by slice over the last 3 runs</summary>" in md
    assert "| a | 100% (72%-100%) | 90% (60%-98%) | 70% (40%-89%) | \\-30.0 pts over 3 runs, 2 drops |" in md
    page = (tmp_path / "rep" / "dashboard.html").read_text("utf-8")
    assert '"label":"this run"' in page


def test_history_refuses_a_file_that_is_no_summary(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"notes\.json: not a promptsuite summary\.json"):
        load_history([tmp_path])
    with pytest.raises(ConfigError, match="no such file or folder"):
        load_history([tmp_path / "missing"])


def test_promptsuite_history_prints_the_trend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _summary_json(tmp_path / "run-1", {"a": (5, 5)})
    _summary_json(tmp_path / "run-2", {"a": (4, 5)})
    assert cli_main(["history", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["slice", "run-1", "run-2", "change"]
    assert out[1].split()[:3] == ["a", "100%", "(57%-100%)"]
    assert out[-1] == "gate: run-1 PASSED  run-2 PASSED"


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


def test_model_prices_are_config_keys_a_variant_may_override(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(
        '[model]\nspec = "fake"\nprices = { prompt = 0.15, completion = 0.6 }\n'
        '[variants.big]\ntemplate = "{input}"\nmodel = { spec = "fake", prices = { prompt = 2.5, completion = 10 } }\n'
        '[variants.small]\ntemplate = "{input}"\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.model.cost(1_000_000, 0) == pytest.approx(0.15)
    assert config.model_for("big").cost(1000, 1000) == pytest.approx((2500 + 10000) / 1e6)
    assert config.model_for("small").prices == config.model.prices
    assert config.model.cost(None, 10) is None
    path.write_text("[model]\nprices = { prompt = -1, completion = 0.6 }\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="prices"):
        load_config(path)
