"""The plain-``http://`` transport (``models/http11.py``) on real sockets: the loopback server, and a
raw TCP server on 127.0.0.1 that answers each request with bytes a test writes (framings and
faults no well-behaved server sends)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import socket
import subprocess
import sys
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_promptsuite.models import http11
from pytest_promptsuite.models.http11 import Http11Transport
from tests.loopback import LoopbackServer


#: One scripted answer: the bytes to send back, then whether to close the connection.
Answer = tuple[bytes, bool]


class RawServer:
    """Answers the n-th request with ``answers[n]``; counts connections and keeps each request."""

    def __init__(self, answers: list[Answer | None]) -> None:
        self.answers = answers
        self.connections = 0
        self.requests: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for handler in self._handlers:
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                self.requests.append(head + await reader.readexactly(length))
                answer = self.answers[len(self.requests) - 1]
                if answer is None:  # hang: never answer
                    await asyncio.sleep(3600)
                    return
                writer.write(answer[0])
                await writer.drain()
                if answer[1]:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def url(self, path: str = "/v1/chat/completions") -> str:
        """The server's URL for ``path``."""
        return f"http://127.0.0.1:{self.port}{path}"


def _ok(body: bytes = b'{"ok": true}', *extra: bytes) -> bytes:
    fields = b"".join(h + b"\r\n" for h in extra)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), fields, body)


def _run(answers: list[Answer | None],
         scenario: Callable[[RawServer, Http11Transport], Awaitable[Any]]) -> tuple[RawServer, Any]:
    async def main() -> tuple[RawServer, Any]:
        async with RawServer(answers) as server:
            transport = Http11Transport(max_keepalive=1)
            try:
                return server, await scenario(server, transport)
            finally:
                await transport.aclose()

    return asyncio.run(main())


async def _post(transport: Http11Transport, url: str, body: bytes = b"{}", *, read_s: float | None = 5.0,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = httpx.Request("POST", url, content=body, headers=headers,
                            extensions={"timeout": {"connect": 5.0, "read": read_s, "write": 5.0, "pool": 5.0}})
    response = await transport.handle_async_request(request)
    try:
        return response.status_code, b"".join([part async for part in response.aiter_bytes()])
    finally:
        await response.aclose()


async def _twice(server: RawServer, transport: Http11Transport) -> list[tuple[int, bytes]]:
    return [await _post(transport, server.url()), await _post(transport, server.url())]


def test_against_the_loopback_server_a_connection_is_kept_alive(loopback: LoopbackServer) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "kept"}]}).encode()

    async def scenario() -> list[int]:
        transport = Http11Transport(max_keepalive=1)
        try:
            statuses = []
            for _ in range(3):
                status, content = await _post(transport, f"{loopback.base_url}/chat/completions", body)
                assert json.loads(content)["choices"][0]["message"]["content"] == "kept"
                statuses.append(status)
            assert len(transport._open) == 1  # one connection carried all three
            return statuses
        finally:
            await transport.aclose()

    assert asyncio.run(scenario()) == [200, 200, 200]
    assert loopback.stats.requests == 3


def test_the_request_goes_out_whole_with_httpx_headers() -> None:
    server, _ = _run([(_ok(), False)], lambda s, t: _post(t, s.url("/v1/x?api-version=1"), b'{"a": 1}',
                                                           headers={"Authorization": "Bearer k"}))

    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/x?api-version=1 HTTP/1.1"
    assert {b"Host: 127.0.0.1:%d" % server.port, b"Content-Length: 8", b"Authorization: Bearer k"} <= set(lines)
    assert body == b'{"a": 1}'


def test_a_chunked_body_with_extensions_and_trailers_keeps_the_connection() -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
    server, answers = _run([(chunked, False), (_ok(b"again"), False)], _twice)

    assert answers == [(200, b"hello world"), (200, b"again")]
    assert server.connections == 1


def test_a_body_to_the_close_is_read_and_the_next_request_opens_a_new_connection() -> None:
    to_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"
    server, answers = _run([(to_close, True), (_ok(b"fresh"), False)], _twice)

    assert answers == [(200, b"until the end"), (200, b"fresh")]
    assert server.connections == 2


def test_an_http_1_0_answer_is_not_kept_alive() -> None:
    server, answers = _run([(_ok().replace(b"HTTP/1.1", b"HTTP/1.0"), False), (_ok(b"b"), False)], _twice)

    assert [status for status, _ in answers] == [200, 200]
    assert server.connections == 2


def test_a_switching_protocols_answer_is_final_and_ends_the_connection() -> None:
    server, answers = _run([(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", False),
                            (_ok(b"fresh"), False)], _twice)

    assert answers == [(101, b""), (200, b"fresh")]
    assert server.connections == 2


def test_an_http_endpoint_never_imports_httpcore(loopback: LoopbackServer) -> None:
    """httpx imports httpcore lazily; only an https endpoint's transport needs it."""
    code = ("import sys; from pytest_promptsuite.models.openai import OpenAIModel; "
            "from pytest_promptsuite.models.runner import ModelRunner; "
            "from pytest_promptsuite.models.base import ModelRequest; "
            "runner = ModelRunner(); model = runner.attach(OpenAIModel('m', base_url=sys.argv[1])); "
            "print(runner.call(model, ModelRequest('light')).text, 'httpcore' in sys.modules); runner.close()")
    done = subprocess.run([sys.executable, "-c", code, loopback.base_url], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})

    assert done.stdout.split() == ["light", "False"]


