"""A run's rows as its items report them, ``RowSpool``: spooled to a file as they arrive, kept
without their texts, their usage counted on the way."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any

from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import OnRow
from pytest_promptsuite.results.io import StoredResults
from pytest_promptsuite.results.io import encode_row
from pytest_promptsuite.results.judge_report import UngatedTally
from pytest_promptsuite.results.usage import UsageTally
from pytest_promptsuite.safety.scrub import registered
from pytest_promptsuite.safety.scrub import scrub


class RowSpool:
    """The rows items reported: :meth:`encode` makes an item's line, :meth:`add` spools a line that
    reached the session (that one, never parsed back, or a worker's)."""

    def __init__(self) -> None:
        self.usage = UsageTally()
        #: The rubric checks whose judge did not gate, counted as rows arrive (their checks stay on disk).
        self.ungated = UngatedTally()
        #: Also told of each row spooled, with what its line holds (the dashboard's grid).
        self.on_row: OnRow | None = None
        self._stored: StoredResults | None = None
        #: The last line :meth:`encode` made, its row and what it reads back as, until :meth:`add`.
        self._reported: tuple[str, CaseResult, dict[str, Any]] | None = None
        #: The secrets registered at the first row, while every row is one this process encoded.
        self._scrubbed_with: tuple[str, ...] | None = None

    def encode(self, result: CaseResult) -> str:
        """Return ``result`` as its item's line (its ``to_json()``), keeping its value for :meth:`add`."""
        if self._stored is None and self._scrubbed_with is None:
            self._scrubbed_with = registered()
        line, value = encode_row(result)
        self._reported = None if value is None else (line, result, value)
        return line

    def add(self, line: str) -> CaseResult:
        """Spool a row's line; return the row without its texts."""
        if self._stored is None:
            self._stored = StoredResults.spool(self._kept)
            if self._scrubbed_with is None:  # a pytest-xdist controller: every row is a worker's
                self._scrubbed_with = registered()
        reported, self._reported = self._reported, None
        if reported is not None and reported[0] is line:  # this process's own row, just encoded
            return self._stored.append(line, reported[1:])
        # a worker's row (or one the scrubber changed): scrubbed with this process's secrets, so that every
        # spooled line is, for the dashboard's grid as for results.jsonl
        return self._stored.append(scrub(line))

    def _kept(self, row: CaseResult, line: dict[str, Any]) -> None:
        self.usage.add_line(line)
        self.ungated.add_line(line)
        if self.on_row is not None:
            self.on_row(row, line)

    @property
    def rows(self) -> list[CaseResult]:
        """The rows spooled so far, without their texts."""
        return [] if self._stored is None else self._stored.rows

    def full(self, row: CaseResult) -> CaseResult:
        """Read one of :attr:`rows` back whole."""
        return row if self._stored is None else self._stored.full(row)

    def lines(self, rows: Iterable[CaseResult]) -> Iterator[bytes]:
        """Return the ``results.jsonl`` lines of ``rows`` (UTF-8) in that order: copied as spooled while
        every line is this process's and no secret was registered since, else scrubbed again."""
        if self._stored is None:
            return ((row.to_json() + "\n").encode("utf-8") for row in rows)
        return self._stored.lines(rows, scrubbed=registered() is self._scrubbed_with)

    def close(self) -> None:
        """Remove the spool's file."""
        if self._stored is not None:
            self._stored.close()
