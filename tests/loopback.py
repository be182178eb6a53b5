"""A small OpenAI-compatible server for tests and benchmarks, on 127.0.0.1 only.

It answers ``POST /v1/chat/completions`` and ``POST /v1/completions`` with the echo of the prompt
(the last user message, or the whole completion prompt), like the fake model, so checks behave
the same against it, and ``POST /v1/embeddings`` with a vector per input text (``vectors``, else its
words counted into 16 buckets; the texts joined by newlines are the prompt its scripts read).
Knobs (:class:`Knobs`, changeable while it runs):

- ``latency_s``: every answer waits this long (``asyncio.sleep``).
- ``fail_rate`` / ``fail_statuses``: a seeded share of attempts is answered with one of those
  statuses. The draw depends on ``seed``, the prompt and the attempt number only, so it is the
  same whatever the concurrency or order.
- ``retry_after`` / ``retry_after_ms``: headers sent with every 429 and 5xx.
- ``rate_rps`` / ``burst``: a token bucket of ``burst`` requests refilled at ``rate_rps`` a second (0: no
  limit), and ``max_concurrent`` (0: none): a request past either is answered 429 at once (no latency), as
  OpenAI does: ``retry-after-ms`` (when the next request is allowed; none past ``max_concurrent``) and
  ``x-ratelimit-limit-requests`` / ``-remaining-requests`` / ``-reset-requests`` (``20ms``), the last three on
  every answer while ``rate_rps`` is set.
- ``refuse_from`` / ``refuse_count``: the requests numbered ``refuse_from + 1`` to ``refuse_from + refuse_count``
  (retries counted) are answered 429 with ``retry-after-ms: 20``, whatever the clock: a limit a client meets at
  any speed.
- ``slow_from`` / ``slow_s``: every request after the first ``slow_from`` waits ``slow_s`` (60 s) for its answer.
- ``hold_until``: no answer is sent before the server has received this many requests (at most 60 s): the
  calls a client keeps in flight are all in flight at once, at any speed.
- ``api_key``: when set, a request without ``Authorization: Bearer <api_key>`` gets a 401 whose
  text repeats the key it was sent (as some proxies do), to prove the client scrubs it.
- Scripted faults per prompt: a prompt containing ``[[500,429]]`` gets a 500 on its first attempt,
  a 429 on its second and an answer on the third. Besides statuses a step may be ``drop`` (the
  connection closes mid-answer), ``hang`` (no answer for ``hang_s``), ``malformed`` (a 200 that is
  not JSON), ``nochoices`` (JSON without choices), ``empty`` (an empty completion), ``quota`` (a 429
  with code ``insufficient_quota``) or ``ok``. The hostile ones: ``reset`` (a TCP reset, nothing
  sent), ``truncated`` (half of the real answer, then the connection closes), ``gzip`` (a
  ``Content-Encoding: gzip`` header on a body that is not gzip), ``latin1`` (a 200 whose body is
  not UTF-8), ``drip`` (the real answer one byte every ``drip_s``), ``echo`` (an answer that
  repeats the ``Authorization`` header it was sent), ``weird`` (an answer holding U+2028,
  U+2029, U+0085 and a lone surrogate), ``bomb`` (a few hundred bytes of ``gzip, gzip`` that decode
  to 64 MiB, :mod:`tests.bombs`), ``gzip3`` (the answer gzip-encoded three times) and ``brotli`` (a
  ``Content-Encoding: br`` nobody asked for). Shapes of HTTP: ``chunked`` (the answer in chunks),
  ``gzipped`` (the answer gzip-encoded), ``gzipped2`` (gzip-encoded twice), ``deflated`` (deflate,
  zlib-wrapped) and ``rawdeflated`` (deflate without zlib's wrapper), ``close`` (``Connection:
  close``), ``hangup`` (the answer, then the connection closes), ``cookie`` (a ``Set-Cookie``),
  ``redirect`` (a 307 to the same path), ``switch`` (a bare ``101 Switching Protocols``, then the
  connection closes), and answers written raw, then the connection closed: ``lfcrlf`` (a head
  ending ``\\n\\r\\n``) and ``obsfold`` (a header folded onto a second line).
- Steps that say what the prompt says: ``sayerror`` (a 400 whose error message is the prompt
  before its script) and ``saytext`` (a 200 whose body is that text, not JSON).
- ``usage`` / ``finish_reason``: what every echoed answer reports instead of its word counts and ``stop``.
- ``tool_script``: answers with ``tool_calls`` (or text) chosen by the last message's content, so a
  multi-step run (model, tool results, model) can be scripted; see :class:`Knobs`.
- Seeded answers for gate simulations: a prompt containing ``<<pass 0.3>>`` is echoed on a share
  0.3 of its attempts (drawn from ``seed``, the prompt and the attempt number) and answered
  ``nope`` otherwise, so a case that checks for its own text passes with that probability.

It counts requests in flight (``max_in_flight``) and logs every request (``log``: its path,
query, headers, body (``raw``: its bytes), and ``peer``, the client's port: one port for calls on one connection).

Run it in a thread with :func:`serve` (tests), or as a process (benchmarks)::

    python tests/loopback.py --latency-ms 100 --fail-rate 0.2   # prints "PORT <n>"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import hashlib
import json
import math
import re
import socket
import struct
import threading
import time
import zlib
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response
from starlette.responses import StreamingResponse
from starlette.routing import Route
from starlette.types import Receive
from starlette.types import Scope
from starlette.types import Send

from tests.bombs import bomb
from tests.bombs import gzip_layers
from tests.loopback_batch import BatchApi  # as a script too: PYTHONPATH holds the repository


__all__ = ["Knobs", "LoopbackServer", "serve"]

SCRIPT = re.compile(r"\[\[([a-z0-9, ]+)\]\]")
PASS_RATE = re.compile(r"<<pass (\d*\.?\d+)>>")


@dataclass
class Knobs:
    """How the server misbehaves; see the module docstring."""

    latency_s: float = 0.0
    fail_rate: float = 0.0
    fail_statuses: tuple[int, ...] = (429, 500)
    retry_after: str | None = None
    retry_after_ms: int | str | None = None
    seed: int = 0
    api_key: str | None = None
    hang_s: float = 5.0
    drip_s: float = 0.05
    rate_rps: float = 0.0
    burst: int = 1
    max_concurrent: int = 0
    refuse_from: int = 0
    refuse_count: int = 0
    hold_until: int = 0
    #: Every request after the first ``slow_from`` (counted over the server's life) waits ``slow_s`` before
    #: its answer: a test that must stop a run with some cases finished and the rest in flight sets it up front.
    slow_from: int = 0
    slow_s: float = 60.0
    #: Scripted tool use (chat, streaming off): the first ``(regex, answer)`` whose regex is found in the
    #: last message's content answers; a list of ``{"name", "arguments"}`` is sent as ``message.tool_calls``
    #: (ids ``call_<n>`` counted over the server's life; arguments given as a string are sent verbatim), a
    #: string as the text.
    tool_script: list[tuple[str, list[dict[str, Any]] | str]] = field(default_factory=list)
    #: The ``usage`` of every echoed answer instead of its word counts (a hostile endpoint's), and its
    #: ``finish_reason`` instead of ``stop`` (chat) or ``length`` (completions): ``length`` for an answer cut.
    usage: Any = None
    finish_reason: str | None = None
    #: The ``model`` every echoed answer says served it instead of the requested one (an alias moved on).
    served: str | None = None
    #: The embedding of each text given here (``/v1/embeddings``); any other text's is its word counts.
    vectors: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class Stats:
    """What the server saw."""

    in_flight: int = 0
    max_in_flight: int = 0
    #: Requests between their arrival and their answer's making: unlike ``in_flight`` (the whole exchange),
    #: a client cannot send its next call before one of these ends, so ``max_answering`` never exceeds its bound.
    answering: int = 0
    max_answering: int = 0
    requests: int = 0
    disconnected: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)
    tool_ids: int = 0


def _prompt_of(body: dict[str, Any]) -> str:
    if "input" in body:  # /v1/embeddings
        texts = body["input"]
        return "\n".join(map(str, texts)) if isinstance(texts, list) else str(texts)
    if "messages" in body:
        users = [m.get("content", "") for m in body["messages"] if m.get("role") == "user"]
        return str(users[-1]) if users else ""
    return str(body.get("prompt", ""))


def _drawn_miss(knobs: Knobs, prompt: str, attempt: int) -> bool:
    """Whether a ``<<pass p>>`` prompt misses on this attempt (a draw above ``p``)."""
    match = PASS_RATE.search(prompt)
    if match is None:
        return False
    digest = hashlib.sha256(f"pass\0{knobs.seed}\0{prompt}\0{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 >= float(match.group(1))


def _drawn_failure(knobs: Knobs, prompt: str, attempt: int) -> int | None:
    if knobs.fail_rate <= 0:
        return None
    digest = hashlib.sha256(f"{knobs.seed}\0{prompt}\0{attempt}".encode()).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    if draw >= knobs.fail_rate:
        return None
    return knobs.fail_statuses[digest[8] % len(knobs.fail_statuses)]


class _App:
    """The ASGI app: starlette routes plus the in-flight counter around them."""

    def __init__(self, knobs: Knobs | None = None) -> None:
        self.knobs = knobs or Knobs()
        self.stats = Stats()
        self._bucket = _Bucket(self.knobs)
        self.batch = BatchApi(lambda body, chat: _completion_data(_prompt_of(body), body, chat=chat), _prompt_of)
        self._app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/completions", self.completions, methods=["POST"]),
                Route("/v1/embeddings", self.embeddings, methods=["POST"]),
                Route("/stats", self.stats_view, methods=["GET"]),
                *self.batch.routes(),  # the Batch API (tests/loopback_batch.py)
            ]
        )

    def reset(self, knobs: Knobs | None = None) -> None:
        self.knobs = knobs or Knobs()
        self.stats = Stats()
        self._bucket = _Bucket(self.knobs)
        self.batch.reset()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        stats = self.stats
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            await self._app(scope, receive, send)
        except asyncio.CancelledError:
            stats.disconnected += 1
            raise
        finally:
            stats.in_flight -= 1

    async def stats_view(self, request: Request) -> Response:
        s = self.stats
        data: dict[str, Any] = {
            "requests": s.requests,
            "max_in_flight": s.max_in_flight,
            "statuses": s.statuses,
            "disconnected": s.disconnected,
        }
        if request.query_params.get("timeline"):  # when each request came and was answered
            data["timeline"] = [[e["time"], e.get("end")] for e in s.log]
        return JSONResponse(data)

    async def chat(self, request: Request) -> Response:
        return await self._answer(request, chat=True)

    async def completions(self, request: Request) -> Response:
        return await self._answer(request, chat=False)

    async def embeddings(self, request: Request) -> Response:
        return await self._answer(request, chat=False)  # its body's "input" makes it an embeddings answer

    async def _answer(self, request: Request, *, chat: bool) -> Response:
        stats = self.stats
        stats.answering += 1
        stats.max_answering = max(stats.max_answering, stats.answering)
        try:
            return await self._answer_counted(request, chat=chat)
        finally:
            stats.answering -= 1

    async def _answer_counted(self, request: Request, *, chat: bool) -> Response:
        knobs, stats = self.knobs, self.stats
        body = await request.json()
        prompt = _prompt_of(body)
        attempt = stats.attempts.get(prompt, 0)
        stats.attempts[prompt] = attempt + 1
        stats.requests += 1
        entry: dict[str, Any] = {
            "path": request.url.path,
            "query": request.url.query,
            "body": body,
            "raw": await request.body(),  # the bytes sent (read once: json() keeps them)
            "authorization": request.headers.get("authorization"),
            "headers": dict(request.headers),
            "peer": request.client.port if request.client else None,
            "attempt": attempt,
            "time": time.monotonic(),
        }
        stats.log.append(entry)
        position = len(stats.log) - 1
        limited = self._limited(knobs, stats)
        if isinstance(limited, Response):
            response: Response = limited
        else:
            await _held(knobs, stats)
            if knobs.latency_s:
                await asyncio.sleep(knobs.latency_s)
            if knobs.slow_from and position >= knobs.slow_from:
                await asyncio.sleep(knobs.slow_s)
            response = self._respond(knobs, request, prompt, attempt, chat=chat, body=body)
            if limited is not None:
                response.headers.update(limited)
        entry["status"] = response.status_code
        entry["end"] = time.monotonic()
        stats.statuses[response.status_code] = stats.statuses.get(response.status_code, 0) + 1
        if isinstance(response, _Hang):
            await asyncio.sleep(knobs.hang_s)
        return response

    def _limited(self, knobs: Knobs, stats: Stats) -> Response | dict[str, str] | None:
        """Refuse a request whose number ``refuse_*`` names, else take it through the bucket (None: no limit)."""
        if knobs.refuse_from < stats.requests <= knobs.refuse_from + knobs.refuse_count:
            return _error(429, "Rate limit reached for requests", "rate_limit_exceeded", {"retry-after-ms": "20"})
        return self._bucket.take(stats.in_flight) if knobs.rate_rps or knobs.max_concurrent else None

    def _respond(
        self, knobs: Knobs, request: Request, prompt: str, attempt: int, *, chat: bool, body: dict[str, Any]
    ) -> Response:
        if knobs.api_key is not None:
            sent = request.headers.get("authorization", "")
            if sent != f"Bearer {knobs.api_key}":
                return _error(401, f"Incorrect API key provided: {sent[7:] or '(none)'}", "invalid_api_key")
        if _drawn_miss(knobs, prompt, attempt):
            return _completion("nope", body, chat=chat)
        step = _script_step(prompt, attempt)
        if step is None:
            status = _drawn_failure(knobs, prompt, attempt)
            step = str(status) if status is not None else "ok"
        if step == "ok" and "input" in body:
            return JSONResponse(_embeddings_data(knobs, body))
        if step == "ok" and not chat and body.get("echo") and body.get("logprobs") is not None:
            return JSONResponse(_echo_logprobs(prompt, body))
        if step == "ok" and chat and knobs.tool_script:
            scripted = self._scripted(knobs, body)
            if scripted is not None:
                return JSONResponse(scripted)
        if step == "ok":
            return JSONResponse(_dressed(_completion_data(prompt, body, chat=chat), knobs))
        if step == "empty":
            return _completion("", body, chat=chat)
        if step == "drop":
            return _Dropped()
        if step == "hang":
            return _Hang()
        if step == "malformed":
            return Response("<html>502 Bad Gateway</html>", media_type="text/html")
        if step == "nochoices":
            return JSONResponse({"id": "x", "object": "chat.completion", "choices": []})
        if step == "quota":
            return _error(429, "You exceeded your current quota.", "insufficient_quota")
        if step in ("sayerror", "saytext"):  # the prompt before its script, as the endpoint's words
            said = prompt[: prompt.index("[[")]
            return _error(400, said, None) if step == "sayerror" else Response(said, media_type="text/plain")
        hostile = _hostile(step, knobs, request, prompt, body, chat=chat)
        if hostile is not None:
            return hostile
        status = int(step)
        headers: dict[str, str] = {}
        if status == 429 or status >= 500:
            if knobs.retry_after is not None:
                headers["retry-after"] = knobs.retry_after
            if knobs.retry_after_ms is not None:
                headers["retry-after-ms"] = str(knobs.retry_after_ms)
        text = {429: "Rate limit reached", 500: "The server had an error", 503: "Overloaded"}
        return _error(status, text.get(status, f"error {status}"), None, headers)

    def _scripted(self, knobs: Knobs, body: dict[str, Any]) -> dict[str, Any] | None:
        """Answer by :attr:`Knobs.tool_script` (None: no regex is found in the last message)."""
        messages = body.get("messages") or [{}]
        last = str(messages[-1].get("content") or "")
        for pattern, answer in knobs.tool_script:
            if not re.search(pattern, last):
                continue
            data = _completion_data(answer if isinstance(answer, str) else "", body, chat=True)
            if isinstance(answer, list):
                message = data["choices"][0]["message"]
                message["content"] = None
                message["tool_calls"] = []
                for call in answer:
                    self.stats.tool_ids += 1
                    arguments = call["arguments"]
                    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
                    function = {"name": call["name"], "arguments": text}
                    message["tool_calls"].append(
                        {"id": f"call_{self.stats.tool_ids}", "type": "function", "function": function}
                    )
                data["choices"][0]["finish_reason"] = "tool_calls"
            return data
        return None


async def _held(knobs: Knobs, stats: Stats) -> None:
    """Wait until the server has received ``hold_until`` requests (60 s at most: a client that never sends
    them fails its test on what it counts, not by hanging)."""
    deadline = time.monotonic() + 60
    while stats.requests < knobs.hold_until and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


class _Bucket:
    """The token bucket of ``rate_rps`` and ``burst``, and the bound ``max_concurrent``."""

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self.tokens = float(knobs.burst)
        self.at = time.monotonic()

    def take(self, in_flight: int) -> Response | dict[str, str] | None:
        """Admit a request (its rate-limit headers, None without a rate) or refuse it (a 429)."""
        knobs = self.knobs
        if knobs.rate_rps:
            now = time.monotonic()
            self.tokens = min(float(knobs.burst), self.tokens + (now - self.at) * knobs.rate_rps)
            self.at = now
        if knobs.max_concurrent and in_flight > knobs.max_concurrent:
            return _error(429, "Too many concurrent requests", "rate_limit_exceeded", self.headers())
        if not knobs.rate_rps:
            return None
        if self.tokens < 1:
            wait_ms = math.ceil((1 - self.tokens) / knobs.rate_rps * 1000)
            headers = {"retry-after-ms": str(wait_ms), **self.headers()}
            return _error(429, "Rate limit reached for requests", "rate_limit_exceeded", headers)
        self.tokens -= 1
        return self.headers()

    def headers(self) -> dict[str, str]:
        """OpenAI's request rate-limit headers: the bucket's size, what is left, how long until it is full."""
        knobs = self.knobs
        if not knobs.rate_rps:
            return {}
        full_ms = math.ceil((knobs.burst - self.tokens) / knobs.rate_rps * 1000)
        return {
            "x-ratelimit-limit-requests": str(knobs.burst),
            "x-ratelimit-remaining-requests": str(math.floor(self.tokens)),
            "x-ratelimit-reset-requests": f"{full_ms}ms",
        }


def _script_step(prompt: str, attempt: int) -> str | None:
    match = SCRIPT.search(prompt)
    if match is None:
        return None
    steps = [s.strip() for s in match.group(1).split(",")]
    return steps[attempt] if attempt < len(steps) else "ok"


def _error(status: int, message: str, code: str | None, headers: dict[str, str] | None = None) -> Response:
    body = {"error": {"message": message, "type": "loopback_error", "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


def _completion_data(text: str, body: dict[str, Any], *, chat: bool) -> dict[str, Any]:
    usage = {
        "prompt_tokens": len(text.split()),
        "completion_tokens": len(text.split()),
        "total_tokens": 2 * len(text.split()),
    }
    model = body.get("model", "")
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        return {"id": "c", "object": "chat.completion", "model": model, "choices": [choice], "usage": usage}
    choice = {"index": 0, "text": text, "finish_reason": "length"}
    return {"id": "c", "object": "text_completion", "model": model, "choices": [choice], "usage": usage}


def _dressed(data: dict[str, Any], knobs: Knobs) -> dict[str, Any]:
    """Return an answer with the ``usage``, ``finish_reason`` and ``model`` the knobs set (as it is without them)."""
    if knobs.usage is not None:
        data["usage"] = knobs.usage
    if knobs.finish_reason is not None:
        data["choices"][0]["finish_reason"] = knobs.finish_reason
    if knobs.served is not None:
        data["model"] = knobs.served
    return data


def _embeddings_data(knobs: Knobs, body: dict[str, Any]) -> dict[str, Any]:
    """The ``/v1/embeddings`` answer: each input text's vector (:attr:`Knobs.vectors`, else its words counted
    into 16 buckets by sha256), in reverse order with their ``index`` (a client must sort them), and the usage."""
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data = []
    for index, text in enumerate(map(str, texts)):
        vector = knobs.vectors.get(text)
        if vector is None:
            vector = [0.0] * 16
            for word in re.findall(r"\w+", text.lower()):
                vector[hashlib.sha256(word.encode()).digest()[0] % 16] += 1.0
        data.append({"object": "embedding", "index": index, "embedding": vector})
    tokens = sum(len(str(text).split()) for text in texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return {"object": "list", "data": data[::-1], "model": body.get("model", ""), "usage": usage}


def _echo_logprobs(prompt: str, body: dict[str, Any]) -> dict[str, Any]:
    """vLLM's answer to ``echo: true, logprobs: 0``: every prompt token with its log-probability
    (the first has none), then one generated token. A word holding ``LIKELY`` scores -0.1, any
    other -2.0, so a test knows which label's prompt has the lowest perplexity."""
    tokens, offsets, offset = [], [], 0
    for word in prompt.split(" "):
        tokens.append(word if not offsets else " " + word)
        offsets.append(offset)
        offset += len(tokens[-1])
    logprobs: list[float | None] = [None] + [-0.1 if "LIKELY" in t else -2.0 for t in tokens[1:]]
    tokens.append(" x")
    offsets.append(len(prompt))
    logprobs.append(-9.0)
    choice = {
        "index": 0,
        "text": prompt + " x",
        "finish_reason": "length",
        "logprobs": {"tokens": tokens, "token_logprobs": logprobs, "text_offset": offsets, "top_logprobs": None},
    }
    usage = {"prompt_tokens": len(tokens) - 1, "completion_tokens": 1, "total_tokens": len(tokens)}
    return {"id": "c", "object": "text_completion", "model": body.get("model", ""), "choices": [choice], "usage": usage}


