"""A lean HTTP/1.1 transport for plain ``http://`` endpoints: one asyncio protocol per connection.

The runner's event loop thread shares one GIL with pytest's main thread, so every step it takes
per call holds the concurrency bound back, and every system call hands the GIL to the main thread,
which may keep it for a switch interval. httpx's own transport spends most of that thread's time
in httpcore's pool, h11's state machine and anyio's stream layers, and polls a kept-alive socket
before and after each call. :class:`Http11Transport` speaks the same HTTP/1.1 on asyncio's own
socket transport: the request sent in one write, the answer parsed from the bytes as they arrive
(status line, headers, a body framed by ``Content-Length``, chunked encoding or the close); a
kept-alive connection is polled only after a second of idleness. It takes and returns httpx's
types (``httpx.Request`` in; ``httpx.Response`` over a byte stream out, so decoding and the log
line stay httpx's) and raises httpx's exceptions, as httpx's transports do. ``https://`` stays on
httpx's transport (:mod:`.transport`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import select
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx


__all__ = ["Http11Transport", "log_request", "readable"]

#: httpx's own logger: a call sent to a transport directly is logged as httpx would log it (the
#: scrubber's filter sits on this logger).
_LOG = logging.getLogger("httpx")

#: The longest status line plus headers accepted (as httpcore's h11 connection allows).
MAX_HEAD = 100 * 1024
#: A kept-alive connection idle longer than this is polled before reuse: the server may have
#: closed it, and the loop may not have seen that yet.
IDLE_CHECK_S = 1.0
_NO_BODY_STATUSES = frozenset({204, 304})
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


def readable(sock: socket.socket) -> bool:
    """Whether a read would not block (at an idle kept-alive connection: the server closed it);
    a closed socket counts as readable, as in httpcore."""
    fd = sock.fileno()
    if fd < 0:
        return True
    if not hasattr(select, "poll"):  # Windows
        return bool(select.select([fd], [], [], 0)[0])
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class _Connection(asyncio.Protocol):
    """One connection: the bytes received and not parsed yet, and a waiter woken when more come."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.closed = False  # the peer's EOF, a reset, or our close
        self.error: BaseException | None = None
        self.idle_since = 0.0
        self._waiter: asyncio.Future[bool] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """asyncio: connected."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        """asyncio: bytes arrived."""
        self.buffer += data
        self._wake()

    def eof_received(self) -> None:
        """asyncio: the peer closed its side (the transport then closes)."""
        self.closed = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        """asyncio: the connection is gone (``exc``: a reset, a failed send)."""
        self.closed = True
        self.error = self.error or exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    async def more(self, timeout: float | None, request: httpx.Request) -> None:
        """Wait until more bytes or the close arrive; ``httpx.ReadTimeout`` after ``timeout``."""
        if self.closed:
            return
        waiter = self._waiter = self.loop.create_future()
        timer = None if timeout is None else self.loop.call_later(timeout, _expire, waiter)
        try:
            arrived = await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
        if not arrived:
            raise httpx.ReadTimeout("timed out waiting for the response", request=request)

    def failure(self, what: str, request: httpx.Request) -> httpx.TransportError:
        """The error for a connection that ended early: the socket's own (a reset) or ``what``."""
        if self.error is not None:
            return httpx.ReadError(str(self.error) or type(self.error).__name__, request=request)
        return httpx.RemoteProtocolError(what, request=request)

    async def line(self, timeout: float | None, request: httpx.Request) -> bytes:
        """One line of a chunked body (its size line or a trailer), without its line end."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end]).rstrip(b"\r")
                del self.buffer[:end + 1]
                return line
            if len(self.buffer) > MAX_HEAD:
                raise httpx.RemoteProtocolError("chunk size line too long", request=request)
            if self.closed:
                raise self.failure("peer closed connection without sending complete message body: "
                                   "incomplete chunked read", request)
            await self.more(timeout, request)

    def reusable(self, now: float, expiry: float | None) -> bool:
        """Whether a kept-alive connection may carry the next request."""
        if self.closed or self.buffer or self.transport is None or self.transport.is_closing():
            return False
        idle = now - self.idle_since
        if expiry is not None and idle > expiry:
            return False
        sock = self.transport.get_extra_info("socket")
        return idle <= IDLE_CHECK_S or sock is None or not readable(sock)

    def close(self) -> None:
        """Close the connection (anything unsent is dropped)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


