"""Running suites through pytest: outcomes, failure reports, the slice table, gates, report files."""

from __future__ import annotations

import pytest

from tests.suite import THREE_SLICES as CASES
from tests.suite import Suite
from tests.suite import timeless


def test_outcomes_table_and_exit_status(suite: Suite, plugin_args: list[str]) -> None:
    suite.cases(CASES)
    result = suite.run("--prompt-report", "report", *plugin_args)
    result.assert_outcomes(passed=6, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*promptsuite: pass rate by slice*",
            "slice*cases*passed*failed*pass rate*threshold*gate",
            "facts*4*3*1*75.0%*100% (default)*FAIL",
            "injection*2*1*1*50.0%*100% (default)*FAIL",
            "ok*2*2*0*100.0%*100% (default)*PASS",
            "*promptsuite gate: FAILED",
            "*slice 'facts': pass rate 75.0% (3/4) is below its threshold 100.0% (default)",
        ]
    )
    summary = suite.summary()
    assert summary["totals"] == {"cases": 8, "passed": 6, "failed": 2, "error": 0, "review": 0, "skipped": 0}
    assert [(s["slice"], s["cases"], s["passed"], s["pass_rate"], s["gate"]) for s in summary["slices"]] == [
        ("facts", 4, 3, 0.75, "fail"),
        ("injection", 2, 1, 0.5, "fail"),
        ("ok", 2, 2, 1.0, "pass"),
    ]
    assert summary["gate"]["passed"] is False


def test_failure_report_lists_every_failed_check_without_traceback(suite: Suite) -> None:
    suite.cases(CASES)
    result = suite.run()
    result.stdout.fnmatch_lines(
        [
            "*case facts-4 [[]facts[]]*",
            "cases.jsonl:6: facts-4 [[]slice facts[]] failed 4 checks",
            "  content   must_include      missing required text '未提供'",
            "  content   must_include      missing required text 'X'",
            "  content   must_not_include  found forbidden text 'nothing' at offset 0",
            "  content   must_not_include  found forbidden text 'no' at offset 0",
            "output (7 chars):",
            "  nothing",
        ],
        consecutive=True,
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*pytest_promptsuite*")


def test_tolerance_exits_zero_with_failed_cases(suite: Suite, plugin_args: list[str]) -> None:
    suite.cases(CASES)
    result = suite.run("--prompt-min-pass-rate", "0.5", *plugin_args)
    result.assert_outcomes(passed=6, failed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*promptsuite gate: PASSED (2 failed cases within tolerance)"])


def test_threshold_just_below_fails(suite: Suite) -> None:
    suite.cases(CASES)
    result = suite.run("--prompt-min-pass-rate", "0.51")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*slice 'injection': pass rate 50.0% (1/2) is below its threshold 51.0% (option)"])


def test_config_thresholds_per_slice(suite: Suite) -> None:
    suite.cases(CASES)
    suite.config({"thresholds": {"default": 0.7}, "thresholds.slices": {"injection": 0.5}})
    result = suite.run()
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["facts*75.0%*70% (config default)*PASS", "injection*50.0%*50% (config slice)*PASS"])
    # an explicit option beats the config's default but not a slice's own threshold
    result = suite.run("--prompt-min-pass-rate", "0.8")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["facts*75.0%*80% (option)*FAIL", "injection*50.0%*50% (config slice)*PASS"])


def test_failing_ordinary_test_is_never_masked(suite: Suite) -> None:
    suite.cases(CASES)
    suite.write("test_real.py", "def test_real():\n    assert 1 == 2\n")
    result = suite.run("test_real.py", "--prompt-min-pass-rate", "0")
    result.assert_outcomes(passed=6, failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_bad_model_spec_fails_collection(suite: Suite) -> None:
    suite.cases([{"case_id": "a", "input": "x", "slice": "s"}])
    result = suite.run("--prompt-model", "nope:x")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*unknown model spec 'nope:x'*"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_xdist_gives_the_same_summary_as_serial(suite: Suite) -> None:
    suite.cases(CASES)
    suite.run("--prompt-report", "serial")
    suite.run("--prompt-report", "xdist", "-n", "2")
    assert timeless(suite.summary("serial")) == timeless(suite.summary("xdist"))
    by_id = lambda rows: sorted(rows, key=lambda r: r["case_id"])  # noqa: E731
    assert timeless(by_id(suite.rows("serial"))) == timeless(by_id(suite.rows("xdist")))


def test_exitfirst_stops_and_keeps_failing(suite: Suite) -> None:
    suite.cases(CASES)
    result = suite.run("-x", "--prompt-min-pass-rate", "0")
    # facts-4 is the 6th case; -x stops there and the exit stays 1 even within tolerance
    result.assert_outcomes(passed=5, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*stopping after 1 failures*"])


def test_last_failed_reruns_only_failures(suite: Suite) -> None:
    suite.cases(CASES)
    suite.run("-p", "cacheprovider")
    result = suite.run("--lf", "-v")
    result.assert_outcomes(failed=2, deselected=6)
    result.stdout.fnmatch_lines(["*cases.jsonl::facts-4 FAILED*", "*cases.jsonl::inject-2 FAILED*"])


def test_junitxml(suite: Suite) -> None:
    suite.cases(CASES)
    suite.run("--junitxml", "junit.xml")
    xml = (suite.path / "junit.xml").read_text(encoding="utf-8")
    assert xml.count("<testcase ") == 8
    assert xml.count("<failure ") == 2
    assert 'name="facts-4"' in xml
    assert "missing required text" in xml


def test_runs_without_xdist(suite: Suite) -> None:
    suite.cases(CASES)
    result = suite.run("-p", "no:xdist")
    result.assert_outcomes(passed=6, failed=2)
    result.stdout.no_fnmatch_line("*unknown hook*")


def test_no_prompt_items_no_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*pass rate by slice*")
