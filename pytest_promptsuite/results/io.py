"""Reading result sets back: a ``results.jsonl`` and the ``summary.json`` beside it."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from array import array
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from pathlib import Path
from typing import IO
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.jsonl import line_problem
from pytest_promptsuite.formats.jsonl import read_jsonl
from pytest_promptsuite.results.row import CaseResult
from pytest_promptsuite.safety.scrub import scrub


__all__ = ["StoredResults", "encode_row", "load_results", "load_summary_json", "stream_results"]

#: What a stored row keeps on disk until a report shows it (the long texts and the checks).
_ON_DISK = ("output", "prompt", "checks", "replies", "metadata", "usage")
#: How much of the file one block of :meth:`StoredResults.lines` holds at most.
_BLOCK_BYTES = 1 << 20
#: Told of each row a spool keeps, with everything its line holds (see :meth:`StoredResults.spool`).
OnRow = Callable[[CaseResult, dict[str, Any]], None]


def encode_row(row: CaseResult) -> tuple[str, dict[str, Any] | None]:
    """``row.to_json()`` and, when that line reads back as exactly ``row.to_dict()`` in what a
    spool keeps and counts of it (nothing was scrubbed from it, its latency and token counts are
    finite), that dict: :meth:`StoredResults.append` then need not parse the line again."""
    value = row.to_dict()
    raw = encode(value, compact=True, scrub=False)
    line = scrub(raw)  # the very object when nothing was scrubbed (the scrubber promises it)
    numbers = (row.latency_ms, *(row.usage or {}).values())
    if line is not raw or any(isinstance(n, float) and not math.isfinite(n) for n in numbers):
        return line, None
    return line, value


#: The fields a stored row keeps in memory: every one but those of :data:`_ON_DISK`.
_KEPT = tuple(f.name for f in dataclasses.fields(CaseResult) if f.name not in _ON_DISK)


def _without_texts(row: CaseResult) -> CaseResult:
    """``row`` as a stored row keeps it: without what stays on disk (:data:`_ON_DISK`). Built
    by ``__init__``: its attributes then take a third less memory than a ``__dict__`` filled in."""
    return CaseResult(**{name: getattr(row, name) for name in _KEPT})


def load_results(path: Path) -> list[CaseResult]:
    """The rows of a ``results.jsonl``, or of the one in a report folder.

    Raises :class:`ConfigError` naming the file (and line) when it is missing or unreadable.
    """
    file = path / "results.jsonl" if path.is_dir() else path
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read results ({exc.strerror or exc})") from exc
    return [_row(file, line.number, line.problem, line.value) for line in read_jsonl(data, strict=False)]


class StoredResults:
    """Rows whose output, prompt, replies, checks, usage and metadata stay on disk: a
    ``results.jsonl`` read as a stream (:func:`stream_results`), or a run's spool that rows are
    appended to as they arrive (:meth:`spool`). :meth:`full` reads one row back whole."""

    def __init__(self, file: Path, fp: IO[bytes] | None = None, *, on_row: OnRow | None = None) -> None:
        self.file = file
        self.rows: list[CaseResult] = []
        self._on_row = on_row
        self._fp = fp
        self._owner: Any = None  # a spool's temporary file, which removes the file when closed
        self._end = 0
        self._at_end = True  # where the next append writes (a read back moves away from it)
        self._spans = array("q")  # where each row's line starts and stops, in pairs, in row order
        self._index: dict[tuple[str, str | None, int], int] = {}  # a row's key: its place in rows

    @classmethod
    def spool(cls, on_row: OnRow | None = None) -> StoredResults:
        """An empty spool in a temporary file (removed by :meth:`close`). ``on_row(row, line)`` is
        told of each row kept, with what its line holds (texts included), as it is appended: what
        is counted from every row's texts is counted then, not by reading them all back."""
        owner = tempfile.NamedTemporaryFile(prefix="promptsuite-rows-", suffix=".jsonl")  # noqa: SIM115
        stored = cls(Path(owner.name), owner.file, on_row=on_row)  # the file itself: no wrapper per call
        stored._owner = owner
        return stored

    def keep(
        self, start: int, end: int, number: int, problem: str | None, value: Any, row: CaseResult | None = None
    ) -> CaseResult:
        """Keep the line from ``start`` to ``end`` of the file (what it holds: ``value``, or its
        ``problem``) as a row without its texts (``row``, when the caller has it)."""
        if row is None:
            kept = value
            if isinstance(value, dict):
                kept = {key: item for key, item in value.items() if key not in _ON_DISK}
            row = _row(self.file, number, problem, kept)
        if self._on_row is not None:
            self._on_row(row, value)
        self._index[(row.case_id, row.variant, row.repeat)] = len(self.rows)
        self.rows.append(row)
        self._spans.extend((start, end))
        self._end = end
        return row

    def append(self, line: str, known: tuple[CaseResult, dict[str, Any]] | None = None) -> CaseResult:
        """Spool a row (its JSON, one line) and keep it without its texts. ``known``, when the
        caller has them, is the row itself and what its line reads back as (:func:`encode_row`):
        then the line is not parsed again."""
        assert self._fp is not None, "append to a spool"
        raw = line.encode("utf-8") + b"\n"
        if not self._at_end:
            self._fp.seek(self._end)
            self._at_end = True
        self._fp.write(raw)
        start, end, number = self._end, self._end + len(raw), len(self.rows) + 1
        if known is not None:
            return self.keep(start, end, number, None, known[1], _without_texts(known[0]))
        try:
            value, problem = decode(line, strict=False), None
        except JsonError as exc:
            value, problem = None, line_problem(exc)
        return self.keep(start, end, number, problem, value)

    def full(self, row: CaseResult) -> CaseResult:
        """``row`` with everything the file holds for it (as it is when the file does not have it)."""
        raw = self._raw(row)
        if raw is None:
            return row
        try:
            return CaseResult.from_dict(decode(raw.decode("utf-8-sig"), strict=False))  # a BOM: the file's first row
        except (UnicodeDecodeError, JsonError):
            return row

    def lines(self, rows: Iterable[CaseResult], *, scrubbed: bool = False) -> Iterator[bytes]:
        """The lines of ``rows`` in that order as UTF-8, each ending in a newline, as the file
        holds them (a row it lacks: its ``to_json()``), each scrubbed again. ``scrubbed``: no
        secret was registered since the lines were written, so they are copied as they are, and a
        run of rows in the file's own order is read as one block (a serial run's ``results.jsonl``)."""
        start = stop = -1
        for row in rows:
            span = self._span(row)
            if scrubbed and span is not None and span[0] == stop and stop - start < _BLOCK_BYTES:
                stop = span[1]
                continue
            if start >= 0:
                yield self._block(start, stop)
                start = stop = -1
            if span is None:
                yield (row.to_json() + "\n").encode("utf-8")
            elif scrubbed:
                start, stop = span
            else:
                data = self._block(*span)
                text = data.decode("utf-8")
                clean = scrub(text)  # the very object when nothing was scrubbed
                yield data if clean is text else clean.encode("utf-8")
        if start >= 0:
            yield self._block(start, stop)

    def _span(self, row: CaseResult) -> tuple[int, int] | None:
        index = self._index.get((row.case_id, row.variant, row.repeat))
        return None if index is None else (self._spans[2 * index], self._spans[2 * index + 1])

    def _block(self, start: int, stop: int) -> bytes:
        """The file's lines from ``start`` to ``stop``, each ending in ``\\n`` alone."""
        data = self._read(start, stop)
        if b"\r" in data:  # only at a line's end: JSON escapes it inside a string
            data = data.replace(b"\r\n", b"\n")
        return data if data.endswith(b"\n") else data + b"\n"

    def _raw(self, row: CaseResult) -> bytes | None:
        span = self._span(row)
        return None if span is None else self._read(*span)

    def _read(self, start: int, stop: int) -> bytes:
        if self._fp is not None:
            self._at_end = False
            self._fp.seek(start)
            return self._fp.read(stop - start)
        with self.file.open("rb") as fp:
            fp.seek(start)
            return fp.read(stop - start)

    def close(self) -> None:
        """Close (and so remove) a spool's file."""
        if self._owner is not None:
            self._owner.close()


