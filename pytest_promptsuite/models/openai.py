"""The ``openai:MODEL`` client for any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp, LiteLLM, OpenAI):
chat, completions and embeddings, one ``httpx.AsyncClient`` per model, retries, and every failure an EndpointError
in the endpoint's own words."""

from __future__ import annotations

import asyncio
import http.cookiejar
import ipaddress
import os
import random
import ssl
import time
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

import httpx

from pytest_promptsuite.config.settings import DEFAULT_CONCURRENCY
from pytest_promptsuite.config.settings import OPENAI_BASE_URL
from pytest_promptsuite.config.suite import base_url_problem
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.body import ACCEPT_ENCODING
from pytest_promptsuite.models.body import read_body
from pytest_promptsuite.models.concurrency import AdaptiveConcurrency
from pytest_promptsuite.models.http_transport import aiohttp_transport
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import Usage
from pytest_promptsuite.models.retry import CallRetries
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.retry import retry_after_s
from pytest_promptsuite.models.scoring import LabelScore
from pytest_promptsuite.models.scoring import echo_logprobs
from pytest_promptsuite.models.tool_calls import ToolCall
from pytest_promptsuite.safety.limits import RESPONSE_BYTES
from pytest_promptsuite.safety.scrub import install_log_filter
from pytest_promptsuite.safety.scrub import public_url as public_url
from pytest_promptsuite.safety.scrub import register
from pytest_promptsuite.safety.scrub import scrub
from pytest_promptsuite.safety.scrub import scrub_cut
from pytest_promptsuite.safety.scrub import secret_parameters


