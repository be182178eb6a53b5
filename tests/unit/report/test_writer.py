"""Stage tests for ``report``: the files of ``--prompt-report``, the terminal lines, diff and merge."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
from pathlib import Path

import pytest

from pytest_promptsuite.cases.shard import parse_shard
from pytest_promptsuite.cases.shard import shard_index
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.cli.diff_merge import run_diff
from pytest_promptsuite.cli.diff_merge import run_merge
from pytest_promptsuite.cli.main import main as cli_main
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.config.settings import Thresholds
from pytest_promptsuite.report.document import summary_document
from pytest_promptsuite.report.html import dashboard_html
from pytest_promptsuite.report.markdown import md_escape
from pytest_promptsuite.report.markdown import summary_markdown
from pytest_promptsuite.report.text import summary_lines
from pytest_promptsuite.report.writer import REPORT_FILES
from pytest_promptsuite.report.writer import sorted_rows
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import summarize


SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=\"document.body.dataset.pwned='1'\">"


def row(case_id: str, slice_: str, outcome: str, line: int = 1, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, location=f"cases.jsonl:{line}", **kw)  # type: ignore[arg-type]


def _rows() -> list[CaseResult]:
    fail = CheckResult("content", "must_not_include", False, "forbidden text '<script>' at offset 0")
    return [
        row("ok-1", "客服", "passed", 1, output="fine", prompt="hello"),
        row("xss-1", "客服", "failed", 2, output=SCRIPT, prompt=[{"role": "user", "content": IMG}], checks=(fail,)),
        row("rev-1", "a|b", "review", 3, output="look at me"),
        row("err-1", "a|b", "error", 4, error="HTTP 500: </script><script>alert(1)</script>"),
    ]


def _baseline() -> list[CaseResult]:
    return [
        row("ok-1", "客服", "passed", 1, output="fine"),
        row("xss-1", "客服", "passed", 2, output="was fine", prompt=[{"role": "user", "content": "old"}]),
        row("gone-1", "a|b", "passed", 5),
    ]


def test_write_report_writes_every_contract_file(tmp_path: Path) -> None:
    rows = _rows()
    summary = summarize(rows, ThresholdPolicy(option=0.5), baseline=_baseline(), baseline_source="base")
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


def test_summary_lines_end_with_the_verdict_and_list_regressions_by_id() -> None:
    summary = summarize(
        _rows(),
        ThresholdPolicy(option=0.5),
        baseline=_baseline(),
        baseline_source="base",
        settings=GateSettings(regression="delta"),
    )
    lines = list(summary_lines(summary))
    assert lines[0].split() == [
        "slice",
        "cases",
        "passed",
        "failed",
        "error",
        "review",
        "pass",
        "rate",
        "95%",
        "CI",
        "threshold",
        "baseline",
        "delta",
        "(pts)",
        "flips",
        "-/+",
        "p",
        "p",
        "drop",
        "verdict",
        "detectable",
        "(pts)",
        "gate",
    ]
    assert lines[2].split()[:7] == ["客服", "2", "1", "1", "0", "0", "50.0%"]
    assert lines[2].split()[-8:] == ["100.0%", "-50.0", "-1/+0", "1", "0.5", "REGRESSED", "50.0", "FAIL"]
    assert "regressions: xss-1" in lines
    # slice a|b shares no case with the baseline (gone-1 was removed, err-1 and rev-1 are new): no
    # drop is claimed there; its threshold still fails it
    assert lines[lines.index("promptsuite gate: FAILED") :] == [
        "promptsuite gate: FAILED",
        "  - slice 'a|b': pass rate 0.0% (0/1) is below its threshold 50.0% (option)",
        "  - slice '客服': pass rate dropped 50.0 points against the baseline (100.0% -> 50.0%), "
        "more than the allowed 0.0 points (default); McNemar p = 1; regressions: xss-1",
        "  - 1 case ended in an error (the model call or the rendering failed): err-1; errors always fail the run",
    ]
    ok = summarize([row("a", "s", "passed"), row("b", "s", "failed")], ThresholdPolicy(option=0.5))
    assert list(summary_lines(ok))[-1] == "promptsuite gate: PASSED (1 failed case within tolerance)"


def test_summary_md_puts_the_verdict_first_and_escapes_user_text() -> None:
    summary = summarize(_rows(), ThresholdPolicy(option=0.5), baseline=_baseline(), baseline_source="base")
    md = summary_markdown(summary)
    lines = md.splitlines()
    assert lines[0] == "## \u274c promptsuite gate: FAILED"
    assert "| slice | cases | passed | failed | error | review |" in md
    assert "| a\\|b | 2 | 0 | 0 | 1 | 1 |" in md  # the pipe of a slice name is escaped
    assert "### Regressions (passed, now not) (1)" in md and "- xss-1" in md
    # the only markup is our own collapsed sections; user text stays escaped
    ours = md.replace("<details><summary>", "").replace("</summary>", "").replace("</details>", "")
    assert "<" not in ours.replace("&lt;", "")
    assert "http" not in md and "](" not in md


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("1. first", "1\\. first"),  # would start an ordered list
        ("- item", "\\- item"),
        ("# title", "\\# title"),
        ("50.0% ok", "50.0% ok"),
        ("a|b_c*d`e", "a\\|b\\_c\\*d\\`e"),
        ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))"),
        ("<img src=x onerror=y>", "&lt;img src=x onerror=y&gt;"),
        ("at https://evil.example, www.evil.example", "at https\\://evil.example, www\\.evil.example"),
        ("two\nlines", "two lines"),
    ],
)
def test_markdown_escaping_keeps_user_text_literal(text: str, shown: str) -> None:
    assert md_escape(text) == shown


def _embedded(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="promptsuite-data">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_dashboard_is_self_contained_and_keeps_markup_inert() -> None:
    rows = _rows()
    summary = summarize(rows, ThresholdPolicy(option=0.5), baseline=_baseline(), baseline_source="base")
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
    rows = _rows()
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


# -- shards, merge and diff ------------------------------------------------------------------------


def test_shard_parsing_and_stability() -> None:
    assert str(parse_shard("2/4")) == "2/4"
    for bad in ("0/2", "3/2", "2", "a/b", "1/0", "1/2/3"):
        with pytest.raises(ValueError, match="write 2/4"):
            parse_shard(bad)
    ids = [f"case-{i}" for i in range(200)]
    before = {i: shard_index(i, 4) for i in ids}
    assert {i: shard_index(i, 4) for i in [*ids, "new-1", "new-2"] if i in before} == before
    assert set(before.values()) == {0, 1, 2, 3}
    assert shard_index("case-0", 4) == int(hashlib.sha256(b"case-0").hexdigest()[:16], 16) % 4


def test_merge_of_shards_equals_the_unsharded_report(tmp_path: Path) -> None:
    rows = [row(f"c{i}", f"s{i % 3}", "passed" if i % 5 else "failed", i + 1, output=str(i)) for i in range(60)]
    policy = ThresholdPolicy(Thresholds(slices={"s1": 0.5}), option=0.7, max_regression_option=0.1)
    baseline = [row(f"c{i}", f"s{i % 3}", "passed", i + 1) for i in range(0, 70, 2)]
    base_dir = tmp_path / "base"
    write_report(base_dir, baseline, summarize(baseline))
    whole = summarize(rows, policy, baseline=baseline, baseline_source=str(base_dir))
    write_report(tmp_path / "whole", rows, whole, baseline=baseline)  # as a run with --prompt-baseline does
    shard_dirs = []
    for k in range(3):
        part = [r for r in rows if shard_index(r.case_id, 3) == k]
        write_report(tmp_path / f"shard{k}", part, summarize(part, policy))
        shard_dirs.append(tmp_path / f"shard{k}")
    out = io.StringIO()
    status = run_merge(shard_dirs, tmp_path / "merged", baseline=base_dir, out=out)
    assert status == (0 if whole.gate.passed else 1)
    for name in ("summary.json", "slices.csv", "results.jsonl", "summary.md", "dashboard.html"):
        assert (tmp_path / "merged" / name).read_text("utf-8") == (tmp_path / "whole" / name).read_text("utf-8"), name
    assert out.getvalue().splitlines()[-1] == f"promptsuite report: {tmp_path / 'merged'}"


def test_merge_refuses_overlapping_shards_and_unreadable_input(tmp_path: Path) -> None:
    rows = [row("a", "s", "passed")]
    write_report(tmp_path / "one", rows, summarize(rows))
    write_report(tmp_path / "two", rows, summarize(rows))
    err = io.StringIO()
    assert run_merge([tmp_path / "one", tmp_path / "two"], tmp_path / "m", err=err) == 2
    expected = f"{tmp_path / 'two'}: case 'a' (variant None, repeat 0) is also in {tmp_path / 'one'}"
    assert expected in err.getvalue()
    assert run_merge([tmp_path / "nope"], tmp_path / "m", err=io.StringIO()) == 2
    assert not (tmp_path / "m").exists()


def test_diff_prints_deltas_p_values_and_ids(tmp_path: Path) -> None:
    old = [row(f"c{i}", "s", "passed", i + 1) for i in range(10)] + [row("gone", "s", "failed", 20)]
    new = [row(f"c{i}", "s", "failed" if i < 6 else "passed", i + 1) for i in range(10)]
    new.append(row("fresh", "t", "passed", 30))
    write_report(tmp_path / "old", old, summarize(old))
    (tmp_path / "new.jsonl").write_text("".join(r.to_json() + "\n" for r in new), "utf-8")
    out = io.StringIO()
    # a bare results.jsonl: the paired rule; 6 regressions and no fixes are significant, so exit 1
    assert run_diff(tmp_path / "old", tmp_path / "new.jsonl", out=out) == 1
    text = out.getvalue().splitlines()
    slice_s = next(line for line in text if line.startswith("s "))
    # baseline 10/11, now 4/10; 6 regressions and no fixes: p = 2 / 2**6, one-sided 1 / 2**6
    assert slice_s.split()[-8:] == ["90.9%", "-50.9", "-6/+0", "0.0312", "0.0156", "REGRESSED", "50.0", "FAIL"]
    assert text[text.index("regressions (6):") + 1 : text.index("fixes (0):")] == [f"  c{i}" for i in range(6)]
    assert text[text.index("new (1):") + 1] == "  fresh"
    assert text[text.index("removed (1):") + 1] == "  gone"
    assert text[text.index("promptsuite diff: REGRESSED") + 1].startswith(
        "  - slice 's': pass rate dropped 60.0 points against the baseline over the 10 cases in both runs"
    )


def test_diff_exits_2_on_unreadable_input(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text("{oops\n", "utf-8")
    (tmp_path / "ok.jsonl").write_text(row("a", "s", "passed").to_json() + "\n", "utf-8")
    err = io.StringIO()
    assert run_diff(tmp_path / "bad.jsonl", tmp_path / "ok.jsonl", out=io.StringIO(), err=err) == 2
    assert "bad.jsonl:1: not a results.jsonl row" in err.getvalue()
    assert run_diff(tmp_path / "ok.jsonl", tmp_path / "missing", out=io.StringIO(), err=err) == 2
    assert cli_main(["diff", str(tmp_path / "ok.jsonl"), str(tmp_path / "bad.jsonl")]) == 2
    assert cli_main(["diff", str(tmp_path / "ok.jsonl"), str(tmp_path / "ok.jsonl")]) == 0
