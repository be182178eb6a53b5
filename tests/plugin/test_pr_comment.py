"""``promptsuite comment`` on reports real runs wrote: no baseline, an unchanged prompt, a real drop, a judge
change, a secret in a failing check, an unreadable report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from pytest_promptsuite.report.pr_comment import MARKER
from tests.suite import Suite


#: Ten cases in two slices; the rules answer every one correctly.
CASES = [
    *(
        {"case_id": f"refund-{i}", "input": f"refund {i}", "slice": "refund", "must_include": ["REFUND"]}
        for i in range(6)
    ),
    *(
        {"case_id": f"ship-{i}", "input": f"ship {i}", "slice": "shipping", "must_include": ["SHIPPED"]}
        for i in range(4)
    ),
]
GOOD = {"rules": [{"match": "refund", "reply": "REFUND issued"}, {"match": "ship", "reply": "SHIPPED today"}]}
#: Four refunds now answered wrong: a real drop of the refund slice.
WORSE = {
    "rules": [
        {"match": "refund [0-3]", "reply": "we cannot help"},
        {"match": "refund", "reply": "REFUND issued"},
        {"match": "ship", "reply": "SHIPPED today"},
    ]
}


def _run(suite: Suite, rules: dict[str, object], report: str, *args: str) -> None:
    suite.write("rules.json", json.dumps(rules))
    suite.run("--prompt-model", "fake:rules.json", "--prompt-report", report, "-p", "no:cacheprovider", *args)


def _comment(suite: Suite, capsys: pytest.CaptureFixture[str], report: str, baseline: str = "", key: str = "") -> str:
    capsys.readouterr()
    args = ["--baseline", str(suite.path / baseline)] if baseline else []
    assert main(["comment", str(suite.path / report), *args, *(["--key", key] if key else [])]) == 0
    return capsys.readouterr().out


def test_a_run_without_a_baseline_says_so_and_gates_on_thresholds(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.cases(CASES)
    _run(suite, GOOD, "report")
    text = _comment(suite, capsys, "report")
    assert text.startswith(MARKER)
    assert "promptsuite: passed" in text.splitlines()[1]
    assert "| refund | 6 | 100.0% (61%–100%) | 100% | pass |" in text
    assert "No baseline: nothing to compare with" in text
    assert "Newly failing" not in text


def test_an_unchanged_prompt_passes_with_no_change(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    suite.cases(CASES)
    _run(suite, GOOD, "base")
    _run(suite, GOOD, "report", "--prompt-baseline", "base")
    text = _comment(suite, capsys, "report", "base")
    assert "promptsuite: passed" in text
    assert "| refund | 100.0% | 100.0% (61%–100%) | +0.0 pts (−39.0 to +39.0) | no drop |" in text
    assert "Newly failing" not in text and "judge changed" not in text and "used model" not in text
    assert "Baseline: commit and age unknown." in text


def test_a_real_drop_is_regressed_and_names_the_newly_failing_cases(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.cases(CASES)
    _run(suite, GOOD, "base")
    (suite.path / "base" / "origin.json").write_text(
        json.dumps({"commit": "0123456789abcdef", "branch": "main", "created_at": "2026-12-01T00:00:00Z"})
    )
    _run(suite, WORSE, "report", "--prompt-baseline", "base")
    text = _comment(suite, capsys, "report", "base")
    assert "### ❌ promptsuite: regressed" in text
    assert "- slice 'refund': pass rate dropped 66.7 points against the baseline" in text
    assert "| refund | 100.0% | 33.3% (10%–70%) | −66.7 pts" in text and "| **regressed** |" in text
    assert "**Newly failing (4)**" in text
    for i in range(4):
        assert f"| refund-{i} | refund | must\\_include: " in text
    assert "refund-4" not in text.partition("Newly failing")[2]
    assert "Baseline: commit `0123456789ab`, on main," in text and "days old" in text


def test_the_run_compared_with_no_baseline_is_compared_as_prompt_baseline_would(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.cases(CASES)
    _run(suite, GOOD, "base")
    _run(suite, WORSE, "report")  # no --prompt-baseline: the comment compares
    text = _comment(suite, capsys, "report", "base")
    assert "promptsuite: regressed" in text and "**Newly failing (4)**" in text
    assert (
        summary_gate(suite, "report") == "slice 'refund': pass rate 33.3% (2/6) is below its threshold 100.0% (default)"
    )


def summary_gate(suite: Suite, report: str) -> str:
    reasons = suite.summary(report)["gate"]["reasons"]
    return str(reasons[0])


def test_a_drop_the_paired_test_cannot_call_is_inconclusive_and_says_what_would_settle_it(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.cases(CASES)
    suite.config('[gate]\nregression = "paired"\n[thresholds]\ndefault = 0.5\n')
    _run(suite, GOOD, "base")
    one_worse = {"rules": [{"match": "refund 0", "reply": "no"}, *GOOD["rules"]]}  # type: ignore[list-item]
    _run(suite, one_worse, "report", "--prompt-baseline", "base")
    text = _comment(suite, capsys, "report", "base")
    assert "### ⚠️ promptsuite: inconclusive" in text
    assert "inconclusive; about " in text and " more cases would settle it" in text


def test_a_judge_change_is_named(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    suite.cases(
        [{"case_id": "polite", "input": "hi", "slice": "tone", "assert": [{"type": "llm-rubric", "value": "polite"}]}]
    )
    suite.write("judge-a.json", json.dumps({"default": '{"pass": true, "reason": "fine"}'}))
    suite.write("judge-b.json", json.dumps({"default": '{"pass": true, "reason": "fine too"}'}))
    suite.run("--prompt-judge", "fake:judge-a.json", "--prompt-report", "base")
    suite.run("--prompt-judge", "fake:judge-b.json", "--prompt-report", "report", "--prompt-baseline", "base")
    text = _comment(suite, capsys, "report", "base")
    assert "- judge changed: fake:judge-a.json → fake:judge-b.json" in text
    same = _comment(suite, capsys, "base", "base")
    assert "judge changed" not in same


def test_a_secret_in_a_failing_check_never_reaches_the_comment(
    suite: Suite, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "ghs_" + "S3cretT0kenValue1234567890"
    suite.cases([{"case_id": "leak", "input": f"Authorization: Bearer {secret}", "slice": "s", "must_include": ["x"]}])
    suite.run("--prompt-report", "base")
    suite.cases([{"case_id": "leak", "input": f"Authorization: Bearer {secret}", "slice": "s", "must_include": ["y"]}])
    suite.run("--prompt-report", "report", "--prompt-baseline", "base")
    text = _comment(suite, capsys, "report", "base", key="nightly")
    assert secret not in text
    assert text.startswith(f"{MARKER}:nightly -->")


def test_an_unreadable_report_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["comment", str(tmp_path / "missing")]) == 2
    assert f"{tmp_path / 'missing'}: no such file or folder" in capsys.readouterr().err
    (tmp_path / "results.jsonl").write_text("")
    assert main(["comment", str(tmp_path)]) == 2
    assert "no summary.json; give a report folder written by --prompt-report" in capsys.readouterr().err


def test_the_comment_goes_to_a_file_with_out(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    suite.cases(CASES)
    _run(suite, GOOD, "report")
    capsys.readouterr()
    assert main(["comment", str(suite.path / "report"), "--out", str(suite.path / "comment.md")]) == 0
    assert capsys.readouterr().out == ""
    assert (suite.path / "comment.md").read_text(encoding="utf-8").startswith(MARKER)


def test_a_model_change_is_named(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    suite.cases(CASES)
    suite.write("a.json", json.dumps(GOOD))
    suite.write("b.json", json.dumps(GOOD))
    suite.run("--prompt-model", "fake:a.json", "--prompt-report", "base")
    suite.run("--prompt-model", "fake:b.json", "--prompt-report", "report", "--prompt-baseline", "base")
    text = _comment(suite, capsys, "report", "base")
    assert (
        "- the baseline used model fake:a.json, this run fake:b.json: a model change, not only a prompt change" in text
    )


def test_an_unreadable_origin_is_an_error_naming_it(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    suite.cases(CASES)
    _run(suite, GOOD, "base")
    (suite.path / "base" / "origin.json").write_text("{not json")
    capsys.readouterr()
    assert main(["comment", str(suite.path / "base"), "--baseline", str(suite.path / "base")]) == 2
    assert "origin.json: cannot read where the baseline came from" in capsys.readouterr().err
