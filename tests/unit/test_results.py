"""Stage tests for ``results``: every number of the summary on hand-made result sets.

Reference values are computed here independently of the code under test: Wilson bounds as the
roots of their defining quadratic, McNemar p-values from exact binomial sums with ``Fraction``.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import pytest

from pytest_promptsuite.checks.base import CaseResult
from pytest_promptsuite.checks.base import CheckResult
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.results import ThresholdPolicy
from pytest_promptsuite.results import load_results
from pytest_promptsuite.results import mcnemar_p
from pytest_promptsuite.results import summarize
from pytest_promptsuite.results import wilson_interval


Z95 = 1.959963984540054


def row(case_id: str, slice_: str, outcome: str, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, **kw)  # type: ignore[arg-type]


def wilson_by_quadratic(k: int, n: int) -> tuple[float, float]:
    """Roots of (k/n - p)^2 = z^2 p (1 - p) / n, i.e. a p^2 + b p + c = 0."""
    phat, z2 = k / n, Z95 * Z95
    a = 1 + z2 / n
    b = -(2 * phat + z2 / n)
    c = phat * phat
    disc = math.sqrt(b * b - 4 * a * c)
    return ((-b - disc) / (2 * a), (-b + disc) / (2 * a))


def mcnemar_by_fractions(b: int, c: int) -> float:
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, i) for i in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


# -- intervals and tests ---------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(8, 10), (0, 7), (7, 7), (1, 3), (95, 100), (4999, 10000)])
def test_wilson_matches_the_quadratic_roots(k: int, n: int) -> None:
    low, high = wilson_interval(k, n)
    ref_low, ref_high = wilson_by_quadratic(k, n)
    assert low == pytest.approx(max(0.0, ref_low), abs=1e-12)
    assert high == pytest.approx(min(1.0, ref_high), abs=1e-12)


def test_wilson_of_8_of_10_is_the_textbook_value() -> None:
    # statsmodels.stats.proportion.proportion_confint(8, 10, method="wilson")
    assert wilson_interval(8, 10) == pytest.approx((0.4901625, 0.9433178), abs=1e-6)


def test_wilson_without_cases_is_the_whole_range() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),  # no flips
        (5, 5, 1.0),  # 2 * P(X <= 5) > 1 is capped
        (0, 6, 2 / 64),
        (1, 9, 22 / 1024),
        (9, 1, 22 / 1024),  # symmetric
        (3, 10, 756 / 8192),  # (1 + 13 + 78 + 286) * 2 / 2**13
        (2, 3, 1.0),
    ],
)
def test_mcnemar_exact_by_hand(b: int, c: int, expected: float) -> None:
    assert mcnemar_p(b, c) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("b", "c"), [(40, 60), (1000, 1100), (1100, 1060)])  # > 2000: log space
def test_mcnemar_matches_exact_fractions_also_for_many_flips(b: int, c: int) -> None:
    assert mcnemar_p(b, c) == pytest.approx(mcnemar_by_fractions(b, c), rel=1e-9)


# -- slices, thresholds and gates ------------------------------------------------------------------


def test_slice_counts_pass_rate_and_interval() -> None:
    rows = [
        row("a1", "alpha", "passed"),
        row("a2", "alpha", "passed"),
        row("a3", "alpha", "failed"),
        row("a4", "alpha", "review"),
        row("a5", "alpha", "error"),
        row("b1", "beta", "passed"),
    ]
    summary = summarize(rows, ThresholdPolicy(option=0.0))
    alpha, beta = summary.slices
    assert (alpha.slice, alpha.cases, alpha.passed, alpha.failed, alpha.error, alpha.review) == (
        "alpha", 5, 2, 1, 1, 1
    )
    assert alpha.pass_rate == 2 / 4  # passed / (cases - review); the error counts as not passed
    assert (alpha.ci_low, alpha.ci_high) == pytest.approx(wilson_by_quadratic(2, 4))
    assert beta.pass_rate == 1.0
    assert summary.totals == {
        "cases": 6, "passed": 3, "failed": 1, "error": 1, "review": 1, "skipped": 0
    }
    assert alpha.baseline_pass_rate is None and alpha.p_value is None and alpha.delta is None


def test_a_slice_of_only_review_cases_has_no_pass_rate_and_passes_its_gate() -> None:
    summary = summarize([row("r", "look", "review")])
    (only,) = summary.slices
    assert (only.pass_rate, only.ci_low, only.ci_high, only.gate) == (None, None, None, "pass")
    assert summary.gate.passed


def test_threshold_sources_in_order_of_precedence() -> None:
    policy = ThresholdPolicy(slices={"inj": 1.0}, option=0.8, config_default=0.9)
    assert policy.threshold("inj") == (1.0, "config slice")
    assert policy.threshold("other") == (0.8, "option")
    assert ThresholdPolicy(config_default=0.9).threshold("x") == (0.9, "config default")
    assert ThresholdPolicy().threshold("x") == (1.0, "default")
    assert ThresholdPolicy(max_regression_option=0.1, max_regression_config=0.2).max_regression() == (
        0.1, "option"
    )
    assert ThresholdPolicy(max_regression_config=0.2).max_regression() == (0.2, "config")
    assert ThresholdPolicy().max_regression() == (0.0, "default")


def test_gate_reasons_name_the_slice_the_numbers_and_the_source() -> None:
    rows = [row(f"c{i}", "refund", "passed" if i < 8 else "failed") for i in range(10)]
    rows.append(row("boom", "other", "error", error="HTTP 500: upstream"))
    summary = summarize(rows, ThresholdPolicy(slices={"refund": 0.9}, option=0.0))
    assert not summary.gate.passed
    assert summary.gate.reasons == (
        "slice 'refund': pass rate 80.0% (8/10) is below its threshold 90.0% (config slice)",
        "1 case ended in an error (the model call or the rendering failed): boom; "
        "errors always fail the run",
    )
    assert [s.gate for s in summary.slices] == ["pass", "fail"]  # "other" is 0/1 against 0.0


def test_failures_within_tolerance_pass_the_gate() -> None:
    rows = [row(f"c{i}", "s", "passed" if i < 9 else "failed") for i in range(10)]
    summary = summarize(rows, ThresholdPolicy(option=0.9))
    assert summary.gate.passed and summary.slices[0].gate == "pass"


def test_summary_does_not_depend_on_row_order() -> None:
    rows = [row(f"c{i}", f"s{i % 3}", ["passed", "failed", "review"][i % 4 % 3]) for i in range(30)]
    shuffled = rows[:]
    random.Random(4).shuffle(shuffled)
    assert summarize(rows).to_dict() == summarize(shuffled).to_dict()


# -- baseline diff ---------------------------------------------------------------------------------


def _baseline_pair() -> tuple[list[CaseResult], list[CaseResult]]:
    old = [
        row("a", "s", "passed", output="old a", prompt="Q: a"),
        row("b", "s", "passed", output="old b", prompt="Q: b"),
        row("c", "s", "failed", output="old c", prompt="Q: c"),
        row("d", "s", "passed"),
        row("e", "s", "error", error="timeout"),
        row("gone", "s", "failed"),  # removed: still in the baseline pass rate
        row("r", "s", "review"),
        row("x", "t", "passed"),
    ]
    new = [
        row("a", "s", "failed", output="new a", prompt="Q: a",
            checks=(CheckResult("content", "must_include", False, "missing required text 'a'"),)),
        row("b", "s", "error", error="HTTP 500", prompt="Q2: b"),
        row("c", "s", "passed", output="new c", prompt="Q: c"),
        row("d", "s", "passed"),
        row("e", "s", "passed"),
        row("r", "s", "passed"),  # review before: not a flip
        row("fresh", "s", "passed"),
        row("x", "t", "passed"),
    ]
    return old, new


def test_baseline_diff_counts_ids_rates_and_p_value() -> None:
    old, new = _baseline_pair()
    summary = summarize(new, ThresholdPolicy(option=0.0, max_regression_option=1.0), baseline=old)
    s, t = summary.slices
    assert summary.regressions == ("a", "b")  # b: an error counts as not passed
    assert summary.fixes == ("c", "e")
    assert summary.new == ("fresh",)
    assert summary.removed == ("gone",)
    # baseline: a, b, d, passed; c, e, gone not; r is review -> 3 / 6 over all baseline rows
    assert s.baseline_pass_rate == pytest.approx(3 / 6)
    # now: c d e r fresh passed; a, b not -> 5 / 7
    assert s.pass_rate == pytest.approx(5 / 7)
    assert s.delta == pytest.approx(5 / 7 - 3 / 6)
    assert (s.regressions, s.fixes) == (2, 2)
    assert s.p_value == 1.0
    assert (t.baseline_pass_rate, t.delta, t.regressions, t.fixes, t.p_value) == (1.0, 0.0, 0, 0, 1.0)
    assert summary.to_dict()["slices"][0]["p_value"] == 1.0


def test_flips_carry_old_and_new_output_and_the_prompt_diff() -> None:
    old, new = _baseline_pair()
    summary = summarize(new, baseline=old)
    assert summary.baseline is not None
    flips = {f.id: f for f in summary.baseline.flips}
    a, b = flips["a"], flips["b"]
    assert (a.kind, a.old_outcome, a.new_outcome) == ("regression", "passed", "failed")
    assert (a.old_output, a.new_output) == ("old a", "new a")
    assert a.prompt_diff is None  # same prompt sent
    assert a.checks[0]["message"] == "missing required text 'a'"
    assert b.prompt_diff is not None
    assert "-Q: b" in b.prompt_diff.splitlines() and "+Q2: b" in b.prompt_diff.splitlines()
    assert flips["c"].kind == "fix"


def test_regression_gate_fails_beyond_the_allowed_drop() -> None:
    old = [row(f"c{i}", "s", "passed") for i in range(10)]
    new = [row(f"c{i}", "s", "passed" if i >= 3 else "failed") for i in range(10)]
    strict = summarize(new, ThresholdPolicy(option=0.0, max_regression_config=0.2), baseline=old)
    assert not strict.gate.passed
    expected_p = mcnemar_by_fractions(3, 0)
    assert strict.slices[0].p_value == pytest.approx(expected_p)  # 2 * 1/8 = 0.25
    assert strict.gate.reasons == (
        "slice 's': pass rate dropped 30.0 points against the baseline (100.0% -> 70.0%), "
        "more than the allowed 20.0 points (config); McNemar p = 0.25; regressions: c0, c1, c2",
    )
    loose = summarize(new, ThresholdPolicy(option=0.0, max_regression_option=0.3), baseline=old)
    assert loose.gate.passed and loose.slices[0].gate == "pass"


def test_no_flips_give_p_one_and_no_baseline_gives_null() -> None:
    rows = [row("a", "s", "passed"), row("b", "s", "failed")]
    assert summarize(rows, baseline=rows).slices[0].p_value == 1.0
    assert summarize(rows).to_dict()["slices"][0]["p_value"] is None


def test_baseline_slices_missing_now_are_reported() -> None:
    baseline = [row("a", "s", "passed"), row("z", "old", "failed")]
    summary = summarize([row("a", "s", "passed")], baseline=baseline)
    assert summary.baseline is not None
    assert dict(summary.baseline.missing_slices) == {"old": 0.0}
    assert summary.removed == ("z",)


# -- repeats, variants, tags -----------------------------------------------------------------------


def test_repeats_count_once_each_and_give_pass_fractions_and_flaky_cases() -> None:
    rows = [
        row("steady", "s", "passed", repeat=0),
        row("steady", "s", "passed", repeat=1),
        row("steady", "s", "passed", repeat=2),
        row("wobbly", "s", "passed", repeat=0),
        row("wobbly", "s", "failed", repeat=1),
        row("wobbly", "s", "passed", repeat=2),
        row("broken", "s", "error", repeat=0),
        row("broken", "s", "failed", repeat=1),
        row("broken", "s", "failed", repeat=2),
    ]
    summary = summarize(rows, ThresholdPolicy(option=0.0))
    assert summary.slices[0].cases == 9 and summary.slices[0].pass_rate == pytest.approx(5 / 9)
    fractions = {r.case_id: (r.passed, r.runs, r.pass_fraction) for r in summary.repeats}
    assert fractions == {"broken": (0, 3, 0.0), "steady": (3, 3, 1.0), "wobbly": (2, 3, pytest.approx(2 / 3))}
    assert [r.case_id for r in summary.flaky] == ["wobbly"]
    assert summary.to_dict()["flaky"][0]["pass_fraction"] == pytest.approx(2 / 3)


def test_repeats_pair_with_the_same_repeat_of_the_baseline() -> None:
    old = [row("a", "s", "passed", repeat=0), row("a", "s", "passed", repeat=1)]
    new = [row("a", "s", "passed", repeat=0), row("a", "s", "failed", repeat=1)]
    summary = summarize(new, baseline=old)
    assert summary.regressions == ("a[repeat-1]",)


def test_variant_and_tag_tables() -> None:
    rows = [
        row("a", "s", "passed", variant="v1", tags=("x", "y")),
        row("a", "s", "failed", variant="v2", tags=("x", "y")),
        row("b", "s", "passed", variant="v1", tags=("x",)),
        row("b", "s", "passed", variant="v2", tags=("x",)),
    ]
    summary = summarize(rows, ThresholdPolicy(option=0.0))
    variants = {v.name: (v.cases, v.passed, v.pass_rate) for v in summary.variants}
    assert variants == {"v1": (2, 2, 1.0), "v2": (2, 1, 0.5)}
    tags = {t.name: (t.cases, t.passed, t.pass_rate) for t in summary.tags}
    assert tags == {"x": (4, 3, 0.75), "y": (2, 1, 0.5)}
    assert summary.repeats == ()  # one row per (case, variant)
    no_variants = summarize([row("a", "s", "passed")])
    assert no_variants.variants == () and no_variants.tags == ()


def test_variants_are_diffed_separately() -> None:
    old = [row("a", "s", "passed", variant="v1"), row("a", "s", "passed", variant="v2")]
    new = [row("a", "s", "passed", variant="v1"), row("a", "s", "failed", variant="v2")]
    assert summarize(new, baseline=old).regressions == ("a[v2]",)


# -- loading ---------------------------------------------------------------------------------------


def test_load_results_from_a_file_or_a_report_folder(tmp_path: Path) -> None:
    rows = [row("a", "s", "passed", output="<b>hi</b>"), row("b", "s", "failed")]
    (tmp_path / "results.jsonl").write_text("".join(r.to_json() + "\n" for r in rows) + "\n", "utf-8")
    assert load_results(tmp_path) == rows
    assert load_results(tmp_path / "results.jsonl") == rows


def test_load_results_names_the_file_and_line_of_a_bad_row(tmp_path: Path) -> None:
    bad = tmp_path / "results.jsonl"
    bad.write_text(json.dumps({"case_id": "a", "slice": "s", "outcome": "passed"}) + "\n{not json\n", "utf-8")
    with pytest.raises(ConfigError, match=r"results\.jsonl:2: not a results\.jsonl row"):
        load_results(bad)
    bad.write_text(json.dumps({"case_id": "a"}) + "\n", "utf-8")
    missing = r"results\.jsonl:1: not a results\.jsonl row \(missing field 'slice'\)"
    with pytest.raises(ConfigError, match=missing):
        load_results(bad)
    with pytest.raises(ConfigError, match="cannot read results"):
        load_results(tmp_path / "missing.jsonl")
