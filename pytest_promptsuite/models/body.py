"""An HTTP answer's body read within a size limit: its ``Content-Encoding`` (gzip or deflate, at most two
layers) decoded with an output bound, so a small compressed answer never grows past the limit in memory."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import httpx

from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.safety.limits import Limit


#: The encodings a client asks for and :func:`read_body` decodes (httpx would add ``br`` and ``zstd``
#: where their packages are installed, and decode them without a bound).
ACCEPT_ENCODING = "gzip, deflate"
#: The most encodings an answer may stack (``gzip, gzip`` is the deepest a server has a reason to send).
MAX_ENCODINGS = 2
_PIECE = 256 * 1024


class _Inflate:
    """One gzip or deflate layer, decoded a piece at a time into at most ``limit`` bytes in all."""

    def __init__(self, name: str, limit: int) -> None:
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if name == "gzip" else zlib.MAX_WBITS)
        self._raw_fallback = name == "deflate"  # as httpx: zlib-wrapped deflate, else raw deflate
        self.room = limit

    def decode(self, data: bytes) -> Iterator[bytes]:
        """Yield what ``data`` decodes to, :data:`_PIECE` bytes at most a time (zlib builds each piece
        twice over); past the limit, one byte more than the room left, and no more."""
        while data and self.room >= 0:
            try:
                out = self._zlib.decompress(data, min(self.room + 1, _PIECE))
            except zlib.error as exc:
                if not self._raw_fallback:
                    raise httpx.DecodingError(str(exc)) from None
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                self._raw_fallback = False
                continue
            self._raw_fallback = False
            self.room -= len(out)
            data = self._zlib.unconsumed_tail
            if out:
                yield out


def _layers(reply: httpx.Response, limit: Limit, where: str) -> list[_Inflate]:
    """Return the decoders of ``reply``'s encodings, the last applied first; refuse any we did not ask for."""
    names = [value.strip().lower() for value in reply.headers.get_list("content-encoding", split_commas=True)]
    names = [name for name in names if name and name != "identity"]
    if len(names) > MAX_ENCODINGS:
        raise EndpointError(
            f"the response from {where} is encoded {len(names)} times ({', '.join(names)}): "
            f"at most {MAX_ENCODINGS} encodings are read"
        )
    for name in names:
        if name not in ("gzip", "deflate"):
            raise EndpointError(
                f"the response from {where} is encoded {name!r}, which was not asked for "
                f"(Accept-Encoding: {ACCEPT_ENCODING})"
            )
    return [_Inflate(name, int(limit.value)) for name in reversed(names)]


def _decoded(layers: list[_Inflate], data: bytes) -> Iterator[bytes]:
    """Yield what ``data`` decodes to through ``layers``; stop as soon as one of them is past its room."""
    if not layers:
        yield data
        return
    first, rest = layers[0], layers[1:]
    for piece in first.decode(data):
        if first.room < 0:
            return
        yield from _decoded(rest, piece)


async def read_body(reply: httpx.Response, limit: Limit, where: str) -> bytes:
    """Read and decode the body of a streamed ``reply``, at most ``limit`` bytes of it (sent or decoded);
    an EndpointError naming the limit as soon as it is passed, a ``httpx.DecodingError`` if it does not decode."""
    layers = _layers(reply, limit, where)
    chunks: list[bytes] = []
    sent = size = 0
    async for data in reply.aiter_raw():
        sent += len(data)
        if layers:
            chunks.extend(_decoded(layers, data))
            size = int(limit.value) - layers[-1].room
            if any(layer.room < 0 for layer in layers):
                raise EndpointError(f"the response from {where} is larger than {limit}")
        else:
            size += len(data)
            chunks.append(data)
        if size > limit.value or sent > limit.value:
            raise EndpointError(f"the response from {where} is larger than {limit}")
    return b"".join(chunks)
