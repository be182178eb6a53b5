"""Pure statistics on pass counts: the Wilson score interval and the exact McNemar test.

Nothing here knows about cases, slices or reports; every function takes counts and returns
numbers, so the figures can be checked against textbook values on their own.
"""

from __future__ import annotations

import math


__all__ = ["mcnemar_p", "wilson_interval"]

#: z for a two-sided 95 % interval.
Z95 = 1.959963984540054
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


def mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: ``min(1, 2 * P(X <= min(b, c)))``, X ~ Bin(b + c, 1/2).

    ``b`` and ``c`` are the discordant pairs (regressions and fixes); with no flips p is 1.
    """
    n = b + c
    k = min(b, c)
    if n == 0:
        return 1.0
    if n <= _EXACT_LIMIT:
        tail = sum(math.comb(n, i) for i in range(k + 1))
        return min(1.0, 2 * tail / (1 << n))
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(k + 1)]
    top = max(logs)
    log_tail = top + math.log(sum(math.exp(v - top) for v in logs)) - n * math.log(2)
    return min(1.0, 2 * math.exp(log_tail))
