"""Pure statistics on pass counts: the Wilson interval, exact McNemar tests, the exact stratified
test of a drop, Holm's correction and the smallest drop a slice can catch.

Nothing here knows about cases, slices or reports; every function takes counts and returns
numbers, so the figures can be checked against textbook values on their own.

The regression test. A slice's paired cases are strata: case ``i`` passed ``x`` of its ``k_old``
counted runs in the baseline and ``y`` of its ``k_new`` runs now. With no change, both runs draw
from the same pass probability, so given the case's total ``t = x + y`` the number ``y`` that fall
in the current run is hypergeometric, whatever that probability is. The p-value of "the current
run passes less" is ``P(sum y <= observed)`` under the convolution of those hypergeometrics: an
exact conditional test (the exact stratified test of a common odds ratio of 1). With one run per
case it is the one-sided exact McNemar test on the flips; with repeats it uses every run without
pairing repeat ``i`` with repeat ``i``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass


__all__ = [
    "Stratum",
    "detectable_drop",
    "holm",
    "mcnemar_p",
    "mcnemar_p_greater",
    "settling_size",
    "stratified_p",
    "wilson_interval",
]

#: z for a two-sided 95 % interval.
Z95 = 1.959963984540054
#: z of 90 % power (the detectable drop is the one caught nine times in ten).
Z_POWER = 1.2815515655446004
#: Above this many flips the binomial tail is summed in log space instead of with exact integers.
_EXACT_LIMIT = 2000


def wilson_interval(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The 95 % Wilson score interval of ``passed / n`` (``(0, 1)`` when ``n`` is 0).

    Wilson rather than the normal approximation because slices are small and pass rates sit near 1.
    """
    if n <= 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _binomial_tail(n: int, low: int, high: int) -> float:
    """``P(low <= X <= high)`` for X ~ Bin(n, 1/2)."""
    if n <= _EXACT_LIMIT:
        return sum(math.comb(n, i) for i in range(low, high + 1)) / (1 << n)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(low, high + 1)]
    top = max(logs)
    return math.exp(top + math.log(sum(math.exp(v - top) for v in logs)) - n * math.log(2))


def mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: ``min(1, 2 * P(X <= min(b, c)))``, X ~ Bin(b + c, 1/2).

    ``b`` and ``c`` are the discordant pairs (regressions and fixes); with no flips p is 1.
    """
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * _binomial_tail(n, 0, min(b, c)))


def mcnemar_p_greater(b: int, c: int) -> float:
    """Exact one-sided McNemar p-value of "more regressions than fixes": ``P(X >= b)``,
    X ~ Bin(b + c, 1/2); 1 with no flips."""
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, _binomial_tail(n, b, n))


@dataclass(frozen=True)
class Stratum:
    """One paired case: it passed ``old`` of ``k_old`` counted runs in the baseline and ``new``
    of ``k_new`` now."""

    old: int
    k_old: int
    new: int
    k_new: int

    @property
    def informative(self) -> bool:
        """Whether it can move the test: some but not all of its runs passed."""
        total = self.old + self.new
        return 0 < total < self.k_old + self.k_new


def _hypergeometric(stratum: Stratum) -> tuple[int, list[float]]:
    """The null distribution of ``new`` given the case's total: (smallest value, probabilities)."""
    t, k_old, k_new = stratum.old + stratum.new, stratum.k_old, stratum.k_new
    low, high = max(0, t - k_old), min(k_new, t)
    whole = math.comb(k_old + k_new, t)
    return low, [math.comb(k_new, y) * math.comb(k_old, t - y) / whole for y in range(low, high + 1)]


