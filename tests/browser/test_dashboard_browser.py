"""The dashboard in a real browser: headless Chromium loads ``dashboard.html`` from ``file://``.

Checks that the page renders with no console message at all (errors, CSP violations), that the
slice table is there, and that markup in a model output stays text: an injected ``<script>`` would
change ``document.title`` and an ``<img onerror>`` would mark ``<body>``. A screenshot is saved
into the report folder.
"""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import summarize

from .cdp import CHROMIUM
from .cdp import needs_chromium


pytestmark = [needs_chromium, pytest.mark.slow]

SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"
CONSOLE = re.compile(r":CONSOLE[:(\]]")


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def _report(folder: Path) -> Path:
    failed = CheckResult("content", "must_not_include", False, "forbidden text '<script>' at offset 0")
    rows = [
        CaseResult(
            case_id=f"ok-{i}",
            slice="退款",
            outcome="passed",
            location=f"cases.jsonl:{i + 1}",
            output="fine",
            prompt="hello",
        )
        for i in range(30)
    ]
    rows += [
        CaseResult(
            case_id="xss-script",
            slice="提示词注入",
            outcome="failed",
            location="cases.jsonl:40",
            output=SCRIPT,
            prompt=[{"role": "user", "content": SCRIPT}],
            checks=(failed,),
        ),
        CaseResult(
            case_id="xss-img", slice="提示词注入", outcome="review", location="cases.jsonl:41", output=IMG, prompt=IMG
        ),
        CaseResult(
            case_id="err-1", slice="a <b>", outcome="error", location="cases.jsonl:42", error=f"HTTP 500: {IMG}"
        ),
    ]
    baseline = [
        CaseResult(
            case_id="xss-script",
            slice="提示词注入",
            outcome="passed",
            output="safe",
            prompt=[{"role": "user", "content": "old prompt"}],
        ),
        CaseResult(case_id="ok-0", slice="退款", outcome="failed", output=IMG),
    ]
    summary = summarize(rows, ThresholdPolicy(option=0.9), baseline=baseline, baseline_source="main")
    write_report(folder, rows, summary)
    return folder / "dashboard.html"


def test_dashboard_renders_offline_and_keeps_injected_markup_inert(tmp_path: Path) -> None:
    report = tmp_path / "report"
    page = _report(report)
    dumped = _chromium(tmp_path, "--dump-dom", page.as_uri())
    dom = dumped.stdout
    assert [line for line in dumped.stderr.splitlines() if CONSOLE.search(line)] == []
    assert 'data-rendered="1"' in dom  # the script ran to its end
    assert "<title>promptsuite report: gate FAILED</title>" in dom
    assert "pwned" not in re.search(r"<title>(.*?)</title>", dom).group(1)  # type: ignore[union-attr]
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]
    table = dom.split('id="slice-table"', 1)[1].split("</table>", 1)[0]
    assert re.findall(r"<tr class=\"gate-(?:pass|fail)\"><td>([^<]*)</td>", table) == [
        "a &lt;b&gt;",
        "提示词注入",
        "退款",
    ]
    assert '<img src="x"' not in dom and "<img src=x" not in dom
    assert html.escape(SCRIPT, quote=False) in dom  # shown as text in the case details
    assert html.escape(IMG, quote=False) in dom
    assert dom.count("<rect") >= 6  # a track and a bar per slice in the chart

    shot = report / "dashboard.png"
    _chromium(tmp_path, "--window-size=1280,2200", f"--screenshot={shot}", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_the_injection_markers_do_fire_in_a_page_that_trusts_its_input(tmp_path: Path) -> None:
    """The control: the same strings pasted as markup do change the title and mark the body."""
    page = tmp_path / "naive.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><title>t</title></head><body>{SCRIPT}{IMG}</body></html>", encoding="utf-8"
    )
    dom = _chromium(tmp_path, "--dump-dom", "--virtual-time-budget=2000", page.as_uri()).stdout
    assert "<title>pwned</title>" in dom
    assert 'data-pwned="1"' in dom


def test_prompt_variants_side_by_side(tmp_path: Path) -> None:
    """Two prompt versions: the page puts each slice's pass rate per variant side by side, with the
    flips from the first variant to the second; a variant name with markup stays text."""
    rows = [
        CaseResult(case_id=f"c-{i}", slice="s", outcome=outcome, variant=variant, location=f"cases.jsonl:{i + 1}")
        for i in range(3)
        for variant, outcome in (("v1", "passed"), ("v<i>2", "failed" if i < 2 else "passed"))
    ]
    summary = summarize(rows, ThresholdPolicy(option=0.5), variant_order=["v1", "v<i>2"])
    write_report(tmp_path / "report", rows, summary)
    page = tmp_path / "report" / "dashboard.html"
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    section = dom[dom.index('id="variants"') :]
    section = section[: section.index("</section>")]
    cells = [html.unescape(c) for c in re.findall(r"<t[dh](?:\s[^>]*)?>(.*?)</t[dh]>", section)]
    assert cells[:5] == ["slice", "v1", "v<i>2", "flips v1 \u2192 v<i>2 (\u2212/+)", "p"]
    assert cells[5:] == ["s", "100.0% (3/3)", "33.3% (1/3) FAIL", "\u22122/+0", "0.5"]
    assert "v&lt;i&gt;2 breaks (passed in v1): c-0, c-1" in section
