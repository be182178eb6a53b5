"""Stage tests for ``results.gate``: the rules, and gate decisions as data (no prose)."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.gate import CasesErrored
from pytest_promptsuite.results.gate import GateResult
from pytest_promptsuite.results.gate import RegressionRule
from pytest_promptsuite.results.gate import SliceBelowThreshold
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.gate import ThresholdRule
from pytest_promptsuite.results.gate import check_errors
from pytest_promptsuite.results.gate import check_regression
from pytest_promptsuite.results.gate import check_threshold
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.records import RegressionTest
from pytest_promptsuite.results.summary import summarize


def row(case_id: str, slice_: str, outcome: str, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, **kw)  # type: ignore[arg-type]


def test_threshold_rule_meets_with_slack_and_without_a_rate() -> None:
    rule = ThresholdRule(0.9, "option")
    assert rule.holds(9 / 10) and rule.holds(0.9 - 1e-10) and rule.holds(None)
    assert not rule.holds(0.9 - 1e-8)


def test_regression_rule_allows_up_to_the_drop_with_slack() -> None:
    rule = RegressionRule(0.2, "config")
    assert rule.allows(0.2) and rule.allows(0.2 + 1e-10) and rule.allows(-0.5)
    assert not rule.allows(0.2 + 1e-8)


def test_a_slice_below_its_threshold_carries_rule_and_figures() -> None:
    rule = ThresholdRule(0.9, "config slice")
    counts = Counts(cases=12, passed=8, failed=2, review=1, skipped=1)
    assert check_threshold("refund", counts, rule, variant="v2") == SliceBelowThreshold(
        slice="refund", variant="v2", rule=rule, pass_rate=0.8, passed=8, counted=10
    )
    assert check_threshold("refund", Counts(cases=10, passed=9, failed=1), rule) is None
    assert check_threshold("refund", Counts(cases=1, review=1), rule) is None  # nothing counted


def _test(verdict: str, rule: str = "delta", **kw: object) -> RegressionTest:
    fields = dict(
        slice="s",
        variant=None,
        against="baseline",
        rule=rule,
        cases=10,
        repeats=1,
        baseline_pass_rate=1.0,
        pass_rate=0.7,
        drop=0.3,
        regressions=3,
        fixes=0,
        p_regression=0.125,
        p_adjusted=None,
        detectable_drop=0.5,
        verdict=verdict,
    )
    fields.update(kw)
    return RegressionTest(**fields)  # type: ignore[arg-type]


def test_a_regression_carries_both_rates_the_drop_the_rule_and_p() -> None:
    rule = RegressionRule(0.1, "option")
    decision = check_regression(_test("regressed"), rule, ("c0", "c1", "c2"), p_value=0.25)
    assert decision == SliceRegressed(
        slice="s",
        variant=None,
        rule=rule,
        baseline_pass_rate=1.0,
        pass_rate=0.7,
        drop=pytest.approx(0.3),
        p_value=0.25,
        regressions=("c0", "c1", "c2"),
    )
    for verdict in ("inconclusive", "no evidence of a drop"):
        assert check_regression(_test(verdict), rule, (), p_value=0.25) is None
    assert check_regression(_test("regressed", pass_rate=None, drop=None), rule, (), p_value=0.25) is None
    paired = RegressionRule(0.0, "default", kind="paired", alpha=0.05, correction="holm")
    decision = check_regression(
        _test("regressed", "paired", p_adjusted=0.25),
        paired,
        ("c0",),
        p_value=0.25,
        models=("fake", "openai:m"),
        family=2,
    )
    assert decision is not None
    assert (decision.p_regression, decision.p_adjusted, decision.models, decision.family) == (
        0.125,
        0.25,
        ("fake", "openai:m"),
        2,
    )


def test_errors_are_a_decision_with_every_key_in_row_order() -> None:
    rows = [row("b", "s", "error", variant="v1"), row("a", "s", "passed"), row("a", "s", "error", repeat=1)]
    decision = check_errors(rows)
    assert decision == CasesErrored(cases=(CaseKey("b", "v1"), CaseKey("a", None, 1)))
    assert decision.count == 2
    assert check_errors([row("a", "s", "failed")]) is None


def test_gate_result_passes_exactly_without_decisions() -> None:
    assert GateResult.of([]) == GateResult(passed=True, decisions=())
    errored = CasesErrored(cases=(CaseKey("a"),))
    assert GateResult.of([errored]) == GateResult(passed=False, decisions=(errored,))


def test_decisions_are_frozen_records() -> None:
    for kind in (SliceBelowThreshold, SliceRegressed, CasesErrored, GateResult, ThresholdRule, RegressionRule):
        assert dataclasses.is_dataclass(kind)
        assert kind.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_summarize_orders_decisions_by_slice_then_errors_last() -> None:
    old = [row(f"c{i}", "b", "passed") for i in range(4)]
    new = [
        row("c0", "b", "failed"),
        row("c1", "b", "passed"),
        row("c2", "b", "passed"),
        row("c3", "b", "passed"),
        row("e", "a", "error"),
        row("v", "a", "passed"),
    ]
    summary = summarize(new, ThresholdPolicy(option=0.6), baseline=old, settings=GateSettings(regression="delta"))
    kinds = [type(d).__name__ for d in summary.gate.decisions]
    assert kinds == ["SliceBelowThreshold", "SliceRegressed", "CasesErrored"]
    assert [getattr(d, "slice", None) for d in summary.gate.decisions] == ["a", "b", None]
    assert not summary.gate.passed


def test_each_variant_below_its_threshold_is_its_own_decision() -> None:
    rows = [
        row("a", "s", "failed", variant="v1"),
        row("a", "s", "passed", variant="v2"),
        row("b", "s", "failed", variant="v1"),
        row("b", "s", "failed", variant="v2"),
    ]
    summary = summarize(rows, ThresholdPolicy(option=0.6), variant_order=["v2", "v1"])
    rule = ThresholdRule(0.6, "option")
    assert summary.gate.decisions == (
        SliceBelowThreshold(slice="s", variant="v2", rule=rule, pass_rate=0.5, passed=1, counted=2),
        SliceBelowThreshold(slice="s", variant="v1", rule=rule, pass_rate=0.0, passed=0, counted=2),
    )
    assert summary.slices[0].gate == "fail"
