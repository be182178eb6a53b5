"""Each slice's pass rate over earlier runs as text, from a history frame (``promptsuite history`` and
``summary.md`` share these rows)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pytest_promptsuite.report.text import display_width


if TYPE_CHECKING:
    import pandas as pd


#: Runs a text table shows (the dashboard draws every kept run).
TEXT_RUNS = 8


def _cell(rate: float, low: float, high: float) -> str:
    if math.isnan(rate):
        return "-"
    interval = "" if math.isnan(low) or math.isnan(high) else f" ({low:.0%}-{high:.0%})"
    return f"{rate:.0%}{interval}"


def _direction(rates: list[float]) -> str:
    """Say how the rate moved from the first run that has the slice to the last: up, down or flat."""
    rates = [rate for rate in rates if not math.isnan(rate)]
    if len(rates) < 2:
        return ""
    drops = sum(1 for a, b in zip(rates, rates[1:], strict=False) if b < a)
    change = (rates[-1] - rates[0]) * 100
    if abs(change) < 0.05:
        return "flat"
    return f"{change:+.1f} pts over {len(rates)} runs" + (f", {drops} drops" if drops else "")


def _shown(history: pd.DataFrame, last: int) -> pd.DataFrame:
    """Keep the latest ``last`` runs, one row each."""
    runs: pd.DataFrame = history.drop_duplicates("run").iloc[-last:]
    return runs


def trend_rows(history: pd.DataFrame, *, last: int = TEXT_RUNS) -> tuple[list[str], list[list[str]]]:
    """Make (header, rows): a row per slice of any run, a column per run (the latest ``last``), then the change."""
    runs = _shown(history, last)
    slices = sorted(set(history["slice"].dropna()))
    points = history.dropna(subset=["slice"])
    wide = {
        name: points.pivot(index="slice", columns="run", values=name).reindex(index=slices, columns=runs["run"])
        for name in ("pass_rate", "ci_low", "ci_high")
    }
    rates, lows, highs = (wide[name].to_numpy(dtype=float).tolist() for name in ("pass_rate", "ci_low", "ci_high"))
    rows = []
    for name, rate, low, high in zip(slices, rates, lows, highs, strict=True):
        rows.append([name, *map(_cell, rate, low, high), _direction(rate)])
    return ["slice", *runs["label"], "change"], rows


def history_lines(history: pd.DataFrame, *, last: int = TEXT_RUNS) -> Iterator[str]:
    """Write the trend table for a terminal, columns aligned (CJK characters take two), and each run's gate."""
    if history.empty:
        yield "no earlier runs found (a history folder holds report folders or summary.json files)"
        return
    header, rows = trend_rows(history, last=last)
    widths = [max(display_width(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        yield "  ".join(cell + " " * (w - display_width(cell)) for cell, w in zip(row, widths, strict=True)).rstrip()
    runs = _shown(history, last)
    yield "gate: " + "  ".join(
        f"{label} {_gate_word(passed)}"
        for label, passed in zip(runs["label"], runs["run_passed"].tolist(), strict=True)
    )


def _gate_word(passed: bool | None) -> str:
    return "PASSED" if passed is True else "FAILED" if passed is False else "?"
