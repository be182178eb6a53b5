"""What the data can and cannot show about a drop, in words: the rule in force and, for each
compared slice (and variant), its verdict, p-value and the smallest drop it can catch.

Shared by the terminal and ``summary.md``; the figures come from the summary's
:class:`~pytest_promptsuite.results.records.RegressionTest` records.
"""

from __future__ import annotations

from collections.abc import Iterator

from pytest_promptsuite.results.records import RegressionTest
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.summary import Summary


__all__ = ["rule_line", "short_verdict", "test_line", "verdict_lines"]

_SHORT = {"regressed": "REGRESSED", "inconclusive": "inconclusive", "no evidence of a drop": "no drop"}


def short_verdict(test: RegressionTest | None) -> str:
    """The verdict as a table cell: ``REGRESSED``, ``inconclusive`` or ``no drop``."""
    return "-" if test is None else _SHORT[test.verdict]


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} points"


def rule_line(summary: Summary) -> str:
    """The rule drops were judged by: the settings in force and how many paired comparisons the
    correction spans."""
    settings = summary.settings
    rules = sorted({t.rule for t in summary.tests})
    family = sum(1 for t in summary.tests if t.rule == "paired")
    rule = f"regression rule: {settings.regression}"
    if settings.regression == "auto" and rules:
        why = "both runs deterministic" if rules == ["delta"] else "runs that may vary"
        rule += f", here {' and '.join(rules)} ({why})"
    parts = [rule]
    if "paired" in rules:
        correction = f"Holm over {family} comparison{'s' if family != 1 else ''}" if settings.correction == "holm" \
            else "no correction"
        parts.append(f"one-sided exact test at alpha {settings.alpha:g}, {correction}")
    return "; ".join(parts)


def test_line(test: RegressionTest) -> str:
    """One comparison: its verdict, the drop it saw, its p-value and the drop it can catch."""
    where = test.slice + ("" if test.variant is None else f" [{test.variant}]")
    runs = f"{test.cases} case{'s' if test.cases != 1 else ''}" + (
        f" x {test.repeats} runs" if test.repeats > 1 else ""
    )
    p = f"p {test.p_regression:.3g}"
    if test.p_adjusted is not None and test.p_adjusted != test.p_regression:
        p += f" (adjusted {test.p_adjusted:.3g})"
    drop = _points(test.drop) if test.drop is not None and test.drop > 0 else "none"
    line = (
        f"{where} against the {test.against}: {test.verdict}: drop {drop} over {runs} "
        f"({p}); detectable drop {_points(test.detectable_drop)}"
    )
    if test.verdict == "inconclusive":
        ways = []
        if test.settle_cases is not None:
            ways.append(f"about {test.settle_cases} cases")
        if test.settle_repeats is not None:
            ways.append(f"{test.settle_repeats} repeats per case")
        line += "; " + (" or ".join(ways) + " would settle it" if ways else "more data would settle it")
    return line


def _model_changes(summary: Summary) -> Iterator[str]:
    """A line per variant whose baseline used another model than this run."""
    run, old = summary.run, summary.baseline_run
    if run is None or old is None:
        return
    for variant in run.models:
        theirs, ours = RunInfo.describe(old.model(variant)), RunInfo.describe(run.model(variant))
        if theirs is not None and ours is not None and theirs != ours:
            where = f" [{variant}]" if variant else ""
            yield (
                f"the baseline{where} used model {theirs}, this run {ours}: "
                "a model change, not only a prompt change"
            )


def verdict_lines(summary: Summary) -> Iterator[str]:
    """The rule, a line per comparison that is not ``no evidence of a drop`` (all when asked
    by a reader of ``summary.md``), the repeats compared and any model change."""
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
