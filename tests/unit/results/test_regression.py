"""Stage tests for the regression rule (``results.regression`` through ``summarize``): the paired
test and Holm's correction, the rules, verdicts, cross-variant pairing and comparisons that
share no case. Expected p-values are computed here with ``Fraction``."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.reasons import reason
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.gate import NoCommonCases
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.summary import Baseline
from pytest_promptsuite.results.summary import summarize


NO_THRESHOLD = ThresholdPolicy(option=0.0)
ENDPOINT = RunInfo("0.1.0", {"": {"spec": "openai:m", "base_url": None, "params": {}, "deterministic": False}})
FAKE = RunInfo("0.1.0", {"": {"spec": "fake", "base_url": None, "params": {}, "deterministic": True}})


def row(case_id: str, slice_: str, passed: bool, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome="passed" if passed else "failed", **kw)  # type: ignore[arg-type]


def flips(slice_: str, regressions: int, fixes: int, steady: int = 20) -> tuple[list[CaseResult], list[CaseResult]]:
    """(baseline, current) rows of a slice with that many regressions and fixes among steady cases."""
    old, new = [], []
    for i in range(regressions):
        old.append(row(f"{slice_}-r{i}", slice_, True))
        new.append(row(f"{slice_}-r{i}", slice_, False))
    for i in range(fixes):
        old.append(row(f"{slice_}-f{i}", slice_, False))
        new.append(row(f"{slice_}-f{i}", slice_, True))
    for i in range(steady):
        old.append(row(f"{slice_}-s{i}", slice_, True))
        new.append(row(f"{slice_}-s{i}", slice_, True))
    return old, new


def upper_tail(b: int, c: int) -> float:
    n = b + c
    return float(Fraction(sum(math.comb(n, i) for i in range(b, n + 1)), 2**n))


def test_holm_corrects_over_the_slices_of_the_run() -> None:
    # three slices, one-sided p: a 1/64, b 7/64, c 1/128; Holm multiplies the smallest by 3, the
    # next by 2, the last by 1, each at least the one before: c 3/128 and a 2/64 stay below 0.05
    parts = [flips("a", 6, 0), flips("b", 5, 1), flips("c", 7, 0)]
    old = [r for o, _ in parts for r in o]
    new = [r for _, n in parts for r in n]
    summary = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "base", run=ENDPOINT), run=ENDPOINT)
    tests = {t.slice: t for t in summary.tests}
    raw = {"a": upper_tail(6, 0), "b": upper_tail(5, 1), "c": upper_tail(7, 0)}
    assert {name: t.p_regression for name, t in tests.items()} == pytest.approx(raw)
    # Holm: sorted c (x3), a (x2), b (x1), each at least the one before
    adjusted = {"c": 3 * raw["c"], "a": max(3 * raw["c"], 2 * raw["a"]), "b": max(3 * raw["c"], 2 * raw["a"], raw["b"])}
    assert {name: t.p_adjusted for name, t in tests.items()} == pytest.approx(adjusted)
    assert {name: t.verdict for name, t in tests.items()} == {"a": "regressed", "b": "inconclusive", "c": "regressed"}
    regressed = [d for d in summary.gate.decisions if isinstance(d, SliceRegressed)]
    assert [d.slice for d in regressed] == ["a", "c"] and all(d.family == 3 for d in regressed)
    assert "after Holm's correction over 3 comparisons" in reason(regressed[0])

    uncorrected = summarize(
        new,
        NO_THRESHOLD,
        baseline=Baseline(old, "base", run=ENDPOINT),
        run=ENDPOINT,
        settings=GateSettings(correction="none"),
    )
    assert {t.slice: t.p_adjusted for t in uncorrected.tests} == {"a": None, "b": None, "c": None}
    assert [t.verdict for t in uncorrected.tests] == ["regressed", "inconclusive", "regressed"]


def test_auto_is_delta_for_deterministic_runs_and_paired_otherwise() -> None:
    old, new = flips("s", 2, 0, steady=198)  # 2 regressions: a real drop on the fake model
    deterministic = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "base", run=FAKE), run=FAKE)
    assert [t.rule for t in deterministic.tests] == ["delta"] and not deterministic.gate.passed
    noisy = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "base", run=ENDPOINT), run=ENDPOINT)
    assert [t.rule for t in noisy.tests] == ["paired"] and noisy.gate.passed
    assert noisy.tests[0].p_regression == pytest.approx(upper_tail(2, 0))
    # a baseline of unknown origin counts as this run's kind; no run record at all: paired
    unknown = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "base"), run=FAKE)
    assert [t.rule for t in unknown.tests] == ["delta"]
    assert [t.rule for t in summarize(new, NO_THRESHOLD, baseline=old).tests] == ["paired"]
    forced = summarize(
        new,
        NO_THRESHOLD,
        baseline=Baseline(old, "base", run=FAKE),
        run=FAKE,
        settings=GateSettings(regression="paired"),
    )
    assert [t.rule for t in forced.tests] == ["paired"]


def test_deterministic_runs_never_fail_without_a_regression_and_always_on_ten() -> None:
    steady = [row(f"c{i}", "s", i % 7 != 0) for i in range(200)]
    same = summarize(steady, NO_THRESHOLD, baseline=Baseline(steady, "base", run=FAKE), run=FAKE)
    assert same.gate.passed and same.tests[0].verdict == "no evidence of a drop"
    broken = [row(r.case_id, "s", r.outcome.value == "passed" and i >= 10) for i, r in enumerate(steady)]
    worse = summarize(broken, NO_THRESHOLD, baseline=Baseline(steady, "base", run=FAKE), run=FAKE)
    assert not worse.gate.passed and worse.tests[0].verdict == "regressed"


def test_inconclusive_says_what_would_settle_it() -> None:
    old, new = flips("s", 3, 1, steady=30)
    summary = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "base", run=ENDPOINT), run=ENDPOINT)
    [test] = summary.tests
    assert test.verdict == "inconclusive" and test.drop == pytest.approx(2 / 34)
    assert test.detectable_drop is not None and test.detectable_drop > test.drop
    assert test.settle_cases is not None and test.settle_cases > 34
    assert summary.gate.passed  # not significant: no failure
    steady_old, steady_new = flips("s", 0, 2, steady=30)
    [rise] = summarize(steady_new, NO_THRESHOLD, baseline=Baseline(steady_old, "b", run=ENDPOINT), run=ENDPOINT).tests
    assert rise.verdict == "no evidence of a drop" and rise.settle_cases is None


def test_a_comparison_with_no_case_in_common_fails_and_says_so() -> None:
    old = [row("x1", "s", True), row("x2", "s", True)]
    new = [row("y1", "s", True)]
    summary = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "old.jsonl", run=ENDPOINT), run=ENDPOINT)
    assert summary.gate.decisions == (NoCommonCases("baseline", "old.jsonl"),)
    assert reason(summary.gate.decisions[0]).startswith(
        "no case in common with the baseline (old.jsonl): nothing could be compared"
    )


def test_a_baseline_variant_pairs_with_every_variant_of_this_run() -> None:
    old = [row(f"c{i}", "s", True, variant="v1") for i in range(10)] + [row("c0", "s", False, variant="v2")]
    new = [row(f"c{i}", "s", i >= 6) for i in range(10)]  # no variants now; 6 regressions against v1
    summary = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "base", variant="v1", run=ENDPOINT), run=ENDPOINT)
    assert summary.regressions == tuple(f"c{i}" for i in range(6)) and summary.removed == ()
    assert summary.tests[0].p_regression == pytest.approx(upper_tail(6, 0))
    assert not summary.gate.passed
    # without it, ids carry variants and nothing pairs: said plainly, not "p = 1"
    unpaired = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "base", run=ENDPOINT), run=ENDPOINT)
    assert isinstance(unpaired.gate.decisions[0], NoCommonCases)


def test_compare_variants_gates_each_later_variant_against_the_first() -> None:
    rows = []
    for i in range(20):
        rows.append(row(f"c{i}", "s", True, variant="v1"))
        rows.append(row(f"c{i}", "s", i >= 7, variant="v2"))  # 7 regressions against v1
        rows.append(row(f"c{i}", "s", i != 3, variant="v3"))  # 1 regression against v1
    settings = GateSettings(compare_variants=True)
    summary = summarize(rows, NO_THRESHOLD, variant_order=["v1", "v2", "v3"], settings=settings, run=ENDPOINT)
    by_variant = {t.variant: t for t in summary.tests}
    assert set(by_variant) == {"v2", "v3"} and all(t.against == "variant v1" for t in summary.tests)
    assert by_variant["v2"].p_regression == pytest.approx(upper_tail(7, 0))
    assert (by_variant["v2"].verdict, by_variant["v3"].verdict) == ("regressed", "inconclusive")
    [decision] = [d for d in summary.gate.decisions if isinstance(d, SliceRegressed)]
    assert (decision.slice, decision.variant, decision.against) == ("s", "v2", "variant v1")
    assert reason(decision).startswith("slice 's' [variant v2]: pass rate dropped 35.0 points against the variant v1")
    assert summarize(rows, NO_THRESHOLD, variant_order=["v1", "v2", "v3"], run=ENDPOINT).tests == ()


def test_a_baseline_of_another_model_is_named_in_the_verdict() -> None:
    old, new = flips("s", 8, 0, steady=20)
    other = RunInfo(
        "0.1.0", {"": {"spec": "openai:small", "base_url": None, "params": {"temperature": 1}, "deterministic": False}}
    )
    summary = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "base", run=other), run=ENDPOINT)
    [decision] = summary.gate.decisions
    assert isinstance(decision, SliceRegressed) and decision.models == ("openai:small with temperature=1", "openai:m")
    assert reason(decision).endswith(
        "the baseline used model openai:small with temperature=1, this run openai:m: "
        "a model change, not only a prompt change"
    )


def test_seeded_simulation_guards_false_alarms_and_power() -> None:
    """A few hundred simulated pairs (the README's population): false alarms stay near alpha,
    a 10-point drop of 200 cases is caught (the benchmark runs thousands per cell)."""
    rng = random.Random(20261130)

    def slice_rows(probabilities: list[float]) -> list[CaseResult]:
        return [row(f"c{i}", "s", rng.random() < p) for i, p in enumerate(probabilities)]

    def population(n: int) -> list[float]:
        out = []
        for _ in range(n):
            u = rng.random()
            out.append(0.98 if u < 0.7 else 0.02 if u < 0.85 else rng.uniform(0.2, 0.8))
        return out

    def gate_fails(drop_cases: int) -> bool:
        p = population(200)
        q = list(p)
        for i in [i for i, v in enumerate(p) if v == 0.98][:drop_cases]:
            q[i] = 0.02
        summary = summarize(
            slice_rows(q), NO_THRESHOLD, baseline=Baseline(slice_rows(p), "b", run=ENDPOINT), run=ENDPOINT
        )
        return not summary.gate.passed

    pairs = 250
    false_alarms = sum(gate_fails(0) for _ in range(pairs)) / pairs
    caught = sum(gate_fails(21) for _ in range(pairs)) / pairs  # 21 x 0.96 = a 10-point drop
    assert false_alarms <= 0.08
    assert caught >= 0.85
