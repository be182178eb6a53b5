"""Layered checks through pytest: failure reports, collection errors, suite checks, the judge,
review marks, and the json_extract example suite."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_promptsuite.cli import main as cli
from tests.suite import Suite


LAYERED = [
    {
        "case_id": "ok-1",
        "input": '{"refund": {"amount": 12}}',
        "slice": "json",
        "assert": [{"type": "is-json"}, {"type": "equals", "path": "$.refund.amount", "value": 12}],
    },
    {
        "case_id": "bad-1",
        "input": '{"refund": {"amount": "12"}}',
        "slice": "json",
        "assert": [
            {"type": "is-json"},
            {"type": "equals", "path": "$.refund.amount", "value": 12},
            {"type": "not-contains", "value": "refund"},
            {"type": "word-count", "value": {"max": 1}},
        ],
    },
    {
        "case_id": "prose-1",
        "input": "The refund is 12 EUR.",
        "slice": "json",
        "assert": [{"type": "is-json"}, {"type": "equals", "path": "$.refund.amount", "value": 12}],
    },
]


def test_failure_report_has_one_line_per_failed_check(suite: Suite, plugin_args: list[str]) -> None:
    suite.cases(LAYERED)
    result = suite.run("--prompt-report", "out", *plugin_args)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "cases.jsonl:2: bad-1 [[]slice json[]] failed 3 checks",
            "  structure word-count    expected at most 1 words; found 3 words",
            "  content   equals        $.refund.amount: expected equals 12; found '12' (a string, not a number)",
            "  content   not-contains  expected not contains 'refund'; found 'refund' at offset 2",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        [
            "cases.jsonl:3: prose-1 [[]slice json[]] failed 1 check",
            "  structure is-json  expected valid JSON; found not JSON: Expecting value at line 1 column 1",
            "  content   equals   $.refund.amount: skipped: output "
            "is not JSON (*), and structure check 'is-json' failed",
        ],
        consecutive=True,
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    rows = suite.by_id("out")
    checks = rows["prose-1"]["checks"]
    assert [(c["layer"], c["name"], c["passed"], c["skipped"]) for c in checks] == [
        ("structure", "is-json", False, False),
        ("content", "equals", False, True),
    ]
    assert {"layer", "name", "passed", "message"} <= set(checks[0])
    assert rows["ok-1"]["outcome"] == "passed"


def test_a_latency_check_runs_on_the_fake_model(suite: Suite) -> None:
    """The fake model measures its answer's wall time, as echo does: ``latency`` checks on it run (a
    ``not-latency`` within a minute fails, it is not skipped) and the reports show the time in ms."""
    suite.cases(
        [
            {"case_id": "fast", "input": "hi", "slice": "s", "assert": [{"type": "latency", "threshold": 60000}]},
            {"case_id": "slow", "input": "hi", "slice": "s", "assert": [{"type": "not-latency", "threshold": 60000}]},
        ]
    )
    result = suite.run("--prompt-report", "report")
    result.assert_outcomes(passed=1, failed=1)
    rows = suite.by_id()
    for name, passed in (("fast", True), ("slow", False)):
        [check] = rows[name]["checks"]
        assert (check["passed"], check["skipped"]) == (passed, False), check
        assert check["details"] == {"latency_ms": rows[name]["latency_ms"]} and 0 <= rows[name]["latency_ms"] < 60000
    assert re.search(r"^totals: .*, p95 latency \d+ ms$", result.stdout.str(), re.MULTILINE)
    markdown = (suite.path / "report" / "summary.md").read_text(encoding="utf-8")
    assert re.search(r"\| \d+ ms \| \d+ ms \|", markdown)


def test_unknown_check_type_is_a_collection_error(suite: Suite) -> None:
    suite.cases(
        [
            {"case_id": "a", "input": "x", "slice": "s"},
            {"case_id": "b", "input": "x", "slice": "s", "assert": [{"type": "not-contians", "value": "y"}]},
            {"case_id": "c", "input": "x", "slice": "s", "assert": [{"type": "regex", "valeu": "y"}]},
        ]
    )
    result = suite.run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "cases.jsonl:2: case 'b': assert[[]0[]]: unknown check "
            "type 'not-contians' (did you mean 'not-contains'?);"
            " known types: is-json, contains-json, *, llm-rubric, "
            "python, assert-set (each also as not-TYPE), *",
            "cases.jsonl:3: case 'c': assert[[]0[]]: 'regex' needs 'value' (a regular expression)",
        ],
        consecutive=True,
    )
    result.stdout.no_fnmatch_line("*Traceback*")


SUITE_TOML = """\
[suite]
cases = ["cases.jsonl"]

[models.judge]
spec = "fake:judge.json"

[[checks]]
slice = "*"
assert = [{ type = "not-contains", value = "sk-" }]

