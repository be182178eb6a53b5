"""When and how long to wait before retrying an endpoint call: bounded full-jitter backoff, or the wait a
``Retry-After`` or ``retry-after-ms`` header asks for (and OpenAI's ``x-ratelimit-*`` headers)."""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

from pytest_promptsuite.safety.limits import RATE_LIMITED_RETRIES


#: HTTP statuses worth another attempt (besides every 5xx but those that say the server will never do it).
RETRYABLE_STATUSES = frozenset({408, 409, 429})
#: 5xx statuses that no later attempt changes: 501 Not Implemented, 505 HTTP Version Not Supported.
_PERMANENT_5XX = frozenset({501, 505})
#: One part of OpenAI's reset durations (``6m0s``, ``1.5s``, ``20ms``).
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def retry_after_s(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Return the wait a server asked for: ``retry-after-ms``, else ``Retry-After`` (seconds or a date).

    A wait that is no wait (zero, negative, a date past, NaN, unreadable) is None: the backoff it would replace
    applies, so that a hostile ``Retry-After: 0`` never makes a retry loop with no pause.
    """
    return _positive(_header_ms(headers.get("retry-after-ms"))) or _positive(
        _header_s(headers.get("retry-after"), time.time() if now is None else now)
    )


def _positive(wait: float | None) -> float | None:
    """Return ``wait`` when it is a real wait (more than 0 s, finite or not), else None."""
    return wait if wait is not None and wait > 0 else None


def _header_ms(raw: str | None) -> float | None:
    """Return a ``retry-after-ms`` header's seconds, None when absent or unreadable."""
    try:
        return float(raw) / 1000 if raw is not None else None
    except ValueError:
        return None


def _header_s(raw: str | None, now: float) -> float | None:
    """Return a ``Retry-After`` header's seconds (a number or an HTTP date), None when absent or unreadable."""
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(raw).timestamp() - now
    except (TypeError, ValueError):
        return None


def duration_s(raw: str) -> float | None:
    """Return the seconds of a duration as OpenAI's ``x-ratelimit-reset-*`` headers give it (``1m30s``,
    ``20ms``, or bare seconds); None when it is none."""
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    parts = _DURATION_PART.findall(raw)
    if not parts or "".join(number + unit for number, unit in parts) != raw:
        return None
    return sum(float(number) * _UNIT_S[unit] for number, unit in parts)


def ratelimit_wait_s(headers: Mapping[str, str]) -> float | None:
    """Return the wait OpenAI's rate-limit headers ask for before the next call, or None.

    When ``x-ratelimit-remaining-requests`` (or ``-tokens``) is 0, the wait until one more is allowed: the
    ``x-ratelimit-reset-*`` time (until the whole limit is back) over ``x-ratelimit-limit-*`` when given, else the
    whole reset time.
    """
    waits = [wait for kind in ("requests", "tokens") if (wait := _limit_wait(headers, kind)) is not None]
    return max(waits) if waits else None


def _limit_wait(headers: Mapping[str, str], kind: str) -> float | None:
    """Return the wait one limit (``requests`` or ``tokens``) asks for when none is left, else None."""
    remaining = headers.get(f"x-ratelimit-remaining-{kind}")
    reset = headers.get(f"x-ratelimit-reset-{kind}")
    if remaining is None or reset is None:
        return None
    try:
        if float(remaining) > 0:
            return None
    except ValueError:
        return None
    wait = duration_s(reset)
    if wait is None:
        return None
    try:
        limit = float(headers.get(f"x-ratelimit-limit-{kind}", ""))
    except ValueError:
        limit = 0.0
    return wait / limit if limit >= 1 else wait


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt, waiting ``uniform(0, min(cap, base*2**n))``."""

    max_retries: int = 3
    base_s: float = 0.5
    cap_s: float = 8.0
    #: A ``Retry-After`` longer than this ends the call with an error instead of waiting.
    max_retry_after_s: float = 60.0

    @staticmethod
    def retryable_status(status: int) -> bool:
        """Tell whether an HTTP status is worth another attempt (408, 409, 429 and 5xx but 501 and 505)."""
        return status in RETRYABLE_STATUSES or (status >= 500 and status not in _PERMANENT_5XX)

    def backoff_s(self, retry: int, rng: random.Random) -> float:
        """Return a full-jitter wait (AWS architecture blog), so that retries do not arrive together."""
        return rng.uniform(0.0, min(self.cap_s, self.base_s * (2**retry)))

    def wait_s(self, retry: int, rng: random.Random, retry_after: float | None) -> float:
        """Return the wait before retry number ``retry`` (0-based); the server's wish wins when given."""
        if retry_after is not None:
            return retry_after
        return self.backoff_s(retry, rng)


@dataclass
class CallRetries:
    """One call's retries so far under ``policy``: the waits before each, and when none is left.

    ``paced`` (``concurrency = "auto"``): a 429 is the endpoint pacing the run, retried without counting against
    ``max_retries`` until the 429s have waited ``max_retry_after_s`` in all or :data:`RATE_LIMITED_RETRIES` were
    made; from then on they count as other retries do.
    """

    policy: RetryPolicy
    rng: random.Random
    paced: bool = False
    #: Retries counted against ``max_retries``, and 429s retried outside it (``paced``), with their waits.
    retries: int = 0
    limited: int = 0
    waited_limited: float = field(default=0.0)

    def pause_s(self, status: int | None, retry_after: float | None) -> float | None:
        """Return the wait before the next attempt after one that failed with ``status``, None when none is left."""
        if self.paced and status == 429 and self._may_pace():
            pause = retry_after if retry_after is not None else self.policy.backoff_s(min(self.limited, 8), self.rng)
            self.waited_limited += pause
            self.limited += 1
            return pause
        if self.retries >= self.policy.max_retries:
            return None
        self.retries += 1
        return self.policy.wait_s(self.retries - 1, self.rng, retry_after)

    def _may_pace(self) -> bool:
        """Tell whether a 429 may still be retried outside ``max_retries`` (within both bounds)."""
        return self.waited_limited < self.policy.max_retry_after_s and self.limited < RATE_LIMITED_RETRIES.value

    def describe_limited(self) -> str:
        """Return what the 429s of a call that gave up met, for its error ("" when none was paced)."""
        if not self.limited:
            return ""
        cap = self.policy.max_retry_after_s
        return (
            f", {self.limited} of them answered 429 under concurrency auto (retried for up to {cap:g} s "
            f"or {RATE_LIMITED_RETRIES.value} retries)"
        )
