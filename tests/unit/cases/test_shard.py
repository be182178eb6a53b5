"""Stage tests for ``cases.shard``: which shard a case belongs to, stable across runs."""

from __future__ import annotations

import hashlib

import pytest

from pytest_promptsuite.cases.shard import parse_shard
from pytest_promptsuite.cases.shard import shard_index


def test_shard_parsing_and_stability() -> None:
    assert str(parse_shard("2/4")) == "2/4"
    for bad in ("0/2", "3/2", "2", "a/b", "1/0", "1/2/3"):
        with pytest.raises(ValueError, match="write 2/4"):
            parse_shard(bad)
    ids = [f"case-{i}" for i in range(200)]
    before = {i: shard_index(i, 4) for i in ids}
    assert {i: shard_index(i, 4) for i in [*ids, "new-1", "new-2"] if i in before} == before
    assert set(before.values()) == {0, 1, 2, 3}
    assert shard_index("case-0", 4) == int(hashlib.sha256(b"case-0").hexdigest()[:16], 16) % 4
