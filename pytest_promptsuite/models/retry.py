"""When and how long to wait before retrying an endpoint call: bounded full-jitter backoff, or the wait a
``Retry-After`` or ``retry-after-ms`` header asks for."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass


#: HTTP statuses worth another attempt (besides every 5xx).
RETRYABLE_STATUSES = frozenset({408, 409, 429})


def retry_after_s(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Return the wait a server asked for: ``retry-after-ms``, else ``Retry-After`` (seconds or a date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


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
        """Tell whether an HTTP status is worth another attempt (408, 409, 429 and 5xx)."""
        return status in RETRYABLE_STATUSES or status >= 500

    def backoff_s(self, retry: int, rng: random.Random) -> float:
        """Return a full-jitter wait (AWS architecture blog), so that retries do not arrive together."""
        return rng.uniform(0.0, min(self.cap_s, self.base_s * (2**retry)))

    def wait_s(self, retry: int, rng: random.Random, retry_after: float | None) -> float:
        """Return the wait before retry number ``retry`` (0-based); the server's wish wins when given."""
        if retry_after is not None:
            return retry_after
        return self.backoff_s(retry, rng)
