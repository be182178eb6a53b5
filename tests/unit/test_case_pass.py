"""Stage tests for ``[gate] case_pass``: a case passes when a share of its repeats pass, the slice's
rate counts cases, and the paired rule compares case verdicts over as many repeats on each side
(McNemar, exact values computed here with ``Fraction``); its false alarms by seeded simulation."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.text import summary_lines
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.summary import Baseline
from pytest_promptsuite.results.summary import summarize
from tests.simulation import population


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


def _draw(p: list[float], k: int, rng: random.Random) -> list[CaseResult]:
    return [
        CaseResult(case_id=f"c{i}", slice="s", outcome="passed" if rng.random() < pi else "failed", repeat=r)
        for i, pi in enumerate(p)
        for r in range(k)
    ]


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