def stream_results(path: Path) -> StoredResults:
    """The rows of a ``results.jsonl`` (or the one in a report folder), read line by line and
    kept without what stays on disk (see :class:`StoredResults`); errors as :func:`load_results`."""
    file = path / "results.jsonl" if path.is_dir() else path
    stored = StoredResults(file)
    try:
        fp = file.open("rb")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read results ({exc.strerror or exc})") from exc
    with fp:
        for line in read_jsonl(fp, strict=False):
            stored.keep(line.start, line.end, line.number, line.problem, line.value)
    return stored


def _row(file: Path, number: int, problem: str | None, value: Any) -> CaseResult:
    if problem is not None:
        raise ConfigError(f"{file}:{number}: not a results.jsonl row ({problem})")
    try:
        return CaseResult.from_dict(value)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ConfigError(f"{file}:{number}: not a results.jsonl row ({what})") from exc


def load_summary_json(path: Path) -> dict[str, Any] | None:
    """The ``summary.json`` of a report folder (or beside a ``results.jsonl``); None if absent."""
    folder = path if path.is_dir() else path.parent
    file = folder / "summary.json"
    if not file.is_file():
        return None
    try:
        data = decode(file.read_bytes().decode("utf-8"), strict=False)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: cannot read the summary ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: not a promptsuite summary (expected a JSON object)")
    return data
