"""Stage tests for ``run.prefetch``: the calls of the items pytest runs next, started a window ahead."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pytest_promptsuite.run.prefetch import Prefetcher


def test_the_prefetcher_keeps_a_window_ahead() -> None:
    started: list[int] = []
    prefetcher = Prefetcher(started.append, window=3)
    prefetcher.plan(list(range(10)))

    prefetcher.advance(0, 1)
    assert started == [0, 1, 2]
    prefetcher.advance(1, 2)
    prefetcher.advance(2, 3)
    assert started == [0, 1, 2, 3, 4]
    for item in range(3, 10):
        prefetcher.advance(item, item + 1 if item < 9 else None)
    assert started == list(range(10))  # each item once


def test_while_calls_are_ahead_the_prefetcher_runs_further_ahead_in_chunks() -> None:
    started: list[int] = []
    batches: list[int] = []
    unfinished = [0]

    @contextlib.contextmanager
    def batch() -> Iterator[None]:
        before = len(started)
        yield
        batches.append(len(started) - before)

    prefetcher = Prefetcher(started.append, window=8, ahead=3, unfinished=lambda: unfinished[0], batch=batch)
    prefetcher.plan(list(range(100)))

    unfinished[0] = 8  # the first window's calls in flight: no further
    prefetcher.start()
    assert started == list(range(8)) and batches == [2, 2, 2, 2]  # quarter-window chunks
    prefetcher.advance(1, 2)
    assert len(started) == 8
    unfinished[0] = 3  # fewer than half a window unfinished: the cases are behind the calls
    prefetcher.advance(2, 3)
    assert started == list(range(2 + 3 * 8))  # up to `ahead` windows past the running item
    assert set(batches) == {2}


def test_without_a_count_of_unfinished_calls_the_window_is_the_limit() -> None:
    started: list[int] = []
    prefetcher = Prefetcher(started.append, window=4, ahead=10)
    prefetcher.plan(list(range(50)))
    prefetcher.advance(0, 1)

    assert started == [0, 1, 2, 3]


def test_a_worker_runs_further_ahead_in_its_queue_while_calls_are_ahead() -> None:
    started: list[str] = []
    queue = [f"q{i}" for i in range(20)]
    unfinished = [4]
    prefetcher = Prefetcher(started.append, window=4, ahead=3, unfinished=lambda: unfinished[0])
    prefetcher.follow(lambda n: queue[:n])

    prefetcher.advance("a", "b")
    assert started == ["a", "b", "q0", "q1", "q2", "q3"]
    unfinished[0] = 1
    prefetcher.advance("b", queue[0])  # xdist's next item is the head of its queue
    assert started == ["a", "b", *queue[:12]]


def test_the_prefetcher_follows_a_worker_queue() -> None:
    started: list[str] = []
    queue = ["c", "d", "e", "f"]
    prefetcher = Prefetcher(started.append, window=2)
    prefetcher.follow(lambda n: queue[:n])

    prefetcher.advance("a", "b")
    assert started == ["a", "b", "c", "d"]
    del queue[:2]
    prefetcher.advance("b", "c")
    assert started == ["a", "b", "c", "d", "e", "f"]


def test_items_left_out_start_nothing_and_the_window_counts_the_others() -> None:
    """A settled slice's items (here the odd ones) are left out: the window ahead is four calls still."""
    started: list[int] = []
    prefetcher = Prefetcher(started.append, window=4, ahead=1)
    prefetcher.plan(list(range(20)))
    prefetcher.advance(0, 1)
    assert started == [0, 1, 2, 3]
    prefetcher.leave_out(lambda item: item % 2 == 1)
    prefetcher.advance(1, 2)  # left out: it starts nothing
    assert started == [0, 1, 2, 3]
    prefetcher.advance(2, 3)
    assert started == [0, 1, 2, 3, 4, 6, 8]  # the window: 2, 4, 6, 8
    for item in range(3, 20):
        prefetcher.advance(item, None)
    assert started == [0, 1, 2, 3, *range(4, 20, 2)]


def test_the_calls_a_left_out_item_made_shrink_the_window_by_as_many() -> None:
    """Two calls started for a settled slice's items reached the endpoint: the window ahead of the others is two
    calls smaller, so that calls for cases that will not run stay within one window however fast calls go."""
    started: list[int] = []
    prefetcher = Prefetcher(started.append, window=4, ahead=1)
    prefetcher.plan(list(range(20)))
    prefetcher.advance(0, 1)
    prefetcher.leave_out(lambda item: item % 2 == 1, spent=2)
    prefetcher.advance(2, 3)

    assert prefetcher.window == 2
    assert started == [0, 1, 2, 3, 4]  # the window: 2, 4
    for item in range(4, 20, 2):
        prefetcher.advance(item, None)
    assert started == [0, 1, 2, 3, *range(4, 20, 2)]
