"""No case lost (findings 2, 3, 4, 7): every executed case ends with exactly one row whatever
its checks, parser or model raise or answer; odd characters survive every file we write and
read; an interrupted or stopped run says so and never says PASSED."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from tests.hostile.support import assert_clean
from tests.hostile.support import assert_reports_agree
from tests.hostile.support import case
from tests.hostile.support import endpoint
from tests.hostile.support import output
from tests.loopback import WEIRD
from tests.loopback import LoopbackServer
from tests.suite import UNUSED_PLUGINS
from tests.suite import Suite


BOMB = "[" * 10_000 + "]" * 10_000  # 20 KB of brackets: RecursionError in json before
BAD_BOMB = "[" * 10_000 + "nope" + "]" * 10_000  # no JSON at any depth
DEPTH_WORDS = "nested deeper than the depth limit of 64 levels"


def test_a_nested_json_answer_fails_its_checks_and_keeps_every_row(suite: Suite) -> None:
    rules = {"rules": [{"match": "bad", "reply": BAD_BOMB}], "default": BOMB}
    suite.write("rules.json", json.dumps(rules))
    schema = {"type": "array"}
    checks = {
        "is-json": [{"type": "is-json"}],
        "schema": [{"type": "is-json", "value": schema}],
        "contains-json": [{"type": "contains-json"}],
        "equals-path": [{"type": "equals", "path": "$[0]", "value": []}],
        "not-is-json": [{"type": "not-is-json"}],
    }
    suite.cases(
        [case(name, "x", **{"assert": entries}) for name, entries in checks.items()]
        + [case("contains-json-bad", "bad", **{"assert": [{"type": "contains-json"}]})]
    )
    result = suite.run("--prompt-model", "fake:rules.json", "--prompt-report", "report")

    assert_clean(result)
    by_id = suite.by_id()
    assert sorted(by_id) == sorted([*checks, "contains-json-bad"])
    assert by_id["contains-json-bad"]["outcome"] == "failed"
    for name in ("is-json", "schema", "equals-path"):
        assert by_id[name]["outcome"] == "failed"
        assert DEPTH_WORDS in by_id[name]["checks"][0]["message"], by_id[name]
    # the innermost 64 levels are a JSON array embedded in the text, and contains-json finds it
    assert by_id["contains-json"]["outcome"] == "passed"
    assert by_id["not-is-json"]["outcome"] == "passed"
    assert_reports_agree(suite, result)
    assert suite.summary()["totals"]["cases"] == 6


PROMPTS_YML = """\
prompts:
  - task: answer
    content: "{{ input }}"
    output_parser: json
"""


def test_an_output_parser_on_a_nested_answer_fails_the_case(suite: Suite) -> None:
    suite.write("rules.json", json.dumps({"default": BAD_BOMB}))
    suite.write("prompts.yml", PROMPTS_YML)
    suite.config({"model": {"spec": "fake:rules.json"}, "template": {"task_prompts": "prompts.yml", "task": "answer"}})
    suite.cases([case("a")])
    result = suite.run("--prompt-report", "report")

    assert_clean(result)
    [row] = suite.rows()
    assert row["outcome"] == "failed"
    assert "output parser 'json': no JSON value in the output" in row["checks"][0]["message"]
    assert_reports_agree(suite, result)


CONFTEST_THAT_BREAKS = """
from pytest_promptsuite.checks import Check, Layer

class Explodes(Check):
    layer = Layer.CONTENT
    def evaluate(self, value, ctx):
        raise RecursionError("maximum recursion depth exceeded in my check")

def pytest_promptsuite_make_check(name, params):
    if name == "explodes":
        return Explodes()

def pytest_promptsuite_transform_output(output, case, response):
    if case.case_id == "transform":
        raise KeyError("no such field")
    return None

def pytest_promptsuite_make_output_parser(name, params):
    if name == "broken":
        return lambda text: 1 / 0
