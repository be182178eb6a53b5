"""Deterministic shards: which of N CI jobs runs a case (``--prompt-shard K/N``), by a hash of its id."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def shard_index(case_id: str, count: int) -> int:
    """Return the 0-based shard of ``case_id`` among ``count`` (sha256 of the UTF-8 id)."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


@dataclass(frozen=True)
class Shard:
    """The K-th (from 1) of N shards."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def __contains__(self, case_id: object) -> bool:
        return isinstance(case_id, str) and shard_index(case_id, self.count) == self.index - 1


def parse_shard(value: str) -> Shard:
    """Parse ``"K/N"`` with ``1 <= K <= N``; ValueError with the accepted form otherwise."""
    parts = value.split("/")
    try:
        if len(parts) != 2:
            raise ValueError
        index, count = int(parts[0]), int(parts[1])
    except ValueError:
        raise ValueError(f"{value!r} is not K/N (write 2/4 for the second of four shards)") from None
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"{value!r}: K must be from 1 to N and N at least 1 (write 2/4)")
    return Shard(index, count)
