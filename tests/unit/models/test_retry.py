"""Stage tests for ``models.retry``: full-jitter backoff, the waits servers ask for, which statuses are retried."""

from __future__ import annotations

import random

import pytest

from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.retry import duration_s
from pytest_promptsuite.models.retry import ratelimit_wait_s
from pytest_promptsuite.models.retry import retry_after_s


def test_full_jitter_stays_within_the_exponential_envelope() -> None:
    policy = RetryPolicy(base_s=0.5, cap_s=4.0)
    rng = random.Random(1)
    for retry, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        waits = [policy.backoff_s(retry, rng) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling * 0.8  # jitter spreads over the whole range
    assert policy.wait_s(0, rng, 2.5) == 2.5  # the server's wish wins


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], expected: float | None) -> None:
    now = 1445412480.0  # 07:28:00 of that day
    assert retry_after_s(headers, now=now) == expected


@pytest.mark.parametrize(
    ("status", "retry"),
    [
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (503, True),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (501, False),  # llama-server without --embeddings answers /embeddings with it, every time
        (505, False),
    ],
)
def test_which_statuses_are_retried(status: int, retry: bool) -> None:
    assert RetryPolicy.retryable_status(status) is retry


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("20ms", 0.02), ("1s", 1.0), ("1.5s", 1.5), ("6m0s", 360.0), ("1h2m3s", 3723.0), ("2", 2.0), ("0.25", 0.25)],
)
def test_openai_reset_durations(raw: str, seconds: float) -> None:
    assert duration_s(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["", "soon", "5 s", "1x", "-", "ms"])
def test_a_reset_that_is_no_duration(raw: str) -> None:
    assert duration_s(raw) is None


def test_the_rate_limit_headers_wait() -> None:
    assert ratelimit_wait_s({}) is None
    assert ratelimit_wait_s({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1s"}) is None
    # no limit given: the whole reset time
    assert ratelimit_wait_s({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"}) == 2.0
    tokens = {
        "x-ratelimit-remaining-requests": "9",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-limit-tokens": "10000",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    assert ratelimit_wait_s(tokens) == pytest.approx(0.036)
    assert ratelimit_wait_s({"x-ratelimit-remaining-requests": "many", "x-ratelimit-reset-requests": "1s"}) is None
    assert ratelimit_wait_s({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "later"}) is None


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "0"},
        {"retry-after": "-3"},
        {"retry-after": "NaN"},
        {"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"},  # a minute past
        {"retry-after-ms": "0"},
        {"retry-after-ms": "-250"},
        {"retry-after-ms": "nan"},
        {"retry-after-ms": "soon"},
    ],
)
def test_a_wait_that_is_no_wait_is_no_wish_of_the_server(headers: dict[str, str]) -> None:
    """Zero, negative, past or NaN: None, so the backoff it would replace applies (never a retry with no pause)."""
    assert retry_after_s(headers, now=1445412480.0) is None


def test_an_unreadable_retry_after_ms_falls_back_to_retry_after() -> None:
    assert retry_after_s({"retry-after-ms": "0", "retry-after": "2"}) == 2.0
