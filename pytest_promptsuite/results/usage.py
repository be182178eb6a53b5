"""What a run's calls cost: calls, cache hits, tokens, money and latency, in total, per slice and per
variant, from the rows and the ``[model] prices`` the run recorded."""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any
from typing import Literal
from typing import Union

from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.tables import Prices
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.gate import UsageIncreased
from pytest_promptsuite.results.records import RunInfo


#: Which row: its case, variant and repeat.
RowKey = tuple[str, Union[str, None], int]
#: A measured row's figures: its slice, the tested model's tokens, and their USD (None without prices).
RowUsage = tuple[str, int, Union[float, None]]


def percentile(values: list[float], q: float) -> float | None:
    """Return the ``q``-th percentile (0..100) of sorted ``values``, interpolated linearly; None when empty."""
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
    #: Rows whose model call reported its tokens (cache hits included): the per-case figures' denominator.
    measured: int = 0
    #: The ``llm-rubric`` judge's tokens, apart from the tested model's (None when no judge reported any).
    judge_prompt_tokens: int | None = None
    judge_completion_tokens: int | None = None
    #: A simulated user's calls and tokens (``[models.user]``), apart from the tested model's.
    user_calls: int = 0
    user_prompt_tokens: int | None = None
    user_completion_tokens: int | None = None
    #: The tested model's tokens and USD per measured row (cost at its prices, cache hits priced too).
    tokens_per_case: float | None = None
    cost_per_case: float | None = None
    #: The same figures of the baseline's rows of this group (None without a baseline or its figures).
    baseline_tokens_per_case: float | None = None
    baseline_cost_per_case: float | None = None

    @property
    def tokens(self) -> int | None:
        """Prompt and completion tokens together (None when neither was reported)."""
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    def to_dict(self) -> dict[str, Any]:
        """Return the group as ``summary.json``'s ``usage`` entries write it."""
        return {
            "name": self.name,
            "rows": self.rows,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "latency_p50_ms": self.latency_p50_ms,
            "latency_p95_ms": self.latency_p95_ms,
            "measured": self.measured,
            "judge_prompt_tokens": self.judge_prompt_tokens,
            "judge_completion_tokens": self.judge_completion_tokens,
            **(
                {
                    "user_calls": self.user_calls,
                    "user_prompt_tokens": self.user_prompt_tokens,
                    "user_completion_tokens": self.user_completion_tokens,
                }
                if self.user_calls
                else {}
            ),
            "tokens_per_case": self.tokens_per_case,
            "cost_per_case": self.cost_per_case,
            "baseline_tokens_per_case": self.baseline_tokens_per_case,
            "baseline_cost_per_case": self.baseline_cost_per_case,
        }

    def against(self, baseline: UsageStats | None) -> UsageStats:
        """Return these figures with the baseline's per-case ones beside them."""
        if baseline is None:
            return self
        return replace(
            self, baseline_tokens_per_case=baseline.tokens_per_case, baseline_cost_per_case=baseline.cost_per_case
        )


def _plus(total: int | None, value: Any) -> int | None:
    """Add a token count to a total (None until one is counted); anything but a count leaves it."""
    return (total or 0) + value if _is_count(value) else total


def _token(value: Any) -> int | None:
    """Return a token count read back, or None for one that is not a count."""
    return value if _is_count(value) else None


def _is_count(value: Any) -> bool:
    """Tell whether a token count read back is one: an integer, not negative (a bool or ``-5`` in a hand-edited
    baseline counts as not reported)."""
    return type(value) is int and value >= 0


