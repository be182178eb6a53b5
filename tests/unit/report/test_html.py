"""Stage tests for ``report.html``: the dashboard, self-contained, its markup inert, written a row at a time."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import weakref
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report import html as html_module
from pytest_promptsuite.report.document import summary_document
from pytest_promptsuite.report.html import GridCells
from pytest_promptsuite.report.html import dashboard_html
from pytest_promptsuite.report.html import write_dashboard
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import StoredResults
from pytest_promptsuite.results.io import encode_row
from pytest_promptsuite.results.review_book import REVIEW_CHECK
from pytest_promptsuite.results.summary import summarize
from tests.unit.report.support import IMG
from tests.unit.report.support import SCRIPT
from tests.unit.report.support import baseline_rows
from tests.unit.report.support import markup_rows
from tests.unit.report.support import row


def _embedded(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="promptsuite-data">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_dashboard_is_self_contained_and_keeps_markup_inert() -> None:
    rows = markup_rows()
    summary = summarize(rows, ThresholdPolicy(option=0.5), baseline=baseline_rows(), baseline_source="base")
    page = dashboard_html(rows, summary)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "@import" not in page and "url(" not in page
    # the only raw "<script" tags are the page's own two; model text never closes the data element
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "onerror" not in page.split('id="promptsuite-data">')[0]
    data = _embedded(page)
    outputs = {r[0]: data["details"][r[5]] for r in data["rows"] if r[5] >= 0}
    assert outputs["xss-1"]["output"] == SCRIPT  # round-trips exactly, as text
    assert outputs["xss-1"]["prompt"] == f"[user] {IMG}"
    assert outputs["err-1"]["error"] == "HTTP 500: </script><script>alert(1)</script>"
    assert [f["id"] for f in data["flips"]] == ["xss-1"]
    assert data["flips"][0]["prompt_diff"].splitlines()[-1] == f"+[user] {IMG}"
    assert data["summary"] == json.loads(json.dumps(summary_document(summary)))


def test_dashboard_csp_allows_only_its_own_script() -> None:
    rows = markup_rows()
    page = dashboard_html(rows, summarize(rows))
    script = page.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert csp is not None
    assert "default-src 'none'" in csp.group(1)
    assert f"script-src 'sha256-{digest}'" in csp.group(1)


def test_dashboard_trims_long_texts_but_results_keep_them(tmp_path: Path) -> None:
    long = "x" * 10_000
    rows = [row("big", "s", "failed", output=long)]
    write_report(tmp_path, rows, summarize(rows))
    data = _embedded((tmp_path / "dashboard.html").read_text("utf-8"))
    assert data["details"][0]["output"].startswith("x" * 4000 + "\n[... 6000 more chars")
    assert json.loads((tmp_path / "results.jsonl").read_text("utf-8"))["output"] == long


def _row(i: int, outcome: str = "passed", output: str | None = None) -> CaseResult:
    return CaseResult(
        case_id=f"c-{i:04d}",
        slice="s" if i % 2 else "t",
        outcome=outcome,  # type: ignore[arg-type]
        location=f"cases.jsonl:{i + 1}",
        output=output or f"output {i} " * 20,
        prompt=f"prompt {i}",
    )


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


def test_a_dashboard_from_cells_made_as_rows_were_spooled_is_the_page_read_back(tmp_path: Path) -> None:
    decided = CheckResult("review", REVIEW_CHECK, True, "approved by ana")
    rows = [_row(i, "failed" if i % 4 == 0 else "passed") for i in range(200)]
    rows[5] = dataclasses.replace(rows[5], checks=(decided,))  # a decided review keeps its details
    rows[6] = dataclasses.replace(rows[6], output=None, prompt=[{"role": "user", "content": "question <6>"}])
    rows[7] = dataclasses.replace(rows[7], outcome=Outcome.REVIEW)
    baseline = [_row(i, "passed", output="old" if i % 3 else None) for i in range(150)]
    summary = summarize(rows, ThresholdPolicy(option=0.5))
    page = dashboard_html(rows, summary, baseline=baseline)
    for cells in (GridCells(len(rows)), GridCells(100 * len(rows))):  # the second: cut for another size
        spool = StoredResults.spool(cells.add)
        for r in rows:
            line, value = encode_row(r)
            spool.append(line, None if value is None else (r, value))
        read_back: list[str] = []

        def full(r: CaseResult, spool: StoredResults = spool, read_back: list[str] = read_back) -> CaseResult:
            read_back.append(r.case_id)
            return spool.full(r)

        written = write_dashboard(
            tmp_path / "dashboard.html", spool.rows, summary, baseline=baseline, full=full, cells=cells
        )
        assert written.read_text(encoding="utf-8") == page
        if cells.size == html_module.grid_text(len(rows)):  # only the rows shown in detail are read back
            assert read_back == [r.case_id for r in rows if r.outcome is not Outcome.PASSED or r.checks]
        else:
            assert read_back == [r.case_id for r in rows]
        spool.close()


def test_a_row_cut_at_max_tokens_is_marked_in_the_grid_and_its_details() -> None:
    fail = CheckResult("content", "must_include", False, "missing required text 'receipt'")
    rows = [
        CaseResult("cut-fail", "s", Outcome.FAILED, checks=(fail,), output="the refund", finish_reason="length"),
        CaseResult("cut-pass", "s", Outcome.PASSED, output="yes", finish_reason="length"),
        CaseResult("whole", "s", Outcome.PASSED, output="yes", finish_reason="stop"),
    ]
    data = _embedded(dashboard_html(rows, summarize(rows, ThresholdPolicy(option=0.0))))
    assert [len(r) for r in data["rows"]] == [10, 10, 9]  # the mark: a 10th cell, 1
    assert [r[9] for r in data["rows"][:2]] == [1, 1]
    assert [d.get("finish_reason") for d in data["details"]] == ["length"]
