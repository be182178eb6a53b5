"""The runner with a real endpoint: the concurrency bound, prefetched calls, fatal errors, cancelling."""

from __future__ import annotations

import time

import pytest

from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.runner import ModelRunner
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
