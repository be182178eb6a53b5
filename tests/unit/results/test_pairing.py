"""Stage tests for ``results.compare``: rows pair by ``CaseKey`` across runs and across variants."""

from __future__ import annotations

from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.config.settings import Thresholds
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.pairing import compare
from pytest_promptsuite.results.pairing import compare_variants
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.records import SliceFlips
from pytest_promptsuite.results.stats import mcnemar_p


def row(case_id: str, slice_: str, outcome: str, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, **kw)  # type: ignore[arg-type]


def test_rows_pair_by_case_and_variant_without_repeats() -> None:
    old = [row("a", "s", "passed", variant="v1"), row("a", "s", "passed", variant="v2"), row("b", "s", "failed")]
    new = [row("a", "s", "passed", variant="v1"), row("a", "s", "failed", variant="v2"), row("b", "s", "passed")]
    diff = compare(new, old, "base", ThresholdPolicy()).diff
    assert diff.regressions == ("a[v2]",)  # no repeat suffix: neither set repeats cases
    assert diff.fixes == ("b",)
    assert [(f.id, f.kind, f.old_outcome, f.new_outcome) for f in diff.flips] == [
        ("a[v2]", "regression", Outcome.PASSED, Outcome.FAILED),
        ("b", "fix", Outcome.FAILED, Outcome.PASSED),
    ]


def test_repeats_pair_by_case_over_the_first_min_k_repeats() -> None:
    old = [row("a", "s", "passed", repeat=0), row("a", "s", "passed", repeat=1)]
    new = [row("a", "s", "passed", repeat=0), row("a", "s", "failed", repeat=1), row("a", "s", "passed", repeat=2)]
    result = compare(new, old, "base", ThresholdPolicy())
    assert result.diff.regressions == ("a",)  # 2/2 -> 1/2 over the first two repeats of each
    assert (result.diff.new, result.diff.removed) == ((), ())
    assert result.repeats == result.diff.repeats == (2, 3, 2)
    [paired] = result.paired
    assert (paired.stratum.old, paired.stratum.k_old, paired.stratum.new, paired.stratum.k_new) == (2, 2, 1, 2)
    # one run now against two then: the first repeat of each is compared, and it did not flip
    result = compare([row("a", "s", "passed")], old, "base", ThresholdPolicy())
    assert (result.diff.regressions, result.diff.new, result.diff.removed, result.repeats) == ((), (), (), (2, 1, 1))


def test_a_flaky_case_is_never_a_regression_and_a_fix() -> None:
    old = [row("f", "s", "passed", repeat=0), row("f", "s", "failed", repeat=1)]
    new = [row("f", "s", "failed", repeat=0), row("f", "s", "passed", repeat=1)]
    diff = compare(new, old, "base", ThresholdPolicy()).diff
    assert (diff.regressions, diff.fixes) == ((), ())


def test_variants_and_repeats_together_give_the_full_key() -> None:
    old = [row("a", "s", "passed", variant="v1", repeat=r) for r in range(2)]
    new = [row("a", "s", "passed", variant="v1", repeat=0), row("a", "s", "failed", variant="v1", repeat=1)]
    assert compare(new, old, "base", ThresholdPolicy()).diff.regressions == ("a[v1]",)


def test_ids_are_sorted_by_key_and_the_last_row_of_a_key_wins() -> None:
    old = [row("z", "s", "passed"), row("m", "s", "passed"), row("gone", "s", "failed")]
    new = [row("z", "s", "passed"), row("z", "s", "failed"), row("m", "s", "failed"), row("fresh", "t", "passed")]
    result = compare(new, old, "base", ThresholdPolicy())
    assert result.diff.regressions == ("m", "z")  # the second "z" row is the one compared
    assert (result.diff.new, result.diff.removed) == (("fresh",), ("gone",))
    assert result.flips == {"s": SliceFlips(2, 0, mcnemar_p(2, 0)), "t": SliceFlips(0, 0, 1.0)}


def test_review_and_skipped_never_flip_and_missing_slices_keep_their_rate() -> None:
    old = [row("r", "s", "review"), row("k", "s", "passed"), row("x", "old", "passed"), row("y", "old", "failed")]
    new = [row("r", "s", "failed"), row("k", "s", "skipped")]
    result = compare(new, old, "base", ThresholdPolicy(Thresholds(max_regression=0.1)))
    assert result.diff.flips == ()
    assert result.flips == {"s": SliceFlips(0, 0, 1.0)}
    assert result.baseline_counts == {
        "old": Counts(cases=2, passed=1, failed=1),
        "s": Counts(cases=2, passed=1, review=1),
    }
    assert dict(result.diff.missing_slices) == {"old": 0.5}
    assert (result.diff.source, result.diff.max_regression, result.diff.max_regression_source) == (
        "base",
        0.1,
        "config",
    )


def test_variants_pair_by_case_with_the_variant_stripped() -> None:
    rows = [
        row("a", "s", "passed", variant="v1", repeat=0),
        row("a", "s", "failed", variant="v2", repeat=0),
        row("a", "s", "passed", variant="v1", repeat=1),
        row("a", "s", "passed", variant="v2", repeat=1),
        row("b", "s", "failed", variant="v1"),
        row("b", "s", "passed", variant="v2"),
        row("c", "s", "failed", variant="v3"),
    ]
    result = compare_variants(rows, "v1", "v2", ThresholdPolicy())
    assert result is not None
    assert result.diff.source == "variant v1"
    assert result.diff.regressions == ("a",)  # 2/2 in v1, 1/2 in v2
    assert result.diff.fixes == ("b",)
    assert compare_variants(rows, "v1", "v9", ThresholdPolicy()) is None  # no row of v9
    assert compare_variants(rows, "v9", "v1", ThresholdPolicy()) is None


def test_rows_with_and_without_a_variant_in_one_set_keep_their_own_names() -> None:
    # pandas stores a missing variant beside named ones as NaN; the key comes from the row, so
    # a case without a variant is "a", never "a[nan]"
    old = [row("a", "s", "passed"), row("b", "s", "passed", variant="v1")]
    new = [row("a", "s", "failed"), row("b", "s", "failed", variant="v1")]
    assert compare(new, old, "base", ThresholdPolicy()).diff.regressions == ("a", "b[v1]")
