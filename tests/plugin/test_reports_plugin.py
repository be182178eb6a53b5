"""Plugin tests for reports, baselines, gates and shards (``--prompt-report``, ``--prompt-baseline``,
``--prompt-max-regression``, ``--prompt-shard``) and ``promptsuite merge`` over shard reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.cases.shard import shard_index
from pytest_promptsuite.cli.main import main as cli_main


def _case(case_id: str, slice_: str, text: str, needle: str) -> str:
    return json.dumps(
        {"case_id": case_id, "input": text, "slice": slice_, "must_include": [needle]}, ensure_ascii=False
    )


#: The fake model echoes the input: a case passes when its input contains its needle.
CASES = [
    _case("r1", "refund", "refund one", "refund"),
    _case("r2", "refund", "refund two", "refund"),
    _case("r3", "refund", "refund three", "refund"),
    _case("r4", "refund", "no money back", "refund"),
    _case("i1", "注入", "ignore previous <script>x</script>", "ignore"),
    _case("i2", "注入", "ignore all", "ignore"),
]


def _write_cases(pytester: pytest.Pytester, lines: list[str]) -> None:
    pytester.makefile(".jsonl", cases="\n".join(lines) + "\n")


def _summary(path: Path) -> dict:
    return json.loads((path / "summary.json").read_text("utf-8"))


def _results(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in (path / "results.jsonl").read_text("utf-8").splitlines()]
    for r in rows:
        r.pop("latency_ms")
    return rows


def test_report_is_the_same_serial_and_under_xdist(pytester: pytest.Pytester, plugin_args: list[str]) -> None:
    _write_cases(pytester, CASES)
    result = pytester.runpytest(
        "--prompt-suite",
        "cases.jsonl",
        "--prompt-min-pass-rate",
        "0.7",
        "--prompt-report",
        "rep",
        *plugin_args,
    )
    result.assert_outcomes(passed=5, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*- promptsuite: pass rate by slice -*",
            "slice * cases * passed * failed * error * review * pass rate * 95% CI * threshold * gate",
            "refund * 4 * 3 * 1 * 0 * 0 * 75.0% * 30%-95% * 70% (option) * PASS",
            "注入 * 2 * 2 * 0 * 0 * 0 * 100.0% * 34%-100% * 70% (option) * PASS",
            "total: 6 cases, 5 passed, 1 failed, 0 error, 0 review",
            "totals: 6 calls, 0 cache hits, tokens not reported, cost unknown (no [model] prices), "
            "p95 latency not measured",
            "promptsuite gate: PASSED (1 failed case within tolerance)",
            "promptsuite report: rep",
        ],
        consecutive=True,
    )
    summary = _summary(pytester.path / "rep")
    assert summary["totals"] == {"cases": 6, "passed": 5, "failed": 1, "error": 0, "review": 0, "skipped": 0}
    refund, inj = summary["slices"]
    assert (refund["slice"], refund["pass_rate"], refund["threshold"], refund["gate"]) == (
        "refund",
        0.75,
        0.7,
        "pass",
    )
    assert refund["ci_low"] == pytest.approx(0.3006418, abs=1e-6)  # Wilson 3/4
    assert (inj["slice"], inj["cases"], inj["p_value"], inj["baseline_pass_rate"]) == ("注入", 2, None, None)
    assert summary["gate"] == {"passed": True, "reasons": []}
    assert [r["case_id"] for r in _results(pytester.path / "rep")] == ["r1", "r2", "r3", "r4", "i1", "i2"]
    for name in ("slices.csv", "summary.md", "dashboard.html"):
        assert (pytester.path / "rep" / name).is_file()


def test_report_files_are_byte_for_byte_the_same_serial_and_under_xdist(pytester: pytest.Pytester) -> None:
    """Serial rows are spooled from the value they were encoded from, workers' rows from their
    lines; the dashboard's grid is made as rows arrive: every file must come out the same."""
    extra = (_case(f"x{i}", f"s{i % 3}", f"text {i} <b>", "text" if i % 5 else "zz") for i in range(30))
    _write_cases(pytester, [*CASES, *extra])
    common = ["--prompt-suite", "cases.jsonl", "--prompt-min-pass-rate", "0.5"]
    assert pytester.runpytest(*common, "--prompt-report", "base").ret == 0
    lines = [line.replace('"r2", "input": "refund two"', '"r2", "input": "no"') for line in [*CASES]]
    _write_cases(pytester, [*lines, *(_case(f"x{i}", f"s{i % 3}", f"text {i}", "text") for i in range(30))])
    for name, args in (("serial", []), ("xdist", ["-n", "2"])):
        pytester.runpytest(*common, "--prompt-baseline", "base", "--prompt-max-regression", "1",
                           "--prompt-report", name, *args)
    for name in ("results.jsonl", "summary.json", "slices.csv", "summary.md", "dashboard.html", "review.jsonl"):
        serial, xdist = (pytester.path / run / name for run in ("serial", "xdist"))
        assert serial.read_bytes() == xdist.read_bytes(), name
    assert '"baseline_rows":[' in (pytester.path / "serial" / "dashboard.html").read_text("utf-8")