@dataclass
class _Group:
    rows: int = 0
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latencies: list[float] = field(default_factory=list)
    #: Each call's (prompt, completion) token counts, in order: priced when the report is made.
    billed: list[tuple[Any, Any]] = field(default_factory=list)
    measured: int = 0
    judge_prompt_tokens: int | None = None
    judge_completion_tokens: int | None = None
    user_calls: int = 0
    user_prompt_tokens: int | None = None
    user_completion_tokens: int | None = None
    #: The USD of every measured row's tokens, cache hits included (what the prompt costs a case).
    list_cost: float | None = None

    def add(
        self,
        answered: bool,
        calls: int,
        cached: bool,
        latency: float | None,
        usage: Mapping[str, Any] | None,
        judged: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.rows += 1
        if cached:
            self.cache_hits += 1
        elif answered:
            self.calls += calls
        if latency is not None:
            self.latencies.append(latency)
        if type(usage) is dict and usage:
            self._add_usage(usage, cached)
        for judge in judged:  # an llm-rubric's judge calls
            self.judge_prompt_tokens = _plus(self.judge_prompt_tokens, judge.get("prompt_tokens"))
            self.judge_completion_tokens = _plus(self.judge_completion_tokens, judge.get("completion_tokens"))

    def add_user(self, turns: Any) -> None:
        """Count a conversation's simulated-user calls: each turn's ``user_usage`` (``{}``: a call without tokens)."""
        for turn in turns if type(turns) in (list, tuple) else ():
            used = turn.get("user_usage") if type(turn) is dict else None
            if type(used) is dict:
                self.user_calls += 1
                self.user_prompt_tokens = _plus(self.user_prompt_tokens, used.get("prompt_tokens"))
                self.user_completion_tokens = _plus(self.user_completion_tokens, used.get("completion_tokens"))

    def _add_usage(self, usage: Mapping[str, Any], cached: bool) -> None:
        prompt, completion = _token(usage.get("prompt_tokens")), _token(usage.get("completion_tokens"))
        self.prompt_tokens = _plus(self.prompt_tokens, prompt)
        self.completion_tokens = _plus(self.completion_tokens, completion)
        if prompt is not None or completion is not None:
            self.measured += 1
        if not cached:
            self.billed.append((prompt, completion))

    def priced(self, prices: Prices | None) -> _Group:
        """Return this group with ``cost_usd`` summed over its calls at ``prices``, in call order."""
        cost_usd = self._calls_cost(prices)
        listed = None
        if prices is not None and self.measured:
            listed = prices.cost(self.prompt_tokens or 0, self.completion_tokens or 0)
        return replace(self, cost_usd=cost_usd, list_cost=listed)

    def _calls_cost(self, prices: Prices | None) -> float | None:
        """Sum the USD of the calls billed, in call order (None when none could be priced)."""
        cost_usd = None
        for prompt, completion in self.billed:
            cost = None if prices is None else prices.cost(prompt, completion)
            if cost is not None:
                cost_usd = (cost_usd or 0.0) + cost
        return cost_usd

    def merge(self, other: _Group) -> None:
        self.rows += other.rows
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.measured += other.measured
        self.user_calls += other.user_calls
        for name in (
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
            "judge_prompt_tokens",
            "judge_completion_tokens",
            "user_prompt_tokens",
            "user_completion_tokens",
        ):
            theirs = getattr(other, name)
            if theirs is not None:
                setattr(self, name, (getattr(self, name) or 0) + theirs)
        self.latencies.extend(other.latencies)
        if other.list_cost is not None:
            self.list_cost = (self.list_cost or 0.0) + other.list_cost

    def stats(self, name: str) -> UsageStats:
        ordered = sorted(self.latencies)
        measured = self.measured
        tokens = (self.prompt_tokens or 0) + (self.completion_tokens or 0)
        return UsageStats(
            name,
            self.rows,
            self.calls,
            self.cache_hits,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
            percentile(ordered, 50),
            percentile(ordered, 95),
            measured,
            self.judge_prompt_tokens,
            self.judge_completion_tokens,
            self.user_calls,
            self.user_prompt_tokens,
            self.user_completion_tokens,
            tokens / measured if measured else None,
            self.list_cost / measured if measured and self.list_cost is not None else None,
        )


@dataclass(frozen=True)
class UsageReport:
    """The run's figures: ``total``, then per slice and per variant (in first-seen order)."""

    total: UsageStats
    slices: tuple[UsageStats, ...] = ()
    variants: tuple[UsageStats, ...] = ()
    #: Whether any model of the run had ``[model] prices`` (else cost is unknown, not zero).
    priced: bool = False
    #: Each measured row's figures by (case, variant, repeat): what a baseline's are paired with.
    rows: Mapping[RowKey, RowUsage] = field(default_factory=dict)

    def against(self, baseline: UsageReport | None, variant: str | None = None) -> UsageReport:
        """Return the report with the baseline's per-case figures beside each slice's and the total's, over
        the rows both runs measured (``variant``: the baseline's rows of that variant stand for every one)."""
        if baseline is None:
            return self
        pairs = pair_rows(self, baseline, variant)
        theirs = {name: _theirs(name, [p for p in pairs if p[0][0] == name]) for name in {s.name for s in self.slices}}
        return replace(
            self,
            total=self.total.against(_theirs("total", pairs)),
            slices=tuple(s.against(theirs[s.name]) for s in self.slices),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return ``summary.json``'s ``usage``."""
        return {
            "total": self.total.to_dict(),
            "slices": [s.to_dict() for s in self.slices],
            "variants": [v.to_dict() for v in self.variants],
            "priced": self.priced,
        }


class UsageTally:
    """The counter of rows one at a time, as a run spools them, whose calls are priced when the report
    is made (a run's prices are known once its configs are)."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str | None], _Group] = {}
        #: Each measured row's slice and (prompt, completion) tokens, by (case, variant, repeat).
        self._rows: dict[RowKey, tuple[str, int, int]] = {}

    def _note(self, key: RowKey, slice_name: str, usage: Any) -> None:
        """Keep a row's token counts for pairing, when it measured any."""
        if type(usage) is dict:
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if _is_count(prompt) or _is_count(completion):
                self._rows[key] = (slice_name, _count(prompt), _count(completion))

    def _group(self, slice_name: str, variant: str | None) -> _Group:
        group = self._groups.get((slice_name, variant))
        if group is None:
            group = self._groups[(slice_name, variant)] = _Group()
        return group

    def add(self, row: CaseResult) -> None:
        """Count one row."""
        group = self._group(row.slice, row.variant)
        self._note((row.case_id, row.variant, row.repeat), row.slice, row.usage)
        judged = _judged([c.details for c in row.checks if c.details]) if row.checks else ()
        group.add(row.output is not None, len(row.replies) or 1, row.cached, row.latency_ms, row.usage, judged)
        if row.turns:
            group.add_user(row.turns)

    def add_line(self, row: Mapping[str, Any]) -> None:
        """Count one row as its ``results.jsonl`` line holds it (as this package wrote it)."""
        group = self._group(row["slice"], row.get("variant"))
        self._note((row["case_id"], row.get("variant"), row.get("repeat", 0)), row["slice"], row.get("usage"))
        answered, calls = row.get("output") is not None, len(row.get("replies") or ()) or 1
        judged: Sequence[Mapping[str, Any]] = ()
        for check in row.get("checks") or ():  # an llm-rubric's judge calls, in its details
            if check.get("details"):
                judged = _judged([c.get("details") for c in row["checks"]])
                break
        group.add(answered, calls, row.get("cached") is True, row.get("latency_ms"), row.get("usage"), judged)
        if "turns" in row:
            group.add_user(row["turns"])

    def add_read(self, row: Mapping[str, Any]) -> None:
        """Count one row read back from a file (a baseline's, maybe edited by hand): a field of the wrong
        type counts as absent."""
        replies, usage, latency, checks = row.get("replies"), row.get("usage"), row.get("latency_ms"), row.get("checks")
        self.add_line(
            {
                "case_id": row["case_id"],
                "repeat": row.get("repeat", 0),
                "slice": row["slice"],
                "variant": row.get("variant"),
                "output": row.get("output"),
                "replies": replies if type(replies) is list else None,
                "cached": row.get("cached"),
                "latency_ms": latency if type(latency) in (int, float) else None,
                "usage": usage if type(usage) is dict else None,
                "checks": [c for c in checks if type(c) is dict] if type(checks) is list else None,
            }
        )

    def report(self, prices: Mapping[str, Prices] | None = None) -> UsageReport:
        """Return the figures of every row counted so far, each call priced at its variant's ``prices``
        (``""``: the run without variants)."""
        prices = prices or {}
        total = _Group()
        slices: dict[str, _Group] = {}
        variants: dict[str, _Group] = {}
        for (slice_name, variant), counted in self._groups.items():
            group = counted.priced(prices.get(variant or "") or prices.get("")) if prices else counted
            total.merge(group)
            slices.setdefault(slice_name, _Group()).merge(group)
            if variant is not None:
                variants.setdefault(variant, _Group()).merge(group)
        return UsageReport(
            total.stats("total"),
            tuple(g.stats(name) for name, g in sorted(slices.items())),
            tuple(g.stats(name) for name, g in variants.items()),
            priced=bool(prices),
            rows=self._priced_rows(prices),
        )

    def _priced_rows(self, prices: Mapping[str, Prices]) -> dict[RowKey, RowUsage]:
        """Return each measured row's slice, tokens and USD at its variant's ``prices``."""
        found: dict[RowKey, RowUsage] = {}
        for key, (slice_name, prompt, completion) in self._rows.items():
            price = prices.get(key[1] or "") or prices.get("")
            found[key] = (slice_name, prompt + completion, None if price is None else price.cost(prompt, completion))
        return found


def _count(value: Any) -> int:
    """Return a token count as a number (0 for one not reported)."""
    return value if _is_count(value) else 0


def _judged(details: list[Any]) -> Sequence[Mapping[str, Any]]:
    """Return the token counts ``llm-rubric`` checks recorded of their judge calls (in their details)."""
    return [usage for detail in details if type(detail) is dict and type(usage := detail.get("judge_usage")) is dict]


#: A pair of measured rows, grouped by the current row's (slice, variant): (group, ours, theirs).
Pair = tuple[tuple[str, Union[str, None]], RowUsage, RowUsage]


def pair_rows(current: UsageReport, baseline: UsageReport, variant: str | None = None) -> list[Pair]:
    """Pair each measured row of ``current`` with the baseline's of the same case, variant and repeat
    (with ``variant``, the baseline's rows of that variant stand for every variant), in key order."""
    found: list[Pair] = []
    for key in sorted(current.rows, key=lambda k: (k[0], k[1] or "", k[2])):
        theirs = baseline.rows.get((key[0], variant or key[1], key[2]))
        if theirs is not None:
            ours = current.rows[key]
            found.append(((ours[0], key[1]), ours, theirs))
    return found


def _per_case(pairs: Sequence[Pair]) -> tuple[tuple[float, float], tuple[float, float] | None]:
    """Return (ours, theirs) tokens per paired row, and USD per row over the pairs priced on both sides."""
    tokens = (sum(p[1][1] for p in pairs) / len(pairs), sum(p[2][1] for p in pairs) / len(pairs))
    priced = [(ours[2], theirs[2]) for _, ours, theirs in pairs if ours[2] is not None and theirs[2] is not None]
    if not priced:
        return tokens, None
    return tokens, (sum(a for a, _ in priced) / len(priced), sum(b for _, b in priced) / len(priced))


def _theirs(name: str, pairs: Sequence[Pair]) -> UsageStats | None:
    """Return the baseline's per-case figures over ``pairs`` as a group's stats (None without a pair)."""
    if not pairs:
        return None
    (_, tokens), cost = _per_case(pairs)
    return UsageStats(
        name, 0, 0, 0, None, None, None, None, None, tokens_per_case=tokens, cost_per_case=cost and cost[1]
    )


def check_usage(
    current: UsageReport, baseline: UsageReport, settings: GateSettings, variant: str | None = None
) -> list[UsageIncreased]:
    """Return the increases of tokens or cost per case against the baseline beyond ``[gate]
    max_tokens_increase`` / ``max_cost_increase``, each over the rows both runs measured, paired by case,
    variant and repeat (``variant``: the baseline's rows of that variant stand for every one): per slice
    and variant (in name order), then in total."""
    limits: list[tuple[Literal["tokens", "cost"], float | None]] = [
        ("tokens", settings.max_tokens_increase),
        ("cost", settings.max_cost_increase),
    ]
    if all(limit is None for _, limit in limits):
        return []
    pairs = pair_rows(current, baseline, variant)
    groups: dict[tuple[str, str | None], list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair[0], []).append(pair)
    scopes = [(name, group) for name, group in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] or ""))]
    scopes += [(("total", None), pairs)] if pairs else []
    return [found for (name, of), group in scopes for found in _increases(name, of, _per_case(group), limits)]


