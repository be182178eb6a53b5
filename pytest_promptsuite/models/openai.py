"""``openai:MODEL``: any OpenAI-compatible HTTP endpoint (vLLM, Ollama, llama.cpp, LiteLLM, OpenAI).

One :class:`OpenAIModel` owns httpx transports of one connection each, one per call in flight
(:mod:`.http11` for ``http://``, :mod:`.transport` for ``https://``; made lazily on the runner's
event loop). It sends a prompt to ``/chat/completions`` (a string becomes one user message) or,
for string prompts with ``endpoint = "completions"``, to ``/completions``; it retries as
:class:`~pytest_promptsuite.models.retry.RetryPolicy` says and turns every failure into an
:class:`~pytest_promptsuite.errors.EndpointError` that carries the status and the endpoint's own
error text. The API key is read from the environment variable the config names and is scrubbed
from every message, so it never reaches a result, a cache file or a log.
"""

from __future__ import annotations

import asyncio
import os
import random
import ssl
import time
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

import httpx

from pytest_promptsuite.config.suite import base_url_problem
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.base import ModelRequest
from pytest_promptsuite.models.base import Response
from pytest_promptsuite.models.base import Usage
from pytest_promptsuite.models.http11 import Http11Transport
from pytest_promptsuite.models.http11 import log_request
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.retry import retry_after_s
from pytest_promptsuite.models.scoring import LabelScore
from pytest_promptsuite.models.scoring import echo_logprobs
from pytest_promptsuite.safety.limits import RESPONSE_BYTES
from pytest_promptsuite.safety.scrub import install_log_filter
from pytest_promptsuite.safety.scrub import public_url
from pytest_promptsuite.safety.scrub import register
from pytest_promptsuite.safety.scrub import scrub
from pytest_promptsuite.safety.scrub import secret_parameters


