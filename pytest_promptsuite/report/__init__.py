"""Stage 5b: what a summary looks like: terminal lines, a failing case's text, report files."""

from __future__ import annotations

from .files import write_report
from .text import display_width
from .text import failure_text
from .text import summary_lines
from .text import trim_output


__all__ = ["display_width", "failure_text", "summary_lines", "trim_output", "write_report"]