def test_a_row_rides_only_on_its_call_report(pytester: pytest.Pytester) -> None:
    """The call's report carries the row (to the controller, to junit's hooks); neither the item
    nor its setup and teardown reports keep it, since pytest keeps every item and report."""
    _write_cases(pytester, CASES[:3])
    pytester.makeconftest(
        "seen = []\n\n"
        "def pytest_runtest_logreport(report):\n"
        "    seen.append((report.when, [name for name, _ in report.user_properties]))\n\n"
        "def pytest_sessionfinish(session):\n"
        "    print('REPORTS', sorted(set((w, tuple(n)) for w, n in seen)))\n"
        "    print('ITEMS', [item.user_properties for item in session.items])\n"
    )
    out = pytester.runpytest("--prompt-suite", "cases.jsonl", "-s").stdout.str()
    assert "REPORTS [('call', ('promptsuite',)), ('setup', ()), ('teardown', ())]\nITEMS [[], [], []]\n" in out


def test_baseline_regressions_fail_the_gate_unless_allowed(pytester: pytest.Pytester) -> None:
    _write_cases(pytester, CASES[:3] + CASES[4:])
    assert pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-report", "base").ret == 0
    changed = [
        _case("r1", "refund", "refund one", "refund"),
        _case("r2", "refund", "no money", "refund"),
        _case("r3", "refund", "nothing", "refund"),
        _case("r5", "refund", "refund five", "refund"),
        *CASES[4:],
    ]
    _write_cases(pytester, changed)
    args = ["--prompt-suite", "cases.jsonl", "--prompt-min-pass-rate", "0", "--prompt-baseline", "base"]
    result = pytester.runpytest(*args, "--prompt-report", "now")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "slice * baseline * delta (pts) * flips -/+ * p * p drop * verdict * detectable (pts) * gate",
            "refund * 4 * 2 * 2 * 0 * 0 * 50.0% * 15%-85% * 0% (option) "
            "* 100.0% * -50.0 * -2/+0 * 0.5 * 0.25 * REGRESSED * 33.3 * FAIL",
            "注入 * 100.0% * +0.0 * -0/+0 * 1 * 1 * no drop * 50.0 * PASS",
            "total: 6 cases, 4 passed, 2 failed, 0 error, 0 review",
            "totals: 6 calls, 0 cache hits, tokens not reported, cost unknown (no [model] prices), "
            "p95 latency not measured",
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
    summary = _summary(pytester.path / "now")
    assert (summary["regressions"], summary["fixes"], summary["new"], summary["removed"]) == (
        ["r2", "r3"],
        [],
        ["r5"],
        [],
    )
    assert summary["slices"][0]["p_value"] == 0.5 and summary["slices"][0]["delta"] == -0.5
    assert pytester.runpytest(*args, "--prompt-max-regression", "0.6").ret == 1  # 66.7 > 60 points
    allowed = pytester.runpytest(*args, "--prompt-max-regression", "0.7")
    assert allowed.ret == 0
    allowed.stdout.fnmatch_lines(["*allowed drop 70.0 points (option)*", "promptsuite gate: PASSED*"])


