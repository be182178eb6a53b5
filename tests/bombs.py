"""Compressed bodies for the loopback servers: gzip layers, and decompression bombs that decode to
far more than they weigh (built a megabyte at a time, kept once built)."""

from __future__ import annotations

import functools
import gzip
import zlib


#: What a bomb decodes to by default: twice the response size limit.
BOMB_BYTES = 64 * 1024 * 1024
_BLOCK = 1024 * 1024


def gzip_layers(data: bytes, layers: int) -> bytes:
    """Return ``data`` gzip-compressed ``layers`` times (``Content-Encoding: gzip, gzip, ...``)."""
    for _ in range(layers):
        data = gzip.compress(data, mtime=0)
    return data


@functools.cache
def bomb(head: bytes = b"", size: int = BOMB_BYTES, fill: bytes = b"\n", layers: int = 2) -> bytes:
    """Return ``head`` then ``fill`` up to ``size`` bytes, gzip-compressed ``layers`` times: a bomb of a few KB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    parts = [packer.compress(head)]
    block = fill * (_BLOCK // len(fill))
    left = size - len(head)
    while left > 0:
        parts.append(packer.compress(block[:left]))
        left -= len(block)
    parts.append(packer.flush())
    return gzip_layers(b"".join(parts), layers - 1)
