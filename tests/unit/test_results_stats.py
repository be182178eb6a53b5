"""Stage tests for ``results.stats``: the Wilson interval and the exact McNemar test.

Reference values are computed here independently of the code under test: Wilson bounds as the
roots of their defining quadratic, McNemar p-values from exact binomial sums with ``Fraction``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from pytest_promptsuite.results import mcnemar_p
from pytest_promptsuite.results import wilson_interval


Z95 = 1.959963984540054


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

