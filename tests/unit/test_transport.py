"""The OpenAI client's network stream (``models/transport.py``) on real connections to the loopback server."""

from __future__ import annotations

import asyncio
import json
import ssl

from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.transport import _Backend
from tests.loopback import LoopbackServer


def _request(prompt: str, *, close: bool = False) -> tuple[bytes, bytes]:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]}).encode()
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + (b"Connection: close\r\n" if close else b"")
            + b"Content-Length: %d\r\n\r\n" % len(body))
    return head, body


async def _answer(stream: object, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = await stream.read(65536)  # type: ignore[attr-defined]
        if not chunk:
            break
        data += chunk
    return data


def test_a_request_is_sent_whole_at_the_first_read(loopback: LoopbackServer) -> None:
    async def scenario() -> tuple[int, bytes]:
        stream = await _Backend().connect_tcp("127.0.0.1", loopback.port)
        head, body = _request("one write")
        await stream.write(head)
        await stream.write(body)
        await asyncio.sleep(0.2)
        seen_before_reading = loopback.stats.requests
        answer = await _answer(stream, b"one write")
        await stream.aclose()
        return seen_before_reading, answer

    seen_before_reading, answer = asyncio.run(scenario())

    assert seen_before_reading == 0
    assert answer.startswith(b"HTTP/1.1 200") and b'"content":"one write"' in answer


def test_an_idle_connection_the_server_closed_reads_as_readable(loopback: LoopbackServer) -> None:
    async def scenario() -> tuple[bool, bool]:
        backend = _Backend()
        kept = await backend.connect_tcp("127.0.0.1", loopback.port)
        closed = await backend.connect_tcp("127.0.0.1", loopback.port)
        for stream, close in ((kept, False), (closed, True)):
            for part in _request("idle", close=close):
                await stream.write(part)
            await _answer(stream, b"idle")
        await asyncio.sleep(0.2)
        readable = kept.get_extra_info("is_readable"), closed.get_extra_info("is_readable")
        for stream in (kept, closed):
            await stream.aclose()
        return readable

    assert asyncio.run(scenario()) == (False, True)


def test_only_an_https_endpoint_loads_the_ca_bundle() -> None:
    plain = OpenAIModel("m", base_url="http://127.0.0.1:1/v1")._ssl_context()
    secure = OpenAIModel("m", base_url="HTTPS://api.example.com/v1")._ssl_context()

    assert plain.cert_store_stats()["x509_ca"] == 0  # trusts nothing: it is never used for TLS
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
    assert secure.cert_store_stats()["x509_ca"] > 0
