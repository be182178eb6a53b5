"""Each slice's pass rate over earlier runs, as text: ``promptsuite history``, the terminal and
``summary.md`` share these rows (the dashboard draws the same data)."""

from __future__ import annotations

from collections.abc import Iterator

from pytest_promptsuite.report.text import display_width
from pytest_promptsuite.results.history import History
from pytest_promptsuite.results.history import HistoryPoint


__all__ = ["history_lines", "trend_rows"]

#: Runs a text table shows (the dashboard draws every kept run).
TEXT_RUNS = 8


def _cell(point: HistoryPoint | None) -> str:
    if point is None or point.pass_rate is None:
        return "-"
    interval = "" if point.ci_low is None or point.ci_high is None else (
        f" ({point.ci_low:.0%}-{point.ci_high:.0%})"  # as the slice table writes an interval
    )
    return f"{point.pass_rate:.0%}{interval}"


def _direction(points: list[HistoryPoint | None]) -> str:
    """Down, up or flat from the first run to the last that has the slice."""
    rates = [p.pass_rate for p in points if p is not None and p.pass_rate is not None]
    if len(rates) < 2:
        return ""
    drops = sum(1 for a, b in zip(rates, rates[1:], strict=False) if b < a)
    change = (rates[-1] - rates[0]) * 100
    if abs(change) < 0.05:
        return "flat"
    return f"{change:+.1f} pts over {len(rates)} runs" + (f", {drops} drops" if drops else "")


def trend_rows(history: History, *, last: int = TEXT_RUNS) -> tuple[list[str], list[list[str]]]:
    """(header, rows): a row per slice, a column per run (the latest ``last``), then the change."""
    runs = history.runs[-last:]
    header = ["slice", *(run.label for run in runs), "change"]
    rows = []
    for name in history.slices:
        points = history.trend(name)[-last:]
        rows.append([name, *(_cell(p) for p in points), _direction(points)])
    return header, rows


def history_lines(history: History, *, last: int = TEXT_RUNS) -> Iterator[str]:
    """The trend table for a terminal, columns aligned (CJK characters take two)."""
    if not history.runs:
        yield "no earlier runs found (a history folder holds report folders or summary.json files)"
        return
    header, rows = trend_rows(history, last=last)
    widths = [max(display_width(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        yield "  ".join(cell + " " * (w - display_width(cell)) for cell, w in zip(row, widths, strict=True)).rstrip()
    yield "gate: " + "  ".join(
        f"{run.label} {'PASSED' if run.passed else 'FAILED' if run.passed is False else '?'}"
        for run in history.runs[-last:]
    )
