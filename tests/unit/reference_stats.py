"""Reference values of the Wilson interval and the exact McNemar test, computed independently of
``results.stats``: the roots of the interval's defining quadratic, and binomial sums as ``Fraction``."""

from __future__ import annotations

import math
from fractions import Fraction


Z95 = 1.959963984540054


def wilson_by_quadratic(k: int, n: int) -> tuple[float, float]:
    """Solve (k/n - p)^2 = z^2 p (1 - p) / n, i.e. a p^2 + b p + c = 0, for the two bounds."""
    phat, z2 = k / n, Z95 * Z95
    a = 1 + z2 / n
    b = -(2 * phat + z2 / n)
    c = phat * phat
    disc = math.sqrt(b * b - 4 * a * c)
    return ((-b - disc) / (2 * a), (-b + disc) / (2 * a))


def mcnemar_by_fractions(b: int, c: int) -> float:
    """Sum the two-sided exact McNemar p-value of ``b`` and ``c`` discordant pairs as fractions."""
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, i) for i in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))
