"""Stage tests for ``results.summary``: every number of the summary on hand-made result sets.

Reference values are computed independently of the code under test (see ``reference_stats``). Under
``[gate] case_pass`` a case passes when a share of its repeats pass, the slice's rate counts cases, and the
paired rule compares case verdicts over as many repeats on each side (McNemar, exact values computed here
with ``Fraction``); its false alarms by seeded simulation.
"""

from __future__ import annotations

import functools
import math
import random
from fractions import Fraction

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.config.settings import Thresholds
from pytest_promptsuite.report.document import summary_document
from pytest_promptsuite.report.reasons import reason
from pytest_promptsuite.report.text import summary_lines
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.gate import RegressionRule
from pytest_promptsuite.results.gate import SliceBelowThreshold
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.gate import ThresholdRule
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.summary import Baseline
from pytest_promptsuite.results.summary import summarize
from pytest_promptsuite.results.usage import usage_report
from tests.simulation import population
from tests.unit.reference_stats import mcnemar_by_fractions
from tests.unit.reference_stats import wilson_by_quadratic


def row(case_id: str, slice_: str, outcome: str, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, **kw)  # type: ignore[arg-type]


def reasons(summary: object) -> tuple[str, ...]:
    """The gate's sentences, as the terminal and summary.json show them."""
    return tuple(reason(d) for d in summary.gate.decisions)  # type: ignore[attr-defined]


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
    a = alpha.counts
    assert (alpha.slice, a.cases, a.passed, a.failed, a.error, a.review) == ("alpha", 5, 2, 1, 1, 1)
    assert a.pass_rate == 2 / 4  # passed / (cases - review); the error counts as not passed
    assert a.interval == pytest.approx(wilson_by_quadratic(2, 4))
    assert (alpha.to_dict()["ci_low"], alpha.to_dict()["ci_high"]) == a.interval
    assert beta.counts.pass_rate == 1.0
    assert summary.totals == Counts(cases=6, passed=3, failed=1, error=1, review=1, skipped=0)
    assert summary_document(summary)["totals"] == {
        "cases": 6,
        "passed": 3,
        "failed": 1,
        "error": 1,
        "review": 1,
        "skipped": 0,
    }
    assert alpha.baseline_pass_rate is None and alpha.p_value is None and alpha.delta is None


def test_a_slice_of_only_review_cases_has_no_pass_rate_and_passes_its_gate() -> None:
    summary = summarize([row("r", "look", "review")])
    (only,) = summary.slices
    shown = only.to_dict()
    assert (only.counts.pass_rate, only.counts.interval, only.gate) == (None, None, "pass")
    assert (shown["pass_rate"], shown["ci_low"], shown["ci_high"]) == (None, None, None)
    assert summary.gate.passed


