"""Plain-text views: the slice table, the gate verdict and a failing case's report."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from collections.abc import Sequence

from ..checks.base import CaseResult
from ..results import Summary


__all__ = ["display_width", "failure_text", "summary_lines", "trim_output"]

#: Outputs longer than this are shown trimmed around the first place a failed check points at.
MAX_OUTPUT_CHARS = 600


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes (CJK characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int, *, right: bool = False) -> str:
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> Iterator[str]:
    widths = [display_width(h) for h in header]
    for row in rows:
        widths = [max(w, display_width(cell)) for w, cell in zip(widths, row, strict=True)]
    yield "  ".join(_pad(h, w, right=i in right) for i, (h, w) in enumerate(zip(header, widths, strict=True)))
    for row in rows:
        yield "  ".join(
            _pad(cell, w, right=i in right) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def summary_lines(summary: Summary) -> Iterator[str]:
    """The slice table and the gate verdict, last."""
    header = ["slice", "cases", "passed", "failed", "error", "review", "pass rate", "95% CI",
              "threshold", "gate"]
    rows = [
        [
            s.slice,
            str(s.cases),
            str(s.passed),
            str(s.failed),
            str(s.error),
            str(s.review),
            _pct(s.pass_rate),
            "-" if s.ci_low is None else f"{s.ci_low:.0%}-{s.ci_high:.0%}",
            f"{s.threshold:.0%} ({s.threshold_source})",
            s.gate.upper(),
        ]
        for s in summary.slices
    ]
    yield from _table(header, rows, right={1, 2, 3, 4, 5, 6})
    t = summary.totals
    yield (
        f"total: {t['cases']} cases, {t['passed']} passed, {t['failed']} failed, "
        f"{t['error']} error, {t['review']} review"
    )
    if summary.gate.passed:
        failed = t["failed"]
        tolerated = f" ({failed} failed case{'s' if failed != 1 else ''} within tolerance)" if failed else ""
        yield f"promptsuite gate: PASSED{tolerated}"
    else:
        yield "promptsuite gate: FAILED"
        for reason in summary.gate.reasons:
            yield f"  - {reason}"


def trim_output(output: str, focus: int | None = None, limit: int = MAX_OUTPUT_CHARS) -> str:
    """``output`` whole if short; else a window of ``limit`` characters around ``focus``."""
    if len(output) <= limit:
        return output
    focus = 0 if focus is None else focus
    start = max(0, min(focus - limit // 3, len(output) - limit))
    end = start + limit
    head = f"[... {start} chars] " if start else ""
    tail = f" [... {len(output) - end} chars]" if end < len(output) else ""
    return head + output[start:end] + tail


def _focus(result: CaseResult) -> int | None:
    """The offset of the first forbidden text found, the natural place to look."""
    for check in result.failed_checks:
        marker = " at offset "
        if marker in check.message:
            try:
                return int(check.message.rsplit(marker, 1)[1])
            except ValueError:
                continue
    return None


def failure_text(result: CaseResult) -> str:
    """What a failing case's pytest report shows: where, which checks, and the output."""
    failed = result.failed_checks
    what = (
        f"error: {result.error}"
        if result.error is not None
        else f"failed {len(failed)} check{'s' if len(failed) != 1 else ''}"
    )
    lines = [f"{result.location}: {result.case_id} [slice {result.slice}] {what}"]
    if failed:
        name_width = max(len(c.name) for c in failed)
        for check in failed:
            lines.append(f"  {check.layer:<9} {check.name:<{name_width}}  {check.message}")
    if result.output is not None:
        shown = trim_output(result.output, _focus(result))
        lines.append(f"output ({len(result.output)} chars):")
        lines.extend("  " + line for line in (shown.splitlines() or [""]))
    return "\n".join(lines)
