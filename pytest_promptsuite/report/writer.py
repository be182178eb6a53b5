"""The report folder: ``results.jsonl``, ``summary.json``, ``slices.csv``, ``summary.md``, ``dashboard.html``
and ``review.jsonl``, written as a stream."""

from __future__ import annotations

import functools
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import overload

import jsonlines

from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.report.document import summary_document
from pytest_promptsuite.report.html import GridCells
from pytest_promptsuite.report.html import write_dashboard
from pytest_promptsuite.report.markdown import summary_markdown
from pytest_promptsuite.report.text import cut_line
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.frames import slices_frame
from pytest_promptsuite.results.history import History
from pytest_promptsuite.results.pairing import Reader
from pytest_promptsuite.results.review_book import is_mark
from pytest_promptsuite.results.summary import Baseline
from pytest_promptsuite.results.summary import Summary
from pytest_promptsuite.results.usage import UsageReport
from pytest_promptsuite.results.usage import usage_report
from pytest_promptsuite.safety.scrub import printable


REPORT_FILES = ("results.jsonl", "summary.json", "slices.csv", "summary.md", "dashboard.html", "review.jsonl")
#: How ``results.jsonl`` writes a row: as its ``to_json()``.
_ROW_DUMPS = functools.partial(encode, compact=True)


def _order(row: CaseResult) -> tuple[str, int, str, str, int]:
    where = row.location
    path, line = ("", 0) if where is None else (str(where.path), where.line)
    return (path, line, row.case_id, row.variant or "", row.repeat)


def sorted_rows(rows: Iterable[CaseResult]) -> list[CaseResult]:
    """Return rows in case-file order (file, line, variant, repeat), whatever order they finished in."""
    return sorted(rows, key=_order)


def review_queue(rows: Iterable[CaseResult]) -> list[dict[str, Any]]:
    """Return the cases marked for a human (outcome ``review``), each with the reasons it was marked."""
    queue = []
    for row in rows:
        if row.outcome is not Outcome.REVIEW:
            continue
        queue.append(
            {
                "case_id": row.case_id,
                "slice": row.slice,
                "variant": row.variant,
                "repeat": row.repeat,
                "location": "" if row.location is None else str(row.location),
                "reasons": [str((c.details or {})["review"]) for c in row.checks if is_mark(c)],
                "prompt": row.prompt,
                "output": row.output,
            }
        )
    return queue


class _ReadBack(Sequence[CaseResult]):
    """Rows in order, each read back whole by ``full`` as it is reached (never every row's texts at once)."""

    def __init__(self, rows: list[CaseResult], full: Reader) -> None:
        self._rows, self._full = rows, full

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> CaseResult: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[CaseResult]: ...

    def __getitem__(self, index: int | slice) -> CaseResult | Sequence[CaseResult]:
        if isinstance(index, slice):
            return _ReadBack(self._rows[index], self._full)
        return self._full(self._rows[index])

    def __iter__(self) -> Iterator[CaseResult]:
        return map(self._full, self._rows)


def _only(rows: Sequence[CaseResult], *outcomes: Outcome) -> Sequence[CaseResult]:
    """Return the rows of these outcomes; of read-back rows, only those are read back."""
    if isinstance(rows, _ReadBack):
        return _ReadBack([r for r in rows._rows if r.outcome in outcomes], rows._full)
    return [r for r in rows if r.outcome in outcomes]


def write_report(
    directory: Path,
    rows: Iterable[CaseResult],
    summary: Summary,
    *,
    full: Reader | None = None,
    usage: UsageReport | None = None,
    history: History | None = None,
    baseline: Baseline | Sequence[CaseResult] | None = None,
    lines: Callable[[Iterable[CaseResult]], Iterable[bytes]] | None = None,
    cells: GridCells | None = None,
) -> list[Path]:
    """Write every report file into ``directory`` (created if needed); return their paths.

    Args:
        full: reads a row back whole when ``rows`` left their texts on disk (a run's spool).
        usage: the run's calls, tokens, cost and latency (computed from the rows when not given).
        history: ``--prompt-history``: each slice's trend, this run last.
        baseline: the rows of the dashboard's baseline column.
        lines: the rows' ``results.jsonl`` lines as a spool holds them, copied as they are.
        cells: the dashboard grid's text of the rows it need not read back.
    """
    directory.mkdir(parents=True, exist_ok=True)
    light = sorted_rows(rows)
    ordered: Sequence[CaseResult] = light if full is None else _ReadBack(light, full)
    if isinstance(baseline, Baseline):
        baseline = baseline.rows if baseline.full is None else _ReadBack(list(baseline.rows), baseline.full)
    usage = usage if usage is not None else usage_report(ordered, summary.run)
    trend = history.with_current(summary) if history is not None else None
    results = directory / "results.jsonl"
    with results.open("wb") as fp:  # bytes: a spool's lines are copied, never decoded
        if lines is None:
            jsonlines.Writer(fp, dumps=_ROW_DUMPS).write_all(row.to_dict() for row in ordered)
        else:
            fp.writelines(lines(light))
    summary_json = directory / "summary.json"
    summary_json.write_text(encode(summary_document(summary, usage=usage), indent=2) + "\n", encoding="utf-8")
    slices_csv = directory / "slices.csv"
    slices_csv.write_bytes(printable(slices_frame(summary).to_csv(index=False, lineterminator="\r\n")).encode())
    queue = review_queue(_only(ordered, Outcome.REVIEW))  # only those rows read back
    summary_md = directory / "summary.md"
    failing = _only(ordered, Outcome.FAILED, Outcome.ERROR)
    markdown = summary_markdown(summary, queue, rows=failing, usage=usage, history=trend, cut=cut_line(light))
    summary_md.write_text(printable(markdown), encoding="utf-8")
    dashboard = directory / "dashboard.html"
    write_dashboard(dashboard, light, summary, usage=usage, history=trend, baseline=baseline, full=full, cells=cells)
    review = directory / "review.jsonl"  # the review queue: what a human should look at
    with jsonlines.open(review, "w", dumps=encode) as out:
        out.write_all(queue)
    return [results, summary_json, slices_csv, summary_md, dashboard, review]