def test_informational_answers_are_skipped() -> None:
    answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + _ok(b"final")
    _, answers = _run([(answer, False)], lambda s, t: _post(t, s.url()))

    assert answers == (200, b"final")


def test_a_gzip_body_is_decoded_by_httpx() -> None:
    packed = gzip.compress(b'{"zipped": true}')
    _, answers = _run([(_ok(packed, b"Content-Encoding: gzip"), False)], lambda s, t: _post(t, s.url()))

    assert answers == (200, b'{"zipped": true}')


def test_a_no_content_answer_has_no_body_and_keeps_the_connection() -> None:
    server, answers = _run([(b"HTTP/1.1 204 No Content\r\n\r\n", False), (_ok(b"next"), False)], _twice)

    assert answers == [(204, b""), (200, b"next")]
    assert server.connections == 1


@pytest.mark.parametrize(("answer", "error", "message"), [
    (b"", httpx.RemoteProtocolError, "Server disconnected without sending a response."),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf", httpx.RemoteProtocolError,
     "received 4 bytes, expected 10"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", httpx.RemoteProtocolError,
     "incomplete chunked read"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", httpx.RemoteProtocolError, "bad chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", httpx.RemoteProtocolError,
     "bad chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1_0\r\n", httpx.RemoteProtocolError, "bad chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", httpx.RemoteProtocolError, "unsupported Transfer-Encoding"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", httpx.RemoteProtocolError,
     "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", httpx.RemoteProtocolError, "bad Content-Length"),
    (b"SMTP ready\r\n\r\n", httpx.RemoteProtocolError, "malformed status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", httpx.RemoteProtocolError, "malformed header line"),
    (b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n", httpx.RemoteProtocolError, "malformed header line"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * (http11.MAX_HEAD + 10), httpx.RemoteProtocolError, "response head larger"),
])
def test_a_broken_answer_is_an_httpx_error(answer: bytes, error: type[Exception], message: str) -> None:
    async def scenario(server: RawServer, transport: Http11Transport) -> None:
        with pytest.raises(error, match=message.replace("(", r"\(").replace(".", r"\.")):
            await _post(transport, server.url())
        assert not transport._open  # the broken connection is closed, never reused

    _run([(answer, True)], scenario)


def test_no_answer_within_the_read_timeout_is_a_read_timeout() -> None:
    async def scenario(server: RawServer, transport: Http11Transport) -> None:
        with pytest.raises(httpx.ReadTimeout):
            await _post(transport, server.url(), read_s=0.2)

    _run([None], scenario)


def test_a_refused_connection_is_a_connect_error() -> None:
    async def scenario() -> None:
        transport = Http11Transport()
        with pytest.raises(httpx.ConnectError, match="refused|failed"):
            await _post(transport, "http://127.0.0.1:1/v1/x")

    asyncio.run(scenario())


def test_a_header_with_a_line_break_is_refused_before_sending() -> None:
    async def scenario(server: RawServer, transport: Http11Transport) -> None:
        request = httpx.Request("POST", server.url(), content=b"{}", headers={"X-Key": "a\r\nInjected: 1"})
        with pytest.raises(httpx.LocalProtocolError, match="illegal header"):
            await transport.handle_async_request(request)

    server, _ = _run([(_ok(), False)], scenario)
    assert server.requests == []


def test_only_http_urls() -> None:
    async def scenario() -> None:
        with pytest.raises(httpx.UnsupportedProtocol):
            await Http11Transport().handle_async_request(httpx.Request("POST", "https://127.0.0.1:1/x"))

    asyncio.run(scenario())


def test_a_body_not_read_whole_closes_its_connection() -> None:
    async def scenario(server: RawServer, transport: Http11Transport) -> tuple[int, bytes]:
        request = httpx.Request("POST", server.url(), content=b"{}")
        response = await transport.handle_async_request(request)
        await response.aclose()  # the body never read
        return await _post(transport, server.url())

    server, answers = _run([(_ok(b"unread"), False), (_ok(b"second"), False)], scenario)
    assert answers == (200, b"second")
    assert server.connections == 2


def test_a_cancelled_call_closes_its_connection() -> None:
    async def scenario(server: RawServer, transport: Http11Transport) -> tuple[int, bytes]:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(_post(transport, server.url()), 0.2)
        assert not transport._open
        return await _post(transport, server.url())

    server, answers = _run([None, (_ok(b"after"), False)], scenario)
    assert answers == (200, b"after")
    assert server.connections == 2


def test_a_kept_alive_connection_the_server_closed_is_not_reused() -> None:
    async def scenario(server: RawServer, transport: Http11Transport) -> list[tuple[int, bytes]]:
        first = await _post(transport, server.url())
        await asyncio.sleep(0.2)  # the server closes the connection meanwhile
        return [first, await _post(transport, server.url())]

    server, answers = _run([(_ok(b"one"), True), (_ok(b"two"), False)], scenario)
    assert answers == [(200, b"one"), (200, b"two")]
    assert server.connections == 2


def test_readable_tells_an_idle_socket_from_one_its_peer_closed() -> None:
    """What a connection idle for over ``IDLE_CHECK_S`` is checked with before its reuse."""
    ours, peer = socket.socketpair()
    with ours, peer:
        idle = http11.readable(ours)
        peer.close()
        assert (idle, http11.readable(ours)) == (False, True)
    assert http11.readable(ours)  # closed: as httpcore, readable (never reused)
