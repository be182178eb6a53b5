"""Outcome counts per group: the aggregation behind every table of the summary."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from typing import TypeVar

from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.row import CaseResult


__all__ = ["counts_by", "tally"]

K = TypeVar("K", bound=Hashable)


def tally(pairs: Iterable[tuple[K, Outcome]]) -> dict[K, Counts]:
    """Count outcomes per group of ``(group, outcome)`` pairs, groups in sorted order."""
    groups: dict[K, dict[Outcome, int]] = {}
    for group, outcome in pairs:
        counts = groups.get(group)
        if counts is None:
            counts = groups[group] = dict.fromkeys(Outcome, 0)
        counts[outcome] += 1
    return {group: Counts.from_tally(groups[group]) for group in sorted(groups)}  # type: ignore[type-var]


def counts_by(rows: Iterable[CaseResult], key: Callable[[CaseResult], K | None]) -> dict[K, Counts]:
    """Count outcomes per value of ``key(row)`` (rows whose key is None are left out), sorted."""
    return tally((k, row.outcome) for row in rows if (k := key(row)) is not None)
