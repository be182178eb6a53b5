"""The dashboard driven in headless Chromium (DevTools over a pipe): the per-variant charts follow
the gate, table headers never break inside a word from 360 px to 1400 px, the search finds a case
by its output, and a review decision made in the page is applied by a later run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.history import load_history
from pytest_promptsuite.results.summary import summarize
from tests.suite import Suite

from .cdp import CHROMIUM
from .cdp import Browser
from .cdp import needs_chromium


pytestmark = [needs_chromium, pytest.mark.slow]

#: Every table header cell: does any of its words span two lines? (a word split by wrapping
#: has more than one client rect; one rect per word means the text fits on whole words)
BROKEN_HEADERS = """(() => {
  const broken = [];
  for (const th of document.querySelectorAll('th')) {
    const node = th.firstChild;
    if (!node || node.nodeType !== 3 || !th.getClientRects().length) continue;
    const re = /\\S+/g; let m;
    while ((m = re.exec(node.data))) {
      const range = document.createRange();
      range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
      const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (lines.size > 1) broken.push(th.textContent + ' / ' + m[0]);
    }
  }
  return broken;
})()"""


@pytest.fixture
def browser(tmp_path: Path):  # type: ignore[no-untyped-def]
    assert CHROMIUM is not None
    with Browser(CHROMIUM, tmp_path / "profile") as b:
        yield b


def _variant_rows() -> list[CaseResult]:
    """v1 fails the slice missing_info (1 of 6), v2 passes it; both pass refunds."""
    rows = []
    fail = CheckResult("content", "must_include", False, "missing required text 'not provided'")
    for i in range(6):
        for variant in ("v1", "v2"):
            bad = variant == "v1" and i == 0
            rows.append(
                CaseResult(
                    case_id=f"missing-{i}",
                    slice="missing_info",
                    variant=variant,
                    location=f"cases.jsonl:{i + 1}",
                    outcome="failed" if bad else "passed",
                    checks=(fail,) if bad else (),
                    output=f"{variant} says the order number was not provided ({i})" if not bad else "refund issued",
                    prompt=[{"role": "user", "content": f"where is my parcel {i}?"}],
                    latency_ms=100.0 + i,
                    usage={"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
                )
            )
            rows.append(
                CaseResult(
                    case_id=f"refund-{i}",
                    slice="refunds",
                    variant=variant,
                    location=f"cases.jsonl:{i + 10}",
                    outcome="passed",
                    output=f"{variant} refund answer {i} zebra-{variant}-{i}",
                    prompt=[{"role": "user", "content": f"can I get a refund {i}?"}],
                )
            )
    return rows


def _variant_report(folder: Path, history: Path | None = None) -> Path:
    rows = _variant_rows()
    baseline = [r for r in rows if r.variant == "v1"]
    summary = summarize(
        rows, ThresholdPolicy(option=1.0), variant_order=["v1", "v2"], baseline=baseline, baseline_source="main"
    )
    write_report(folder, rows, summary, history=load_history([history]) if history else None, baseline=baseline)
    return folder / "dashboard.html"


def test_each_variant_has_its_own_chart_and_its_bars_follow_its_gate(tmp_path: Path, browser: Browser) -> None:
    page = _variant_report(tmp_path / "rep")
    browser.open(page.as_uri())
    bars = browser.evaluate("""[...document.querySelectorAll('figure.variant-chart')].map(f => [
      f.dataset.variant, [...f.querySelectorAll('rect.bar')].map(r => [r.dataset.slice, r.getAttribute('class')])])""")
    gates = {
        (s["variant"], s["slice"]): s["gate"]
        for s in json.loads((tmp_path / "rep" / "summary.json").read_text("utf-8"))["compared_variants"]["slices"]
    }
    assert [v for v, _ in bars] == ["v1", "v2"]
    drawn = {(v, name): cls for v, shown in bars for name, cls in shown}
    assert drawn == {key: "bar " + gates[key] for key in gates}
    assert drawn[("v1", "missing_info")] == "bar fail" and drawn[("v2", "missing_info")] == "bar pass"
    assert browser.evaluate("document.querySelector('#chart') === null")  # no pooled chart


@pytest.mark.parametrize("width", [360, 1400])
def test_table_headers_fit_on_whole_words(tmp_path: Path, browser: Browser, width: int) -> None:
    history = tmp_path / "history"
    for n in range(3):
        _variant_report(history / f"run-{n}")
    page = _variant_report(tmp_path / "rep", history)
    browser.open(page.as_uri(), width=width)
    assert browser.evaluate("document.querySelectorAll('th').length") > 40
    assert browser.evaluate(BROKEN_HEADERS) == []
    # the page never scrolls sideways: wide tables scroll inside their own box
    assert browser.evaluate("document.documentElement.scrollWidth") <= width
    shot = tmp_path / "rep" / f"dashboard-{width}.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_header_check_catches_a_header_broken_inside_a_word(tmp_path: Path, browser: Browser) -> None:
    """The control: the old rule (``overflow-wrap: anywhere`` in a squeezed table) is caught."""
    page = tmp_path / "narrow.html"
    page.write_text(
        "<!DOCTYPE html><html data-rendered='1'><body style='width:300px'><table style='width:100%;table-layout:fixed'>"
        "<tr><th style='overflow-wrap:anywhere'>passed</th><th>threshold</th><th>regressions</th><th>verdict</th>"
        "<th>detectable</th><th>baseline</th><th>delta</th></tr></table></body></html>",
        encoding="utf-8",
    )
    browser.open(page.as_uri(), width=360)
    assert browser.evaluate(BROKEN_HEADERS) != []


def test_search_by_output_text_finds_its_case(tmp_path: Path, browser: Browser) -> None:
    page = _variant_report(tmp_path / "rep")
    browser.open(page.as_uri())
    browser.evaluate("""(() => { const o = document.getElementById('f-outcome'); o.value = '';
      o.dispatchEvent(new Event('change')); const s = document.getElementById('f-search');
      s.value = 'ZEBRA-v2-4'; s.dispatchEvent(new Event('input')); })()""")
    cases = browser.evaluate(
        "[...document.querySelectorAll('#case-rows tr.case')].map(t => t.cells[0].textContent"
        " + '/' + t.cells[2].textContent)"
    )
    assert cases == ["refund-4/v2"]
    assert browser.evaluate("[...document.querySelectorAll('#grid-rows tr.grid-row')].map(t => t.dataset.case)") == [
        "refund-4"
    ]
    # the grid puts v1, v2 and the baseline side by side; "diff" marks what v2 changed
    assert browser.evaluate("[...document.querySelectorAll('#grid-head th')].map(t => t.textContent)") == [
        "case",
        "slice",
        "v1",
        "v2",
        "baseline",
        "",
    ]
    browser.evaluate("document.querySelector('#grid-rows .diff-toggle').click()")
    assert browser.evaluate("[...document.querySelectorAll('#grid-rows span.add')].map(s => s.textContent)") == [
        "v2",
        "zebra-v2-4",
    ]
    # a search that matches nothing shows nothing
    browser.evaluate(
        "(() => { const s = document.getElementById('f-search'); s.value = 'no such text';"
        " s.dispatchEvent(new Event('input')); })()"
    )
    assert browser.evaluate("document.querySelectorAll('#case-rows tr.case').length") == 0


REVIEW_CASES = [
    {"case_id": "legal-1", "input": "refund within 30 days", "slice": "policy", "review": "legal wording"},
    {"case_id": "legal-2", "input": "no refund after opening", "slice": "policy", "review": "legal wording"},
    {"case_id": "plain-1", "input": "hello", "slice": "policy"},
]


def test_a_review_decision_made_in_the_page_is_applied_by_a_later_run(suite: Suite, browser: Browser) -> None:
    suite.cases(REVIEW_CASES)
    first = suite.run("--prompt-report", "rep", "-p", "no:cacheprovider")
    assert first.ret == 0
    rows = suite.by_id("rep")
    assert rows["legal-1"]["outcome"] == rows["legal-2"]["outcome"] == "review"

    downloads = suite.path / "downloads"
    browser.allow_downloads(downloads)
    browser.open((suite.path / "rep" / "dashboard.html").as_uri())
    assert browser.evaluate("[...document.querySelectorAll('#review-list li')].map(l => l.dataset.case)") == [
        "legal-1",
        "legal-2",
    ]
    browser.evaluate("""(() => {
      const who = document.getElementById('reviewer'); who.value = 'alice';
      const [one, two] = document.querySelectorAll('#review-list li');
      one.querySelector('.comment').value = 'checked with legal';
      one.querySelector('.mark-pass').click();
      two.querySelector('.mark-fail').click();
      document.getElementById('download-decisions').click(); })()""")
    browser.wait_download()
    [file] = list(downloads.iterdir())
    assert file.name == "review-decisions.jsonl"
    decisions = [json.loads(line) for line in file.read_text("utf-8").splitlines()]
    assert [(d["case_id"], d["decision"], d["reviewer"]) for d in decisions] == [
        ("legal-1", "pass", "alice"),
        ("legal-2", "fail", "alice"),
    ]

    second = suite.run("--prompt-report", "rep2", "--prompt-reviews", str(file), "-p", "no:cacheprovider")
    second.assert_outcomes(passed=2, failed=1)
    rows = suite.by_id("rep2")
    assert rows["legal-1"]["outcome"] == "passed" and rows["legal-2"]["outcome"] == "failed"
    decided = [c for c in rows["legal-1"]["checks"] if c["name"] == "review decision"]
    assert decided[0]["message"] == "alice decided pass: checked with legal"
    assert decided[0]["details"]["reviewer"] == "alice"
    assert (suite.path / "rep2" / "review.jsonl").read_text() == ""  # nothing left to review

    # a changed output is reviewed again: the decision names the old output's hash
    changed = [dict(REVIEW_CASES[0], input="refund within 14 days"), *REVIEW_CASES[1:]]
    suite.cases(changed)
    third = suite.run("--prompt-report", "rep3", "--prompt-reviews", str(file), "-p", "no:cacheprovider")
    rows = suite.by_id("rep3")
    assert rows["legal-1"]["outcome"] == "review" and rows["legal-2"]["outcome"] == "failed"
    assert third.ret == 1  # legal-2's failure now counts against the slice's threshold


def test_an_answer_cut_at_max_tokens_is_marked_in_the_table_and_its_details(tmp_path: Path, browser: Browser) -> None:
    fail = CheckResult("content", "must_include", False, "missing required text 'receipt'")
    rows = [
        CaseResult("cut-fail", "s", "failed", checks=(fail,), output="the refund takes", finish_reason="length"),
        CaseResult("cut-pass", "s", "passed", output="yes", finish_reason="length"),
        CaseResult("whole", "s", "passed", output="yes", finish_reason="stop"),
    ]
    write_report(tmp_path / "rep", rows, summarize(rows, ThresholdPolicy(option=0.0)))
    browser.open((tmp_path / "rep" / "dashboard.html").as_uri())
    browser.evaluate("""(() => { const o = document.getElementById('f-outcome'); o.value = '';
      o.dispatchEvent(new Event('change')); })()""")
    marked = browser.evaluate(
        "[...document.querySelectorAll('#case-rows tr.case')].filter(t => t.querySelector('span.cut'))"
        ".map(t => t.cells[0].textContent)"
    )
    assert marked == ["cut-fail", "cut-pass"]
    notes = browser.evaluate("[...document.querySelectorAll('#case-rows tr.detail-row p.cut')].map(p => p.textContent)")
    assert notes == ['the answer was cut at max_tokens (finish_reason "length")']  # the failed row's details


def test_verdict_and_gate_show_without_a_sideways_scroll_and_a_failed_case_its_first_failing_check(
    tmp_path: Path, browser: Browser
) -> None:
    page = _variant_report(tmp_path / "rep")
    browser.open(page.as_uri(), width=1024)
    headers = browser.evaluate("[...document.querySelectorAll('#slice-table th')].map(t => t.textContent)")
    assert headers[-2:] == ["verdict", "gate"]
    # the slice table's box does not scroll: its last column is in view
    assert browser.evaluate(
        "(() => { const b = document.getElementById('slices').firstElementChild.parentNode;"
        " const t = document.getElementById('slice-table'); return t.scrollWidth <= b.clientWidth; })()"
    )
    assert browser.evaluate("[...document.querySelectorAll('#slice-baseline-table th')].map(t => t.textContent)") == [
        "slice",
        "baseline",
        "delta (pts)",
        "regressions",
        "fixes",
        "p (McNemar)",
        "p (drop)",
        "detectable drop",
    ]
    # the failed case's row says which check failed and why, before any click
    shown = browser.evaluate(
        "[...document.querySelectorAll('#case-rows tr.case')].map(t => t.cells[0].textContent + ' | '"
        " + t.cells[5].querySelector('.failed-check').textContent)"
    )
    assert shown == ["missing-0 | must_include: missing required text 'not provided'"]
