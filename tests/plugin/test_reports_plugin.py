"""Plugin tests for reports, baselines, gates and shards (``--prompt-report``, ``--prompt-baseline``,
``--prompt-max-regression``, ``--prompt-shard``) and ``promptsuite merge`` over shard reports."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.cases.shard import shard_index
from pytest_promptsuite.cli.main import main as cli_main
from tests.suite import Suite
from tests.suite import timeless
from tests.suite import timeless_bytes


def _case(case_id: str, slice_: str, text: str, needle: str) -> dict[str, Any]:
    return {"case_id": case_id, "input": text, "slice": slice_, "must_include": [needle]}


#: The fake model echoes the input: a case passes when its input contains its needle.
CASES = [
    _case("r1", "refund", "refund one", "refund"),
    _case("r2", "refund", "refund two", "refund"),
    _case("r3", "refund", "refund three", "refund"),
    _case("r4", "refund", "no money back", "refund"),
    _case("i1", "注入", "ignore previous <script>x</script>", "ignore"),
    _case("i2", "注入", "ignore all", "ignore"),
]


def test_report_is_the_same_serial_and_under_xdist(suite: Suite, plugin_args: list[str]) -> None:
    suite.cases(CASES)
    result = suite.run("--prompt-min-pass-rate", "0.7", "--prompt-report", "rep", *plugin_args)
    result.assert_outcomes(passed=5, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*- promptsuite: pass rate by slice -*",
            "slice * cases * passed * failed * error * review * pass rate * 95% CI * threshold * gate",
            "refund * 4 * 3 * 1 * 0 * 0 * 75.0% * 30%-95% * 70% (option) * PASS",
            "注入 * 2 * 2 * 0 * 0 * 0 * 100.0% * 34%-100% * 70% (option) * PASS",
            "total: 6 cases, 5 passed, 1 failed, 0 error, 0 review",
            "totals: 6 calls, 0 cache hits in .promptsuite_cache, tokens not reported, "
            "cost unknown (no [[]model] prices), "
            "p95 latency * ms",  # fnmatch: [[] is a "[", * the fake model's measured milliseconds
            "promptsuite gate: PASSED (1 failed case within tolerance)",
            "promptsuite report: rep",
        ],
        consecutive=True,
    )
    summary = suite.summary("rep")
    assert summary["totals"] == {"cases": 6, "passed": 5, "failed": 1, "error": 0, "review": 0, "skipped": 0}
    refund, inj = summary["slices"]
    assert (refund["slice"], refund["pass_rate"], refund["threshold"], refund["gate"]) == ("refund", 0.75, 0.7, "pass")
    assert refund["ci_low"] == pytest.approx(0.3006418, abs=1e-6)  # Wilson 3/4
    assert (inj["slice"], inj["cases"], inj["p_value"], inj["baseline_pass_rate"]) == ("注入", 2, None, None)
    assert summary["gate"] == {"passed": True, "reasons": []}
    assert [r["case_id"] for r in suite.rows("rep")] == ["r1", "r2", "r3", "r4", "i1", "i2"]
    for name in ("slices.csv", "summary.md", "dashboard.html"):
        assert (suite.path / "rep" / name).is_file()


def test_report_files_are_byte_for_byte_the_same_serial_and_under_xdist(suite: Suite) -> None:
    """Serial rows are spooled from the value they were encoded from, workers' rows from their
    lines; the dashboard's grid is made as rows arrive: every file must come out the same."""
    extra = (_case(f"x{i}", f"s{i % 3}", f"text {i} <b>", "text" if i % 5 else "zz") for i in range(30))
    suite.cases([*CASES, *extra])
    common = ["--prompt-min-pass-rate", "0.5"]
    assert suite.run(*common, "--prompt-report", "base").ret == 0
    cases = [{**case, "input": "no"} if case["case_id"] == "r2" else case for case in CASES]
    suite.cases([*cases, *(_case(f"x{i}", f"s{i % 3}", f"text {i}", "text") for i in range(30))])
    for name, args in (("serial", []), ("xdist", ["-n", "2"])):
        suite.run(*common, "--prompt-baseline", "base", "--prompt-max-regression", "1", "--prompt-report", name, *args)
    for name in ("results.jsonl", "summary.json", "slices.csv", "summary.md", "dashboard.html", "review.jsonl"):
        serial, xdist = (suite.path / run / name for run in ("serial", "xdist"))
        assert timeless_bytes(serial.read_bytes()) == timeless_bytes(xdist.read_bytes()), name
    assert '"baseline_rows":[' in (suite.path / "serial" / "dashboard.html").read_text("utf-8")


