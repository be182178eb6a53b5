"""The adaptive bound (``concurrency = "auto"``) fed events directly, on a clock the test moves."""

from __future__ import annotations

import asyncio

import pytest

from pytest_promptsuite.models.concurrency import DECREASE
from pytest_promptsuite.models.concurrency import AdaptiveConcurrency
from pytest_promptsuite.models.concurrency import add_counts
from pytest_promptsuite.models.concurrency import counts_line
from pytest_promptsuite.models.concurrency import with_share


class Clock:
    """A clock that moves only when the test says."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def bound(ceiling: int = 64, **kwargs: object) -> tuple[AdaptiveConcurrency, Clock]:
    clock = Clock()
    return AdaptiveConcurrency(ceiling, clock=clock, **kwargs), clock  # type: ignore[arg-type]


def full(limit: AdaptiveConcurrency) -> None:
    """Fill the bound (answers then count as evidence that it could be higher)."""
    limit.in_flight = limit.slots


def test_it_starts_at_eight_and_doubles_per_round_trip_until_the_first_overload() -> None:
    limit, clock = bound()
    assert limit.slots == 8
    for _ in range(8):
        full(limit)
        limit.answered(clock(), 200, {})
    assert limit.slots == 16  # slow start: one more per answer while full


def test_an_answer_while_the_bound_is_not_full_does_not_raise_it() -> None:
    limit, clock = bound()
    limit.in_flight = 3
    for _ in range(20):
        limit.answered(clock(), 200, {})
    assert limit.slots == 8


@pytest.mark.parametrize("status", [429, 503])
def test_an_overload_shrinks_the_bound_then_it_grows_by_one_per_round_trip(status: int) -> None:
    limit, clock = bound()
    full(limit)
    started = clock()
    clock.now += 0.1
    limit.answered(started, status, {})
    assert limit.limit == 8 * DECREASE == 6.0
    for _ in range(7):  # about a round trip's answers: one call more
        full(limit)
        limit.answered(clock(), 200, {})
    assert limit.slots == 7 and limit.limit < 7.1


def test_the_overloads_of_one_round_trip_shrink_the_bound_once() -> None:
    limit, clock = bound()
    started = clock()
    clock.now += 0.1
    for _ in range(5):  # five attempts sent together, all refused
        limit.answered(started, 429, {})
    assert (limit.limit, limit.decreases) == (6.0, 1)
    later = clock()
    limit.answered(later, 429, {})  # sent after the decrease: the bound is still too high
    assert (limit.limit, limit.decreases) == (4.5, 2)


def test_a_timeout_shrinks_the_bound_and_it_never_goes_below_one() -> None:
    limit, clock = bound()
    for _ in range(20):
        clock.now += 1
        limit.overloaded(clock())
    assert limit.slots == 1 and limit.limit == 1.0


def test_other_errors_leave_the_bound_alone() -> None:
    limit, clock = bound()
    full(limit)
    for status in (400, 500, 502):
        limit.answered(clock(), status, {})
    assert (limit.limit, limit.decreases) == (8.0, 0)


def test_it_never_passes_its_ceiling() -> None:
    limit, clock = bound(ceiling=10)
    for _ in range(100):
        full(limit)
        limit.answered(clock(), 200, {})
    assert limit.slots == 10


def test_retry_after_pauses_the_whole_model() -> None:
    limit, clock = bound()
    limit.answered(clock(), 429, {"retry-after-ms": "250"})
    assert limit.paused_until == pytest.approx(100.25)
    limit.answered(clock(), 429, {"retry-after": "2"})
    assert limit.paused_until == pytest.approx(102.0)
    limit.answered(clock(), 429, {"retry-after-ms": "10"})  # a shorter wait never shortens the pause
    assert limit.paused_until == pytest.approx(102.0)


def test_a_pause_is_at_most_max_pause_s() -> None:
    limit, clock = bound(max_pause_s=5.0)
    limit.answered(clock(), 429, {"retry-after": "3600"})
    assert limit.paused_until == pytest.approx(105.0)


def test_a_spent_limit_pauses_until_one_more_request_and_spaces_the_attempts() -> None:
    limit, clock = bound()
    spent = {
        "x-ratelimit-limit-requests": "20",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "100ms",  # all 20 back in 100 ms: one more in 5 ms
    }
    limit.answered(clock(), 200, spent)
    assert limit.paused_until == pytest.approx(100.005) and limit.spacing == pytest.approx(0.005)
    limit.answered(clock(), 200, {**spent, "x-ratelimit-remaining-requests": "7"})
    assert limit.spacing == 0.0


def test_pytest_xdist_workers_each_take_their_share() -> None:
    limit, clock = bound(ceiling=32, workers=2)
    assert limit.slots == 4  # the two together start at eight
    limit.answered(
        clock(),
        200,
        {"x-ratelimit-limit-requests": "20", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"},
    )
    assert limit.spacing == pytest.approx(0.1)  # one more request in 50 ms, for two workers


def test_calls_wait_for_a_slot_in_order_and_a_cancelled_one_gives_its_slot_back() -> None:
    async def scenario() -> list[str]:
        limit = AdaptiveConcurrency(4, start=1)
        order: list[str] = []

        async def call(name: str, hold: asyncio.Event) -> None:
            async with limit:
                order.append(name)
                await hold.wait()

        first, second, third = asyncio.Event(), asyncio.Event(), asyncio.Event()
        a = asyncio.ensure_future(call("a", first))
        await asyncio.sleep(0)
        b = asyncio.ensure_future(call("b", second))
        c = asyncio.ensure_future(call("c", third))
        await asyncio.sleep(0)
        b.cancel()  # waiting for the slot: gone without taking it
        first.set()
        await asyncio.sleep(0.01)
        assert limit.in_flight == 1  # c holds the slot a gave back
        third.set()
        await asyncio.gather(a, c)
        assert limit.in_flight == 0 and limit.reached == 1
        return order

    assert asyncio.run(scenario()) == ["a", "c"]


def test_an_attempt_waits_out_the_pause() -> None:
    async def scenario() -> float:
        limit = AdaptiveConcurrency(4)
        loop = asyncio.get_running_loop()
        limit.pause(limit.clock() + 0.05)
        start = loop.time()
        async with limit:
            return loop.time() - start

    assert asyncio.run(scenario()) >= 0.045


def test_counts_add_up_over_the_workers_and_say_the_429_share() -> None:
    total: dict[str, dict[str, object]] = {}
    worker = {"attempts": 110, "refused": 10, "concurrency": "auto", "max_concurrency": 32, "reached": 20}
    add_counts(total, {"openai:m": worker})
    add_counts(total, {"openai:m": worker})
    assert total["openai:m"] == {
        "attempts": 220,
        "refused": 20,
        "concurrency": "auto",
        "max_concurrency": 64,
        "reached": 40,
    }
    assert with_share(total["openai:m"])["refused_share"] == 0.0909
    assert counts_line("openai:m", total["openai:m"]) == (
        "calls of openai:m: 220 attempts, 20 answered 429 (9.1%), concurrency auto, reached 40 of max 64"
    )
    assert counts_line("openai:m", {"attempts": 0, "refused": 0, "concurrency": 8}) == (
        "calls of openai:m: 0 attempts, 0 answered 429, concurrency 8"
    )
    assert counts_line("openai:m", {"attempts": 1, "refused": 0, "concurrency": 8}) == (
        "calls of openai:m: 1 attempt, 0 answered 429 (0.0%), concurrency 8"
    )


def test_the_counts_line_says_once_how_many_answers_reported_usage_that_is_no_count() -> None:
    counts = {"attempts": 3, "refused": 0, "concurrency": 8, "unreadable_usage": 1}
    assert counts_line("openai:m", counts) == (
        "calls of openai:m: 3 attempts, 0 answered 429 (0.0%), concurrency 8; 1 answer reported token usage that is "
        "no count (a bool, a negative, a fraction or past 1,000,000,000): taken as not reported, so not priced nor "
        "counted against budget_usd"
    )
