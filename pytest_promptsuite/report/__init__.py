"""Stage 5b: what a summary looks like: terminal lines, a failing case's text, report files, and
the sentence each gate decision is reported with."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports


if TYPE_CHECKING:
    from .document import summary_document
    from .files import REPORT_FILES
    from .files import sorted_rows
    from .files import write_report
    from .html import dashboard_html
    from .markdown import summary_markdown
    from .reasons import reason
    from .text import display_width
    from .text import failure_text
    from .text import summary_lines
    from .text import trim_output

__getattr__, __dir__ = lazy_exports(__name__, __file__)


__all__ = [
    "REPORT_FILES",
    "dashboard_html",
    "display_width",
    "failure_text",
    "reason",
    "sorted_rows",
    "summary_document",
    "summary_lines",
    "summary_markdown",
    "trim_output",
    "write_report",
]
