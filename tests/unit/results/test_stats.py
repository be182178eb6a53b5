"""Stage tests for ``results.stats``: the Wilson interval, the exact McNemar tests, the exact
stratified test, Holm's correction and the detectable drop.

Reference values are computed independently of the code under test: Wilson bounds as the roots of
their defining quadratic and McNemar p-values from exact binomial sums (``reference_stats``), the
one-sided and stratified tests here, with ``Fraction``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from pytest_promptsuite.results.stats import Stratum
from pytest_promptsuite.results.stats import detectable_drop
from pytest_promptsuite.results.stats import holm
from pytest_promptsuite.results.stats import mcnemar_p
from pytest_promptsuite.results.stats import mcnemar_p_greater
from pytest_promptsuite.results.stats import settling_size
from pytest_promptsuite.results.stats import stratified_p
from pytest_promptsuite.results.stats import wilson_interval
from tests.unit.reference_stats import mcnemar_by_fractions
from tests.unit.reference_stats import wilson_by_quadratic


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


# -- the one-sided tests the regression gate uses ---------------------------------------------------


def one_sided_by_fractions(b: int, c: int) -> Fraction:
    """P(X >= b), X ~ Bin(b + c, 1/2), summed exactly."""
    n = b + c
    return Fraction(sum(math.comb(n, i) for i in range(b, n + 1)), 2**n) if n else Fraction(1)


def stratified_by_enumeration(strata: list[Stratum]) -> Fraction:
    """The exact stratified p-value by brute force: every way each case's total could split
    between the runs, weighted by its hypergeometric probability, summed where sum(new) is no
    larger than observed."""
    import itertools

    supports = []
    for s in strata:
        t, whole = s.old + s.new, math.comb(s.k_old + s.k_new, s.old + s.new)
        supports.append(
            [
                (y, Fraction(math.comb(s.k_new, y) * math.comb(s.k_old, t - y), whole))
                for y in range(max(0, t - s.k_old), min(s.k_new, t) + 1)
            ]
        )
    observed = sum(s.new for s in strata)
    total = Fraction(0)
    for combo in itertools.product(*supports):
        if sum(y for y, _ in combo) <= observed:
            weight = Fraction(1)
            for _, w in combo:
                weight *= w
            total += weight
    return total


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 0), (5, 0), (3, 1), (6, 6), (10, 2), (0, 7), (40, 25)])
def test_one_sided_mcnemar_is_the_upper_binomial_tail(b: int, c: int) -> None:
    assert mcnemar_p_greater(b, c) == pytest.approx(float(one_sided_by_fractions(b, c)), rel=1e-12)


def test_one_sided_mcnemar_hand_values() -> None:
    assert mcnemar_p_greater(5, 0) == 1 / 32  # every flip a regression: (1/2)^5
    assert mcnemar_p_greater(3, 1) == 5 / 16  # (C(4,3) + C(4,4)) / 2^4
    assert mcnemar_p_greater(0, 4) == 1.0


@pytest.mark.parametrize(
    "strata",
    [
        [Stratum(3, 3, 0, 3)],  # one case fell from 3/3 to 0/3: 1 / C(6, 3) = 1/20
        [Stratum(2, 3, 1, 3), Stratum(1, 3, 2, 3), Stratum(3, 3, 0, 3)],
        [Stratum(1, 2, 0, 2), Stratum(2, 2, 1, 2), Stratum(0, 2, 1, 2), Stratum(2, 2, 2, 2)],
        [Stratum(4, 5, 2, 5), Stratum(3, 5, 3, 5), Stratum(5, 5, 1, 5)],
        [Stratum(2, 3, 0, 2), Stratum(1, 1, 0, 3)],  # review runs left out: unequal sizes
    ],
)
def test_stratified_p_matches_brute_force_enumeration(strata: list[Stratum]) -> None:
    assert stratified_p(strata) == pytest.approx(float(stratified_by_enumeration(strata)), rel=1e-9)


def test_stratified_p_hand_value_and_single_runs() -> None:
    assert stratified_p([Stratum(3, 3, 0, 3)]) == pytest.approx(1 / 20)
    # one run each: exactly the one-sided McNemar test on the flips (ties carry no information)
    single = [Stratum(1, 1, 0, 1)] * 4 + [Stratum(0, 1, 1, 1)] + [Stratum(1, 1, 1, 1)] * 9
    assert stratified_p(single) == float(one_sided_by_fractions(4, 1))
    assert stratified_p([Stratum(1, 1, 1, 1), Stratum(0, 2, 0, 2)]) == 1.0  # nothing informative


def test_holm_on_hand_made_p_values() -> None:
    # sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04 -> kept at 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5]) == [0.5]
    assert holm([0.6, 0.7]) == [1.0, 1.0]
    assert holm([]) == []


def test_the_detectable_drop_follows_the_exact_floor_and_the_noise() -> None:
    quiet_one = [Stratum(1, 1, 1, 1)] * 200
    assert detectable_drop(quiet_one, 0.05) == 5 / 200  # 2^-5 <= 0.05 < 2^-4
    assert detectable_drop([Stratum(3, 3, 3, 3)] * 200, 0.05) == 1 / 200  # 1 / C(6, 3) = 0.05
    noisy = quiet_one[:150] + [Stratum(1, 1, 0, 1), Stratum(0, 1, 1, 1)] * 25
    noisier = quiet_one[:100] + [Stratum(1, 1, 0, 1), Stratum(0, 1, 1, 1)] * 50
    assert detectable_drop(quiet_one, 0.05) < detectable_drop(noisy, 0.05) < detectable_drop(noisier, 0.05)
    more = (quiet_one[:150] + [Stratum(1, 1, 0, 1), Stratum(0, 1, 1, 1)] * 25) * 4
    assert detectable_drop(more, 0.05) < detectable_drop(noisy, 0.05)  # more cases, smaller drops
    assert detectable_drop([], 0.05) is None


def test_settling_sizes_make_the_drop_detectable() -> None:
    noisy = [Stratum(1, 1, 1, 1)] * 150 + [Stratum(1, 1, 0, 1), Stratum(0, 1, 1, 1)] * 25
    drop = 0.04
    assert detectable_drop(noisy, 0.05) > drop
    cases, repeats = settling_size(noisy, 0.05, drop)
    assert cases is not None and cases > 200 and repeats is not None and repeats > 1
    assert settling_size(noisy, 0.05, 0.0) == (None, None)
