"""A 429 that asks for no wait (zero, negative, a past date, NaN) or for waits too short to add up: each
retry still waits the backoff it replaces, and a call ends after a bounded number of attempts."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.models.concurrency import AdaptiveConcurrency
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.safety.limits import RATE_LIMITED_RETRIES
from tests.loopback import LoopbackServer


#: Headers of a 429 that ask for no wait at all.
NO_WAIT: dict[str, dict[str, Any]] = {
    "retry-after 0": {"retry_after": "0"},
    "retry-after negative": {"retry_after": "-5"},
    "retry-after past date": {"retry_after": "Wed, 21 Oct 2015 07:28:10 GMT"},
    "retry-after NaN": {"retry_after": "NaN"},
    "retry-after-ms 0": {"retry_after_ms": 0},
    "retry-after-ms negative": {"retry_after_ms": -1000},
    "retry-after-ms NaN": {"retry_after_ms": "NaN"},
}


def _model(loopback: LoopbackServer, policy: RetryPolicy, *, auto: bool) -> OpenAIModel:
    model = OpenAIModel("loop-model", base_url=loopback.base_url, retry=policy, seed=0)
    if auto:
        model.pace(AdaptiveConcurrency(8))
    return model


def _refused(runner: ModelRunner, model: OpenAIModel) -> EndpointError:
    with pytest.raises(EndpointError) as info:
        runner.call(model, ModelRequest("always refused", case_id="c-1"))
    return info.value


def _gaps(loopback: LoopbackServer) -> list[float]:
    """Return the time between each answer and the next attempt's arrival, as the server saw them."""
    log = loopback.stats.log
    return [after["time"] - before["end"] for before, after in zip(log, log[1:], strict=False)]


@pytest.mark.parametrize("headers", NO_WAIT.values(), ids=NO_WAIT.keys())
def test_a_429_asking_for_no_wait_waits_the_backoff_under_a_fixed_bound(
    loopback: LoopbackServer, runner: ModelRunner, headers: dict[str, Any]
) -> None:
    loopback.reset(fail_rate=1.0, fail_statuses=(429,), **headers)
    policy = RetryPolicy(max_retries=2, base_s=0.2, cap_s=0.4)
    error = _refused(runner, _model(loopback, policy, auto=False))

    assert loopback.stats.requests == 3
    assert error.status == 429 and "gave up after 3 attempts" in str(error)
    rng = random.Random(0)  # the model's seed: the backoffs it drew, in order
    expected = [policy.backoff_s(retry, rng) for retry in range(2)]
    assert all(gap >= wait - 0.001 for gap, wait in zip(_gaps(loopback), expected, strict=True))


@pytest.mark.parametrize("headers", [*NO_WAIT.values(), {"retry_after_ms": 1}], ids=[*NO_WAIT, "retry-after-ms 1"])
def test_a_429_under_auto_concurrency_is_retried_a_bounded_number_of_times(
    loopback: LoopbackServer, runner: ModelRunner, headers: dict[str, Any]
) -> None:
    """Under ``auto`` 429s are retried outside ``max_retries`` up to the 429 retry limit (a 1 ms wait would take
    60,000 attempts to use up the 60 s), then count as other retries: 1 + 50 + max_retries attempts."""
    loopback.reset(fail_rate=1.0, fail_statuses=(429,), **headers)
    policy = RetryPolicy(max_retries=2, base_s=0.01, cap_s=0.02)
    error = _refused(runner, _model(loopback, policy, auto=True))

    limit = RATE_LIMITED_RETRIES.value
    assert loopback.stats.requests == 1 + limit + 2
    assert str(error).endswith(
        f"(gave up after {limit + 3} attempts, {limit} of them answered 429 under concurrency auto "
        f"(retried for up to 60 s or {limit} retries))"
    )
    if "retry_after_ms" in headers and headers["retry_after_ms"] == 1:
        return
    rng = random.Random(0)
    expected = [policy.backoff_s(min(retry, 8), rng) for retry in range(limit)]
    expected += [policy.backoff_s(retry, rng) for retry in range(2)]
    assert all(gap >= wait - 0.001 for gap, wait in zip(_gaps(loopback), expected, strict=True))
