"""Which files of a run are case files: a ``*.jsonl`` path, or those under a folder, without the
files pytest-promptsuite itself writes."""

from __future__ import annotations

import os
from collections.abc import Collection
from collections.abc import Iterator
from pathlib import Path

from pytest_promptsuite.formats.jsonl import read_jsonl


#: The keys that mark a line of a file we write (a case file refuses every one of them).
_OUTPUT_KINDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("a results.jsonl of pytest-promptsuite", frozenset({"case_id", "outcome"})),
    ("a cassette of pytest-promptsuite (--prompt-record)", frozenset({"key", "response"})),
    ("a review.jsonl of pytest-promptsuite", frozenset({"case_id", "reasons"})),
    ("a review decisions file of pytest-promptsuite (--prompt-reviews)", frozenset({"case_id", "output_sha256"})),
)
_SNIFF_BYTES = 1 << 20


def output_kind(path: Path) -> str | None:
    """Return which of our output files ``path`` is (never collected as cases), or None (also when unreadable)."""
    if path.name in ("results.jsonl", "review.jsonl") and (path.parent / "summary.json").is_file():
        return f"a {path.name} of a pytest-promptsuite report"  # even when empty (no review items)
    try:
        with path.open("rb") as fp:
            head = fp.read(_SNIFF_BYTES)
    except OSError:
        return None
    first = next(read_jsonl(head, strict=False), None)
    value = None if first is None else first.value
    if isinstance(value, dict):
        for kind, keys in _OUTPUT_KINDS:
            if keys <= value.keys():
                return kind
    return None


def _walk(folder: Path) -> Iterator[Path]:
    seen: set[Path] = set()
    for top, dirs, files in os.walk(folder, followlinks=True):
        real = Path(top).resolve()
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        yield from (Path(top) / name for name in files if name.endswith(".jsonl"))


def iter_case_files(path: Path, *, exclude: Collection[Path] = ()) -> Iterator[Path]:
    """Yield the case files at ``path``: itself, or the sorted ``*.jsonl`` files under a folder (links
    followed, as pytest does) but our output files; ``exclude`` holds resolved paths (a train file)."""
    if path.is_dir():
        found = sorted(p for p in _walk(path) if p.is_file() and output_kind(p) is None)
    else:
        found = [path]
    yield from (p for p in found if p.resolve() not in exclude)