def stratified_p(strata: Sequence[Stratum]) -> float:
    """One-sided exact p-value that the current runs pass less than the baseline's (see the
    module docstring): ``P(sum new <= observed)``; 1 when no stratum is informative."""
    informative = [s for s in strata if s.informative]
    if not informative:
        return 1.0
    if all(s.k_old == s.k_new == 1 for s in informative):  # one run each: McNemar on the flips
        b = sum(1 for s in informative if s.old > s.new)
        return mcnemar_p_greater(b, len(informative) - b)
    import numpy as np

    offset = 0
    pmf = np.ones(1)
    for stratum in informative:
        low, probabilities = _hypergeometric(stratum)
        offset += low
        pmf = np.convolve(pmf, np.asarray(probabilities))
    observed = sum(s.new for s in informative) - offset
    return float(min(1.0, pmf[: observed + 1].sum()))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the ``i``-th smallest ``p`` of
    ``m`` becomes ``max`` over ``j <= i`` of ``min(1, (m - j + 1) * p_(j))``."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


@functools.lru_cache(maxsize=64)
def _z(alpha: float) -> float:
    """The one-sided normal quantile of level ``alpha``."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - alpha)


def _noise_variance(strata: Sequence[Stratum]) -> float:
    """The noise of ``sum new``: the null variance of the informative strata, with a real drop
    (or rise) taken out: cases that went one way count only as much as those that went the
    other (noise is symmetric; a drop is not)."""
    down = up = level = 0.0
    for s in strata:
        if not s.informative:
            continue
        t, n_all = s.old + s.new, s.k_old + s.k_new
        variance = t * (n_all - t) * s.k_old * s.k_new / (n_all * n_all * (n_all - 1))
        if s.old * s.k_new > s.new * s.k_old:
            down += variance
        elif s.old * s.k_new < s.new * s.k_old:
            up += variance
        else:
            level += variance
    return level + 2 * min(down, up)


def _catches(cases: int, k: int, variance: float, alpha: float) -> bool:
    """Whether ``cases`` cases that start failing outright (all ``k`` runs) are caught with 90 %
    power on top of noise of null variance ``variance`` (normal approximation of the exact test,
    with its exact floor: even without noise, ``C(2k, k) ** -cases`` must reach ``alpha``)."""
    if cases * math.log(math.comb(2 * k, k)) < math.log(1 / alpha) - 1e-12:
        return False
    shift = cases * k / 2
    per_case = k * k / (4 * (2 * k - 1))  # the null variance a case that flips outright adds
    return shift - _z(alpha) * math.sqrt(variance + cases * per_case) >= Z_POWER * math.sqrt(variance)


def detectable_drop(strata: Sequence[Stratum], alpha: float) -> float | None:
    """The smallest drop of the pass rate (a fraction) the regression test catches with 90 %
    power at level ``alpha``, for a drop made of cases that start failing outright, given the
    slice's size, repeats and observed noise; None without paired cases."""
    n = len(strata)
    if n == 0:
        return None
    k = max(1, min(min(s.k_old, s.k_new) for s in strata))
    variance = _noise_variance(strata)
    for cases in range(1, n + 1):
        if _catches(cases, k, variance, alpha):
            return cases / n
    return None  # not even every case failing would be caught


def settling_size(strata: Sequence[Stratum], alpha: float, drop: float) -> tuple[int | None, int | None]:
    """How many cases (at the same repeats), and how many repeats (at the same cases), would make
    ``drop`` detectable, assuming the noise grows with the cases and with the repeats as it does
    for flaky cases; None where no size up to 100x cases or 20 repeats would do."""
    n = len(strata)
    if n == 0 or drop <= 0:
        return None, None
    k = max(1, min(min(s.k_old, s.k_new) for s in strata))
    variance = _noise_variance(strata)
    cases = next(
        (m for m in range(n, 100 * n + 1) if _catches(math.floor(drop * m + 1e-9), k, variance * m / n, alpha)),
        None,
    )
    repeats = next(
        (r for r in range(k, 21) if _catches(math.floor(drop * n + 1e-9), r, variance * r / k, alpha)), None
    )
    return cases, repeats
