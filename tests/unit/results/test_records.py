"""Stage tests for ``results.records``: the one ``Counts`` type and the rows' dict shapes.

The key lists below are the columns of ``slices.csv`` and the entries of ``summary.json``; they
are written out by hand so that a change to a record cannot change a file unnoticed.
"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.records import GroupStats
from pytest_promptsuite.results.records import RepeatStats
from pytest_promptsuite.results.records import SliceFlips
from pytest_promptsuite.results.records import SliceStats
from pytest_promptsuite.results.records import VariantComparison
from pytest_promptsuite.results.records import VariantSlice
from pytest_promptsuite.results.stats import wilson_interval


COUNT_KEYS = ["cases", "passed", "failed", "error", "review", "skipped", "pass_rate", "ci_low", "ci_high"]


def test_counts_has_a_field_per_outcome() -> None:
    assert [f.name for f in dataclasses.fields(Counts)] == ["cases", *(o.value for o in Outcome)]


def test_counts_of_outcomes_rate_and_interval() -> None:
    c = Counts.of(
        [Outcome.PASSED, Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.REVIEW, Outcome.SKIPPED, Outcome.PASSED]
    )
    assert c == Counts(cases=7, passed=3, failed=1, error=1, review=1, skipped=1)
    assert c.counted == 5  # review and skipped are not counted; the error is
    assert c.pass_rate == 3 / 5
    assert c.interval == wilson_interval(3, 5)
    assert c.to_dict() == {
        "cases": 7,
        "passed": 3,
        "failed": 1,
        "error": 1,
        "review": 1,
        "skipped": 1,
        "pass_rate": 3 / 5,
        "ci_low": wilson_interval(3, 5)[0],
        "ci_high": wilson_interval(3, 5)[1],
    }
    assert list(c.to_dict()) == COUNT_KEYS
    assert list(c.tallies()) == COUNT_KEYS[:6]


def test_counts_without_a_counted_case_have_no_rate() -> None:
    for c in (Counts(), Counts.of([Outcome.REVIEW, Outcome.SKIPPED])):
        assert (c.counted, c.pass_rate, c.interval) == (0, None, None)
        assert (c.to_dict()["pass_rate"], c.to_dict()["ci_low"], c.to_dict()["ci_high"]) == (None, None, None)


def test_counts_from_a_tally_and_added_up() -> None:
    one = Counts.from_tally({Outcome.PASSED: 2, Outcome.FAILED: 1})
    two = Counts.from_tally({Outcome.ERROR: 1, Outcome.REVIEW: 4, Outcome.SKIPPED: 1})
    assert one == Counts(cases=3, passed=2, failed=1)
    assert one + two == Counts(cases=9, passed=2, failed=1, error=1, review=4, skipped=1)
    assert sum((one, two), Counts()) == one + two


def test_slice_group_and_variant_rows_keep_their_columns_in_order() -> None:
    c = Counts(cases=4, passed=3, failed=1)
    stats = SliceStats(slice="s", counts=c, threshold=0.5, threshold_source="option", gate="pass")
    assert list(stats.to_dict()) == [
        "slice",
        *COUNT_KEYS,
        "threshold",
        "threshold_source",
        "baseline_pass_rate",
        "delta",
        "regressions",
        "fixes",
        "p_value",
        "p_regression",
        "verdict",
        "detectable_drop",
        "gate",
    ]
    assert stats.to_dict()["pass_rate"] == 0.75
    group = GroupStats("tag", c)
    assert group.to_dict() == {"name": "tag", **c.to_dict()}
    assert list(group.to_dict()) == ["name", *COUNT_KEYS]
    vs = VariantSlice(slice="s", variant="v1", counts=c, threshold=0.5, gate="pass")
    assert list(vs.to_dict()) == ["slice", "variant", *COUNT_KEYS, "threshold", "gate"]


def test_repeat_stats_key_flakiness_and_dict() -> None:
    r = RepeatStats(case_id="a", variant="v2", slice="s", runs=3, passed=2, pass_fraction=2 / 3)
    assert r.key.name(with_repeat=False) == "a[v2]"
    assert r.flaky
    assert not dataclasses.replace(r, passed=3, pass_fraction=1.0).flaky
    assert not dataclasses.replace(r, runs=0, passed=0, pass_fraction=None).flaky
    assert list(r.to_dict()) == ["case_id", "variant", "slice", "runs", "passed", "pass_fraction"]


def test_variant_comparison_dict_writes_flips_per_slice() -> None:
    compared = VariantComparison(
        variants=("v1", "v2"), slices=(), flips_by_slice={"s": SliceFlips(regressions=2, fixes=1, p_value=1.0)}
    )
    assert compared.to_dict() == {
        "variants": ["v1", "v2"],
        "slices": [],
        "flips_by_slice": {"s": {"regressions": 2, "fixes": 1, "p_value": 1.0}},
        "regressions": [],
        "fixes": [],
    }


@pytest.mark.parametrize("outcome", list(Outcome))
def test_every_outcome_lands_in_its_own_field(outcome: Outcome) -> None:
    c = Counts.of([outcome])
    assert c.cases == 1 and getattr(c, outcome.value) == 1
