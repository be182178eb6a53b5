"""Report files: ``results.jsonl``, ``summary.json``, ``slices.csv`` and ``summary.md``."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path

from ..checks.base import CaseResult
from ..results import Summary
from .text import summary_lines


__all__ = ["write_report"]


def write_report(directory: Path, rows: Iterable[CaseResult], summary: Summary) -> list[Path]:
    """Write every report file into ``directory`` (created if needed); return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    results = directory / "results.jsonl"
    with results.open("w", encoding="utf-8") as fp:
        for row in rows:
            fp.write(row.to_json())
            fp.write("\n")
    summary_json = directory / "summary.json"
    summary_json.write_text(
        json.dumps(summary.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    slices_csv = directory / "slices.csv"
    with slices_csv.open("w", encoding="utf-8", newline="") as fp:
        table = [s.to_dict() for s in summary.slices]
        fields = list(table[0]) if table else ["slice"]
        writer = csv.DictWriter(fp, fieldnames=fields)
        writer.writeheader()
        writer.writerows(table)
    summary_md = directory / "summary.md"
    verdict = "PASSED" if summary.gate.passed else "FAILED"
    md = [f"## promptsuite gate: {verdict}", ""]
    md += [f"- {reason}" for reason in summary.gate.reasons]
    md += ["", "```", *summary_lines(summary), "```", ""]
    summary_md.write_text("\n".join(md), encoding="utf-8")
    return [results, summary_json, slices_csv, summary_md]
