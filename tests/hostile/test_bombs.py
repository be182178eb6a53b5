"""Decompression bombs (issue 25, finding 5): an answer or a batch file that decodes to more than its limit
is stopped at the limit, in memory about the limit's size, with an error naming it; more than two
``Content-Encoding`` layers, or an encoding nobody asked for, is refused."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import TypeVar

import pytest

from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.models.batch import job
from pytest_promptsuite.models.batch.job import BatchJob
from pytest_promptsuite.models.batch.job import JobResult
from pytest_promptsuite.models.batch.requests import BatchLine
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.safety.limits import RESPONSE_BYTES
from pytest_promptsuite.safety.limits import Limit
from tests.bombs import BOMB_BYTES
from tests.bombs import bomb
from tests.loopback import LoopbackServer
from tests.suite import Suite


T = TypeVar("T")
#: The batch file limit these tests set: a quarter of what the bomb decodes to.
SMALL_FILES = Limit("batch file size", BOMB_BYTES // 4, "bytes")


def _model(server: LoopbackServer) -> OpenAIModel:
    return OpenAIModel("loop-model", base_url=server.base_url, retry=RetryPolicy(max_retries=2, base_s=0.01))


def _peak(work: Callable[[], T]) -> tuple[T | EndpointError, int]:
    """Return what ``work`` returned (or the EndpointError it raised) and the most memory it held at once."""
    tracemalloc.start()
    try:
        try:
            result: T | EndpointError = work()
        except EndpointError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_gzip_bomb_stops_at_the_response_limit_in_memory_of_about_its_size(
    loopback: LoopbackServer, runner: ModelRunner
) -> None:
    bomb()  # built before the count starts: the server's work, not the client's
    model = _model(loopback)
    runner.call(model, ModelRequest("connect first"))
    error, peak = _peak(lambda: runner.call(model, ModelRequest("[[bomb]]")))

    assert isinstance(error, EndpointError)
    assert str(error) == (
        f"the response from {loopback.base_url}/chat/completions is larger than the response size limit "
        "of 33,554,432 bytes"
    )
    assert BOMB_BYTES >= 2 * RESPONSE_BYTES.value  # the bomb is twice the limit ...
    assert peak < 1.25 * RESPONSE_BYTES.value, peak  # ... and never built whole
    assert model.retries == 0  # a bomb is not asked for again


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("gzip3", "is encoded 3 times (gzip, gzip, gzip): at most 2 encodings are read"),
        ("brotli", "is encoded 'br', which was not asked for (Accept-Encoding: gzip, deflate)"),
    ],
)
def test_more_than_two_encodings_or_one_not_asked_for_is_refused(
    loopback: LoopbackServer, runner: ModelRunner, step: str, message: str
) -> None:
    model = _model(loopback)
    with pytest.raises(EndpointError) as info:
        runner.call(model, ModelRequest(f"[[{step}]]"))

    assert str(info.value) == f"the response from {loopback.base_url}/chat/completions {message}"
    assert model.retries == 0


@pytest.mark.parametrize("step", ["gzipped", "gzipped2", "deflated", "rawdeflated"])
def test_one_or_two_layers_of_gzip_or_deflate_are_read(
    loopback: LoopbackServer, runner: ModelRunner, step: str
) -> None:
    answer = runner.call(_model(loopback), ModelRequest(f"packed [[{step}]]"))

    assert (answer.text, answer.finish_reason) == (f"packed [[{step}]]", "stop")


def test_a_batch_file_bomb_stops_at_the_batch_file_limit_in_bounded_memory(
    loopback: LoopbackServer, runner: ModelRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job, "BATCH_FILE_BYTES", SMALL_FILES, raising=False)  # (none before the fix)
    loopback.batch.reset(bomb=BOMB_BYTES)
    model = _model(loopback)
    body = {"model": "loop-model", "messages": [{"role": "user", "content": "hi"}]}
    batch = BatchJob(model, poll_s=0.01, max_poll_s=0.05)
    try:
        result, peak = _peak(lambda: runner.run(batch.run([BatchLine("c#1", "/v1/chat/completions", body)], "/v1")))
    finally:
        runner.run(model.aclose())

    assert isinstance(result, JobResult) and not result.outputs.lines
    assert result.reason.endswith(
        f"the batch batch_1 output file could not be downloaded: the response from GET {loopback.base_url}"
        f"/files/file-2/content is larger than the batch file size limit of {SMALL_FILES.value:,} bytes"
    )
    assert peak < 1.25 * SMALL_FILES.value, peak


def test_a_batch_whose_output_file_is_a_bomb_ends_each_case_as_an_error_naming_the_limit(
    suite: Suite, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job, "BATCH_FILE_BYTES", SMALL_FILES, raising=False)  # (none before the fix)
    loopback.batch.reset(bomb=BOMB_BYTES)
    suite.prompts(["one", "two"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "report")

    result.assert_outcomes(failed=2)
    download = f"GET {loopback.base_url}/files/file-2/content"
    for row in suite.rows():
        assert row["outcome"] == "error"
        assert row["error"].endswith(f"the response from {download} is larger than {SMALL_FILES}"), row["error"]
    assert "Traceback" not in result.stdout.str()