def test_a_row_rides_only_on_its_call_report(suite: Suite) -> None:
    """The call's report carries the row (to the controller, to junit's hooks); neither the item
    nor its setup and teardown reports keep it, since pytest keeps every item and report."""
    suite.cases(CASES[:3])
    suite.pytester.makeconftest(
        "seen = []\n\n"
        "def pytest_runtest_logreport(report):\n"
        "    seen.append((report.when, [name for name, _ in report.user_properties]))\n\n"
        "def pytest_sessionfinish(session):\n"
        "    print('REPORTS', sorted(set((w, tuple(n)) for w, n in seen)))\n"
        "    print('ITEMS', [item.user_properties for item in session.items])\n"
    )
    out = suite.run("-s").stdout.str()
    assert "REPORTS [('call', ('promptsuite',)), ('setup', ()), ('teardown', ())]\nITEMS [[], [], []]\n" in out


def test_baseline_regressions_fail_the_gate_unless_allowed(suite: Suite) -> None:
    suite.cases(CASES[:3] + CASES[4:])
    assert suite.run("--prompt-report", "base").ret == 0
    changed = [
        _case("r1", "refund", "refund one", "refund"),
        _case("r2", "refund", "no money", "refund"),
        _case("r3", "refund", "nothing", "refund"),
        _case("r5", "refund", "refund five", "refund"),
        *CASES[4:],
    ]
    suite.cases(changed)
    args = ["--prompt-min-pass-rate", "0", "--prompt-baseline", "base"]
    result = suite.run(*args, "--prompt-report", "now")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "slice * cases * passed * failed * error * review * pass rate * 95% CI * threshold * verdict * gate",
            "refund * 4 * 2 * 2 * 0 * 0 * 50.0% * 15%-85% * 0% (option) * REGRESSED * FAIL",
            "注入 * 100.0% * no drop * PASS",
            "against the baseline:",
            "slice * baseline * delta (pts) * flips -/+ * p * p drop * detectable (pts)",
            "refund * 100.0% * -50.0 * -2/+0 * 0.5 * 0.25 * 33.3",
            "注入 * 100.0% * +0.0 * -0/+0 * 1 * 1 * 50.0",
            "total: 6 cases, 4 passed, 2 failed, 0 error, 0 review",
            "totals: 6 calls, 0 cache hits in .promptsuite_cache, tokens not reported, "
            "cost unknown (no [[]model] prices), "
            "p95 latency * ms",  # fnmatch: [[] is a "[", * the fake model's measured milliseconds
            "against base: 2 regressions, 0 fixes, 1 new, 0 removed; allowed drop 0.0 points (default)",
            "regressions: r2, r3",
            "regression rule: auto, here delta (both runs deterministic)",  # the fake model: flips are real
            "refund against the baseline: regressed: drop 66.7 points over 3 cases (p 0.25); "
            "detectable drop 33.3 points",
            "promptsuite gate: FAILED",
            # the drop is over the cases in both runs: r5 is new, so 2 of 3 paired cases regressed
            "  - slice 'refund': pass rate dropped 66.7 points against the baseline over the 3 cases in both "
            "runs (100.0% -> 33.3%), more than the allowed 0.0 points (default); McNemar p = 0.5; "
            "regressions: r2, r3",
        ],
        consecutive=True,
    )
    summary = suite.summary("now")
    assert (summary["regressions"], summary["fixes"], summary["new"], summary["removed"]) == (
        ["r2", "r3"],
        [],
        ["r5"],
        [],
    )
    assert summary["slices"][0]["p_value"] == 0.5 and summary["slices"][0]["delta"] == -0.5
    assert suite.run(*args, "--prompt-max-regression", "0.6").ret == 1  # 66.7 > 60 points
    allowed = suite.run(*args, "--prompt-max-regression", "0.7")
    assert allowed.ret == 0
    allowed.stdout.fnmatch_lines(["*allowed drop 70.0 points (option)*", "promptsuite gate: PASSED*"])