DEFAULT_BASE_URL = OPENAI_BASE_URL
#: Body keys the client sets itself; a config ``params`` entry may not replace them.
RESERVED_PARAMS = frozenset({"model", "messages", "prompt", "stream"})
#: The endpoints a model may call: a text prompt's (``chat`` or ``completions``), or ``embeddings``.
ENDPOINTS = ("chat", "completions", "embeddings")
#: Statuses after which every further call would fail the same way.
FATAL_STATUSES = frozenset({401, 404})
_ERROR_TEXT_LIMIT = 500
#: How much of a body that is no answer a message quotes.
_SNIPPET_CHARS = 200
#: The most of the ``model`` name an answer reports that is kept (a judge's fingerprint holds it).
_SERVED_CHARS = 200
#: The most of an answer's ``finish_reason`` a row keeps (``stop``, ``length``, ``content_filter``: a word).
_FINISH_CHARS = 40
#: A call's body is JSON we encode ourselves (lone surrogates escaped), sent as bytes.
_JSON = {"Content-Type": "application/json"}
#: What every POST to one endpoint path shares: its URL, headers and extensions (the timeouts).
_Post = tuple[httpx.URL, httpx.Headers, dict[str, Any]]


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
        if endpoint not in ENDPOINTS:
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
        self._clients: list[httpx.AsyncClient] = []
        self._posts: dict[str, _Post] = {}  # each endpoint path's URL, headers and timeouts
        #: The most connections the client keeps open (the runner's bound on calls in flight).
        self.connections = DEFAULT_CONCURRENCY
        #: Attempts sent, retries made and attempts answered 429 (the tests and the run's summary count them).
        self.attempts = 0
        self.retries = 0
        self.refused = 0
        #: Answers whose ``usage`` held a value that is no token count (taken as not reported; the summary says so).
        self.unreadable_usage = 0
        #: The adaptive bound whose answers and pauses every attempt takes (``concurrency = "auto"``), or None.
        self.pacing: AdaptiveConcurrency | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIModel({self.spec!r}, base_url={self.public_base_url!r})"

    @property
    def public_base_url(self) -> str:
        """The base URL without credentials, as messages and cache keys show it."""
        return public_url(self.base_url)

    def key_hint(self) -> str | None:
        """Say that the calls to a hosted endpoint will go without an API key (``api_key_env`` is not set); None when
        there is a key (or credentials in the URL) or the endpoint is local (a loopback, private or dotless host)."""
        url = httpx.URL(self.base_url)
        if self._api_key is not None or url.userinfo or secret_parameters(self.base_url) or not _hosted(url.host):
            return None  # a key, credentials in the URL (a proxy's), or a local server
        return (
            f"{self.spec}: ${self.api_key_env} is not set, so the calls to {self.public_base_url} go without an API "
            f"key (a hosted endpoint answers 401): export {self.api_key_env}, or set [model] api_key_env to the "
            "variable that holds the key"
        )

    def cache_identity(self) -> dict[str, Any]:
        """Return what, besides the request, decides the answer: the cache key's model part."""
        return {"model": self.spec, "base_url": self.public_base_url, "endpoint": self.endpoint}

    def embeddings(self, params: Mapping[str, Any] | None = None) -> OpenAIModel:
        """Return this model as its endpoint's ``/embeddings`` (same key, base URL, timeout and retries), each
        request's texts sent in one call; ``params`` (``dimensions``, ...) are checked now, not at the first call."""
        model = OpenAIModel(
            self.name,
            base_url=self.base_url,
            api_key=self._api_key,
            api_key_env=self.api_key_env,
            endpoint="embeddings",
            timeout_s=self.timeout_s,
            retry=self.retry,
            spec=self.spec,
            transport=self._transport,
        )
        model._route(ModelRequest("", params=dict(params or {})))
        return model

    def limit_connections(self, limit: int) -> None:
        """Keep at most ``limit`` connections open: the runner's bound on this model's calls."""
        self.connections = limit

    def pace(self, pacing: AdaptiveConcurrency) -> None:
        """Send each attempt within ``pacing`` (the adaptive bound on this model's attempts, after its pauses)
        and tell it every answer."""
        self.pacing = pacing

    @property
    def clients(self) -> tuple[httpx.AsyncClient, ...]:
        """The model's client, once made (one per model, whatever its bound)."""
        return tuple(self._clients)

    def client(self) -> httpx.AsyncClient:
        """Return the model's ``httpx.AsyncClient`` (its calls, and the Batch API's files and jobs, go through it)."""
        return (self._clients or self._open())[0]

    def _open(self) -> list[httpx.AsyncClient]:
        """Make the model's client at its first use (on the runner's event loop), of at most :attr:`connections`
        connections over aiohttp's pool (``http_transport.py``). No proxy from the environment, no redirect
        followed, no cookie kept."""
        limits = httpx.Limits(max_connections=self.connections, max_keepalive_connections=self.connections)
        verify = self._ssl_context()
        headers = {"Accept-Encoding": ACCEPT_ENCODING, **self._headers()}  # what read_body decodes
        self._clients = [
            httpx.AsyncClient(
                base_url=self._path,
                headers=headers,
                timeout=self.timeout_s,
                limits=limits,
                verify=verify,
                cookies=_no_cookies(),
                follow_redirects=False,
                trust_env=False,
                transport=self._transport or aiohttp_transport(limits, verify),
            )
        ]
        return self._clients

    def target(self, path: str) -> str:
        """Return the request target of the endpoint ``path`` (``/files``): the path and the base URL's query."""
        return path + self._query

    def _headers(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        return {"Authorization": f"Bearer {self._api_key}"}

    def _ssl_context(self) -> ssl.SSLContext:
        """Load the CA bundle for an ``https`` endpoint (once per model); ``http`` gets an empty context."""
        if self._path.lower().startswith("https:"):
            return httpx.create_ssl_context()
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    def _route(self, request: ModelRequest) -> tuple[str, dict[str, Any]]:
        """Return the endpoint path of ``request``'s call (``/chat/completions``) and its body."""
        embeddings = self.endpoint == "embeddings"
        params = _body_params(request.params, RESERVED_PARAMS | {"input"} if embeddings else RESERVED_PARAMS)
        prompt = request.prompt
        if embeddings:  # the texts: a string prompt, or each message's content
            texts = [prompt] if isinstance(prompt, str) else [str(m.get("content") or "") for m in prompt]
            return "/embeddings", {"model": self.name, "input": texts, **params}
        if isinstance(prompt, str) and self.endpoint == "completions":
            return "/completions", {"model": self.name, "prompt": prompt, **params}
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        return "/chat/completions", {"model": self.name, "messages": messages, **params}

    def _url_and_body(self, request: ModelRequest) -> tuple[str, dict[str, Any]]:
        """Return the whole URL of ``request``'s call and its body (a batch file's line)."""
        path, body = self._route(request)
        return self._path + self.target(path), body

    def scrub(self, text: str) -> str:
        """Replace the API key (however short) and every other secret in ``text``."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return scrub(text)

    async def generate(self, request: ModelRequest) -> Response:
        """Send one request, retrying transient failures; any failure is an EndpointError, scrubbed."""
        path, body = self._route(request)
        where = public_url(self._path + self.target(path))
        try:
            return await self._generate(path, body, where)
        except EndpointError:
            raise
        except Exception as exc:
            raise EndpointError(f"request to {where} failed: {type(exc).__name__}: {self._reason(exc)}") from None

    async def score(self, request: ModelRequest) -> LabelScore:
        """Score a string prompt for the ppl mode: its token log-probabilities from ``/v1/completions``
        with ``echo: true`` and ``logprobs`` (as vLLM serves them)."""
        if not isinstance(request.prompt, str):
            raise ModelError(
                'the ppl mode scores string prompts: give an LM meta template (or none) and endpoint = "completions"'
            )
        body: dict[str, Any] = dict(
            model=self.name, prompt=request.prompt, max_tokens=1, echo=True, logprobs=0, temperature=0
        )
        prompt = request.prompt
        where = public_url(self._path + self.target("/completions"))
        response = await self._generate("/completions", body, where, parse=lambda data: echo_logprobs(data, prompt))
        return LabelScore.from_text(response.text)

    async def _generate(
        self, path: str, body: dict[str, Any], where: str, parse: Callable[[Any], LabelScore] | None = None
    ) -> Response:
        if not self._clients:  # made (aiohttp imported) before any attempt's timeout starts counting
            self._open()
        send = self._attempt if self.pacing is None else self._paced_attempt  # a fixed bound: nothing new per attempt
        tries = CallRetries(self.retry, self._rng, paced=self.pacing is not None)
        refused = made = 0  # attempts refused a connection, attempts made
        while True:
            self.attempts += 1
            made += 1
            try:
                return await send(path, body, where, parse)
            except _Retry as retry:
                last = retry.error
                refused += isinstance(retry.__cause__, httpx.ConnectError)
                pause = tries.pause_s(last.status, retry.retry_after)
            if pause is None:
                raise self._gave_up(last, made, tries, all_refused=refused == made)
            self.retries += 1
            await asyncio.sleep(pause)

    def _gave_up(self, last: EndpointError, made: int, tries: CallRetries, *, all_refused: bool) -> EndpointError:
        """Return the error of a call that failed every attempt (fatal when every one was refused a connection)."""
        attempts = f"{made} attempt{'s' if made != 1 else ''}{tries.describe_limited()}"
        return EndpointError(f"{last} (gave up after {attempts})", status=last.status, fatal=all_refused)

    async def _paced_attempt(
        self, path: str, body: dict[str, Any], where: str, parse: Callable[[Any], LabelScore] | None = None
    ) -> Response:
        """Make an attempt within a slot of the adaptive bound (not held over a retry's wait), after any pause."""
        assert self.pacing is not None
        async with self.pacing:
            return await self._attempt(path, body, where, parse)

    async def _attempt(
        self, path: str, body: dict[str, Any], where: str, parse: Callable[[Any], LabelScore] | None = None
    ) -> Response:
        pacing = self.pacing
        start = time.perf_counter()
        payload = encode(body, compact=True, scrub=False).encode("utf-8")  # lone surrogates escaped
        try:
            # httpx's timeouts are per phase (connect, each read); this one bounds the attempt
            reply, content = await asyncio.wait_for(self._send(path, payload, where), self.timeout_s)
        except httpx.ConnectError as exc:
            raise _Retry(EndpointError(f"cannot connect to {where}: {self._reason(exc)}")) from exc
        except (TimeoutError, httpx.TimeoutException) as exc:
            if pacing is not None:
                pacing.overloaded(start)
            raise _Retry(
                EndpointError(
                    f"no answer from {where} within {self.timeout_s:g} s "
                    "(the timeout of one attempt: raise [model] timeout_s for a slow model)"
                )
            ) from exc
        except httpx.TransportError as exc:  # dropped connection, protocol error
            raise _Retry(EndpointError(f"connection to {where} failed: {self._reason(exc)}")) from exc
        except httpx.DecodingError as exc:  # a body its Content-Encoding does not fit
            raise _Retry(EndpointError(f"undecodable response from {where}: {self._reason(exc)}")) from exc
        latency_ms = (time.perf_counter() - start) * 1000
        status = reply.status_code
        if pacing is not None:
            pacing.answered(start, status, reply.headers)
        if status >= 400:
            raise self._status_error(reply, content, where)
        if parse is not None:  # a score (the ppl mode): the logprobs, not the text
            return Response(text=parse(self._decode(content, where)).to_text(), latency_ms=round(latency_ms, 3))
        response = self._parse(content, where, latency_ms)
        self.unreadable_usage += bool(response.usage and response.usage.unreadable)
        return response

    async def _send(self, path: str, payload: bytes, where: str) -> tuple[httpx.Response, bytes]:
        """POST ``payload`` and read the answer, at most :data:`RESPONSE_BYTES` of it, decoded or not."""
        client = (self._clients or self._open())[0]
        url, headers, extensions = self._posts.get(path) or self._post_to(client, path)
        request = httpx.Request("POST", url, headers=headers, content=payload, extensions=extensions)
        reply = await client.send(request, stream=True)
        try:
            return reply, await read_body(reply, RESPONSE_BYTES, where)
        finally:
            await reply.aclose()

    def _post_to(self, client: httpx.AsyncClient, path: str) -> _Post:
        """Return (and keep) what every POST to ``path`` shares, built by ``client`` once: its URL, its headers
        (the client's and ``Content-Type``; the length is each body's) and its timeouts."""
        shape = client.build_request("POST", self.target(path), headers=_JSON)
        del shape.headers["Content-Length"]
        self._posts[path] = post = (shape.url, shape.headers, shape.extensions)
        return post

    def _reason(self, exc: Exception) -> str:
        return self.scrub(str(exc) or type(exc).__name__)

    def _status_error(self, reply: httpx.Response, content: bytes, where: str) -> Exception:
        status = reply.status_code
        if status == 429:
            self.refused += 1
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
        """Return the endpoint's own words: ``error.message`` (and ``code``) of an OpenAI error body."""
        raw = content.decode("utf-8", "replace")
        code: str | None = None
        text = raw.strip()
        try:
            data = decode(raw, strict=False)
        except JsonError:
            data = None
        if isinstance(data, dict):
            text, code = _error_words(data.get("error", data), text)
        kept, _, after = scrub_cut(text or "(empty body)", _ERROR_TEXT_LIMIT)  # scrubbed, then cut
        return kept + "..." if after else kept, code

    def _malformed(self, content: bytes, where: str, what: str) -> EndpointError:
        snippet = scrub_cut(content.decode("utf-8", "replace"), _SNIPPET_CHARS).text
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
        if self.endpoint == "embeddings":
            return _embeddings(data, malformed, latency_ms)
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise malformed("no choices[0]")
        choice = choices[0]
        text, calls = _choice_text(choice)
        if not isinstance(text, str):
            raise malformed("choices[0] has no message.content or text string")
        finish = choice.get("finish_reason")
        return Response(
            text=text,
            finish_reason=finish[:_FINISH_CHARS] if isinstance(finish, str) else None,  # a word, not a text
            usage=_usage(data.get("usage")),
            latency_ms=round(latency_ms, 3),
            tool_calls=calls,
            model=served[:_SERVED_CHARS] if isinstance(served := data.get("model"), str) and served else None,
        )

    async def aclose(self) -> None:
        """Close the clients and their connections (the runner does, before its event loop stops)."""
        clients, self._clients = self._clients, []
        self._posts = {}
        for client in clients:
            await client.aclose()


def _body_params(given: Mapping[str, Any], reserved: frozenset[str] | set[str]) -> dict[str, Any]:
    """Return a request's params with ``extra_body``'s fields among them; none may set a ``reserved`` field."""
    params = dict(given)
    extra = params.pop("extra_body", None) or {}
    if not isinstance(extra, Mapping):
        raise ConfigError("params.extra_body must be a table of extra request fields")
    params.update(extra)
    taken = sorted(reserved & set(params))
    if taken:
        raise ConfigError(f"params may not set {taken[0]!r}: the client sets it from the spec and the prompt")
    return params


def _error_words(error: Any, text: str) -> tuple[str, str | None]:
    """Return an error body's ``message`` (with its ``code``) and that code; ``text`` when it has no message."""
    if isinstance(error, str) and error:
        return error, None
    if not isinstance(error, dict):
        return text, None
    message = error.get("message") or error.get("detail")
    code = error.get("code") or error.get("type")
    code = code if isinstance(code, str) else None
    if isinstance(message, str) and message:
        return message + (f" ({code})" if code else ""), code
    return text, code


def _choice_text(choice: dict[str, Any]) -> tuple[Any, tuple[ToolCall, ...]]:
    """Return a choice's text (its ``message.content``, ``""`` beside tool calls or a refusal; else its ``text``)
    and its tool calls."""
    if "message" not in choice:
        return choice.get("text"), ()
    message = choice["message"]
    if not isinstance(message, dict):
        return None, ()
    text = message.get("content")
    calls: tuple[ToolCall, ...] = ()
    if isinstance(message.get("tool_calls"), list):
        calls = tuple(ToolCall.from_openai(raw, i) for i, raw in enumerate(message["tool_calls"]))
    if text is None and ("content" in message or calls):
        text = ""  # a tool call or a refusal: no text
    return text, calls


def _embeddings(data: Any, malformed: Callable[[str], EndpointError], latency_ms: float) -> Response:
    """Return an ``/embeddings`` answer as a response whose text is the vectors, in input order, as a JSON list
    (what the response cache and cassettes keep); ``usage`` has its prompt and total tokens."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise malformed("no data[] of embeddings")
    vectors = [_vector(item, position, malformed) for position, item in enumerate(items)]
    vectors.sort(key=lambda pair: pair[0])
    text = encode([vector for _, vector in vectors], compact=True, scrub=False)
    return Response(text=text, usage=_usage(data.get("usage")), latency_ms=round(latency_ms, 3))


def _vector(item: Any, position: int, malformed: Callable[[str], EndpointError]) -> tuple[int, list[float]]:
    """Return an embedding item's index (its position when it has none) and vector."""
    vector = item.get("embedding") if isinstance(item, dict) else None
    if not isinstance(vector, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
        raise malformed(f"data[{position}] has no embedding list of numbers")
    index = item.get("index", position)
    return index if isinstance(index, int) else position, vector


def _usage(raw: Any) -> Usage | None:
    """Return an answer's ``usage`` (whatever is no token count in it taken as not reported: :class:`Usage`)."""
    if not isinstance(raw, dict):
        return None
    return Usage(raw.get("prompt_tokens"), raw.get("completion_tokens"), raw.get("total_tokens"))


def _hosted(host: str) -> bool:
    """Tell whether ``host`` looks hosted: a name with a dot (not ``*.localhost``, ``*.local``, ``*.internal``) or a
    public address."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." in host and not host.endswith(_LOCAL_SUFFIXES)
    return address.is_global


#: The suffixes of host names that are never a hosted API's.
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")


def _no_cookies() -> http.cookiejar.CookieJar:
    """Make a cookie jar that keeps no cookie: no call carries what an earlier answer set."""
    return http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


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
    """Make an :class:`OpenAIModel` from config values.

    The base URL is the argument, else ``OPENAI_BASE_URL``, else OpenAI's; the key comes only from the
    variable ``api_key_env`` names.
    """
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
    model._route(ModelRequest("", params=dict(params or {})))
    return OpenAIModel(
        name,
        base_url=url,
        api_key=env.get(api_key_env),
        api_key_env=api_key_env,
        endpoint=endpoint,
        timeout_s=timeout_s,
        retry=RetryPolicy(max_retries=max_retries),
    )
