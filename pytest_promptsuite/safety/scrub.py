"""The one secret scrubber: every text that leaves a run passes through :func:`scrub`, and every text cut
to a size through :func:`scrub_cut` (scrubbed before it is cut)."""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import NamedTuple
from urllib.parse import parse_qsl
from urllib.parse import urlsplit
from urllib.parse import urlunsplit


REDACTED = "***"
#: Shorter values are not registered: scrubbing "EMPTY" or "none" (placeholder keys of local
#: servers) from every output would garble reports and protect nothing.
MIN_SECRET_LENGTH = 8
#: Query parameters whose value is a credential.
KEY_PARAMETERS = tuple("api_key api-key apikey key access_token token auth secret password sig signature".split())
_HTTPCORE = ("connection", "http11", "http2", "proxy", "socks")
#: The loggers whose records are scrubbed (a logger's filter sees only its own records).
LOGGERS = ("httpx", "httpcore", *(f"httpcore.{name}" for name in _HTTPCORE), "pytest_promptsuite")

_TOKEN = r"[A-Za-z0-9._~+/=-]+"
_KEYS = "|".join(re.escape(k) for k in KEY_PARAMETERS)
_GENERIC = re.compile(
    rf"(?P<auth>(?i:authorization)['\"]?\s*[:=]\s*['\"]?(?i:bearer|basic|token)\s+){_TOKEN}"
    # a bearer token has 8+ characters, one of them not a letter (English words after "bearer" stay)
    rf"|(?P<bearer>\b(?i:bearer)\s+)(?=[A-Za-z0-9._~+/=-]{{8}})(?=[A-Za-z]*[0-9._~+/=-]){_TOKEN}"
    r"|(?P<userinfo>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"\\<>]+@"
    rf"|(?P<query>[?&](?i:{_KEYS})=)[^&#\s'\"\\<>]+"
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_lock = threading.Lock()
_secrets: tuple[str, ...] = ()


def register(secret: str | None) -> None:
    """Scrub ``secret`` (and its JSON-escaped form) from everything from now on, unless it is too short."""
    global _secrets
    if not secret or len(secret) < MIN_SECRET_LENGTH:
        return
    forms = {secret, json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1]}
    with _lock:
        known = set(_secrets) | forms
        _secrets = tuple(sorted(known, key=len, reverse=True))  # longest first: no partial leftovers


def registered() -> tuple[str, ...]:
    """Return the secrets registered so far: a new tuple after each registration, so a caller can tell
    whether text scrubbed earlier may still hold one."""
    return _secrets


def _generic(match: re.Match[str]) -> str:
    kind = match.lastgroup
    assert kind is not None
    prefix = match.group(kind)
    return f"{prefix}{REDACTED}@" if kind == "userinfo" else prefix + REDACTED


_QUERY_MARKS = tuple(f"{name}=" for name in KEY_PARAMETERS)
_QUERY_BYTES = tuple(mark.encode() for mark in _QUERY_MARKS)
#: The letters outside ASCII that the pattern's ``(?i:...)`` parts match as ASCII ones: İ and ı
#: as ``i``, ſ as ``s``, the Kelvin sign as ``k`` (a test finds them all by scanning Unicode).
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")


def _may_hold_credentials(text: str) -> bool:
    """Tell cheaply whether the pattern (~0.1 ms per KB) may match: never False where it would."""
    if "://" in text and "@" in text:
        return True
    if text.isascii():
        lower = text.lower()
        return "bearer" in lower or "authorization" in lower or ("=" in text and any(m in lower for m in _QUERY_MARKS))
    return _unicode_may_hold(text)


def _unicode_may_hold(text: str) -> bool:
    if any(c in text for c in _FOLDS_TO_ASCII):
        return True
    # ASCII case folding only (every letter the pattern matches is ASCII now): bytes.lower is
    # several times quicker than str.lower on text with letters outside Latin-1
    folded = text.encode("utf-8", "surrogatepass").lower()
    return b"bearer" in folded or b"authorization" in folded or ("=" in text and any(m in folded for m in _QUERY_BYTES))


def scrub(text: str) -> str:
    """Return ``text`` without secrets: registered ones, ``Authorization`` and ``Bearer`` credentials, a URL's
    ``user:password@`` and key-like query parameters; ``text`` itself when it holds none."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if _may_hold_credentials(text) and _GENERIC.search(text) is not None:
        text = _GENERIC.sub(_generic, text)
    return text


class Cut(NamedTuple):
    """The part of a scrubbed text that :func:`scrub_cut` kept, and how many characters of it were left off
    on each side."""

    text: str
    before: int
    after: int


def scrub_cut(text: str, limit: int, *, start: int = 0) -> Cut:
    """Scrub ``text``, then keep at most ``limit`` characters of it from where offset ``start`` of ``text``
    is (negative: from the end), moved back so that ``limit`` fit. Scrubbing first is the point: a
    secret the cut goes through leaves no piece behind, where one scrubbed after the cut would leave
    all but its cut-off part."""
    clean = scrub(text)
    if start > 0 and clean is not text and len(clean) > limit:  # where ``start`` is once the secrets are out
        start = len(scrub(text[:start]))
    return cut(clean, limit, start=start)


def cut(clean: str, limit: int, *, start: int = 0) -> Cut:
    """Keep at most ``limit`` characters of ``clean``, a text scrubbed already (a ``results.jsonl`` line's),
    from offset ``start`` (negative: from the end), moved back so that ``limit`` fit."""
    size = len(clean)
    if size <= limit:
        return Cut(clean, 0, 0)
    begin = max(0, min(size + start if start < 0 else start, size - limit))
    return Cut(clean[begin : begin + limit], begin, size - begin - limit)


def printable(text: str) -> str:
    """Scrub ``text`` for a terminal: lone surrogates (which no encoding can write) become ``\\udXXX`` escapes."""
    text = scrub(text)
    if _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def secret_parameters(url: str) -> list[str]:
    """Return the values of the key-like query parameters of ``url``."""
    query = urlsplit(url).query
    return [value for name, value in parse_qsl(query) if name.lower() in KEY_PARAMETERS and value]


def public_url(url: str) -> str:
    """Return ``url`` without ``user:password@`` or key-like query values, to be shown, hashed and stored."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = parts.query
    if query:
        query = _GENERIC.sub(_generic, "?" + query)[1:]
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class ScrubFilter(logging.Filter):
    """Scrubs a log record's message (its arguments merged in) before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Scrub ``record`` in place; never drops it."""
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: leave it to logging
            return True
        clean = scrub(message)
        if clean is not message or record.args:
            record.msg, record.args = clean, None
        return True


_FILTER = ScrubFilter()


def install_log_filter() -> None:
    """Put :class:`ScrubFilter` on every logger in :data:`LOGGERS` (once)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