def test_gate_reasons_name_the_slice_the_numbers_and_the_source() -> None:
    rows = [row(f"c{i}", "refund", "passed" if i < 8 else "failed") for i in range(10)]
    rows.append(row("boom", "other", "error", error="HTTP 500: upstream"))
    summary = summarize(rows, ThresholdPolicy(Thresholds(slices={"refund": 0.9}), option=0.0))
    assert not summary.gate.passed
    assert summary.gate.decisions[0] == SliceBelowThreshold(
        slice="refund", variant=None, rule=ThresholdRule(0.9, "config slice"), pass_rate=0.8, passed=8, counted=10
    )
    assert reasons(summary) == (
        "slice 'refund': pass rate 80.0% (8/10) is below its threshold 90.0% (config slice)",
        "1 case ended in an error (the model call or the rendering failed): boom; errors always fail the run",
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
    assert summary_document(summarize(rows)) == summary_document(summarize(shuffled))
    assert summarize(rows) == summarize(shuffled)


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
        row(
            "a",
            "s",
            "failed",
            output="new a",
            prompt="Q: a",
            checks=(CheckResult("content", "must_include", False, "missing required text 'a'"),),
        ),
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
    assert s.counts.pass_rate == pytest.approx(5 / 7)
    assert s.delta == pytest.approx(5 / 7 - 3 / 6)
    assert (s.regressions, s.fixes) == (2, 2)
    assert s.p_value == 1.0
    assert (t.baseline_pass_rate, t.delta, t.regressions, t.fixes, t.p_value) == (1.0, 0.0, 0, 0, 1.0)
    assert summary_document(summary)["slices"][0]["p_value"] == 1.0


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
    delta = GateSettings(regression="delta")  # today's rule: the drop alone (deterministic runs)
    strict = summarize(new, ThresholdPolicy(Thresholds(max_regression=0.2), option=0.0), baseline=old, settings=delta)
    assert not strict.gate.passed
    expected_p = mcnemar_by_fractions(3, 0)
    assert strict.slices[0].p_value == pytest.approx(expected_p)  # 2 * 1/8 = 0.25
    assert strict.gate.decisions == (
        SliceRegressed(
            slice="s",
            variant=None,
            rule=RegressionRule(0.2, "config"),
            baseline_pass_rate=1.0,
            pass_rate=0.7,
            drop=pytest.approx(0.3),
            p_value=pytest.approx(expected_p),
            regressions=("c0", "c1", "c2"),
        ),
    )
    assert reasons(strict) == (
        "slice 's': pass rate dropped 30.0 points against the baseline (100.0% -> 70.0%), "
        "more than the allowed 20.0 points (config); McNemar p = 0.25; regressions: c0, c1, c2",
    )
    loose = summarize(new, ThresholdPolicy(option=0.0, max_regression_option=0.3), baseline=old, settings=delta)
    assert loose.gate.passed and loose.slices[0].gate == "pass"


def test_no_flips_give_p_one_and_no_baseline_gives_null() -> None:
    rows = [row("a", "s", "passed"), row("b", "s", "failed")]
    assert summarize(rows, baseline=rows).slices[0].p_value == 1.0
    assert summary_document(summarize(rows))["slices"][0]["p_value"] is None


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
    assert summary.slices[0].counts.cases == 9 and summary.slices[0].counts.pass_rate == pytest.approx(5 / 9)
    fractions = {r.case_id: (r.passed, r.runs, r.pass_fraction) for r in summary.repeats}
    assert fractions == {"broken": (0, 3, 0.0), "steady": (3, 3, 1.0), "wobbly": (2, 3, pytest.approx(2 / 3))}
    assert [r.case_id for r in summary.flaky] == ["wobbly"]
    assert summary_document(summary)["flaky"][0]["pass_fraction"] == pytest.approx(2 / 3)


def test_repeats_pair_by_case_on_their_pass_fractions() -> None:
    old = [
        row("a", "s", "passed", repeat=0),
        row("a", "s", "passed", repeat=1),
        row("flaky", "s", "passed", repeat=0),
        row("flaky", "s", "failed", repeat=1),
    ]
    new = [
        row("a", "s", "passed", repeat=0),
        row("a", "s", "failed", repeat=1),
        row("flaky", "s", "failed", repeat=0),
        row("flaky", "s", "passed", repeat=1),
    ]
    summary = summarize(new, baseline=old)
    assert summary.regressions == ("a",)  # 2/2 -> 1/2; the flaky case (1/2 both times) is neither
    assert summary.fixes == ()
    assert summary.baseline is not None and summary.baseline.repeats == (2, 2, 2)


def test_variant_and_tag_tables() -> None:
    rows = [
        row("a", "s", "passed", variant="v1", tags=("x", "y")),
        row("a", "s", "failed", variant="v2", tags=("x", "y")),
        row("b", "s", "passed", variant="v1", tags=("x",)),
        row("b", "s", "passed", variant="v2", tags=("x",)),
    ]
    summary = summarize(rows, ThresholdPolicy(option=0.0))
    variants = {v.name: (v.counts.cases, v.counts.passed, v.counts.pass_rate) for v in summary.variants}
    assert variants == {"v1": (2, 2, 1.0), "v2": (2, 1, 0.5)}
    tags = {t.name: (t.counts.cases, t.counts.passed, t.counts.pass_rate) for t in summary.tags}
    assert tags == {"x": (4, 3, 0.75), "y": (2, 1, 0.5)}
    assert summary.repeats == ()  # one row per (case, variant)
    no_variants = summarize([row("a", "s", "passed")])
    assert no_variants.variants == () and no_variants.tags == ()


def test_variants_are_diffed_separately() -> None:
    old = [row("a", "s", "passed", variant="v1"), row("a", "s", "passed", variant="v2")]
    new = [row("a", "s", "passed", variant="v1"), row("a", "s", "failed", variant="v2")]
    assert summarize(new, baseline=old).regressions == ("a[v2]",)


def test_tokens_and_cost_per_case_count_cache_hits_and_the_judge_apart() -> None:
    """Per case: every row that reported tokens, a cache hit too (it costs the same prompt); the
    judge's tokens, recorded by ``llm-rubric`` in its details, are summed apart. At 1 and 2 USD a
    token: (3 + 6) x 1 + (1 + 3) x 2 = 17 USD over 2 rows."""
    models = {"": {"spec": "openai:m", "prices": {"prompt": 1_000_000, "completion": 2_000_000}}}
    run = RunInfo("0", models)
    judged = CheckResult(
        "metric", "llm-rubric", True, "pass", details={"judge_usage": {"prompt_tokens": 50, "completion_tokens": 5}}
    )
    rows = [
        CaseResult(
            case_id="a",
            slice="s",
            outcome="passed",
            output="x",
            usage={"prompt_tokens": 3, "completion_tokens": 1},
            checks=(judged,),
        ),
        CaseResult(
            case_id="b",
            slice="s",
            outcome="passed",
            output="y",
            cached=True,
            usage={"prompt_tokens": 6, "completion_tokens": 3},
        ),
    ]
    usage = usage_report(rows, run)
    total = usage.total
    assert (total.measured, total.tokens_per_case, total.cost_per_case) == (2, 6.5, pytest.approx(17 / 2))
    assert (total.judge_prompt_tokens, total.judge_completion_tokens) == (50, 5)
    assert total.cost_usd == pytest.approx(3 + 2)  # what was billed: the cache hit cost nothing
    cheaper = [
        CaseResult(
            case_id=r.case_id,
            slice="s",
            outcome="passed",
            output="z",
            usage={"prompt_tokens": 2, "completion_tokens": 1},
        )
        for r in rows
    ]
    base = Baseline(cheaper, "b", run=run, usage=usage_report(cheaper, run))
    limits = GateSettings(max_tokens_increase=1.0, max_cost_increase=1.0)
    summary = summarize(rows, ThresholdPolicy(option=0.0), baseline=base, settings=limits, usage=usage)
    assert [reason(d) for d in summary.gate.decisions] == [
        "slice 's': tokens per case rose by 117% against the baseline (3.0 -> 6.5 tokens per case), "
        "more than [gate] max_tokens_increase = 1 allows",
        "slice 's': cost per case rose by 112% against the baseline ($4.000000 -> $8.500000 per case), "
        "more than [gate] max_cost_increase = 1 allows",
        "in total: tokens per case rose by 117% against the baseline (3.0 -> 6.5 tokens per case), "
        "more than [gate] max_tokens_increase = 1 allows",
        "in total: cost per case rose by 112% against the baseline ($4.000000 -> $8.500000 per case), "
        "more than [gate] max_cost_increase = 1 allows",
    ]
    assert summary_document(summary, usage=summary.usage)["usage"]["total"]["baseline_cost_per_case"] == pytest.approx(
        4.0
    )


# -- [gate] case_pass --------------------------------------------------------------------------------

NO_THRESHOLD = ThresholdPolicy(option=0.0)
ENDPOINT = RunInfo("0.1.0", {"": {"spec": "openai:m", "base_url": None, "params": {}, "deterministic": False}})


def repeats(case_id: str, passed: int, runs: int, slice_: str = "s", **kw: object) -> list[CaseResult]:
    """``runs`` rows of a case, the first ``passed`` of them passing."""
    return [
        CaseResult(case_id=case_id, slice=slice_, outcome="passed" if r < passed else "failed", repeat=r, **kw)  # type: ignore[arg-type]
        for r in range(runs)
    ]


def one_sided(b: int, c: int) -> float:
    n = b + c
    return float(Fraction(sum(math.comb(n, i) for i in range(b, n + 1)), 2**n))


def _draw(p: list[float], k: int, rng: random.Random) -> list[CaseResult]:
    """``k`` repeats of each case, each passing with the case's probability in ``p``."""
    return [_drawn(i, r, rng.random() < pi) for i, pi in enumerate(p) for r in range(k)]


@functools.cache
def _drawn(case: int, repeat: int, passed: bool) -> CaseResult:
    """One drawn row, made once: rows are frozen, and the simulations draw 800,000 of them."""
    return CaseResult(case_id=f"c{case}", slice="s", outcome="passed" if passed else "failed", repeat=repeat)


@pytest.mark.parametrize(
    ("rule", "passed"),
    [(0.8, ["c5", "c4"]), (1.0, ["c5"]), ("any", ["c5", "c4", "c3", "c1"]), (0.6, ["c5", "c4", "c3"])],
)
def test_a_case_passes_by_the_share_of_its_repeats(rule: float | str, passed: list[str]) -> None:
    rows = repeats("c5", 5, 5) + repeats("c4", 4, 5) + repeats("c3", 3, 5) + repeats("c1", 1, 5) + repeats("c0", 0, 5)
    summary = summarize(rows, NO_THRESHOLD, settings=GateSettings(case_pass=rule))
    (stats,) = summary.slices
    assert (stats.counts.cases, stats.counts.passed, stats.counts.failed) == (5, len(passed), 5 - len(passed))
    assert stats.counts.pass_rate == len(passed) / 5
    assert {r.case_id for r in summary.repeats if r.case_passed} == set(passed)
    assert [(r.case_id, r.passed, r.runs) for r in summary.repeats] == [
        ("c0", 0, 5),
        ("c1", 1, 5),
        ("c3", 3, 5),
        ("c4", 4, 5),
        ("c5", 5, 5),
    ]


def test_without_the_rule_every_repeat_counts() -> None:
    rows = repeats("c4", 4, 5) + repeats("c1", 1, 5)
    (stats,) = summarize(rows, NO_THRESHOLD).slices
    assert (stats.counts.cases, stats.counts.passed) == (10, 5)


def test_an_erred_repeat_fails_the_case_unless_the_rule_holds_and_always_fails_the_run() -> None:
    rows = repeats("ok", 4, 4) + [CaseResult(case_id="ok", slice="s", outcome="error", repeat=4, error="boom")]
    rows += repeats("bad", 1, 2) + [CaseResult(case_id="bad", slice="s", outcome="error", repeat=2, error="boom")]
    summary = summarize(rows, NO_THRESHOLD, settings=GateSettings(case_pass=0.8))
    (stats,) = summary.slices
    assert (stats.counts.passed, stats.counts.error) == (1, 1)  # ok: 4 of 5; bad: 1 of 3 with an error
    assert not summary.gate.passed  # errors always fail


def _erred(case_id: str, *repeats: int, runs: int = 3, variant: str | None = None) -> list[CaseResult]:
    """``runs`` rows of a case, those of ``repeats`` ending in an error, the others passing."""
    return [
        CaseResult(case_id, "s", "error" if r in repeats else "passed", variant=variant, repeat=r, error="HTTP 500")
        for r in range(runs)
    ]


def test_the_error_gate_counts_cases_as_the_slice_table_does_and_names_repeats_apart() -> None:
    """Under ``--prompt-repeat 3`` and ``case_pass``: a case is named once with its erred repeats, and one that
    passed under ``case_pass`` is told apart (errors still fail the run)."""
    rows = _erred("a", 0, 1, 2) + _erred("b", 0, 2) + _erred("ok", 4, runs=5) + _erred("fine")
    summary = summarize(rows, NO_THRESHOLD, settings=GateSettings(case_pass=0.8))
    assert summary.totals.error == 2  # a and b; ok passed 4 of 5
    assert [reason(d) for d in summary.gate.decisions] == [
        "2 cases ended in an error in 5 runs (the model call or the rendering failed): a (repeats 0, 1, 2), "
        "b (repeats 0, 2); 1 case passed under [gate] case_pass although 1 run ended in an error: ok; "
        "errors always fail the run"
    ]
    rows = _erred("a", 1, variant="v1") + _erred("a", 1, 2, variant="v2") + _erred("b", 1, variant="v1")
    (errored,) = summarize(rows, NO_THRESHOLD).gate.decisions  # no rule: each run counts, a case named once
    assert reason(errored) == (
        "3 cases ended in an error in 4 runs (the model call or the rendering failed): a[v1], a[v2] (repeats 1, 2), "
        "b; errors always fail the run"
    )
    (held,) = summarize(_erred("ok", 4, runs=5), NO_THRESHOLD, settings=GateSettings(case_pass=0.8)).gate.decisions
    assert reason(held) == (
        "1 case passed under [gate] case_pass although 1 run ended in an error: ok; errors always fail the run"
    )


def test_the_report_shows_k_of_n_and_the_rule() -> None:
    rows = repeats("c4", 4, 5) + repeats("c3", 3, 5)
    summary = summarize(rows, NO_THRESHOLD, settings=GateSettings(case_pass=0.8))
    assert (
        "case_pass 0.8: a case passes when at least 80% of its repeats pass (pass rates count cases); "
        "1 case did not: c3 3 of 5"
    ) in list(summary_lines(summary))


def test_the_paired_rule_compares_case_verdicts_over_as_many_repeats() -> None:
    """Baseline 5 repeats, this run 3: both sides are judged on their first 3. 7 cases went from 3/3 to
    1/3 (regressions under 0.8), 1 from 1/3 to 3/3 (a fix), 20 stayed at 3/3: McNemar on 7 vs 1."""
    old: list[CaseResult] = []
    new: list[CaseResult] = []
    for i in range(7):
        old += repeats(f"r{i}", 3, 5)  # the first 3 pass, the last 2 fail: 3 of 3 compared
        new += repeats(f"r{i}", 1, 3)
    old += repeats("f0", 1, 5)
    new += repeats("f0", 3, 3)
    for i in range(20):
        old += repeats(f"s{i}", 5, 5)
        new += repeats(f"s{i}", 3, 3)
    settings = GateSettings(case_pass=0.8)
    summary = summarize(new, NO_THRESHOLD, baseline=Baseline(old, "b", run=ENDPOINT), run=ENDPOINT, settings=settings)
    (test,) = summary.tests
    assert (test.cases, test.repeats, test.regressions, test.fixes) == (28, 1, 7, 1)
    assert test.p_regression == pytest.approx(one_sided(7, 1))
    assert test.baseline_pass_rate == pytest.approx(27 / 28) and test.pass_rate == pytest.approx(21 / 28)
    assert test.verdict == "regressed" and not summary.gate.passed
    (stats,) = summary.slices
    assert stats.baseline_pass_rate == pytest.approx(20 / 28)  # the baseline's own cases, all 5 repeats: r* 3/5 fail


@pytest.mark.slow
def test_seeded_simulation_of_case_pass_false_alarms_and_power() -> None:
    """200 cases x 5 repeats under case_pass = 0.8 (the README's population): with no change the gate
    fails at most alpha of the time (a margin for 200 pairs); 21 steady cases failing outright (a
    10-point drop) are caught. The benchmark (``gate_power.py --case-pass``) runs thousands."""
    rng = random.Random(20261202)
    settings = GateSettings(case_pass=0.8)

    def gate_fails(drop_cases: int) -> bool:
        p = population(200, rng)
        q = list(p)
        for i in [i for i, v in enumerate(p) if v == 0.98][:drop_cases]:
            q[i] = 0.02
        base = Baseline(_draw(p, 5, rng), "b", run=ENDPOINT)
        summary = summarize(_draw(q, 5, rng), NO_THRESHOLD, baseline=base, run=ENDPOINT, settings=settings)
        return not summary.gate.passed

    pairs = 200
    false_alarms = sum(gate_fails(0) for _ in range(pairs)) / pairs
    caught = sum(gate_fails(21) for _ in range(pairs)) / pairs
    assert false_alarms <= 0.08
    assert caught >= 0.9
