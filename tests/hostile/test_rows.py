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
from tests.hostile.support import endpoint_config
from tests.hostile.support import output
from tests.hostile.support import rows
from tests.hostile.support import summary
from tests.hostile.support import write_cases
from tests.loopback import WEIRD
from tests.loopback import LoopbackServer


BOMB = "[" * 10_000 + "]" * 10_000  # 20 KB of brackets: RecursionError in json before
BAD_BOMB = "[" * 10_000 + "nope" + "]" * 10_000  # no JSON at any depth
DEPTH_WORDS = "nested deeper than the depth limit of 64 levels"


def test_a_nested_json_answer_fails_its_checks_and_keeps_every_row(pytester: pytest.Pytester) -> None:
    rules = {"rules": [{"match": "bad", "reply": BAD_BOMB}], "default": BOMB}
    (pytester.path / "rules.json").write_text(json.dumps(rules), encoding="utf-8")
    schema = {"type": "array"}
    checks = {
        "is-json": [{"type": "is-json"}],
        "schema": [{"type": "is-json", "value": schema}],
        "contains-json": [{"type": "contains-json"}],
        "equals-path": [{"type": "equals", "path": "$[0]", "value": []}],
        "not-is-json": [{"type": "not-is-json"}],
    }
    write_cases(pytester, [case(name, "x", **{"assert": entries}) for name, entries in checks.items()]
                + [case("contains-json-bad", "bad", **{"assert": [{"type": "contains-json"}]})])
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-model", "fake:rules.json",
                                "--prompt-report", "report")

    assert_clean(result)
    by_id = {row["case_id"]: row for row in rows(pytester)}
    assert sorted(by_id) == sorted([*checks, "contains-json-bad"])
    assert by_id["contains-json-bad"]["outcome"] == "failed"
    for name in ("is-json", "schema", "equals-path"):
        assert by_id[name]["outcome"] == "failed"
        assert DEPTH_WORDS in by_id[name]["checks"][0]["message"], by_id[name]
    # the innermost 64 levels are a JSON array embedded in the text, and contains-json finds it
    assert by_id["contains-json"]["outcome"] == "passed"
    assert by_id["not-is-json"]["outcome"] == "passed"
    assert_reports_agree(pytester, result)
    assert summary(pytester)["totals"]["cases"] == 6


PROMPTS_YML = """\
prompts:
  - task: answer
    content: "{{ input }}"
    output_parser: json
"""


def test_an_output_parser_on_a_nested_answer_fails_the_case(pytester: pytest.Pytester) -> None:
    (pytester.path / "rules.json").write_text(json.dumps({"default": BAD_BOMB}), encoding="utf-8")
    (pytester.path / "prompts.yml").write_text(PROMPTS_YML, encoding="utf-8")
    (pytester.path / "promptsuite.toml").write_text(
        '[model]\nspec = "fake:rules.json"\n[template]\ntask_prompts = "prompts.yml"\ntask = "answer"\n',
        encoding="utf-8",
    )
    write_cases(pytester, [case("a")])
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-report", "report")

    assert_clean(result)
    [row] = rows(pytester)
    assert row["outcome"] == "failed"
    assert "output parser 'json': no JSON value in the output" in row["checks"][0]["message"]
    assert_reports_agree(pytester, result)


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
def test_a_check_or_transform_that_raises_fails_with_the_reason(
    pytester: pytest.Pytester, plugin_args: list[str]
) -> None:
    pytester.makeconftest(CONFTEST_THAT_BREAKS)
    (pytester.path / "exits.py").write_text("import sys\ndef f(output, case):\n    sys.exit(3)\n", "utf-8")
    write_cases(pytester, [
        case("check", **{"assert": [{"type": "explodes"}, {"type": "contains", "value": "hello"}]}),
        case("transform"),
        case("exits", **{"assert": [{"type": "python", "value": "file://exits.py:f"}]}),
        case("fine"),
    ])
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-report", "report", *plugin_args)

    assert_clean(result)
    result.assert_outcomes(passed=1, failed=3)
    by_id = {row["case_id"]: row for row in rows(pytester)}
    first, second = by_id["check"]["checks"]
    assert first["message"] == "the check raised RecursionError: maximum recursion depth exceeded in my check"
    assert second["passed"]  # the other checks of the case still ran
    assert by_id["transform"]["checks"][0]["message"] == (
        "pytest_promptsuite_transform_output raised KeyError: 'no such field'"
    )
    assert "the function raised SystemExit(3)" in by_id["exits"]["checks"][0]["message"]
    assert_reports_agree(pytester, result)


