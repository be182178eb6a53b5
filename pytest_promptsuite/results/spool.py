"""A run's rows as its items report them: spooled to a file as they arrive and kept without their
texts, their usage counted on the way, each encoded once and, when this process encoded it,
never parsed back (a pytest-xdist worker's rows are parsed once, on the controller)."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any

from pytest_promptsuite.results.io import OnRow
from pytest_promptsuite.results.io import StoredResults
from pytest_promptsuite.results.io import encode_row
from pytest_promptsuite.results.row import CaseResult
from pytest_promptsuite.results.usage import UsageTally
from pytest_promptsuite.safety.scrub import registered


__all__ = ["RowSpool"]


class RowSpool:
    """The rows items reported: :meth:`encode` makes the line an item reports, :meth:`add` spools
    a line that reached the session (the same one, or a worker's)."""

    def __init__(self) -> None:
        #: The calls, tokens and latency of every row spooled, counted as it arrives.
        self.usage = UsageTally()
        #: Also told of each row spooled, with what its line holds (the dashboard's grid).
        self.on_row: OnRow | None = None
        self._stored: StoredResults | None = None
        #: The last line :meth:`encode` made, its row and what it reads back as, until :meth:`add`.
        self._reported: tuple[str, CaseResult, dict[str, Any]] | None = None
        #: The secrets registered when the first row was encoded, while every row spooled is one
        #: this process encoded (None after any other): then its lines need no scrubbing again.
        self._scrubbed_with: tuple[str, ...] | None = None

    def encode(self, result: CaseResult) -> str:
        """``result`` as the line its item reports (its ``to_json()``, which crosses pytest-xdist);
        what the line reads back as is kept until :meth:`add` receives that very line."""
        if self._stored is None and self._scrubbed_with is None:
            self._scrubbed_with = registered()
        line, value = encode_row(result)
        self._reported = None if value is None else (line, result, value)
        return line

    def add(self, line: str) -> CaseResult:
        """Spool a row's line; the row without its texts."""
        if self._stored is None:
            self._stored = StoredResults.spool(self._kept)
        reported, self._reported = self._reported, None
        if reported is not None and reported[0] is line:  # this process's own row, just encoded
            return self._stored.append(line, reported[1:])
        self._scrubbed_with = None  # a worker's row, or one the scrubber changed: scrubbed again
        return self._stored.append(line)

    def _kept(self, row: CaseResult, line: dict[str, Any]) -> None:
        self.usage.add_line(line)
        if self.on_row is not None:
            self.on_row(row, line)

    @property
    def rows(self) -> list[CaseResult]:
        """The rows spooled so far, without their texts."""
        return [] if self._stored is None else self._stored.rows

    def full(self, row: CaseResult) -> CaseResult:
        """One of :attr:`rows` read back whole."""
        return row if self._stored is None else self._stored.full(row)

    def lines(self, rows: Iterable[CaseResult]) -> Iterator[bytes]:
        """The ``results.jsonl`` lines of ``rows`` (UTF-8), in that order: the spooled lines,
        copied as they are when no secret was registered since they were scrubbed (else scrubbed
        again)."""
        if self._stored is None:
            return ((row.to_json() + "\n").encode("utf-8") for row in rows)
        return self._stored.lines(rows, scrubbed=registered() is self._scrubbed_with)

    def close(self) -> None:
        """Remove the spool's file."""
        if self._stored is not None:
            self._stored.close()
