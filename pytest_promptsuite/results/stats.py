"""Statistics on pass counts: the Wilson interval, exact McNemar tests, the exact stratified test of
a drop, Holm's correction and the smallest drop a slice can catch."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass


#: z for a two-sided 95 % interval.
Z95 = 1.959963984540054
#: z of 90 % power (the detectable drop is the one caught nine times in ten).
Z_POWER = 1.2815515655446004
#: Above this many flips the binomial tail is summed in log space instead of with exact integers.
_EXACT_LIMIT = 2000


def wilson_interval(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Return the 95 % Wilson score interval of ``passed / n`` (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _binomial_tail(n: int, low: int, high: int) -> float:
    """Return ``P(low <= X <= high)`` for X ~ Bin(n, 1/2)."""
    if n <= _EXACT_LIMIT:
        return sum(math.comb(n, i) for i in range(low, high + 1)) / (1 << n)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(low, high + 1)]
    top = max(logs)
    return math.exp(top + math.log(sum(math.exp(v - top) for v in logs)) - n * math.log(2))


def mcnemar_p(b: int, c: int) -> float:
    """Return the exact two-sided McNemar p-value of ``b`` regressions and ``c`` fixes:
    ``min(1, 2 * P(X <= min(b, c)))``, X ~ Bin(b + c, 1/2); 1 with no flips."""
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * _binomial_tail(n, 0, min(b, c)))


def mcnemar_p_greater(b: int, c: int) -> float:
    """Return the exact one-sided McNemar p-value of "more regressions than fixes": ``P(X >= b)``,
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
    def dropped(self) -> bool:
        """Whether its pass fraction dropped: the case regressed."""
        return self.old * self.k_new > self.new * self.k_old

    @property
    def rose(self) -> bool:
        """Whether its pass fraction rose: the case was fixed."""
        return self.old * self.k_new < self.new * self.k_old

    @property
    def informative(self) -> bool:
        """Whether it can move the test: some but not all of its runs passed."""
        total = self.old + self.new
        return 0 < total < self.k_old + self.k_new


def _hypergeometric(stratum: Stratum) -> tuple[int, list[float]]:
    """Return the null distribution of ``new`` given the case's total: (smallest value, probabilities)."""
    t, k_old, k_new = stratum.old + stratum.new, stratum.k_old, stratum.k_new
    low, high = max(0, t - k_old), min(k_new, t)
    whole = math.comb(k_old + k_new, t)
    return low, [math.comb(k_new, y) * math.comb(k_old, t - y) / whole for y in range(low, high + 1)]


def stratified_p(strata: Sequence[Stratum]) -> float:
    """Return the one-sided exact p-value that the current runs pass less than the baseline's:
    ``P(sum new <= observed)`` under the convolution of each case's hypergeometric; 1 when no stratum
    is informative."""
    informative = [s for s in strata if s.informative]
    if not informative:
        return 1.0
    if all(s.k_old == s.k_new == 1 for s in informative):  # one run each: McNemar on the flips
        b = sum(1 for s in informative if s.old > s.new)
        return mcnemar_p_greater(b, len(informative) - b)
    return _convolved_p(informative)


def _convolved_p(informative: list[Stratum]) -> float:
    """Return ``P(sum new <= observed)`` under the convolution of each stratum's hypergeometric."""
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
    """Return Holm's step-down adjusted p-values, in the order given: the ``i``-th smallest ``p`` of
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
    """Return the one-sided normal quantile of level ``alpha``."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - alpha)


def _noise_variance(strata: Sequence[Stratum]) -> float:
    """Return the noise of ``sum new``: the null variance of the informative strata with a real drop
    (or rise) taken out (cases that went one way count only as much as those that went the other)."""
    down = up = level = 0.0
    for s in strata:
        if not s.informative:
            continue
        t, n_all = s.old + s.new, s.k_old + s.k_new
        variance = t * (n_all - t) * s.k_old * s.k_new / (n_all * n_all * (n_all - 1))
        if s.dropped:
            down += variance
        elif s.rose:
            up += variance
        else:
            level += variance
    return level + 2 * min(down, up)


def _catches(cases: int, k: int, variance: float, alpha: float) -> bool:
    """Tell whether ``cases`` cases that start failing outright (all ``k`` runs) are caught with 90 %
    power over noise of null variance ``variance`` (a normal approximation of the exact test, with
    its exact floor: even without noise, ``C(2k, k) ** -cases`` must reach ``alpha``)."""
    if cases * math.log(math.comb(2 * k, k)) < math.log(1 / alpha) - 1e-12:
        return False
    shift = cases * k / 2
    per_case = k * k / (4 * (2 * k - 1))  # the null variance a case that flips outright adds
    return shift - _z(alpha) * math.sqrt(variance + cases * per_case) >= Z_POWER * math.sqrt(variance)


def detectable_drop(strata: Sequence[Stratum], alpha: float) -> float | None:
    """Return the smallest drop of the pass rate (a fraction) the regression test catches with 90 %
    power at level ``alpha``, for cases that start failing outright; None without paired cases."""
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
    """Return how many cases (at the same repeats), and how many repeats (at the same cases), would
    make ``drop`` detectable, the noise growing with both; None where no size up to 100x cases or
    20 repeats would do."""
    n = len(strata)
    if n == 0 or drop <= 0:
        return None, None
    k = max(1, min(min(s.k_old, s.k_new) for s in strata))
    variance = _noise_variance(strata)
    cases = next(
        (m for m in range(n, 100 * n + 1) if _catches(math.floor(drop * m + 1e-9), k, variance * m / n, alpha)), None
    )
    repeats = next((r for r in range(k, 21) if _catches(math.floor(drop * n + 1e-9), r, variance * r / k, alpha)), None)
    return cases, repeats


def _moved(p: float, bound: float) -> float:
    return abs(p - bound)


def paired_change_interval(both: int, lost: int, gained: int, neither: int) -> tuple[float, float] | None:
    """Return the 95 % interval of the change of a paired pass rate (now minus before) by Newcombe's
    method 10 over Wilson intervals; ``lost`` passed before only, ``gained`` now only. None without pairs."""
    n = both + lost + gained + neither
    if n <= 0:
        return None
    before, now = (both + lost) / n, (both + gained) / n
    low1, high1 = wilson_interval(both + lost, n)
    low2, high2 = wilson_interval(both + gained, n)
    phi = _phi(both, lost, gained, neither)
    change = now - before
    down = math.sqrt(
        max(
            0.0,
            _moved(now, low2) ** 2 - 2 * phi * _moved(now, low2) * _moved(before, high1) + _moved(before, high1) ** 2,
        )
    )
    up = math.sqrt(
        max(
            0.0,
            _moved(now, high2) ** 2 - 2 * phi * _moved(now, high2) * _moved(before, low1) + _moved(before, low1) ** 2,
        )
    )
    return max(-1.0, change - down), min(1.0, change + up)


def _phi(both: int, lost: int, gained: int, neither: int) -> float:
    """Return Newcombe's continuity-corrected correlation of the two sides (0 where a margin is empty)."""
    margins = (both + lost) * (gained + neither) * (both + gained) * (lost + neither)
    if margins == 0:
        return 0.0
    n = both + lost + gained + neither
    cross = both * neither - lost * gained
    corrected = max(cross - n / 2, 0.0) if cross > 0 else cross
    return corrected / math.sqrt(margins)
