"""What a large run keeps in memory: report files written as streams, items that hold no case.

The figures themselves come from ``benchmarks/bench_overhead.py``; these tests pin the
mechanisms (how many rows are alive at once, what an item holds) so a change cannot bring the
per-case memory back unnoticed.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.checks.base import CaseResult
from pytest_promptsuite.report import dashboard_html
from pytest_promptsuite.report import html as html_module
from pytest_promptsuite.report.html import write_dashboard
from pytest_promptsuite.results import ThresholdPolicy
from pytest_promptsuite.results import summarize


def _row(i: int, outcome: str = "passed", output: str | None = None) -> CaseResult:
    return CaseResult(case_id=f"c-{i:04d}", slice="s" if i % 2 else "t", outcome=outcome,  # type: ignore[arg-type]
                      location=f"cases.jsonl:{i + 1}", output=output or f"output {i} " * 20, prompt=f"prompt {i}")


class _ReadBackOnce(Sequence[CaseResult]):
    """Rows made fresh at each access (as a spool reads them back), counting how many are alive."""

    def __init__(self, n: int, failing_every: int = 5, output: str | None = None) -> None:
        self.n, self.failing_every, self.output = n, failing_every, output
        self.alive = 0
        self.most_alive = 0

    def _died(self) -> None:
        self.alive -= 1

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: Any) -> Any:
        raise AssertionError("the dashboard reads rows in order, never by index")

    def __iter__(self) -> Iterator[CaseResult]:
        for i in range(self.n):
            row = _row(i, "failed" if i % self.failing_every == 0 else "passed", self.output)
            weakref.finalize(row, self._died)
            self.alive += 1
            self.most_alive = max(self.most_alive, self.alive)
            yield row
            del row


def test_dashboard_is_written_one_row_at_a_time(tmp_path: Path) -> None:
    rows, baseline = _ReadBackOnce(300), _ReadBackOnce(300, failing_every=3, output="old")
    summary = summarize(list(_ReadBackOnce(300)), ThresholdPolicy(option=0.5))
    write_dashboard(tmp_path / "dashboard.html", rows, summary, baseline=baseline)
    assert rows.most_alive <= 2
    assert baseline.most_alive <= 2  # the baseline's outputs are not kept either: their hash and preview are
    assert rows.alive == baseline.alive == 0


def test_dashboard_spilled_to_a_file_is_the_same_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [_row(i, "failed" if i % 4 == 0 else "passed") for i in range(200)]
    baseline = [_row(i, "passed", output="old" if i % 3 else None) for i in range(150)]
    summary = summarize(rows, ThresholdPolicy(option=0.5))
    in_memory = dashboard_html(rows, summary, baseline=baseline)
    monkeypatch.setattr(html_module, "_SPILL_BYTES", 64)  # details and cells go through files
    written = write_dashboard(tmp_path / "dashboard.html", rows, summary, baseline=baseline)
    assert written.read_text(encoding="utf-8") == in_memory
    assert '"baseline_rows":[' in in_memory and '"details":[{' in in_memory