def _increases(
    scope: str,
    variant: str | None,
    figures: tuple[tuple[float, float], tuple[float, float] | None],
    limits: list[tuple[Literal["tokens", "cost"], float | None]],
) -> list[UsageIncreased]:
    """Return one scope's increases of tokens and cost per case beyond their limits."""
    found = []
    for measure, limit in limits:
        pair = figures[0] if measure == "tokens" else figures[1]
        if limit is None or pair is None:
            continue
        now, before = pair
        if now > before * (1 + limit) + 1e-12:
            found.append(UsageIncreased(scope, measure, before, now, limit, variant=variant))
    return found


def prices_of_run(run: RunInfo | None) -> dict[str, Prices]:
    """Return the ``[model] prices`` each variant's model had (``""``: the run without variants)."""
    found: dict[str, Prices] = {}
    for variant, model in (run.models if run is not None else {}).items():
        raw = model.get("prices")
        if isinstance(raw, Mapping):
            from pytest_promptsuite.config.config_schema import validate  # pydantic: only for a run with prices

            try:
                found[variant] = validate(Prices, raw)
            except ValueError:
                continue  # a summary.json edited by hand: no cost rather than a crash
    return found


def usage_report(rows: Iterable[CaseResult], run: RunInfo | None = None) -> UsageReport:
    """Return every row's figures, priced at the run's recorded ``[model] prices``."""
    tally = UsageTally()
    for row in rows:
        tally.add(row)
    return tally.report(prices_of_run(run))
