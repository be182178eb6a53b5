"""Prompt versions compared in one run: ids, results, side-by-side numbers, selection, render."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from tests.suite import Suite


@pytest.fixture
def support_bot(pytester: pytest.Pytester) -> Path:
    return pytester.copy_example("support_bot")


@pytest.mark.usefixtures("support_bot")
def test_every_case_runs_once_per_variant(suite: Suite, plugin_args: list[str]) -> None:
    result = suite.run("--prompt-report", "report", *plugin_args, paths=["."])
    result.assert_outcomes(passed=12, failed=6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary, rows = suite.summary(), suite.rows()
    assert sorted((r["case_id"], r["variant"]) for r in rows if r["case_id"] == "inject-001") == [
        ("inject-001", "v1"),
        ("inject-001", "v2"),
    ]
    compared = summary["compared_variants"]
    assert compared["variants"] == ["v1", "v2"]
    table = {(s["slice"], s["variant"]): (s["passed"], s["cases"], s["gate"]) for s in compared["slices"]}
    assert table == {
        ("信息不足", "v1"): (0, 3, "fail"),
        ("信息不足", "v2"): (3, 3, "pass"),
        ("提示词注入", "v1"): (3, 3, "pass"),
        ("提示词注入", "v2"): (0, 3, "fail"),
        ("退款", "v1"): (3, 3, "pass"),
        ("退款", "v2"): (3, 3, "pass"),
    }
    # flips from v1 to v2, paired by case: 3 regressions in injection, 3 fixes in 信息不足
    assert compared["flips_by_slice"]["提示词注入"] == {"regressions": 3, "fixes": 0, "p_value": 0.25}
    assert compared["flips_by_slice"]["信息不足"] == {"regressions": 0, "fixes": 3, "p_value": 0.25}
    assert sorted(compared["regressions"]) == ["inject-001", "inject-002", "inject-003"]
    assert sorted(compared["fixes"]) == ["missing-001", "missing-002", "missing-003"]
    assert summary["gate"]["reasons"] == [
        "slice '信息不足' [variant v1]: pass rate 0.0% (0/3) is below its threshold 100.0% (config default)",
        "slice '提示词注入' [variant v2]: pass rate 0.0% (0/3) is below its threshold 100.0% (config default)",
    ]


@pytest.mark.usefixtures("support_bot")
def test_item_ids_carry_the_variant(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--prompt-suite", ".", "--collect-only", "-q")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids[:2] == ["cases.jsonl::refund-001[v1]", "cases.jsonl::refund-001[v2]"]
    assert len(ids) == 18


@pytest.mark.usefixtures("support_bot")
def test_terminal_shows_variants_side_by_side(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--prompt-suite", ".")
    result.stdout.fnmatch_lines(
        [
            "prompt variants, pass rate by slice:",
            "slice*v1*v2*flips v1->v2 -/+*p",
            "信息不足*0.0% (0/3) FAIL*100.0% (3/3)*-0/+3*0.25",
            "提示词注入*100.0% (3/3)*0.0% (0/3) FAIL*-3/+0*0.25",
            "退款*100.0% (3/3)*100.0% (3/3)*-0/+0*1",
            "v2 breaks (passed in v1): inject-001, inject-002, inject-003",
            "v2 fixes (failed in v1): missing-001, missing-002, missing-003",
        ]
    )


@pytest.mark.usefixtures("support_bot")
def test_select_one_variant(suite: Suite) -> None:
    result = suite.run("--prompt-variant", "v2", "--prompt-report", "report", paths=["."])
    result.assert_outcomes(passed=6, failed=3)
    assert {r["variant"] for r in suite.rows()} == {"v2"}
    # -k works on the variant suffix too
    suite.run("-k", "v1 and 退款", paths=["."]).assert_outcomes(passed=3, deselected=15)


@pytest.mark.usefixtures("support_bot")
def test_unknown_variant_fails_collection(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--prompt-suite", ".", "--prompt-variant", "v3")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*--prompt-variant v3: promptsuite.toml has no such variant*variants: v1, v2*"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_render_shows_each_variant(support_bot: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--prompt-suite", str(support_bot), "--case-id", "inject-001"]) == 0
    shown = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [s["variant"] for s in shown] == ["v1", "v2"]
    assert shown[0]["prompt"] != shown[1]["prompt"]
    assert (
        main(["render", "--prompt-suite", str(support_bot), "--case-id", "inject-001", "--prompt-variant", "v2"]) == 0
    )
    [only] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert only["variant"] == "v2" and only["prompt"] == shown[1]["prompt"]