__all__ = ["DEFAULT_BASE_URL", "OpenAIModel", "public_url"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Body keys the client sets itself; a config ``params`` entry may not replace them.
RESERVED_PARAMS = frozenset({"model", "messages", "prompt", "stream"})
#: Statuses after which every further call would fail the same way.
FATAL_STATUSES = frozenset({401, 404})
_ERROR_TEXT_LIMIT = 500


class _Retry(Exception):
    """An attempt failed in a way worth retrying; ``error`` is what to raise if none is left."""

    def __init__(self, error: EndpointError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class OpenAIModel:
    """An OpenAI-compatible endpoint. ``generate`` is safe to call concurrently on one loop."""

    def __init__(
        self,
        name: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        endpoint: str = "chat",
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        spec: str | None = None,
        seed: int | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if endpoint not in ("chat", "completions"):
            raise ConfigError(f"endpoint must be 'chat' or 'completions', not {endpoint!r}")
        self.spec = spec or f"openai:{name}"
        self.name = name
        self.base_url = base_url.rstrip("/")
        # a query (Azure's api-version, a proxy's key=...) stays at the end of every endpoint URL
        path, _, query = self.base_url.partition("?")
        self._path, self._query = path.rstrip("/"), f"?{query}" if query else ""
        self.api_key_env = api_key_env
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._api_key = api_key or None
        register(self._api_key)  # scrubbed from every result, file, message and log from now on
        for secret in secret_parameters(self.base_url):
            register(secret)
        self._rng = random.Random(seed)
        self._transport = transport
        self._ssl: ssl.SSLContext | None = None
        self._slots: list[httpx.AsyncBaseTransport] = []
        self._free: list[httpx.AsyncBaseTransport] = []
        self._urls: dict[str, httpx.URL] = {}
        self._timeouts = httpx.Timeout(timeout_s).as_dict()
        self._request_head: httpx.Headers | None = None
        #: Attempts sent and retries made, for the run's summary and the tests.
        self.attempts = 0
        self.retries = 0

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIModel({self.spec!r}, base_url={self.public_base_url!r})"

    @property
    def public_base_url(self) -> str:
        """The base URL without credentials, as messages and cache keys show it."""
        return public_url(self.base_url)

    def cache_identity(self) -> dict[str, Any]:
        """What, besides the request, decides the answer: the cache key's model part."""
        return {"model": self.spec, "base_url": self.public_base_url, "endpoint": self.endpoint}

    # -- one call -----------------------------------------------------------------------------

    def _url_and_body(self, request: ModelRequest) -> tuple[str, dict[str, Any]]:
        params = dict(request.params)
        extra = params.pop("extra_body", None) or {}
        if not isinstance(extra, Mapping):
            raise ConfigError("params.extra_body must be a table of extra request fields")
        params.update(extra)
        reserved = sorted(RESERVED_PARAMS & set(params))
        if reserved:
            raise ConfigError(
                f"params may not set {reserved[0]!r}: the client sets it from the spec and the prompt"
            )
        prompt = request.prompt
        if isinstance(prompt, str) and self.endpoint == "completions":
            return f"{self._path}/completions{self._query}", {"model": self.name, "prompt": prompt, **params}
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        return f"{self._path}/chat/completions{self._query}", {"model": self.name, "messages": messages, **params}

    def _headers(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        return {"Authorization": f"Bearer {self._api_key}"}

    def _request_headers(self) -> httpx.Headers:
        """What a call's request carries: httpx's own defaults, the JSON type, the key (if any);
        built once (httpx copies a ``Headers`` as it is, where it would check a dict's every item)."""
        if self._request_head is None:
            self._request_head = httpx.Headers({
                "Accept": "*/*", "Accept-Encoding": "gzip, deflate", "Connection": "keep-alive",
                "User-Agent": f"python-httpx/{httpx.__version__}", "Content-Type": "application/json",
                **self._headers()})
        return self._request_head

    def _take_slot(self) -> httpx.AsyncBaseTransport:
        """A transport with one connection, for this call alone (given back with ``_free.append``).

        One pool for all calls costs about 5 ms of CPU per call at 32 in flight (httpcore scans
        every connection of the pool on each event); one transport per call slot keeps each pool
        at one connection. The runner's bound caps how many slots exist. Calls go to the
        transport itself, not through an ``httpx.AsyncClient``: no cookies, auth flow or
        redirects to handle, and no URL parsed again for each request.
        """
        if self._free:
            return self._free.pop()
        slot = self._transport or self._new_transport()
        self._slots.append(slot)
        return slot

    def _new_transport(self) -> httpx.AsyncBaseTransport:
        """A plain ``http`` endpoint's slot speaks HTTP/1.1 itself (:mod:`.http11`: less of the
        loop thread's time per call); an ``https`` one's is httpx's, with the CA bundle."""
        if not self._path.lower().startswith("https:"):
            return Http11Transport(max_keepalive=1)
        from pytest_promptsuite.models.transport import http_transport  # httpcore: imported for an https endpoint only

        if self._ssl is None:
            self._ssl = self._ssl_context()
        return http_transport(self._ssl, httpx.Limits(max_connections=1, max_keepalive_connections=1))

    def _ssl_context(self) -> ssl.SSLContext:
        """The CA bundle for an ``https`` endpoint (loading it takes ~60 ms: once per model). A
        plain ``http`` endpoint never does TLS (no redirect is followed, no proxy used): its
        context trusts no certificate and costs the first call nothing."""
        if self._path.lower().startswith("https:"):
            return httpx.create_ssl_context()
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    def scrub(self, text: str) -> str:
        """``text`` with the API key (however short) and every other secret replaced."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return scrub(text)

    async def generate(self, request: ModelRequest) -> Response:
        """Send one request (retrying transient failures); a ModelError with the endpoint's reason
        otherwise. Nothing else escapes: an unexpected failure is an EndpointError that says what
        it was, scrubbed."""
        url, body = self._url_and_body(request)
        where = public_url(url)
        try:
            return await self._generate(url, body, where)
        except EndpointError:
            raise
        except Exception as exc:
            raise EndpointError(f"request to {where} failed: {type(exc).__name__}: {self._reason(exc)}") from None

    async def score(self, request: ModelRequest) -> LabelScore:
        """The ppl mode's score of a string prompt: its token log-probabilities from
        ``/v1/completions`` with ``echo: true`` and ``logprobs`` (as vLLM serves them)."""
        if not isinstance(request.prompt, str):
            raise ModelError(
                "the ppl mode scores string prompts: give an LM meta template (or none) and "
                'endpoint = "completions"'
            )
        url = f"{self._path}/completions{self._query}"
        body = {"model": self.name, "prompt": request.prompt, "max_tokens": 1, "echo": True, "logprobs": 0,
                "temperature": 0}
        prompt = request.prompt
        response = await self._generate(url, body, public_url(url), parse=lambda data: echo_logprobs(data, prompt))
        return LabelScore.from_text(response.text)

    async def _generate(self, url: str, body: dict[str, Any], where: str,
                        parse: Callable[[Any], LabelScore] | None = None) -> Response:
        last: EndpointError | None = None
        wait: float | None = None
        all_refused = True
        for attempt in range(self.retry.max_retries + 1):
            if attempt:
                self.retries += 1
                await asyncio.sleep(self.retry.wait_s(attempt - 1, self._rng, wait))
            self.attempts += 1
            try:
                slot = self._take_slot()
                try:
                    return await self._attempt(slot, url, body, where, parse)
                finally:
                    self._free.append(slot)
            except _Retry as retry:
                last, wait = retry.error, retry.retry_after
                if not isinstance(retry.__cause__, httpx.ConnectError):
                    all_refused = False
        assert last is not None
        tries = self.retry.max_retries + 1
        attempts = f"{tries} attempt{'s' if tries != 1 else ''}"
        raise EndpointError(
            f"{last} (gave up after {attempts})", status=last.status, fatal=all_refused
        )

    async def _attempt(
        self, slot: httpx.AsyncBaseTransport, url: str, body: dict[str, Any], where: str,
        parse: Callable[[Any], LabelScore] | None = None,
    ) -> Response:
        start = time.perf_counter()
        payload = encode(body, compact=True, scrub=False).encode("utf-8")  # lone surrogates escaped
        try:
            # httpx's timeouts are per phase (connect, each read); this one bounds the attempt
            reply, content = await asyncio.wait_for(self._send(slot, url, payload), self.timeout_s)
        except httpx.ConnectError as exc:
            raise _Retry(EndpointError(f"cannot connect to {where}: {self._reason(exc)}")) from exc
        except (httpx.TimeoutException, asyncio.TimeoutError) as exc:
            raise _Retry(
                EndpointError(f"no answer from {where} within {self.timeout_s:g} s")
            ) from exc
        except httpx.TransportError as exc:  # dropped connection, protocol error
            raise _Retry(
                EndpointError(f"connection to {where} failed: {self._reason(exc)}")
            ) from exc
        except httpx.DecodingError as exc:  # a body its Content-Encoding does not fit
            raise _Retry(EndpointError(f"undecodable response from {where}: {self._reason(exc)}")) from exc
        latency_ms = (time.perf_counter() - start) * 1000
        status = reply.status_code
        if status >= 400:
            raise self._status_error(reply, content, where)
        if parse is not None:  # a score (the ppl mode): the logprobs, not the text
            return Response(text=parse(self._decode(content, where)).to_text(), latency_ms=round(latency_ms, 3))
        return self._parse(content, where, latency_ms)

    async def _send(self, slot: httpx.AsyncBaseTransport, url: str, payload: bytes) -> tuple[httpx.Response, bytes]:
        """POST ``payload`` and read the answer, at most :data:`RESPONSE_BYTES` of it."""
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = self._urls[url] = httpx.URL(url)
        request = httpx.Request("POST", parsed, content=payload, headers=self._request_headers(),
                                extensions={"timeout": self._timeouts})
        reply = await slot.handle_async_request(request)
        reply.request = request
        log_request(request, reply)
        try:
            chunks: list[bytes] = []
            size = 0
            async for chunk in reply.aiter_bytes():
                size += len(chunk)
                if size > RESPONSE_BYTES.value:
                    raise EndpointError(f"the response from {public_url(url)} is larger than {RESPONSE_BYTES}")
                chunks.append(chunk)
        finally:
            await reply.aclose()
        return reply, b"".join(chunks)

    def _reason(self, exc: Exception) -> str:
        return self.scrub(str(exc) or type(exc).__name__)

    def _status_error(self, reply: httpx.Response, content: bytes, where: str) -> Exception:
        status = reply.status_code
        text, code = self._error_text(content)
        message = f"HTTP {status} from {where}: {text}"
        if code == "insufficient_quota":
            return EndpointError(message + " (quota exhausted: not retried)", status=status, fatal=True)
        if RetryPolicy.retryable_status(status):
            wait = retry_after_s(reply.headers)
            error = EndpointError(message, status=status)
            if wait is not None and wait > self.retry.max_retry_after_s:
                return EndpointError(
                    f"{message} (the endpoint asked to retry after {wait:g} s, more than "
                    f"{self.retry.max_retry_after_s:g} s: not retried)",
                    status=status,
                )
            return _Retry(error, wait)
        if status == 401:
            message += f" (check the key in ${self.api_key_env})"
        elif status == 404:
            message += f" (check the base URL {self.public_base_url!r} and the model name {self.name!r})"
        return EndpointError(message, status=status, fatal=status in FATAL_STATUSES)

    def _error_text(self, content: bytes) -> tuple[str, str | None]:
        """The endpoint's own words: ``error.message`` (and ``code``) of an OpenAI error body."""
        raw = content.decode("utf-8", "replace")
        code: str | None = None
        text = raw.strip()
        try:
            data = decode(raw, strict=False)
        except JsonError:
            data = None
        if isinstance(data, dict):
            error = data.get("error", data)
            if isinstance(error, dict):
                message = error.get("message") or error.get("detail")
                code = error.get("code") or error.get("type")
                code = code if isinstance(code, str) else None
                if isinstance(message, str) and message:
                    text = message + (f" ({code})" if code else "")
            elif isinstance(error, str) and error:
                text = error
        if len(text) > _ERROR_TEXT_LIMIT:
            text = text[:_ERROR_TEXT_LIMIT] + "..."
        return self.scrub(text or "(empty body)"), code

    def _malformed(self, content: bytes, where: str, what: str) -> EndpointError:
        snippet = self.scrub(content[:200].decode("utf-8", "replace"))
        return EndpointError(f"malformed response from {where}: {what}; the body began {snippet!r}")

    def _decode(self, content: bytes, where: str) -> Any:
        try:
            return decode(content.decode("utf-8"), strict=False)
        except UnicodeDecodeError:
            raise self._malformed(content, where, "not UTF-8") from None
        except JsonError as exc:
            what = "not JSON" if not exc.message.startswith("nested") else exc.message
            raise self._malformed(content, where, what) from None

    def _parse(self, content: bytes, where: str, latency_ms: float) -> Response:
        def malformed(what: str) -> EndpointError:
            return self._malformed(content, where, what)

        data = self._decode(content, where)
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise malformed("no choices[0]")
        choice = choices[0]
        if "message" in choice:
            message = choice["message"]
            text = message.get("content") if isinstance(message, dict) else None
            if text is None and isinstance(message, dict) and "content" in message:
                text = ""  # a tool call or a refusal: no text
        else:
            text = choice.get("text")
        if not isinstance(text, str):
            raise malformed("choices[0] has no message.content or text string")
        finish = choice.get("finish_reason")
        return Response(
            text=text,
            finish_reason=finish if isinstance(finish, str) else None,
            usage=_usage(data.get("usage")),
            latency_ms=round(latency_ms, 3),
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        slots, self._slots, self._free = self._slots, [], []
        for slot in dict.fromkeys(slots):  # a transport given to the model is every slot's
            await slot.aclose()


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None

    def count(name: str) -> int | None:
        value = raw.get(name)
        return value if isinstance(value, int) else None

    return Usage(count("prompt_tokens"), count("completion_tokens"), count("total_tokens"))


def openai_model(
    name: str,
    *,
    base_url: str | None,
    api_key_env: str,
    endpoint: str,
    timeout_s: float,
    max_retries: int,
    environ: Mapping[str, str] | None = None,
    params: Mapping[str, Any] | None = None,
) -> OpenAIModel:
    """An :class:`OpenAIModel` from config values: base URL from the argument, else
    ``OPENAI_BASE_URL``, else OpenAI's; the key only from the variable ``api_key_env`` names."""
    env = os.environ if environ is None else environ
    if not name:
        raise ConfigError("openai: needs a model name, e.g. openai:qwen2.5-7b-instruct")
    url = base_url or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    problem = base_url_problem(url)
    if problem:
        source = "" if base_url else " (from $OPENAI_BASE_URL)"
        raise ConfigError(f"base URL {public_url(url)!r}{source} {problem}")
    install_log_filter()
    model = OpenAIModel("", endpoint=endpoint)  # only to check the params now, not at the first call
    model._url_and_body(ModelRequest("", params=dict(params or {})))
    return OpenAIModel(
        name,
        base_url=url,
        api_key=env.get(api_key_env),
        api_key_env=api_key_env,
        endpoint=endpoint,
        timeout_s=timeout_s,
        retry=RetryPolicy(max_retries=max_retries),
    )