"""


@pytest.mark.parametrize("plugin_args", [[], ["-n", "2"]], ids=["serial", "xdist_two"])
def test_a_check_or_transform_that_raises_fails_with_the_reason(suite: Suite, plugin_args: list[str]) -> None:
    suite.pytester.makeconftest(CONFTEST_THAT_BREAKS)
    suite.write("exits.py", "import sys\ndef f(output, case):\n    sys.exit(3)\n")
    suite.cases(
        [
            case("check", **{"assert": [{"type": "explodes"}, {"type": "contains", "value": "hello"}]}),
            case("transform"),
            case("exits", **{"assert": [{"type": "python", "value": "file://exits.py:f"}]}),
            case("fine"),
        ]
    )
    result = suite.run("--prompt-report", "report", *plugin_args)

    assert_clean(result)
    result.assert_outcomes(passed=1, failed=3)
    by_id = suite.by_id()
    first, second = by_id["check"]["checks"]
    assert first["message"] == "the check raised RecursionError: maximum recursion depth exceeded in my check"
    assert second["passed"]  # the other checks of the case still ran
    assert by_id["transform"]["checks"][0]["message"] == (
        "pytest_promptsuite_transform_output raised KeyError: 'no such field'"
    )
    assert "the function raised SystemExit(3)" in by_id["exits"]["checks"][0]["message"]
    assert_reports_agree(suite, result)


def test_line_separators_and_surrogates_in_answers_survive_record_report_baseline_and_diff(
    suite: Suite, loopback: LoopbackServer
) -> None:
    suite.config(endpoint(loopback.base_url))
    suite.cases(
        [case("weird", "w [[weird]]"), case("plain", "p"), case("shown", "s [[weird]]", must_include=["not there"])]
    )
    first = suite.run("--prompt-record", "cassette.jsonl", "--prompt-report", "report", "--junitxml", "junit.xml")
    assert_clean(first)
    outputs = {"weird": WEIRD, "plain": "p", "shown": WEIRD}
    assert {row["case_id"]: row["output"] for row in suite.rows()} == outputs
    cassette = (suite.path / "cassette.jsonl").read_bytes()
    assert len(cassette.decode("utf-8").splitlines()) == 3  # one line per answer, for every reader

    again = suite.run("--prompt-replay", "cassette.jsonl", "--prompt-baseline", "report", "--prompt-report", "report2")
    assert_clean(again)
    assert {row["case_id"]: row["output"] for row in suite.rows("report2")} == outputs
    assert suite.summary("report2")["regressions"] == []
    assert main(["diff", str(suite.path / "report"), str(suite.path / "report2")]) == 0
    assert "\\ud800" in (suite.path / "report" / "dashboard.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"metadata": {"note": "\ud800"}}, "'metadata.note' holds \\ud800"),
        ({"slice": "s\udc00"}, "'slice' holds \\udc00"),
        ({"input": "hi \ud83d"}, "'input' holds \\ud83d"),
        ({"case_id": "a\ud800"}, "'case_id' holds \\ud800"),
        ({"vars": {"\udfff": 1}}, "'vars.\\udfff' holds \\udfff"),
    ],
    ids=["metadata", "slice", "input", "case_id", "key"],
)
def test_a_lone_surrogate_in_a_case_is_a_clear_error(suite: Suite, fields: dict[str, object], where: str) -> None:
    line = json.dumps({**case("a"), **fields})  # ensure_ascii: the surrogate is written as \\udXXX
    suite.cases(line + "\n")
    result = suite.run("--prompt-report", "report")

    assert_clean(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"cases.jsonl:1: {where}, half of a UTF-16 surrogate pair and no character" in output(result)
    assert main(["validate", str(suite.path / "cases.jsonl")]) == 1


INTERRUPT_AFTER_TWO = """
def pytest_promptsuite_case_finished(item, result):
    if result.case_id == "c-02":
        raise KeyboardInterrupt
"""


def _many(suite: Suite, n: int = 10, failing: int = -1) -> None:
    suite.cases([case(f"c-{i:02d}", "hello", must_include=["nope" if i == failing else "hello"]) for i in range(n)])


def test_an_interrupted_run_never_says_passed(suite: Suite) -> None:
    suite.pytester.makeconftest(INTERRUPT_AFTER_TWO)
    _many(suite)
    result = suite.pytester.runpytest_subprocess(
        "--prompt-suite", "cases.jsonl", "--prompt-report", "report", "-p", "no:randomly", *UNUSED_PLUGINS
    )  # its own process: Ctrl-C stays there

    assert result.ret == pytest.ExitCode.INTERRUPTED
    _assert_incomplete(suite, result, "interrupted", ran=2, total=10)


@pytest.mark.parametrize("plugin_args", [[], ["-n", "2"]], ids=["serial", "xdist_two"])
def test_a_run_stopped_by_x_never_says_passed(suite: Suite, plugin_args: list[str]) -> None:
    _many(suite, n=30, failing=0)
    result = suite.run("--prompt-report", "report", "-x", "--prompt-min-pass-rate", "0.5", *plugin_args)

    assert result.ret != 0
    ran = len(suite.rows())
    assert ran < 30
    _assert_incomplete(suite, result, "stopping after 1 failures", ran=ran, total=30)


def _assert_incomplete(suite: Suite, result: pytest.RunResult, why: str, *, ran: int, total: int) -> None:
    assert_clean(result)
    sentence = (
        f"the run stopped before every case ran ({why}): {ran} of {total} cases ran; "
        "a partial run never passes the gate"
    )
    gate = suite.summary()["gate"]
    assert not gate["passed"]
    assert sentence in gate["reasons"]
    markdown = (suite.path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "promptsuite gate: FAILED" in markdown and sentence in markdown
    assert sentence in (suite.path / "report" / "dashboard.html").read_text(encoding="utf-8")
    assert "promptsuite gate: FAILED" in result.stdout.str()
    assert "PASSED" not in "".join(
        Path(p).read_text(encoding="utf-8") for p in (suite.path / "report").glob("summary.*")
    )


def test_a_hook_that_breaks_after_a_passing_case_is_not_masked(suite: Suite) -> None:
    suite.write(
        "conftest.py", "def pytest_promptsuite_case_finished(item, result):\n    raise RuntimeError('sink down')\n"
    )
    _many(suite, n=2)
    result = suite.run("--prompt-report", "report")

    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the rows passed, but a plugin failed: say so
    assert [row["outcome"] for row in suite.rows()] == ["passed", "passed"]
    assert "RuntimeError: sink down" in output(result)
