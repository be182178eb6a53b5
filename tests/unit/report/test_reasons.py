"""Stage tests for ``report.reasons``: each gate decision in exactly the words reports always used."""

from __future__ import annotations

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.report.document import gate_document
from pytest_promptsuite.report.reasons import reason
from pytest_promptsuite.results.gate import CasesErrored
from pytest_promptsuite.results.gate import GateResult
from pytest_promptsuite.results.gate import RegressionRule
from pytest_promptsuite.results.gate import SliceBelowThreshold
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.gate import ThresholdRule


def test_a_slice_below_its_threshold() -> None:
    d = SliceBelowThreshold(
        slice="refund", variant=None, rule=ThresholdRule(0.9, "config slice"), pass_rate=0.8, passed=8, counted=10
    )
    assert reason(d) == "slice 'refund': pass rate 80.0% (8/10) is below its threshold 90.0% (config slice)"


def test_a_variant_below_its_threshold_names_the_variant() -> None:
    d = SliceBelowThreshold(
        slice="信息不足", variant="v1", rule=ThresholdRule(1.0, "config default"), pass_rate=0.0, passed=0, counted=6
    )
    assert reason(d) == (
        "slice '信息不足' [variant v1]: pass rate 0.0% (0/6) is below its threshold 100.0% (config default)"
    )


def test_a_regressed_slice_with_and_without_regressed_ids() -> None:
    d = SliceRegressed(
        slice="s",
        variant=None,
        rule=RegressionRule(0.2, "config"),
        baseline_pass_rate=1.0,
        pass_rate=0.7,
        drop=0.30000000000000004,
        p_value=0.25,
        regressions=("c0", "c1", "c2"),
    )
    assert reason(d) == (
        "slice 's': pass rate dropped 30.0 points against the baseline (100.0% -> 70.0%), "
        "more than the allowed 20.0 points (config); McNemar p = 0.25; regressions: c0, c1, c2"
    )
    quiet = SliceRegressed(
        slice="a|b",
        variant=None,
        rule=RegressionRule(0.0, "default"),
        baseline_pass_rate=1.0,
        pass_rate=0.0,
        drop=1.0,
        p_value=1.0,
        regressions=(),
    )
    assert reason(quiet) == (
        "slice 'a|b': pass rate dropped 100.0 points against the baseline (100.0% -> 0.0%), "
        "more than the allowed 0.0 points (default); McNemar p = 1"
    )


def test_regressed_ids_are_cut_after_five_and_p_has_three_digits() -> None:
    d = SliceRegressed(
        slice="s",
        variant=None,
        rule=RegressionRule(0.0, "option"),
        baseline_pass_rate=0.9,
        pass_rate=0.3,
        drop=0.6,
        p_value=0.000123456,
        regressions=tuple(f"c{i}" for i in range(7)),
    )
    assert reason(d) == (
        "slice 's': pass rate dropped 60.0 points against the baseline (90.0% -> 30.0%), more than the "
        "allowed 0.0 points (option); McNemar p = 0.000123; regressions: c0, c1, c2, c3, c4 and 2 more"
    )


def test_errored_cases_in_the_singular_and_the_plural() -> None:
    assert reason(CasesErrored(cases=(CaseKey("boom"),))) == (
        "1 case ended in an error (the model call or the rendering failed): boom; errors always fail the run"
    )
    many = CasesErrored(cases=tuple(CaseKey(f"e{i}", "v1", i) for i in range(6)))
    assert reason(many) == (
        "6 cases ended in an error (the model call or the rendering failed): e0, e1, e2, e3, e4 and 1 more; "
        "errors always fail the run"
    )


def test_the_gate_document_keeps_its_keys_and_order() -> None:
    boom = CasesErrored(cases=(CaseKey("boom"),))
    doc = gate_document(GateResult.of([boom]))
    assert list(doc) == ["passed", "reasons"]
    assert doc == {"passed": False, "reasons": [reason(boom)]}
    assert gate_document(GateResult.of([])) == {"passed": True, "reasons": []}