def _completion(text: str, body: dict[str, Any], *, chat: bool, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(_completion_data(text, body, chat=chat), headers=headers)


#: The text of a ``weird`` answer: every character our JSON Lines must survive.
WEIRD = "a\u2028b\u2029c\u0085d\ud800e"


def _hostile(
    step: str, knobs: Knobs, request: Request, prompt: str, body: dict[str, Any], *, chat: bool
) -> Response | None:
    """The answer of a hostile step, or None when ``step`` is not one."""
    if step == "echo":
        return _completion(f"{prompt} key={request.headers.get('authorization')}", body, chat=chat)
    if step == "weird":
        return _Raw(_completion_bytes(WEIRD, body, chat=chat, ascii=True))
    if step == "reset":
        return _Reset()
    if step == "truncated":
        data = _completion_bytes(prompt, body, chat=chat)
        return _Raw(data[: len(data) // 2], length=len(data), close=True)
    if step == "gzip":
        return _Raw(_completion_bytes(prompt, body, chat=chat), headers=[(b"content-encoding", b"gzip")])
    if step == "latin1":
        return _Raw(b'{"choices": [{"message": {"content": "caf\xe9"}, "finish_reason": "stop"}]}')
    if step == "drip":
        return _Raw(_completion_bytes(prompt, body, chat=chat), drip_s=knobs.drip_s)
    if step == "bomb":
        return _Raw(bomb(), headers=[(b"content-encoding", b"gzip, gzip")])
    if step == "gzip3":
        data = gzip_layers(_completion_bytes(prompt, body, chat=chat), 3)
        return _Raw(data, headers=[(b"content-encoding", b"gzip"), (b"content-encoding", b"gzip, gzip")])
    if step == "brotli":
        return _Raw(_completion_bytes(prompt, body, chat=chat), headers=[(b"content-encoding", b"br")])
    return _shape(step, prompt, body, chat=chat)


def _shape(step: str, prompt: str, body: dict[str, Any], *, chat: bool) -> Response | None:
    """The answer of a step that shapes the HTTP of a good answer, or None when ``step`` is not one."""
    data = _completion_bytes(prompt, body, chat=chat)
    if step == "chunked":

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(data), 16):
                yield data[start : start + 16]

        return StreamingResponse(chunks(), media_type="application/json")
    if step == "gzipped":
        return _Raw(gzip.compress(data), headers=[(b"content-encoding", b"gzip")])
    if step == "gzipped2":
        return _Raw(gzip_layers(data, 2), headers=[(b"content-encoding", b"gzip, gzip")])
    if step == "deflated":
        return _Raw(zlib.compress(data), headers=[(b"content-encoding", b"deflate")])
    if step == "rawdeflated":
        packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return _Raw(packer.compress(data) + packer.flush(), headers=[(b"content-encoding", b"deflate")])
    if step == "close":
        return _completion(prompt, body, chat=chat, headers={"connection": "close"})
    if step == "hangup":
        return _HangUp(data)
    if step == "cookie":
        return _completion(prompt, body, chat=chat, headers={"set-cookie": "session=loopback-cookie; Path=/"})
    if step == "redirect":
        return Response(status_code=307, headers={"location": "/v1/chat/completions"})
    if step == "switch":
        return _Bytes(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: loopback\r\n\r\n")
    if step in ("lfcrlf", "obsfold"):
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d" % len(data)
        if step == "lfcrlf":  # the last header line ends in a bare LF, the head in CRLF
            return _Bytes(head + b"\n\r\n" + data)
        # a header continued on the next line (obs-fold, RFC 9112 5.2)
        return _Bytes(head + b"\r\nX-Folded: one\r\n  two\r\n\r\n" + data)
    return None


def _completion_bytes(text: str, body: dict[str, Any], *, chat: bool, ascii: bool = False) -> bytes:
    return json.dumps(_completion_data(text, body, chat=chat), ensure_ascii=ascii).encode("utf-8")


class _Raw(Response):
    """Sends ``data`` as it is: with extra headers, cut short (``length`` promised, then the
    connection closes) or dripped a byte at a time."""

    def __init__(
        self,
        data: bytes,
        *,
        headers: list[tuple[bytes, bytes]] | None = None,
        length: int | None = None,
        close: bool = False,
        drip_s: float = 0.0,
    ) -> None:
        super().__init__(status_code=200)
        self.data, self.extra, self.close = data, headers or [], close
        self.length, self.drip_s = length if length is not None else len(data), drip_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-length", str(self.length).encode()), (b"content-type", b"application/json"), *self.extra]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if self.drip_s:
            for i in range(len(self.data)):
                await send({"type": "http.response.body", "body": self.data[i : i + 1], "more_body": True})
                await asyncio.sleep(self.drip_s)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await send({"type": "http.response.body", "body": self.data, "more_body": False})


def _transport(receive: Receive) -> asyncio.Transport:
    """The connection's asyncio transport (uvicorn's), for answers HTTP cannot express."""
    transport = getattr(getattr(receive, "__self__", None), "transport", None)
    if transport is None:
        raise RuntimeError("no transport to write to")
    return transport  # type: ignore[no-any-return]


class _Bytes(Response):
    """Writes ``data`` on the connection itself, past uvicorn's HTTP, then closes it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(status_code=200)
        self.data = data

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport = _transport(receive)
        transport.write(self.data)
        transport.close()


class _HangUp(Response):
    """Sends the answer ``data`` (kept alive), then closes the connection, as a server does at
    the end of its keep-alive time."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data, status_code=200, media_type="application/json")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await super().__call__(scope, receive, send)
        _transport(receive).close()


class _Reset(Response):
    """Resets the TCP connection (``SO_LINGER`` 0, then abort) without sending a byte."""

    def __init__(self) -> None:
        super().__init__(status_code=200)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport = _transport(receive)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()


class _Dropped(Response):
    """Promises a body and closes the connection half way (a dropped connection)."""

    def __init__(self) -> None:
        super().__init__(status_code=200)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"1000"), (b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": b'{"choices": [', "more_body": False})


class _Hang(Response):
    """Answers nothing for ``hang_s`` (the handler sleeps first), then a 504."""

    def __init__(self) -> None:
        super().__init__(status_code=504)


class LoopbackServer:
    """A running server: ``base_url`` (ends in ``/v1``), ``knobs`` and ``stats``."""

    def __init__(self, app: _App, server: uvicorn.Server, thread: threading.Thread, port: int) -> None:
        self.app = app
        self._server = server
        self._thread = thread
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}/v1"

    @property
    def knobs(self) -> Knobs:
        return self.app.knobs

    @property
    def stats(self) -> Stats:
        return self.app.stats

    @property
    def batch(self) -> BatchApi:
        """The Batch API's jobs, files, knobs (``batch.reset(...)``) and counts."""
        return self.app.batch

    def model(self, **fields: Any) -> dict[str, Any]:
        """The ``[model]`` table of a suite whose model is this server (``fields`` added)."""
        return {"spec": "openai:loop-model", "base_url": self.base_url, **fields}

    def reset(self, **knobs: Any) -> LoopbackServer:
        """Forget what was seen and set fresh knobs."""
        self.app.reset(Knobs(**knobs))
        return self

    def wait_for(self, condition: Callable[[], bool], timeout: float = 180) -> None:
        """Wait until ``condition()`` holds (the server has seen what a test waits for); ``timeout`` only ends a
        test that would otherwise hang (a pytest child at nice 19 on a loaded machine took over 30 s to start)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for the server")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def _bound_socket(port: int = 0) -> socket.socket:
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only then (else every answer waits ~40 ms)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def _server(app: _App) -> uvicorn.Server:
    config = uvicorn.Config(
        app, log_level="critical", access_log=False, lifespan="off", timeout_graceful_shutdown=1, backlog=2048
    )
    return uvicorn.Server(config)


@contextlib.contextmanager
def serve(**knobs: Any) -> Iterator[LoopbackServer]:
    """Run the server in a daemon thread on a free port of 127.0.0.1 while the block runs."""
    app = _App(Knobs(**knobs))
    sock = _bound_socket()
    server = _server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="loopback-openai")
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the loopback server did not start")
        threading.Event().wait(0.005)
    running = LoopbackServer(app, server, thread, sock.getsockname()[1])
    try:
        yield running
    finally:
        running.stop()
        sock.close()


def main(argv: list[str] | None = None) -> None:
    """Serve in the foreground (benchmarks); prints ``PORT <n>`` once listening."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0)
    parser.add_argument("--fail-rate", type=float, default=0)
    parser.add_argument("--retry-after-ms", type=int, default=None)
    parser.add_argument("--retry-after", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate-rps", type=float, default=0)
    parser.add_argument("--burst", type=int, default=1)
    parser.add_argument("--max-concurrent", type=int, default=0)
    args = parser.parse_args(argv)
    app = _App(
        Knobs(
            latency_s=args.latency_ms / 1000,
            fail_rate=args.fail_rate,
            seed=args.seed,
            retry_after_ms=args.retry_after_ms,
            retry_after=args.retry_after,
            rate_rps=args.rate_rps,
            burst=args.burst,
            max_concurrent=args.max_concurrent,
        )
    )
    sock = _bound_socket(args.port)
    server = _server(app)

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.005)
        print(f"PORT {sock.getsockname()[1]}", flush=True)

    async def run() -> None:
        waiter = asyncio.ensure_future(announce())
        await server.serve(sockets=[sock])
        waiter.cancel()

    asyncio.run(run())


if __name__ == "__main__":
    main()