class _Head:
    """A response's status line and headers, and how its body is framed."""

    def __init__(self, raw: bytes, request: httpx.Request) -> None:
        lines = raw.split(b"\n")
        version, _, rest = lines[0].rstrip(b"\r").partition(b" ")
        code, _, reason = rest.partition(b" ")
        if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
            raise httpx.RemoteProtocolError(f"malformed status line {lines[0][:100]!r}", request=request)
        self.version, self.status, self.reason = version, int(code), reason
        self.headers: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            line = line.rstrip(b"\r")
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip() or line[:1] in (b" ", b"\t"):
                raise httpx.RemoteProtocolError(f"malformed header line {line[:100]!r}", request=request)
            self.headers.append((name, value.strip(b" \t")))

    def values(self, name: bytes) -> list[bytes]:
        """Every value of header ``name`` (lower case), comma-separated lists split."""
        return [part.strip().lower() for key, value in self.headers if key.lower() == name
                for part in value.split(b",")]

    def framing(self, method: str, request: httpx.Request) -> tuple[str, int]:
        """``("none", 0)``, ``("length", n)``, ``("chunked", 0)`` or ``("close", 0)``."""
        if method == "HEAD" or self.status in _NO_BODY_STATUSES or self.status < 200:
            return "none", 0
        encodings = self.values(b"transfer-encoding")
        if encodings:
            if encodings != [b"chunked"]:
                raise httpx.RemoteProtocolError(f"unsupported Transfer-Encoding {encodings!r}", request=request)
            return "chunked", 0
        lengths = set(self.values(b"content-length"))
        if not lengths:
            return "close", 0
        if len(lengths) != 1 or not next(iter(lengths)).isdigit():
            raise httpx.RemoteProtocolError(f"bad Content-Length {sorted(lengths)!r}", request=request)
        return "length", int(next(iter(lengths)))

    def keep_alive(self) -> bool:
        """Whether the server lets the connection carry another request after this answer."""
        return (self.version == b"HTTP/1.1" and self.status != 101  # 101: the connection is no longer HTTP
                and b"close" not in self.values(b"connection"))


async def _read_head(conn: _Connection, timeout: float | None, request: httpx.Request) -> _Head:
    """The next final (not 1xx) response head from ``conn``."""
    while True:
        end = conn.buffer.find(b"\r\n\r\n")
        size = 4
        if end < 0:
            end, size = conn.buffer.find(b"\n\n"), 2
        if end >= 0:
            head = _Head(bytes(conn.buffer[:end]), request)
            del conn.buffer[:end + size]
            if 100 <= head.status < 200 and head.status != 101:
                continue  # informational (100 Continue, 103 Early Hints): the answer follows
            return head
        if len(conn.buffer) > MAX_HEAD:
            raise httpx.RemoteProtocolError(f"response head larger than {MAX_HEAD} bytes", request=request)
        if conn.closed:
            raise conn.failure("Server disconnected without sending a response.", request)
        await conn.more(timeout, request)


class _Body(httpx.AsyncByteStream):
    """A response body as it arrives; the connection goes back to the transport once read whole."""

    def __init__(self, owner: Http11Transport, conn: _Connection, head: _Head, request: httpx.Request,
                 timeout: float | None, *, keep: bool) -> None:
        self._owner, self._conn, self._request, self._timeout = owner, conn, request, timeout
        self._framing = head.framing(request.method, request)
        self._keep = keep and head.keep_alive() and self._framing[0] != "close"
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """The body's bytes (chunked encoding removed)."""
        kind, length = self._framing
        if kind == "length":
            async for part in self._exactly(length, None):
                yield part
        elif kind == "chunked":
            async for part in self._chunked():
                yield part
        elif kind == "close":
            async for part in self._until_close():
                yield part
        self._done = True
        self._owner.release(self._conn, reuse=self._keep)

    async def _exactly(self, length: int, what: str | None) -> AsyncIterator[bytes]:
        """``length`` bytes as they arrive; ``what`` the error if the peer closes first (None: how
        many came of how many)."""
        conn, remaining = self._conn, length
        while remaining:
            if not conn.buffer:
                if conn.closed:
                    raise conn.failure(what or "peer closed connection without sending complete message body: "
                                       f"received {length - remaining} bytes, expected {length}", self._request)
                await conn.more(self._timeout, self._request)
                continue
            part = bytes(conn.buffer[:remaining])
            del conn.buffer[:len(part)]
            remaining -= len(part)
            yield part

    async def _chunked(self) -> AsyncIterator[bytes]:
        conn = self._conn
        incomplete = "peer closed connection without sending complete message body: incomplete chunked read"
        while True:
            size_line = (await conn.line(self._timeout, self._request)).partition(b";")[0].strip()
            if not _HEX.fullmatch(size_line):  # int() alone would take "-5", "+5" and "1_0"
                raise httpx.RemoteProtocolError(f"bad chunk size {size_line[:20]!r}", request=self._request)
            size = int(size_line, 16)
            if size == 0:
                while await conn.line(self._timeout, self._request):  # trailers, up to an empty line
                    pass
                return
            async for part in self._exactly(size, incomplete):
                yield part
            if await conn.line(self._timeout, self._request):
                raise httpx.RemoteProtocolError("a chunk longer than its size", request=self._request)

    async def _until_close(self) -> AsyncIterator[bytes]:
        conn = self._conn
        while conn.buffer or not conn.closed:
            if conn.buffer:
                part = bytes(conn.buffer)
                conn.buffer.clear()
                yield part
            else:
                await conn.more(self._timeout, self._request)
        if conn.error is not None:
            raise conn.failure("", self._request)

    async def aclose(self) -> None:
        """Done with the body: a connection whose answer was not read whole is closed."""
        if not self._done:
            self._done = True
            self._owner.release(self._conn, reuse=False)


