"""The regression tests in words: the rule drops were judged by and, for each compared slice (and
variant), its regression verdict, p-value and the smallest drop it can catch."""

from __future__ import annotations

from collections.abc import Iterator

from pytest_promptsuite.report.reasons import model_change
from pytest_promptsuite.report.reasons import plural
from pytest_promptsuite.report.reasons import points
from pytest_promptsuite.results.records import RegressionTest
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.summary import Summary


_CELLS = {"regressed": "REGRESSED", "inconclusive": "inconclusive", "no evidence of a drop": "no drop"}


def regression_cell(test: RegressionTest | None) -> str:
    """Write a regression verdict as a table cell: ``REGRESSED``, ``inconclusive`` or ``no drop``."""
    return "-" if test is None else _CELLS[test.verdict]


def _points(value: float | None) -> str:
    return "-" if value is None else points(value)


def rule_line(summary: Summary) -> str:
    """Say which rule drops were judged by, and how many paired comparisons the correction spans."""
    settings = summary.settings
    rules = sorted({t.rule for t in summary.tests})
    rule = f"regression rule: {settings.regression}"
    if settings.regression == "auto" and rules:
        why = "both runs deterministic" if rules == ["delta"] else "runs that may vary"
        rule += f", here {' and '.join(rules)} ({why})"
    parts = [rule]
    if "paired" in rules:
        parts.append(_paired_test(summary))
    return "; ".join(parts)


def _paired_test(summary: Summary) -> str:
    """Say how the paired comparisons are tested: the one-sided exact test, its level and its correction."""
    settings = summary.settings
    family = sum(1 for t in summary.tests if t.rule == "paired")
    correction = f"Holm over {plural(family, 'comparison')}" if settings.correction == "holm" else "no correction"
    return f"one-sided exact test at alpha {settings.alpha:g}, {correction}"


def test_line(test: RegressionTest) -> str:
    """Describe one regression test: its verdict, the drop it saw, its p-value and the drop it can catch."""
    where = test.slice + ("" if test.variant is None else f" [{test.variant}]")
    runs = plural(test.cases, "case") + (f" x {test.repeats} runs" if test.repeats > 1 else "")
    p = f"p {test.p_regression:.3g}"
    if test.p_adjusted is not None and test.p_adjusted != test.p_regression:
        p += f" (adjusted {test.p_adjusted:.3g})"
    drop = _points(test.drop) if test.drop is not None and test.drop > 0 else "none"
    line = (
        f"{where} against the {test.against}: {test.verdict}: drop {drop} over {runs} "
        f"({p}); detectable drop {_points(test.detectable_drop)}"
    )
    if test.verdict == "inconclusive":
        line += "; " + _settle(test)
    return line


def _settle(test: RegressionTest) -> str:
    """Say what would settle an inconclusive test: more cases, more repeats, or more data."""
    ways = []
    if test.settle_cases is not None:
        ways.append(f"about {test.settle_cases} cases")
    if test.settle_repeats is not None:
        ways.append(f"{test.settle_repeats} repeats per case")
    return " or ".join(ways) + " would settle it" if ways else "more data would settle it"


def _model_changes(summary: Summary) -> Iterator[str]:
    """Yield a line per variant whose baseline used another model than this run."""
    run, old = summary.run, summary.baseline_run
    if run is None or old is None:
        return
    for variant in run.models:
        change = RunInfo.model_change(old.model(variant), run.model(variant))
        if change is not None:
            where = f" [{variant}]" if variant else ""
            yield f"the baseline{where} {model_change(change)}"


def regression_lines(summary: Summary) -> Iterator[str]:
    """Yield the rule, the repeats compared, any model change and a line per regression test whose
    verdict is not ``no evidence of a drop``."""
    if not summary.tests and summary.baseline is None:
        return
    yield rule_line(summary)
    diff = summary.baseline
    if diff is not None and diff.repeats[0] != diff.repeats[1]:
        old, new, used = diff.repeats
        yield f"repeats: the baseline ran cases {old} times, this run {new}: the first {used} of each compared"
    yield from _model_changes(summary)
    for test in summary.tests:
        if test.verdict != "no evidence of a drop":
            yield test_line(test)
