"""The runner with a real endpoint: the concurrency bound, prefetching, fatal errors, cancelling."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.run.prefetch import Prefetcher
from tests.loopback import LoopbackServer


def _model(server: LoopbackServer) -> OpenAIModel:
    return OpenAIModel("m", base_url=server.base_url, retry=RetryPolicy(max_retries=0))


def _requests(n: int) -> list[ModelRequest]:
    return [ModelRequest(f"case {i}", case_id=f"c-{i}") for i in range(n)]


def test_prefetched_calls_fill_the_bound_and_never_exceed_it(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.latency_s = 0.1
    model = _model(loopback)
    runner.set_concurrency(model, 6)
    requests = _requests(30)
    for request in requests:
        runner.prefetch(model, request, key=request.case_id)
    answers = [runner.call(model, request, key=request.case_id).text for request in requests]

    assert answers == [f"case {i}" for i in range(30)]
    assert loopback.stats.max_in_flight == 6
    assert loopback.stats.requests == 30  # each call once: call() took the prefetched one
    assert runner.prefetch_hits == 30


def test_a_call_whose_request_changed_is_made_again(loopback: LoopbackServer, runner: ModelRunner) -> None:
    model = _model(loopback)
    runner.prefetch(model, ModelRequest("same", params={"temperature": 0}, case_id="c"), key="c")
    answer = runner.call(model, ModelRequest("same", params={"temperature": 1}, case_id="c"), key="c")

    assert answer.text == "same"
    assert runner.prefetch_hits == 0
    assert [e["body"].get("temperature") for e in loopback.stats.log][-1] == 1


def test_the_fake_model_stays_inline(runner: ModelRunner) -> None:
    runner.prefetch(FakeModel(), ModelRequest("hi"), key="hi")

    assert runner.call(FakeModel(), ModelRequest("hi"), key="hi").text == "hi"
    assert runner._loop is None  # no event loop thread was ever started


def test_a_fatal_error_stops_further_calls(runner: ModelRunner) -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", retry=RetryPolicy(max_retries=0))
    with pytest.raises(EndpointError) as first:
        runner.call(model, ModelRequest("a"))
    with pytest.raises(EndpointError) as second:
        runner.call(model, ModelRequest("b"))

    assert first.value.fatal and runner.fatal is first.value
    assert str(second.value) == f"skipped call: endpoint unusable: {first.value}"
    assert model.attempts == 1  # the second call was never sent


def test_cancel_pending_ends_calls_in_flight(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.hang_s = 30
    model = _model(loopback)
    for request in [ModelRequest(f"slow {i} [[hang]]", case_id=f"s-{i}") for i in range(4)]:
        runner.prefetch(model, request, key=request.case_id)
    while loopback.stats.in_flight < 4:
        time.sleep(0.01)

    assert runner.cancel_pending() == 4
    assert runner.call(model, ModelRequest("still works")).text == "still works"


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


def test_the_runner_counts_unfinished_calls(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.hang_s = 30
    model = _model(loopback)
    runner.prefetch(model, ModelRequest("slow [[hang]]", case_id="s"), key="s")
    with runner.batch_submits():
        runner.prefetch(model, ModelRequest("slow too [[hang]]", case_id="n"), key="n")
        assert runner.unfinished() == 2  # counted when submitted, not when sent
    assert runner.call(model, ModelRequest("quick")).text == "quick"
    assert runner.unfinished() == 2

    runner.cancel_pending()
    deadline = time.monotonic() + 10
    while runner.unfinished() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.unfinished() == 0  # a cancelled call is finished too


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


def test_a_batch_starts_its_calls_together_at_its_end(loopback: LoopbackServer, runner: ModelRunner) -> None:
    model = _model(loopback)
    with runner.batch_submits():
        for request in _requests(3):
            runner.prefetch(model, request, key=request.case_id)
        assert runner.call(model, ModelRequest("now", case_id="x")).text == "now"  # not held back
        assert loopback.stats.requests == 1
    answers = [runner.call(model, request, key=request.case_id).text for request in _requests(3)]

    assert answers == ["case 0", "case 1", "case 2"]
    assert loopback.stats.requests == 4 and runner.prefetch_hits == 3
