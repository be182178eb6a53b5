"""Stage tests for ``results.usage``: calls, cache hits, tokens, cost and latency per slice and variant."""

from __future__ import annotations

import json

import pytest

from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.report.text import totals_line
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.usage import UsageTally
from pytest_promptsuite.results.usage import check_usage
from pytest_promptsuite.results.usage import percentile
from pytest_promptsuite.results.usage import prices_of_run
from pytest_promptsuite.results.usage import usage_report
from tests.unit.results.support import SPOOLED


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


def load_rows(rows: list[CaseResult]) -> list[CaseResult]:
    return [CaseResult.from_json(r.to_json()) for r in rows]


def test_usage_counted_from_spooled_lines_is_usage_of_the_rows() -> None:
    tally = UsageTally()
    for r in SPOOLED:
        tally.add_line(json.loads(r.to_json()))
    run = RunInfo(
        version="x",
        models={
            "v1": {"spec": "s", "prices": {"prompt": 1.0, "completion": 2.0}},
            "": {"spec": "s", "prices": {"prompt": 3.0, "completion": 5.0}},
        },
    )
    assert tally.report(prices_of_run(run)) == usage_report(load_rows(SPOOLED), run)
    assert tally.report() == usage_report(load_rows(SPOOLED))
    assert tally.report(prices_of_run(run)).total.cost_usd == pytest.approx((10 + 2 * 3) / 1e6)


def _used(case_id: str, variant: str | None, repeat: int, tokens: int) -> CaseResult:
    return _row(case_id, variant=variant, repeat=repeat, usage={"prompt_tokens": tokens, "completion_tokens": 0})


def test_the_token_gate_pairs_by_case_variant_and_repeat_and_by_the_baseline_variant() -> None:
    """Without prices only tokens compare; with ``--prompt-baseline-variant`` that variant's rows stand for
    every variant; a row in one run only is left out."""
    baseline = usage_report([_used("a", "v1", r, 10 * (r + 1)) for r in range(2)] + [_used("a", "v2", 0, 99)])
    current = usage_report([_used("a", "v2", r, 10 * (r + 1)) for r in range(3)])  # repeat 2: not in the baseline
    settings = GateSettings(max_tokens_increase=0.0, max_cost_increase=0.0)
    assert check_usage(current, baseline, settings, "v1") == []  # (10 + 20) / 2 both sides
    assert [(d.scope, d.variant, d.baseline, d.current) for d in check_usage(baseline, current, settings, "v2")] == [
        ("s", "v2", 10.0, 99.0),  # v1's repeats 0 and 1 are v2's: no rise
        ("total", None, 40 / 3, 129 / 3),
    ]
    assert check_usage(current, baseline, GateSettings()) == []  # no limit: nothing compared
    assert current.against(baseline, "v1").total.baseline_tokens_per_case == 15.0
    assert current.against(usage_report([])).total.baseline_tokens_per_case is None  # nothing in common


def test_a_hand_edited_count_that_is_no_count_is_not_reported() -> None:
    """A bool or a negative count (a baseline edited by hand) is neither summed, priced nor paired."""
    odd = [_row(c, usage={"prompt_tokens": v, "completion_tokens": v}) for c, v in (("a", True), ("b", -1000))]
    run = RunInfo("1", {"": {"spec": "fake", "prices": {"prompt": 1.0, "completion": 1.0}}})
    report = usage_report([*odd, _used("c", None, 0, 4)], run)
    assert (report.total.prompt_tokens, report.total.measured, report.total.cost_usd) == (4, 1, 4e-6)
    assert sorted(report.rows) == [("c", None, 0)]
