"""The promptfoo assert types the import carries over: its table of mappers and the guide's list agree."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from pytest_promptsuite.dialects.promptfoo.csv_tests import _TYPES as PROMPTFOO_TYPES
from pytest_promptsuite.dialects.promptfoo.promptfoo_tests import ASSERT_MAPPERS


GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "from-promptfoo.md"
#: The rows of the guide's "What is carried" table that name assert types (their first cell).
_ROWS = ("| `assert` types we share", "| `is-html`", "| `javascript` ")


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : None if end < 0 else end]


def _words(token: str) -> Iterator[str]:
    """Yield the types a token names: ``contains-any/all`` is ``contains-any`` and ``contains-all``."""
    first, *others = token.split("/")
    yield first
    stem = first.rpartition("-")[0]
    yield from (f"{stem}-{other}" for other in others)


def _documented() -> set[str]:
    text = GUIDE.read_text(encoding="utf-8")
    carried = _section(text, "## What is carried")
    cells = [line.split(" | ")[0] for line in carried.splitlines() if line.startswith(_ROWS)]
    assert len(cells) == len(_ROWS), "the guide's rows of carried assert types moved: update _ROWS"
    prose = re.sub(r"```.*?```", "", _section(text, "## similar and function calls"), flags=re.DOTALL)
    parts = [*cells, prose]
    named = {word for part in parts for token in re.findall(r"`([^`]+)`", part) for word in _words(token)}
    return named & {*PROMPTFOO_TYPES, "assert-set"}


def test_the_guide_lists_the_assert_types_the_import_carries() -> None:
    documented, mapped = _documented(), set(ASSERT_MAPPERS)
    assert documented - mapped == set(), "listed in docs/guides/from-promptfoo.md but not mapped"
    assert mapped - documented == set(), "mapped but not listed in docs/guides/from-promptfoo.md"