class Http11Transport(httpx.AsyncBaseTransport):
    """httpx's async transport interface for ``http://`` URLs: HTTP/1.1 over asyncio's sockets,
    at most ``max_keepalive`` idle connections kept for ``keepalive_expiry`` seconds (httpx's
    defaults)."""

    def __init__(self, *, max_keepalive: int = 20, keepalive_expiry: float | None = 5.0) -> None:
        self._max_keepalive = max_keepalive
        self._expiry = keepalive_expiry
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response once the head arrived (the body streams)."""
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"only http:// URLs, not {request.url.scheme!r}", request=request)
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        payload, close = await _request_bytes(request)
        conn = await self._connection(request, timeouts.get("connect"))
        try:
            assert conn.transport is not None
            conn.transport.write(payload)
            head = await _read_head(conn, timeouts.get("read"), request)
            body = _Body(self, conn, head, request, timeouts.get("read"), keep=not close)
        except BaseException:
            self.release(conn, reuse=False)
            raise
        return httpx.Response(head.status, headers=head.headers, stream=body,
                              extensions={"http_version": head.version, "reason_phrase": head.reason})

    async def _connection(self, request: httpx.Request, timeout: float | None) -> _Connection:
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable(now, self._expiry):
                return conn
            self.release(conn, reuse=False)
        url = request.url
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(loop), url.host, url.port or 80), timeout)
        except (asyncio.TimeoutError, TimeoutError) as exc:
            raise httpx.ConnectTimeout(f"timed out connecting to {url.host}:{url.port or 80}",
                                       request=request) from exc
        except socket.gaierror as exc:  # the host name does not resolve
            raise httpx.ConnectError(str(exc), request=request) from exc
        except OSError as exc:  # refused, unreachable: in the words of httpx's own transport (anyio's)
            raise httpx.ConnectError("All connection attempts failed", request=request) from exc
        self._open.add(conn)
        return conn

    def release(self, conn: _Connection, *, reuse: bool) -> None:
        """An answer was read whole (``reuse``: kept alive) or given up on (closed)."""
        if reuse and not conn.closed and not conn.buffer and len(self._idle) < self._max_keepalive:
            conn.idle_since = conn.loop.time()
            self._idle.append(conn)
            return
        conn.close()
        self._open.discard(conn)

    async def aclose(self) -> None:
        """Close every connection."""
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()


async def _request_bytes(request: httpx.Request) -> tuple[bytes, bool]:
    """The request as sent (its line, headers and body; a body of unknown length as one chunk),
    and whether it asks the server to close the connection after answering."""
    body = await request.aread()
    raw = request.headers.raw
    fields = [name + b": " + value for name, value in raw]
    if any(b"\r" in field or b"\n" in field for field in fields):
        name = next(name for name, value in raw if b"\r" in name + value or b"\n" in name + value)
        raise httpx.LocalProtocolError(f"illegal header {name.decode('latin-1')!r}", request=request)
    request_line = b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)
    head = b"\r\n".join([request_line, *fields]) + b"\r\n\r\n"
    close = chunked = False
    for name, value in raw:
        lowered = name.lower()
        if lowered == b"connection":
            close = close or b"close" in value.lower()
        elif lowered == b"transfer-encoding":
            chunked = value.strip().lower() == b"chunked"
    if chunked:
        return head + (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n", close
    return head + body, close


def log_request(request: httpx.Request, response: httpx.Response) -> None:
    """Log a call as ``httpx.AsyncClient`` does (INFO ``HTTP Request: POST <url> "HTTP/1.1 200 OK"``)."""
    if _LOG.isEnabledFor(logging.INFO):  # else not even the URL is formatted
        _LOG.info('HTTP Request: %s %s "%s %d %s"', request.method, request.url, response.http_version,
                  response.status_code, response.reason_phrase)
