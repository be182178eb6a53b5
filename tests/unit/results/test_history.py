"""Stage tests for ``results.history``: earlier runs' summaries as trends, in ``summary.md``, the dashboard and
``promptsuite history``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main as cli_main
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.report.trends import history_lines
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.frames import read_history
from pytest_promptsuite.results.history import load_history
from pytest_promptsuite.results.summary import summarize


def _row(case_id: str, outcome: str = "passed", **kw: object) -> CaseResult:
    base: dict[str, object] = {"slice": "s", "location": "cases.jsonl:1", "output": f"out {case_id}"}
    base.update(kw)
    return CaseResult(case_id=case_id, outcome=outcome, **base)  # type: ignore[arg-type]


def _summary_json(folder: Path, rates: dict[str, tuple[int, int]], passed: bool = True) -> None:
    rows = []
    for name, (ok, n) in rates.items():
        rows += [_row(f"{name}-{i}", "passed" if i < ok else "failed", slice=name) for i in range(n)]
    summary = summarize(rows, ThresholdPolicy(option=0.0))
    write_report(folder, rows, summary)


def test_history_orders_runs_by_path_with_numbers_as_numbers(tmp_path: Path) -> None:
    for n, ok in ((10, 6), (9, 8), (2, 10)):
        _summary_json(tmp_path / f"run-{n}" / "report", {"退款": (ok, 10)})
    history = load_history([tmp_path])
    assert [r.label for r in history.runs] == ["run-2/report", "run-9/report", "run-10/report"]
    assert [r.slices["退款"].pass_rate for r in history.runs] == [1.0, 0.8, 0.6]
    lines = list(history_lines(read_history(tmp_path)))
    assert lines[0].split() == ["slice", "run-2/report", "run-9/report", "run-10/report", "change"]
    assert lines[1].split()[0] == "退款"
    assert lines[1].endswith("-40.0 pts over 3 runs, 2 drops")
    assert len(load_history([tmp_path], limit=2).runs) == 2


def test_history_with_the_current_run_reaches_summary_md_and_the_dashboard(tmp_path: Path) -> None:
    _summary_json(tmp_path / "h" / "1", {"a": (10, 10)})
    _summary_json(tmp_path / "h" / "2", {"a": (9, 10)})
    rows = [_row(f"c{i}", "passed" if i < 7 else "failed", slice="a") for i in range(10)]
    summary = summarize(rows, ThresholdPolicy(option=0.0))
    write_report(tmp_path / "rep", rows, summary, history=load_history([tmp_path / "h"]))
    md = (tmp_path / "rep" / "summary.md").read_text("utf-8")
    assert "<details><summary>Pass rate by slice over the last 3 runs</summary>" in md
    assert "| a | 100% (72%-100%) | 90% (60%-98%) | 70% (40%-89%) | \\-30.0 pts over 3 runs, 2 drops |" in md
    page = (tmp_path / "rep" / "dashboard.html").read_text("utf-8")
    assert '"label":"this run"' in page


def test_history_refuses_a_file_that_is_no_summary(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"notes\.json: not a promptsuite summary\.json"):
        load_history([tmp_path])
    with pytest.raises(ConfigError, match="no such file or folder"):
        load_history([tmp_path / "missing"])


def test_promptsuite_history_prints_the_trend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _summary_json(tmp_path / "run-1", {"a": (5, 5)})
    _summary_json(tmp_path / "run-2", {"a": (4, 5)})
    assert cli_main(["history", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["slice", "run-1", "run-2", "change"]
    assert out[1].split()[:3] == ["a", "100%", "(57%-100%)"]
    assert out[-1] == "gate: run-1 PASSED  run-2 PASSED"
