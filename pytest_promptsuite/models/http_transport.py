"""The transport under a model's ``httpx.AsyncClient``: aiohttp's connection pool through httpx-aiohttp, with no
cookie, no proxy from the environment, bodies left encoded, and aiohttp's failures raised as httpx's errors."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx


if TYPE_CHECKING:
    import aiohttp


def aiohttp_transport(limits: httpx.Limits, verify: ssl.SSLContext) -> httpx.AsyncBaseTransport:
    """Make one model's transport: one aiohttp session of at most ``limits.max_connections`` connections (made on
    the event loop at the first call), that keeps no cookie, reads no proxy from the environment and leaves a body
    as it was sent (``read_body`` decodes it within its bound)."""
    from httpx_aiohttp import AiohttpTransport  # aiohttp is imported by a run that calls an endpoint, no other

    def session() -> aiohttp.ClientSession:
        import aiohttp

        connector = aiohttp.TCPConnector(
            limit=limits.max_connections or 0, ssl=verify, keepalive_timeout=limits.keepalive_expiry or 0
        )
        return aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False, auto_decompress=False
        )

    return _HttpxErrors(AiohttpTransport(verify=verify, trust_env=False, limits=limits, client=session))


class _HttpxErrors(httpx.AsyncBaseTransport):
    """A transport that raises every aiohttp failure, of a request or of reading its body, as the httpx error it
    is (a dropped connection is no timeout, a malformed answer no unknown exception)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; its answer's body is read through :class:`_Body`."""
        with _as_httpx_errors():
            response = await self._inner.handle_async_request(_streamed(request))
        assert isinstance(response.stream, httpx.AsyncByteStream)
        if response.status_code < 200:  # a 101 nobody asked for: the connection is no longer HTTP
            await _Body(response.stream).aclose()
            raise httpx.RemoteProtocolError(
                f"the server answered {response.status_code} to a request that asked no protocol switch",
                request=request,
            )
        response.stream = _Body(response.stream)
        return response

    async def aclose(self) -> None:
        """Close the session and its connections."""
        await self._inner.aclose()


class _Body(httpx.AsyncByteStream):
    """An answer's body, its failures raised as httpx errors."""

    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self._inner = inner
        self._read = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._inner:
                yield chunk
        self._read = True

    async def aclose(self) -> None:
        """Give the connection back; close it if its answer was not read to the end (never reused, as httpcore)."""
        response = getattr(self._inner, "_aiohttp_response", None)  # httpx-aiohttp's stream holds it
        if not self._read and response is not None:  # its release() would keep the connection of a body not read
            response.close()
        with _as_httpx_errors():
            await self._inner.aclose()


#: The largest body aiohttp takes as bytes without a ``ResourceWarning`` (an error under ``-W error``).
_BYTES_BODY = 2**20


def _streamed(request: httpx.Request) -> httpx.Request:
    """Return ``request`` with a body past :data:`_BYTES_BODY` as a stream of the same bytes: sent the same, with
    its ``Content-Length``, and no warning."""
    try:
        content = request.content
    except httpx.RequestNotRead:  # a stream already (a multipart upload): aiohttp sends it piece by piece
        return request
    if len(content) <= _BYTES_BODY:
        return request
    stream = _Pieces(content)
    return httpx.Request(
        request.method, request.url, headers=request.headers, stream=stream, extensions=request.extensions
    )


class _Pieces(httpx.AsyncByteStream):
    """A request body sent a piece at a time."""

    def __init__(self, content: bytes) -> None:
        self._content = memoryview(content)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self._content), _BYTES_BODY):
            yield bytes(self._content[start : start + _BYTES_BODY])


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """Raise an aiohttp failure (raised as it is, or mapped by httpx-aiohttp) as its httpx error."""
    try:
        yield
    except Exception as exc:
        cause = exc.__cause__ if isinstance(exc, httpx.TransportError) and exc.__cause__ is not None else exc
        error = _httpx_error(cause)
        if error is None or type(exc) is error:
            raise
        raise error(_message(cause, error)) from cause


def _message(cause: BaseException, error: type[httpx.TransportError]) -> str:
    """Return what ``cause`` says as ``error``: a refused connection in httpcore's words (aiohttp's name the host
    and ``ssl:default`` for plain HTTP), a TLS failure in its own."""
    import aiohttp

    if error is httpx.ConnectError and not isinstance(cause, aiohttp.ClientSSLError):
        return _CONNECT_FAILED
    return str(cause) or type(cause).__name__


#: What a connection that could not be made says.
_CONNECT_FAILED = "All connection attempts failed"


def _httpx_error(exc: BaseException) -> type[httpx.TransportError] | None:
    """Return the httpx error an aiohttp failure is (None for any other exception)."""
    import aiohttp

    table: tuple[tuple[type[BaseException], type[httpx.TransportError]], ...] = (
        (aiohttp.ClientConnectorError, httpx.ConnectError),
        (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),
        (aiohttp.ServerTimeoutError, httpx.ReadTimeout),
        (aiohttp.ClientPayloadError, httpx.ReadError),
        (aiohttp.ClientError, httpx.RemoteProtocolError),  # a dropped connection, a malformed answer
        (ValueError, httpx.LocalProtocolError),  # a request aiohttp will not send (a line break in a header)
    )
    return next((error for kind, error in table if isinstance(exc, kind)), None)