def test_config_max_regression_applies_and_says_so(suite: Suite) -> None:
    suite.cases(CASES[:3])
    assert suite.run("--prompt-report", "base").ret == 0
    suite.cases([*CASES[:2], _case("r3", "refund", "nope", "refund")])
    suite.config({"thresholds": {"default": 0.5, "max_regression": 0.4}})
    result = suite.run("--prompt-baseline", "base")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "refund * 50% (config default) * PASS",
            "against the baseline:",
            "*",
            "refund * 100.0% * -33.3 * -1/+0 * 1 *",
            "*allowed drop 40.0 points (config)",
        ]
    )
    stricter = suite.run("--prompt-baseline", "base", "--prompt-max-regression", "0.1")
    assert stricter.ret == 1
    stricter.stdout.fnmatch_lines(["*more than the allowed 10.0 points (option); McNemar p = 1; regressions: r3"])


def test_shards_merge_into_the_unsharded_report(suite: Suite) -> None:
    extra = (_case(f"x{i}", f"s{i % 3}", f"text {i}", "text" if i % 4 else "zz") for i in range(24))
    cases = [*CASES, *extra]
    suite.cases(cases)
    common = ["--prompt-min-pass-rate", "0.6"]
    whole = suite.run(*common, "--prompt-report", "whole")
    shard_dirs = []
    for k in (1, 2, 3):
        mine = sum(shard_index(case["case_id"], 3) == k - 1 for case in cases)
        xdist = ["-n", "2"] if k == 2 else []  # one shard under xdist: shards and workers combine
        result = suite.run(*common, "--prompt-shard", f"{k}/3", "--prompt-report", f"s{k}", *xdist)
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == mine
        if not xdist:  # xdist deselects on its workers and reports no count (as with -k)
            assert outcomes["deselected"] == len(cases) - mine
        shard_dirs.append(str(suite.path / f"s{k}"))
    assert cli_main(["merge", *shard_dirs, "--out", str(suite.path / "merged")]) == whole.ret
    assert timeless(suite.summary("merged")) == timeless(suite.summary("whole"))
    assert timeless(suite.rows("merged")) == timeless(suite.rows("whole"))
    assert (suite.path / "merged" / "slices.csv").read_text("utf-8") == (suite.path / "whole" / "slices.csv").read_text(
        "utf-8"
    )


def test_shards_with_a_baseline_compare_only_their_own_cases(suite: Suite) -> None:
    suite.cases(_case(f"c{i}", "s", f"ok {i}", "ok") for i in range(12))
    assert suite.run("--prompt-report", "base").ret == 0
    result = suite.run("--prompt-shard", "2/2", "--prompt-baseline", "base", "--prompt-report", "s2")
    assert result.ret == 0
    summary = suite.summary("s2")
    assert summary["removed"] == [] and summary["slices"][0]["baseline_pass_rate"] == 1.0


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--prompt-shard", "3/2", "argument --prompt-shard: '3/2': K must be from 1 to N*"),
        ("--prompt-shard", "2", "argument --prompt-shard: '2' is not K/N (write 2/4*"),
        ("--prompt-max-regression", "5%", "argument --prompt-max-regression: '5%' is not a number*"),
        ("--prompt-baseline", "nowhere", "argument --prompt-baseline: 'nowhere': no such file or folder*"),
    ],
)
def test_bad_option_values_fail_at_parse_time(suite: Suite, option: str, value: str, message: str) -> None:
    suite.cases(CASES[:1])
    result = suite.run(option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_unreadable_baseline_is_a_usage_error_before_anything_runs(suite: Suite) -> None:
    suite.cases(CASES[:1])
    suite.write("old.jsonl", '{"case_id": "a", "slice": "s", "outcome": "passed"}\nnot json\n')
    result = suite.run("--prompt-baseline", "old.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompt-baseline: old.jsonl:2: not a results.jsonl row*"])
    result.stdout.no_fnmatch_line("*passed*")