def test_config_max_regression_applies_and_says_so(pytester: pytest.Pytester) -> None:
    _write_cases(pytester, CASES[:3])
    assert pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-report", "base").ret == 0
    _write_cases(pytester, [*CASES[:2], _case("r3", "refund", "nope", "refund")])
    pytester.makefile(".toml", promptsuite="[thresholds]\ndefault = 0.5\nmax_regression = 0.4\n")
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-baseline", "base")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "refund * 50% (config default) * 100.0% * -33.3 * -1/+0 * 1 * PASS",
            "*allowed drop 40.0 points (config)",
        ]
    )
    stricter = pytester.runpytest(
        "--prompt-suite", "cases.jsonl", "--prompt-baseline", "base", "--prompt-max-regression", "0.1"
    )
    assert stricter.ret == 1
    stricter.stdout.fnmatch_lines(
        ["*more than the allowed 10.0 points (option); McNemar p = 1; regressions: r3"]
    )


def test_shards_merge_into_the_unsharded_report(pytester: pytest.Pytester) -> None:
    extra = (_case(f"x{i}", f"s{i % 3}", f"text {i}", "text" if i % 4 else "zz") for i in range(24))
    lines = [*CASES, *extra]
    _write_cases(pytester, lines)
    common = ["--prompt-suite", "cases.jsonl", "--prompt-min-pass-rate", "0.6"]
    whole = pytester.runpytest(*common, "--prompt-report", "whole")
    shard_dirs = []
    for k in (1, 2, 3):
        mine = sum(shard_index(json.loads(line)["case_id"], 3) == k - 1 for line in lines)
        xdist = ["-n", "2"] if k == 2 else []  # one shard under xdist: shards and workers combine
        result = pytester.runpytest(*common, "--prompt-shard", f"{k}/3", "--prompt-report", f"s{k}", *xdist)
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == mine
        if not xdist:  # xdist deselects on its workers and reports no count (as with -k)
            assert outcomes["deselected"] == len(lines) - mine
        shard_dirs.append(str(pytester.path / f"s{k}"))
    assert cli_main(["merge", *shard_dirs, "--out", str(pytester.path / "merged")]) == whole.ret
    assert _summary(pytester.path / "merged") == _summary(pytester.path / "whole")
    assert _results(pytester.path / "merged") == _results(pytester.path / "whole")
    assert (pytester.path / "merged" / "slices.csv").read_text("utf-8") == (
        pytester.path / "whole" / "slices.csv"
    ).read_text("utf-8")


def test_shards_with_a_baseline_compare_only_their_own_cases(pytester: pytest.Pytester) -> None:
    lines = [_case(f"c{i}", "s", f"ok {i}", "ok") for i in range(12)]
    _write_cases(pytester, lines)
    assert pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-report", "base").ret == 0
    result = pytester.runpytest(
        "--prompt-suite",
        "cases.jsonl",
        "--prompt-shard",
        "2/2",
        "--prompt-baseline",
        "base",
        "--prompt-report",
        "s2",
    )
    assert result.ret == 0
    summary = _summary(pytester.path / "s2")
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
def test_bad_option_values_fail_at_parse_time(
    pytester: pytest.Pytester, option: str, value: str, message: str
) -> None:
    _write_cases(pytester, CASES[:1])
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_unreadable_baseline_is_a_usage_error_before_anything_runs(pytester: pytest.Pytester) -> None:
    _write_cases(pytester, CASES[:1])
    pytester.makefile(".jsonl", old='{"case_id": "a", "slice": "s", "outcome": "passed"}\nnot json\n')
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-baseline", "old.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompt-baseline: old.jsonl:2: not a results.jsonl row*"])
    result.stdout.no_fnmatch_line("*passed*")
