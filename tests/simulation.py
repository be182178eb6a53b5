"""Seeded populations of cases for the gate's simulations (shared by the tests that draw them)."""

from __future__ import annotations

import random


def population(n: int, rng: random.Random) -> list[float]:
    """Return each of ``n`` cases' pass probability: 70 % steady passes, 15 % steady fails, the rest flaky."""
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(0.98 if u < 0.7 else 0.02 if u < 0.85 else rng.uniform(0.2, 0.8))
    return out
