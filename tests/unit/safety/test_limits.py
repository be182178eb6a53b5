"""The limits: each one named in safety/limits.py is a row of the security page's limits table."""

from __future__ import annotations

from pathlib import Path

from pytest_promptsuite.safety import limits


def test_every_limit_is_in_the_limits_table() -> None:
    page = (Path(__file__).parents[3] / "docs" / "explanation" / "security.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip() for line in page.splitlines() if line.startswith("| ")}
    named = [value.name for value in vars(limits).values() if isinstance(value, limits.Limit)]
    assert named and [name for name in named if name not in rows] == []