def test_line_separators_and_surrogates_in_answers_survive_record_report_baseline_and_diff(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    endpoint_config(pytester, loopback.base_url)
    write_cases(pytester, [case("weird", "w [[weird]]"), case("plain", "p"),
                           case("shown", "s [[weird]]", must_include=["not there"])])
    first = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-record", "cassette.jsonl",
                               "--prompt-report", "report", "--junitxml", "junit.xml")
    assert_clean(first)
    outputs = {"weird": WEIRD, "plain": "p", "shown": WEIRD}
    assert {row["case_id"]: row["output"] for row in rows(pytester)} == outputs
    cassette = (pytester.path / "cassette.jsonl").read_bytes()
    assert len(cassette.decode("utf-8").splitlines()) == 3  # one line per answer, for every reader

    again = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-replay", "cassette.jsonl",
                               "--prompt-baseline", "report", "--prompt-report", "report2")
    assert_clean(again)
    assert {row["case_id"]: row["output"] for row in rows(pytester, "report2")} == outputs
    assert summary(pytester, "report2")["regressions"] == []
    assert main(["diff", str(pytester.path / "report"), str(pytester.path / "report2")]) == 0
    assert "\\ud800" in (pytester.path / "report" / "dashboard.html").read_text(encoding="utf-8")


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
def test_a_lone_surrogate_in_a_case_is_a_clear_error(pytester: pytest.Pytester, fields: dict[str, object],
                                                     where: str) -> None:
    line = json.dumps({**case("a"), **fields})  # ensure_ascii: the surrogate is written as \\udXXX
    (pytester.path / "cases.jsonl").write_text(line + "\n", encoding="utf-8")
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-report", "report")

    assert_clean(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"cases.jsonl:1: {where}, half of a UTF-16 surrogate pair and no character" in output(result)
    assert main(["validate", str(pytester.path / "cases.jsonl")]) == 1


INTERRUPT_AFTER_TWO = """
def pytest_promptsuite_case_finished(item, result):
    if result.case_id == "c-02":
        raise KeyboardInterrupt
"""


def _many(pytester: pytest.Pytester, n: int = 10, failing: int = -1) -> None:
    write_cases(pytester, [case(f"c-{i:02d}", "hello", must_include=["nope" if i == failing else "hello"])
                           for i in range(n)])


def test_an_interrupted_run_never_says_passed(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(INTERRUPT_AFTER_TWO)
    _many(pytester)
    result = pytester.runpytest_subprocess("--prompt-suite", "cases.jsonl", "--prompt-report", "report",
                                           "-p", "no:randomly")  # its own process: Ctrl-C stays there

    assert result.ret == pytest.ExitCode.INTERRUPTED
    _assert_incomplete(pytester, result, "interrupted", ran=2, total=10)


@pytest.mark.parametrize("plugin_args", [[], ["-n", "2"]], ids=["serial", "xdist_two"])
def test_a_run_stopped_by_x_never_says_passed(pytester: pytest.Pytester, plugin_args: list[str]) -> None:
    _many(pytester, n=30, failing=0)
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-report", "report", "-x",
                                "--prompt-min-pass-rate", "0.5", "-p", "no:randomly", *plugin_args)

    assert result.ret != 0
    ran = len(rows(pytester))
    assert ran < 30
    _assert_incomplete(pytester, result, "stopping after 1 failures", ran=ran, total=30)


def _assert_incomplete(pytester: pytest.Pytester, result: pytest.RunResult, why: str, *, ran: int,
                       total: int) -> None:
    assert_clean(result)
    sentence = (f"the run stopped before every case ran ({why}): {ran} of {total} cases ran; "
                "a partial run never passes the gate")
    gate = summary(pytester)["gate"]
    assert not gate["passed"]
    assert sentence in gate["reasons"]
    markdown = (pytester.path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "promptsuite gate: FAILED" in markdown and sentence in markdown
    assert sentence in (pytester.path / "report" / "dashboard.html").read_text(encoding="utf-8")
    assert "promptsuite gate: FAILED" in result.stdout.str()
    assert "PASSED" not in "".join(Path(p).read_text(encoding="utf-8")
                                   for p in (pytester.path / "report").glob("summary.*"))


def test_a_hook_that_breaks_after_a_passing_case_is_not_masked(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("def pytest_promptsuite_case_finished(item, result):\n    raise RuntimeError('sink down')\n")
    _many(pytester, n=2)
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-report", "report")

    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the rows passed, but a plugin failed: say so
    assert [row["outcome"] for row in rows(pytester)] == ["passed", "passed"]
    assert "RuntimeError: sink down" in output(result)
