"""What a large run keeps in memory: report files written as streams, items that hold no case.

The figures themselves come from ``benchmarks/bench_overhead.py``; these tests pin the
mechanisms (how many rows are alive at once, what an item holds) so a change cannot bring the
per-case memory back unnoticed.
"""

from __future__ import annotations

import dataclasses
import gc
import weakref
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.checks.compile_checks import compile_cases
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.errors import CaseFileError
from pytest_promptsuite.report import html as html_module
from pytest_promptsuite.report.html import GridCells
from pytest_promptsuite.report.html import dashboard_html
from pytest_promptsuite.report.html import write_dashboard
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import StoredResults
from pytest_promptsuite.results.io import encode_row
from pytest_promptsuite.results.review_book import REVIEW_CHECK
from pytest_promptsuite.results.summary import summarize
from tests.suite import Suite


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


CASES = "\ufeff" + "\r\n".join(
    [
        '{"case_id": "a-1", "input": "hello", "slice": "s", "must_include": ["hello"], "metadata": {"k": [1, 2]}}',
        "",
        '{"case_id": "a-2", "input": ["one", "two"], "slice": "t", "tags": ["x"], "vars": {"city": "巴黎"}}',
        '{"case_id": "a-3", "input": "q", "slice": "s", "assert": [{"type": "contains", "value": "q"}]}',
        '{"case_id": "a-4", "input": "last line, no newline", "slice": "s"}',
    ]
)


def test_a_case_read_back_is_the_case_loaded(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))  # a BOM, CRLF line ends, a blank line, no final newline
    loaded = load_cases(path)
    for case in loaded:
        assert case.ref is not None
        again = case.ref.read()
        assert again == case and again.location == case.location and again.ref is case.ref
    assert [c.ref.line for c in loaded if c.ref] == [1, 3, 4, 5]


def test_a_case_file_changed_after_collection_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))
    ref = load_cases(path)[1].ref
    assert ref is not None
    path.write_bytes(CASES.replace("巴黎", "伦敦").encode("utf-8"))  # same length in bytes
    with pytest.raises(CaseFileError, match=r"^shown\.jsonl:3: the case file changed after it was collected"):
        ref.read("shown.jsonl")
    path.unlink()
    with pytest.raises(CaseFileError, match=r"^shown\.jsonl:3: cannot read the case file"):
        ref.read("shown.jsonl")


def test_cases_without_checks_of_their_own_share_one_compiled_set(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))
    compiled = compile_cases(load_cases(path), make_builtin_check)
    assert compiled["a-1"] is compiled["a-4"]  # same slice, no assert entries
    assert compiled["a-2"] is not compiled["a-1"]  # another slice: the suite's checks may differ
    assert compiled["a-3"] is not compiled["a-1"] and len(compiled["a-3"].entries) == 1


def test_items_hold_no_case(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".jsonl",
        cases="\n".join(
            f'{{"case_id": "c-{i}", "input": "text {i}", "slice": "s{i % 3}", "tags": ["t"]}}' for i in range(50)
        ),
    )
    items, _ = pytester.inline_genitems("--prompt-suite", "cases.jsonl", "--prompt-repeat", "2")
    gc.collect()
    assert len(items) == 100
    ours = pytester.path / "cases.jsonl"  # (other tests of this process may keep cases of their own)
    assert not [o for o in gc.get_objects() if isinstance(o, PromptCase) and o.location.path == ours]
    assert not hasattr(items[0].planned, "__dict__")  # a slotted object
    assert items[0].planned.ref is items[1].planned.ref  # the repeats of a case share where it is
    assert items[0].planned.slice is items[6].planned.slice and items[0].planned.tags is items[2].planned.tags
    assert items[3].case.case_id == "c-1" and items[3].case.location.line == 2  # read back on demand
    assert "s1" in items[3].keywords and "t" in items[3].keywords


def test_a_case_file_edited_during_the_run_ends_that_case_as_an_error(suite: Suite) -> None:
    suite.cases(
        '{"case_id": "a", "input": "hello", "slice": "s", "must_include": ["hello"]}\n'
        '{"case_id": "b", "input": "hello", "slice": "s"}\n'
    )
    suite.pytester.makeconftest(
        "from pathlib import Path\n\n"
        "def pytest_collection_finish(session):\n"
        "    path = Path('cases.jsonl')\n"
        '    path.write_text(path.read_text().replace(\'"b", "input": "hello"\', \'"b", "input": "HELLO"\'))\n'
    )
    result = suite.run("--prompt-report", "report")
    result.stdout.fnmatch_lines(["*cases.jsonl:2: the case file changed after it was collected; run again*"])
    assert [(r["case_id"], r["outcome"], r["location"]) for r in suite.rows()] == [
        ("a", "passed", "cases.jsonl:1"),
        ("b", "error", "cases.jsonl:2"),
    ]


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


def test_cases_read_back_in_file_order_share_one_read(tmp_path: Path) -> None:
    """Items run in file order: reading one case back reads a block that serves the cases after
    it (still checked against their CRC-32), so the file is opened once for them all."""
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))
    loaded = load_cases(path)
    refs = [case.ref for case in loaded if case.ref is not None]
    assert refs[0].read() == loaded[0]
    path.unlink()  # the block read with the first case holds the rest
    assert [ref.read() for ref in refs[1:]] == loaded[1:]
    path.write_bytes(CASES.encode("utf-8"))
    again = load_cases(path)  # loaded again: its own block, never the earlier load's
    path.write_bytes(CASES.replace("巴黎", "伦敦").encode("utf-8"))
    assert again[0].ref is not None and again[0].ref.read() == again[0]
    with pytest.raises(CaseFileError, match="changed after it was collected"):
        assert again[1].ref is not None
        again[1].ref.read()
