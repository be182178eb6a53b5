"""The HTTP transport of :class:`~pytest_promptsuite.models.openai.OpenAIModel` for ``https://``
endpoints: httpx's own, over a network stream that costs the event loop less per call (a plain
``http://`` endpoint's is :mod:`.http11`).

httpcore writes a request's head and body in two socket sends and, before reusing a kept-alive
connection and again after each answer, asks the stream whether the socket is readable, which
anyio answers by building the socket's attributes afresh (a ``getpeername`` system call each
time) before polling it. On the runner's one event loop thread, shared with pytest's main thread
under one GIL, each system call is a chance to lose the GIL for up to a switch interval: in a
profile of that thread over 1,000 calls these system calls took 1.8 s of its 11.9 s, most of it
waiting to get the GIL back.
:class:`_Stream` keeps what the request writes until the first read and sends it in one write,
and polls the socket it looked up once. Everything else (TLS, timeouts, errors) is httpcore's
AnyIO backend, unchanged.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from pytest_promptsuite.models.http11 import readable


__all__ = ["http_transport"]

class _Stream(httpcore.AsyncNetworkStream):
    """httpcore's AnyIO stream, with the writes before a read sent in one write."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._pending: list[bytes] = []
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def _flush(self, timeout: float | None) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            await self._inner.write(data, timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Send what was written, then read (HTTP/1.1: a request is written whole before its
        answer is read). A failed send is left to the read, as httpcore does with a failed write
        (a server may answer, then close, before reading the whole request)."""
        try:
            await self._flush(timeout)
        except httpcore.WriteError:
            pass
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Keep ``buffer`` for the next read (or close)."""
        if buffer:
            self._pending.append(buffer)

    async def aclose(self) -> None:
        """Close the connection (what was written and never read after is dropped with it)."""
        self._pending.clear()
        await self._inner.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        """TLS over this connection (a proxy's CONNECT answer was read: nothing is pending)."""
        await self._flush(timeout)
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        """httpcore's ``is_readable`` from the socket looked up once; anything else as AnyIO says."""
        if info == "is_readable" and self._socket is not None:
            return readable(self._socket)
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    """httpcore's AnyIO backend, its streams wrapped in :class:`_Stream`."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        """A TCP connection to ``host:port``."""
        return _Stream(await self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        """A connection to a Unix socket."""
        return _Stream(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        """Sleep (httpcore's retries of a connection)."""
        await self._inner.sleep(seconds)


def http_transport(ssl_context: ssl.SSLContext, limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """httpx's transport with its connection pool on :class:`_Backend`: the same pool httpx makes
    (HTTP/1.1, no proxy, the same ``limits``), over the leaner stream."""
    transport = httpx.AsyncHTTPTransport(verify=ssl_context, limits=limits, trust_env=False)
    if isinstance(getattr(transport, "_pool", None), httpcore.AsyncConnectionPool):  # else httpx's as it is
        transport._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(),
        )
    return transport
