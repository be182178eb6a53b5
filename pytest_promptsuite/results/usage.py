"""What a run's calls cost: calls, cache hits, tokens, money and latency, in total, per slice and
per variant, from the rows alone (they cross pytest-xdist and come back from ``results.jsonl``).

Money comes from ``[model] prices`` as the run recorded them (``summary.json``'s ``run.models``),
so a report rebuilt by ``promptsuite merge`` prices calls the same way. A cache hit cost nothing
and measured no latency: it counts as a hit, not a call.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from ..checks.base import CaseResult
from ..suite import Prices
from ..tables import fill
from .records import RunInfo


__all__ = ["UsageReport", "UsageStats", "UsageTally", "percentile", "prices_of_run", "usage_report"]

def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) of sorted ``values``, interpolated linearly; None when empty."""
    if not values:
        return None
    rank = (len(values) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


@dataclass(frozen=True)
class UsageStats:
    """One group's figures. Token and cost sums are None when no row of the group reported them."""

    name: str
    rows: int
    calls: int
    cache_hits: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    @property
    def tokens(self) -> int | None:
        """Prompt and completion tokens together (None when neither was reported)."""
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    def to_dict(self) -> dict[str, Any]:
        """The group as ``summary.json``'s ``usage`` entries write it."""
        return {
            "name": self.name, "rows": self.rows, "calls": self.calls, "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "tokens": self.tokens, "cost_usd": self.cost_usd,
            "latency_p50_ms": self.latency_p50_ms, "latency_p95_ms": self.latency_p95_ms,
        }


@dataclass
class _Group:
    rows: int = 0
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latencies: list[float] = field(default_factory=list)

    def add(self, row: CaseResult, cost: float | None) -> None:
        self.rows += 1
        if row.cached:
            self.cache_hits += 1
        elif row.output is not None:
            self.calls += len(row.replies) or 1
        if row.latency_ms is not None:
            self.latencies.append(row.latency_ms)
        usage = row.usage
        if usage:
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if isinstance(prompt, int):
                self.prompt_tokens = (self.prompt_tokens or 0) + prompt
            if isinstance(completion, int):
                self.completion_tokens = (self.completion_tokens or 0) + completion
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost

    def merge(self, other: _Group) -> None:
        self.rows += other.rows
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        for name in ("prompt_tokens", "completion_tokens", "cost_usd"):
            theirs = getattr(other, name)
            if theirs is not None:
                setattr(self, name, (getattr(self, name) or 0) + theirs)
        self.latencies.extend(other.latencies)

    def stats(self, name: str) -> UsageStats:
        ordered = sorted(self.latencies)
        return UsageStats(
            name, self.rows, self.calls, self.cache_hits, self.prompt_tokens, self.completion_tokens,
            self.cost_usd, percentile(ordered, 50), percentile(ordered, 95),
        )


@dataclass(frozen=True)
class UsageReport:
    """The run's figures: ``total``, then per slice and per variant (in first-seen order)."""

    total: UsageStats
    slices: tuple[UsageStats, ...] = ()
    variants: tuple[UsageStats, ...] = ()
    #: Whether any model of the run had ``[model] prices`` (else cost is unknown, not zero).
    priced: bool = False

    def to_dict(self) -> dict[str, Any]:
        """``summary.json``'s ``usage``."""
        return {
            "total": self.total.to_dict(),
            "slices": [s.to_dict() for s in self.slices],
            "variants": [v.to_dict() for v in self.variants],
            "priced": self.priced,
        }


class UsageTally:
    """Adds rows one at a time (a run that streams its rows never holds them all)."""

    def __init__(self, prices: Mapping[str, Prices] | None = None) -> None:
        self.prices = dict(prices or {})
        self._groups: dict[tuple[str, str | None], _Group] = {}  # one per (slice, variant)

    def add(self, row: CaseResult) -> None:
        """Count one row."""
        key = (row.slice, row.variant)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group()
        cost = None
        if self.prices and row.usage and not row.cached:
            prices = self.prices.get(row.variant or "") or self.prices.get("")
            if prices is not None:
                cost = prices.cost(row.usage.get("prompt_tokens"), row.usage.get("completion_tokens"))
        group.add(row, cost)

    def report(self) -> UsageReport:
        """The figures of every row added so far."""
        total = _Group()
        slices: dict[str, _Group] = {}
        variants: dict[str, _Group] = {}
        for (slice_name, variant), group in self._groups.items():
            total.merge(group)
            slices.setdefault(slice_name, _Group()).merge(group)
            if variant is not None:
                variants.setdefault(variant, _Group()).merge(group)
        return UsageReport(
            total.stats("total"),
            tuple(g.stats(name) for name, g in sorted(slices.items())),
            tuple(g.stats(name) for name, g in variants.items()),
            priced=bool(self.prices),
        )


def prices_of_run(run: RunInfo | None) -> dict[str, Prices]:
    """The ``[model] prices`` each variant's model had (``""``: the run without variants)."""
    found: dict[str, Prices] = {}
    for variant, model in (run.models if run is not None else {}).items():
        raw = model.get("prices")
        if isinstance(raw, Mapping):
            try:
                found[variant] = fill(Prices, raw)
            except ValueError:
                continue  # a summary.json edited by hand: no cost rather than a crash
    return found


def usage_report(rows: Iterable[CaseResult], run: RunInfo | None = None) -> UsageReport:
    """Every row's figures, priced at the run's recorded ``[model] prices``."""
    tally = UsageTally(prices_of_run(run))
    for row in rows:
        tally.add(row)
    return tally.report()
