"""Stage tests for ``report.writer``: the files of ``--prompt-report`` (``slices.csv`` too), rows in case-file order."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.writer import REPORT_FILES
from pytest_promptsuite.report.writer import sorted_rows
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import summarize
from tests.unit.report.support import SCRIPT
from tests.unit.report.support import baseline_rows
from tests.unit.report.support import markup_rows
from tests.unit.report.support import row


def test_write_report_writes_every_contract_file(tmp_path: Path) -> None:
    rows = markup_rows()
    summary = summarize(rows, ThresholdPolicy(option=0.5), baseline=baseline_rows(), baseline_source="base")
    paths = write_report(tmp_path / "rep", rows, summary)
    assert [p.name for p in paths] == list(REPORT_FILES)
    data = json.loads((tmp_path / "rep" / "summary.json").read_text("utf-8"))
    assert set(data) >= {"totals", "slices", "regressions", "fixes", "new", "removed", "gate"}
    assert set(data["totals"]) >= {"cases", "passed", "failed", "error", "review"}
    assert set(data["slices"][0]) >= {
        "slice",
        "cases",
        "passed",
        "failed",
        "error",
        "review",
        "pass_rate",
        "ci_low",
        "ci_high",
        "threshold",
        "baseline_pass_rate",
        "delta",
        "regressions",
        "fixes",
        "p_value",
        "gate",
    }
    assert data["regressions"] == ["xss-1"] and data["removed"] == ["gone-1"]
    assert data["new"] == ["err-1", "rev-1"]
    assert set(data["gate"]) == {"passed", "reasons"}
    with (tmp_path / "rep" / "slices.csv").open(encoding="utf-8", newline="") as fp:
        table = list(csv.DictReader(fp))
    assert [t["slice"] for t in table] == ["a|b", "客服"]
    assert table[1]["pass_rate"] == "0.5" and table[1]["regressions"] == "1"
    lines = (tmp_path / "rep" / "results.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == ["ok-1", "xss-1", "rev-1", "err-1"]
    assert json.loads(lines[1])["output"] == SCRIPT


def test_rows_are_written_in_case_file_order() -> None:
    rows = [
        row("b", "s", "passed", 10),
        row("a", "s", "passed", 9),
        row("c", "s", "passed", 2, repeat=1),
        row("c", "s", "passed", 2, repeat=0),
    ]
    assert [(r.case_id, r.repeat) for r in sorted_rows(rows)] == [("c", 0), ("c", 1), ("a", 0), ("b", 0)]


# -- shards, merge and diff ------------------------------------------------------------------------


def _row(case_id: str, slice_: str, outcome: str, line: int) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, location=f"cases.jsonl:{line}")


#: ``slices.csv`` as the csv module wrote it before (commit a8b1053) for :func:`_slice_rows`: CRLF
#: line ends, Python's float reprs, empty cells for null, quoted only where a name needs it.
SLICES_CSV = (
    "slice,cases,passed,failed,error,review,skipped,pass_rate,ci_low,ci_high,threshold,threshold_source,"
    "baseline_pass_rate,delta,regressions,fixes,p_value,p_regression,verdict,detectable_drop,gate\r\n"
    '"a,b",3,1,1,0,1,0,0.5,0.09453120573423074,0.9054687942657693,0.6,option,0.6666666666666666,'
    "-0.16666666666666663,0,0,1.0,1.0,no evidence of a drop,,fail\r\n"
    "all-review,1,0,0,0,1,0,,,,0.6,option,,,0,0,1.0,,,,pass\r\n"
    '"line\nbreak",3,1,1,0,1,0,0.5,0.09453120573423074,0.9054687942657693,0.6,option,0.6666666666666666,'
    "-0.16666666666666663,0,0,1.0,1.0,no evidence of a drop,,fail\r\n"
    '"say ""hi""",3,1,1,0,1,0,0.5,0.09453120573423074,0.9054687942657693,0.6,option,0.6666666666666666,'
    "-0.16666666666666663,1,0,1.0,0.5,inconclusive,,fail\r\n"
    "客服,3,1,1,0,1,0,0.5,0.09453120573423074,0.9054687942657693,0.6,option,0.6666666666666666,"
    "-0.16666666666666663,1,1,1.0,0.75,no evidence of a drop,,fail\r\n"
    "提示词注入,3,1,1,0,1,0,0.5,0.09453120573423074,0.9054687942657693,0.6,option,0.6666666666666666,"
    "-0.16666666666666663,1,1,1.0,0.75,no evidence of a drop,,fail\r\n"
)


def test_slices_csv_is_written_as_before(tmp_path: Path) -> None:
    rows, baseline = [], []
    for s, name in enumerate(["客服", "a,b", 'say "hi"', "提示词注入", "line\nbreak"]):
        for i in range(3):
            rows.append(_row(f"{s}-{i}", name, ("passed", "failed", "review")[(s + i) % 3], 3 * s + i + 1))
            baseline.append(_row(f"{s}-{i}", name, "passed" if i else "failed", 3 * s + i + 1))
    rows.append(_row("r", "all-review", "review", 99))
    summary = summarize(rows, ThresholdPolicy(option=0.6), baseline=baseline, baseline_source="base")
    write_report(tmp_path / "rep", rows, summary)
    assert (tmp_path / "rep" / "slices.csv").read_bytes() == SLICES_CSV.encode("utf-8")
    write_report(tmp_path / "none", [], summarize([], ThresholdPolicy()))
    assert (tmp_path / "none" / "slices.csv").read_bytes() == b"slice\r\n"