[[checks]]
slice = "json"
assert = [{ type = "is-json" }]
"""

JUDGE_RULES = {
    "rules": [
        {"match": "(?s)<output>\\s*Thank", "reply": '{"reason": "Polite.", "pass": true, "score": 0.9}'},
        {"match": "(?s)<output>", "reply": '{"reason": "Curt and unhelpful.", "pass": false, "score": 0.1}'},
    ]
}


@pytest.fixture
def judged(suite: Suite) -> Suite:
    """A suite with checks for every case and a judge model of fake rules."""
    suite.config(SUITE_TOML)
    suite.write("judge.json", json.dumps(JUDGE_RULES))
    suite.cases(
        [
            {"case_id": "j-1", "input": '{"a": 1}', "slice": "json"},
            {"case_id": "j-2", "input": "not json", "slice": "json"},
            {"case_id": "leak-1", "input": "key: sk-123", "slice": "chat"},
            {
                "case_id": "polite-1",
                "input": "Thank you for waiting.",
                "slice": "chat",
                "assert": [{"type": "llm-rubric", "value": "The reply is polite"}],
            },
            {
                "case_id": "polite-2",
                "input": "No.",
                "slice": "chat",
                "assert": [{"type": "llm-rubric", "value": "The reply is polite"}],
            },
        ]
    )
    return suite


def test_suite_checks_and_the_judge(judged: Suite) -> None:
    result = judged.run("--prompt-report", "out", paths=["promptsuite.toml"])
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(["*j-2*failed 1 check", "  structure is-json  expected valid JSON; found not JSON*"])
    result.stdout.fnmatch_lines(
        ["*leak-1*failed 1 check", "  content   not-contains  expected not contains 'sk-'; found 'sk-' at offset 5"]
    )
    result.stdout.fnmatch_lines(
        [
            "*polite-2*failed 1 check",
            "  metric    llm-rubric  expected the judge passes rubric 'The reply is polite';"
            " found fail, score 0.1: Curt and unhelpful.",
        ]
    )
    polite = judged.by_id("out")["polite-1"]
    [rubric] = [c for c in polite["checks"] if c["name"] == "llm-rubric"]
    fingerprint = polite["judge_fingerprint"]  # the judge's, in the row and in its checks
    assert isinstance(fingerprint, str) and len(fingerprint) == 16
    assert rubric["details"] == {
        "judge": "fake:judge.json",
        "judge_fingerprint": fingerprint,
        "verdict": True,
        "score": 0.9,
        "reason": "Polite.",
    }


def test_prompt_judge_option_names_the_judge(judged: Suite) -> None:
    judged.write("other.json", json.dumps({"rules": [], "default": '{"pass": true, "reason": "fine"}'}))
    result = judged.run("--prompt-judge", "fake:other.json", "-k", "polite", paths=["promptsuite.toml"])
    result.assert_outcomes(passed=2, deselected=3)


def test_llm_rubric_without_a_judge_stops_collection_saying_how_to_configure_one(suite: Suite) -> None:
    suite.cases([{"case_id": "p", "input": "x", "slice": "s", "assert": [{"type": "llm-rubric", "value": "ok"}]}])
    result = suite.run("--prompt-report", "report")
    result.assert_outcomes(errors=1)  # before any model call: nothing is spent on a check that cannot pass
    assert (
        "cases.jsonl:1: case 'p': assert[0] (llm-rubric): no judge model: configure [models.judge] "
        "in the suite config or pass --prompt-judge SPEC"
    ) in result.stdout.lines
    assert not (suite.path / "report" / "results.jsonl").exists()


def test_a_bad_suite_check_names_the_config(suite: Suite) -> None:
    suite.config('[suite]\ncases = ["cases.jsonl"]\n[[checks]]\nassert = [{ type = "is-jsn" }]\n')
    suite.cases([{"case_id": "a", "input": "x", "slice": "s"}])
    result = suite.run(paths=["promptsuite.toml"])
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "promptsuite.toml: [[][[]checks[]][]][[]0[]].assert[[]0[]]: "
            "unknown check type 'is-jsn' (did you mean 'is-json'?)*"
        ]
    )


REVIEW_CASES = [
    {"case_id": "r-1", "input": "x", "slice": "s", "review": "legal wording"},
    {"case_id": "r-2", "input": "x", "slice": "s", "assert": [{"type": "human-review", "value": "tone"}]},
    {"case_id": "p-1", "input": "x", "slice": "s"},
]


@pytest.mark.parametrize(
    ("config", "passed", "failed", "ret"), [("", 3, 0, 0), ('[review]\noutcome = "failed"\n', 1, 2, 1)]
)
def test_review_outcome(suite: Suite, config: str, passed: int, failed: int, ret: int) -> None:
    suite.config('[suite]\ncases = ["cases.jsonl"]\n' + config)
    suite.cases(REVIEW_CASES)
    result = suite.run("--prompt-report", "out", paths=["promptsuite.toml"])
    result.assert_outcomes(passed=passed, failed=failed)
    assert result.ret == ret
    outcomes = [row["outcome"] for row in suite.rows("out")]
    assert outcomes == (["review", "review", "passed"] if not config else ["failed", "failed", "passed"])
    if config:
        result.stdout.fnmatch_lines(
            [
                "  review    review  marked for human review: legal "
                "wording (review.outcome = 'failed' in the suite config)"
            ]
        )


def test_json_extract_example(pytester: pytest.Pytester) -> None:
    pytester.copy_example("json_extract")
    result = pytester.runpytest("--prompt-suite", "promptsuite.toml")
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == 0  # the tolerated failure: refund passes 2/3 >= 0.6
    result.stdout.fnmatch_lines(
        [
            "cases.jsonl:4: extract-004 [[]slice refund[]] failed 1 check",
            "  structure is-json   expected valid JSON matching the schema; found not JSON*",
            "  content   order-id  $.order_id: skipped: output is not JSON*, and structure check 'is-json' failed",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(["promptsuite gate: PASSED (1 failed case within tolerance)"])


def test_promptsuite_validate_reports_bad_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = {"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "word-count", "value": "many"}]}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    assert cli.main(["validate", str(tmp_path / "cases.jsonl")]) == 1
    err = capsys.readouterr().err
    assert (
        f"{tmp_path / 'cases.jsonl'}:1: case 'a': assert[0]: 'value' of "
        f"'word-count' must be a whole number or {{min, max}}, got 'many'" in err
    )
    assert "1 problem found" in err
