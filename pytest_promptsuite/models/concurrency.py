"""Adaptive concurrency (``concurrency = "auto"``): a bound on one model's calls in flight that AIMD moves with
the endpoint's answers, and the pause for the whole model that its rate-limit headers ask for."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.models.retry import ratelimit_wait_s
from pytest_promptsuite.models.retry import retry_after_s
from pytest_promptsuite.safety.limits import USAGE_TOKENS


if TYPE_CHECKING:
    import asyncio
    from types import TracebackType


#: Statuses that say the endpoint is overloaded or rate-limited: the bound shrinks.
OVERLOADED = frozenset({429, 503})
#: The share of the bound kept on an overload (multiplicative decrease).
DECREASE = 0.75
#: The bound an adaptive model starts at, before it has seen an answer.
START = 8


class AdaptiveConcurrency:
    """An AIMD bound on one model's calls in flight, from 1 to ``ceiling``, and the model's pause; each
    attempt (a retry too) runs in ``async with``, on the runner's loop only. The rules: docs/guides/models.md."""

    def __init__(
        self,
        ceiling: int,
        *,
        start: int = START,
        workers: int = 1,
        max_pause_s: float = 60.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if ceiling < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.ceiling = ceiling
        #: pytest-xdist workers calling the same endpoint, each with a bound of its own: each takes its share.
        self.workers = max(1, workers)
        self.limit = float(min(max(1, start // self.workers), ceiling))  # the workers together start at ``start``
        #: Below it the bound grows by a call per answer (slow start); the last decrease sets it.
        self.threshold = float(ceiling)
        self.max_pause_s = max_pause_s
        self.clock = clock
        self.in_flight = 0
        #: The most calls that were in flight at once.
        self.reached = 0
        #: How often the bound was decreased.
        self.decreases = 0
        #: The clock time before which no attempt of the model starts.
        self.paused_until = 0.0
        #: Seconds between the starts of attempts while the endpoint's ``x-ratelimit-remaining-*`` is 0.
        self.spacing = 0.0
        self._decreased_at = float("-inf")
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def slots(self) -> int:
        """Return how many calls may be in flight now."""
        return max(1, int(self.limit))

    def answered(self, started: float, status: int, headers: Mapping[str, str], now: float | None = None) -> None:
        """Take an attempt's answer (``started`` on :attr:`clock`): grow, shrink or hold the bound, and pause
        the model as long as its headers ask."""
        now = self.clock() if now is None else now
        if status in OVERLOADED:
            self.overloaded(started, now)
            wait = retry_after_s(headers)
        else:
            if status < 400:
                self._increase()
            wait = None
        if wait:
            self.pause(now + wait)
        header_wait = ratelimit_wait_s(headers)
        # while a limit is spent, attempts start no closer together than the endpoint lets one more in
        self.spacing = 0.0 if header_wait is None else min(header_wait * self.workers, self.max_pause_s)
        if header_wait is not None:  # the headers tell the limit as the attempt was let in: from its start
            self.pause(started + header_wait * self.workers)
        self._wake()

    def overloaded(self, started: float, now: float | None = None) -> None:
        """Shrink the bound (a 429, a 503, a timeout), unless an attempt that started later did already."""
        if started < self._decreased_at:
            return
        self.limit = max(1.0, self.limit * DECREASE)
        self.threshold = self.limit
        self.decreases += 1
        self._decreased_at = self.clock() if now is None else now

    def pause(self, until: float) -> None:
        """Start no attempt of the model before ``until`` (at most :attr:`max_pause_s` from now)."""
        until = min(until, self.clock() + self.max_pause_s)
        self.paused_until = max(self.paused_until, until)

    def _increase(self) -> None:
        if self.in_flight < self.slots and not self._waiters:
            return  # the bound was not what held the calls back: no evidence it could be higher
        self.limit = min(float(self.ceiling), self.limit + (1.0 if self.limit < self.threshold else 1.0 / self.limit))

    async def __aenter__(self) -> AdaptiveConcurrency:
        """Wait for a slot, then for the end of the model's pause."""
        import asyncio  # imported when a call is made: a run without endpoint calls never loads it

        if self._waiters or self.in_flight >= self.slots:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter  # _wake hands the slot over: in_flight counts it already
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._release()  # handed a slot, then cancelled before running
                raise
        else:
            self._take()
        try:
            while (wait := self.paused_until - self.clock()) > 0:
                await asyncio.sleep(wait)
        except asyncio.CancelledError:
            self._release()
            raise
        if self.spacing:
            self.paused_until = self.clock() + self.spacing
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._release()

    def _take(self) -> None:
        self.in_flight += 1
        self.reached = max(self.reached, self.in_flight)

    def _release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        """Hand the free slots to the calls waiting longest."""
        while self._waiters and self.in_flight < self.slots:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._take()
                waiter.set_result(None)


def add_counts(total: dict[str, dict[str, Any]], more: Mapping[str, Mapping[str, Any]]) -> None:
    """Add ``more`` (one pytest-xdist worker's :meth:`.ModelRunner.call_counts`) to ``total``: the workers run at
    once, so every number adds up (the bounds and ``reached`` too)."""
    for spec, counts in more.items():
        entry = total.setdefault(spec, {})
        for name, value in counts.items():
            if isinstance(value, int) and isinstance(entry.get(name, 0), int):
                entry[name] = entry.get(name, 0) + value
            else:
                entry[name] = value


def with_share(counts: Mapping[str, Any]) -> dict[str, Any]:
    """Return a model's call counts with ``refused_share``: the share of its attempts answered 429."""
    attempts, refused = counts.get("attempts", 0), counts.get("refused", 0)
    return {**counts, "refused_share": round(refused / attempts, 4) if attempts else 0.0}


def counts_line(spec: str, counts: Mapping[str, Any]) -> str:
    """Write a model's attempts, its 429 share and its concurrency in one line of the terminal's summary."""
    attempts, refused = counts.get("attempts", 0), counts.get("refused", 0)
    share = f" ({refused / attempts:.1%})" if attempts else ""
    noun = "attempt" if attempts == 1 else "attempts"
    line = f"calls of {spec}: {attempts:,} {noun}, {refused:,} answered 429{share}, concurrency "
    if counts.get("concurrency") == "auto":
        line += f"auto, reached {counts.get('reached', 0)} of max {counts.get('max_concurrency')}"
    else:
        line += str(counts.get("concurrency"))
    return line + _unreadable_usage(counts.get("unreadable_usage", 0))


def _unreadable_usage(answers: int) -> str:
    """Say how many answers reported a ``usage`` that is no token count, once for the run ("" when none did)."""
    if not answers:
        return ""
    noun = "answer" if answers == 1 else "answers"
    return (
        f"; {answers:,} {noun} reported token usage that is no count (a bool, a negative, a fraction or past "
        f"{USAGE_TOKENS.value:,}): taken as not reported, so not priced nor counted against budget_usd"
    )
