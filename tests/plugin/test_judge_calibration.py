"""Judges you can trust, through pytest runs and the ``promptsuite`` command: calibrate a fake judge against a
labels file, gate only on a calibrated judge (``[judge] min_agreement``), ungate when its fingerprint changes,
and report a baseline judged by another judge as "judge changed", never as a regression."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cli.main import main as cli_main
from tests.suite import Suite


metrics = pytest.importorskip("sklearn.metrics")

RUBRIC = "The answer states the return window"
#: The fake judge: passes an output that says GOOD, fails any other.
JUDGE_RULES = {
    "rules": [{"match": "<output>[^<]*GOOD", "reply": json.dumps({"reason": "says GOOD", "pass": True, "score": 1})}],
    "default": json.dumps({"reason": "no GOOD", "pass": False, "score": 0}),
}
#: A judge that fails everything (another judge for the baseline tests).
STRICT_RULES = {"rules": [], "default": json.dumps({"reason": "strict", "pass": False})}
N = 40


def _cases() -> list[dict[str, Any]]:
    """Forty cases the fake model echoes: the even ones say GOOD (the judge passes 20, fails 20)."""
    return [
        {
            "case_id": f"c{i:02d}",
            "input": f"answer {i} {'GOOD' if i % 2 == 0 else 'BAD'}",
            "slice": "s",
            "assert": [{"type": "llm-rubric", "value": RUBRIC}],
        }
        for i in range(N)
    ]


def _labels(disagree: int) -> list[dict[str, Any]]:
    """A label per case, equal to the judge's verdict but on ``disagree`` even and ``disagree`` odd cases: the
    marginals stay balanced, so kappa is ``1 - 4 * disagree / N`` exactly."""
    flipped = set(range(0, 2 * disagree, 2)) | set(range(1, 2 * disagree, 2))
    labels = []
    for case in _cases():
        i = int(case["case_id"][1:])
        judge_passes = i % 2 == 0
        label = judge_passes != (i in flipped)
        labels.append({"case_id": case["case_id"], "output": case["input"], "label": "pass" if label else "fail"})
    return labels


def _write(
    suite: Suite, *, disagree: int, judge: str = "", extra: str = "", rules: dict[str, Any] = JUDGE_RULES
) -> None:
    suite.cases(_cases())
    suite.write("judge.json", json.dumps(rules))
    suite.write("labels.jsonl", "".join(json.dumps(label) + "\n" for label in _labels(disagree)))
    suite.config(
        '[models.judge]\nspec = "fake:judge.json"\n'
        + judge
        + '[judge]\nlabels = ["labels.jsonl"]\nmin_agreement = 0.6\nmin_labels = 30\n'
        + extra
        + "[thresholds]\ndefault = 0.0\n"
    )


def _calibrate(suite: Suite, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    status = cli_main(["calibrate", "--prompt-suite", str(suite.path / "cases.jsonl")])
    out = capsys.readouterr().out
    assert status == 0, out
    data: dict[str, Any] = json.loads((suite.path / "calibration.json").read_text("utf-8"))
    return data, out


def _outcomes(suite: Suite, report: str = "report") -> dict[str, int]:
    counted: dict[str, int] = {}
    for row in suite.rows(report):
        counted[row["outcome"]] = counted.get(row["outcome"], 0) + 1
    return counted


def _sklearn_kappa(labels: list[bool], verdicts: list[bool]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(metrics.cohen_kappa_score(labels, verdicts))


@pytest.mark.slow
def test_calibrate_reports_the_share_and_kappa_then_a_good_judge_gates(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(suite, disagree=1)
    # no calibration yet: every rubric check is a review mark that says why
    suite.run("--prompt-report", "report").assert_outcomes(passed=N)
    assert _outcomes(suite) == {"review": N}
    [ungated] = suite.summary()["ungated_judge_checks"]
    assert ungated["rubric"] == RUBRIC and ungated["checks"] == N
    assert "the judge is not calibrated: no calibration.json (run promptsuite calibrate)" in ungated["reason"]

    data, out = _calibrate(suite, capsys)
    labels = [label["label"] == "pass" for label in _labels(1)]
    verdicts = [i % 2 == 0 for i in range(N)]
    overall = data["overall"]
    assert overall["n"] == N and overall["accuracy"] == pytest.approx(38 / 40)
    assert overall["kappa"] == pytest.approx(_sklearn_kappa(labels, verdicts)) == pytest.approx(0.9)
    assert overall["kappa_low"] >= 0.6
    assert overall["confusion"] == {
        "label_pass_judge_pass": 19,
        "label_pass_judge_fail": 1,
        "label_fail_judge_pass": 1,
        "label_fail_judge_fail": 19,
    }
    assert [r["rubric"] for r in data["rubrics"]] == [RUBRIC]
    assert len(data["disagreements"]) == 2
    assert {d["case_id"] for d in data["disagreements"]} == {"c00", "c01"}
    assert "0.90" in out and "disagreements (2):" in out

    result = suite.run("--prompt-report", "report")
    result.assert_outcomes(passed=20, failed=20)  # the calibrated judge gates
    summary = suite.summary()
    assert summary["ungated_judge_checks"] == [] and summary["judge_fingerprint"] == data["judge_fingerprint"]
    assert {row["judge_fingerprint"] for row in suite.rows()} == {data["judge_fingerprint"]}


@pytest.mark.slow
def test_a_judge_at_kappa_0_3_does_not_gate(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    _write(suite, disagree=7)
    data, out = _calibrate(suite, capsys)
    assert data["overall"]["accuracy"] == pytest.approx(26 / 40)
    assert data["overall"]["kappa"] == pytest.approx(0.3)
    result = suite.run("--prompt-report", "report")
    result.assert_outcomes(passed=N)
    assert _outcomes(suite) == {"review": N}
    [ungated] = suite.summary()["ungated_judge_checks"]
    assert "kappa 0.30" in ungated["reason"] and "below min_agreement = 0.6" in ungated["reason"]
    result.stdout.fnmatch_lines([f"judge not gating on 40 checks of rubric '{RUBRIC}': not gated: *kappa 0.30*"])
    markdown = (suite.path / "report" / "summary.md").read_text("utf-8")
    assert "### The judge" in markdown and "judge not gating on 40 checks" in markdown
    row = suite.rows()[1]  # c01: the judge fails it; ungated, the row says what the judge found
    [check] = row["checks"]
    assert check["layer"] == "review" and "the check would fail" in check["message"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("judge", "extra"),
    [
        ("params = { temperature = 0.7 }\n", ""),
        ("", 'template = "Grade the output against {rubric}.\\n<output>{output}</output>"\n'),
    ],
    ids=["params", "template"],
)
def test_a_changed_judge_ungates_until_calibrated_again(
    suite: Suite, capsys: pytest.CaptureFixture[str], judge: str, extra: str
) -> None:
    _write(suite, disagree=1)
    before, _ = _calibrate(suite, capsys)
    _write(suite, disagree=1, judge=judge, extra=extra)
    suite.run("--prompt-report", "report").assert_outcomes(passed=N)
    [ungated] = suite.summary()["ungated_judge_checks"]
    assert "the judge changed since calibration.json was written" in ungated["reason"]
    assert before["judge_fingerprint"] in ungated["reason"]
    after, _ = _calibrate(suite, capsys)
    assert after["judge_fingerprint"] != before["judge_fingerprint"]
    suite.run("--prompt-report", "report").assert_outcomes(passed=20, failed=20)


@pytest.mark.slow
def test_a_baseline_judged_by_another_judge_is_judge_changed_never_regressed(suite: Suite) -> None:
    _write(suite, disagree=1)
    suite.write("promptsuite.toml", '[models.judge]\nspec = "fake:judge.json"\n[thresholds]\ndefault = 0.0\n')
    suite.run("--prompt-report", "base").assert_outcomes(passed=20, failed=20)
    suite.write("strict.json", json.dumps(STRICT_RULES))
    suite.write("promptsuite.toml", '[models.judge]\nspec = "fake:strict.json"\n[thresholds]\ndefault = 0.0\n')
    result = suite.run("--prompt-report", "now", "--prompt-baseline", "base")
    result.assert_outcomes(failed=N)
    assert result.ret == 0  # 20 cases flipped to failed, but by another judge: no regression
    result.stdout.fnmatch_lines(["judge changed in slice 's': baseline judge *, now *", "promptsuite gate: PASSED*"])
    summary = suite.summary("now")
    [row] = summary["slices"]
    assert row["verdict"] == "judge changed" and row["regressions"] == 0
    [changed] = summary["judge_changed"]
    assert changed["baseline_fingerprint"] == suite.summary("base")["judge_fingerprint"]
    assert changed["fingerprint"] == summary["judge_fingerprint"] != changed["baseline_fingerprint"]
    assert cli_main(["diff", str(suite.path / "base"), str(suite.path / "now")]) == 0
    # the same change with one judge is a regression
    suite.write("promptsuite.toml", '[models.judge]\nspec = "fake:judge.json"\n[thresholds]\ndefault = 0.0\n')
    suite.cases([{**case, "input": case["input"].replace("GOOD", "BAD")} for case in _cases()])
    result = suite.run("--prompt-report", "worse", "--prompt-baseline", "base")
    assert result.ret == 1
    assert cli_main(["diff", str(suite.path / "base"), str(suite.path / "worse")]) == 1


def test_calibrate_says_which_label_lines_are_wrong(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    _write(suite, disagree=1)
    bad = [{"case_id": "c00", "output": "x", "labl": "pass"}, {"output": "x", "label": "maybe"}]
    suite.write("labels.jsonl", "".join(json.dumps(line) + "\n" for line in bad))
    assert cli_main(["calibrate", "--prompt-suite", str(suite.path / "cases.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "labels.jsonl:1: unknown key 'labl' (did you mean 'label'?)" in err
    assert "labels.jsonl:2: label: Input should be 'pass' or 'fail'" in err
    unresolved = [{"case_id": "c0", "output": "x", "label": "pass"}, {"case_id": "c01", "label": "fail"}]
    suite.write("labels.jsonl", "".join(json.dumps(line) + "\n" for line in unresolved))
    assert cli_main(["calibrate", "--prompt-suite", str(suite.path / "cases.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "labels.jsonl:1: no case 'c0' in the suite" in err
    assert "labels.jsonl:2: no output for case 'c01': give 'output', or --results REPORT holding its row" in err
    assert not (Path(suite.path) / "calibration.json").exists()


def test_calibrate_reads_outputs_from_a_report_and_review_decisions(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_promptsuite.results.review_book import output_sha256

    _write(suite, disagree=1)
    suite.run("--prompt-report", "report")
    by_case = [{"case_id": f"c{i:02d}", "label": "pass" if i % 2 == 0 else "fail"} for i in range(4)]
    suite.write("labels.jsonl", "".join(json.dumps(line) + "\n" for line in by_case))
    decision = {"case_id": "c04", "output_sha256": output_sha256("answer 4 GOOD"), "decision": "fail"}
    suite.write("decisions.jsonl", json.dumps(decision) + "\n")
    status = cli_main(
        [
            "calibrate",
            "--prompt-suite",
            str(suite.path / "cases.jsonl"),
            "--results",
            str(suite.path / "report"),
            "--reviews",
            str(suite.path / "decisions.jsonl"),
            "--out",
            str(suite.path / "cal.json"),
            "--markdown",
            str(suite.path / "cal.md"),
            "--prompt-judge-repeat",
            "3",
        ]
    )
    assert status == 0, capsys.readouterr()
    data = json.loads((suite.path / "cal.json").read_text("utf-8"))
    assert data["overall"]["n"] == 5 and data["overall"]["accuracy"] == pytest.approx(4 / 5)
    assert data["judge"]["repeat"] == 3 and data["overall"]["flip_rate"] == 0.0  # the fake judge never flips
    [disagreement] = data["disagreements"]
    assert disagreement["where"].endswith("decisions.jsonl:1") and disagreement["judge"] == "pass"
    markdown = (suite.path / "cal.md").read_text("utf-8")
    assert "| rubric | n |" in markdown and f"| {RUBRIC} | 5 |" in markdown


@pytest.mark.slow
def test_rejudge_compares_the_baseline_with_todays_judge(suite: Suite) -> None:
    """The judge's params changed and five answers got worse: without ``--prompt-rejudge`` the slice is "judge
    changed" (nothing compared); with it the baseline's stored outputs are judged again by today's judge, and
    the five regressions show."""
    _write(suite, disagree=1)
    config = '[models.judge]\nspec = "fake:judge.json"\n{params}[thresholds]\ndefault = 0.0\n'
    suite.write("promptsuite.toml", config.format(params=""))
    suite.run("--prompt-report", "base").assert_outcomes(passed=20, failed=20)
    worse = {f"c{i:02d}" for i in range(0, 10, 2)}
    suite.cases([{**c, "input": c["input"].replace("GOOD", "BAD")} if c["case_id"] in worse else c for c in _cases()])
    suite.write("promptsuite.toml", config.format(params="params = { temperature = 0.2 }\n"))
    assert suite.run("--prompt-report", "now", "--prompt-baseline", "base").ret == 0
    assert suite.summary("now")["slices"][0]["verdict"] == "judge changed"
    result = suite.run("--prompt-report", "fair", "--prompt-baseline", "base", "--prompt-rejudge")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["--prompt-rejudge: 40 baseline rows checked again by this run's judge"])
    summary = suite.summary("fair")
    assert summary["judge_changed"] == [] and sorted(summary["regressions"]) == sorted(worse)
    assert summary["slices"][0]["verdict"] == "regressed"


def test_calibrate_labels_by_rubric_check_or_inline_output(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    """Labels name their check by its rubric or its place, or bring an output of no case; a reply the judge
    garbles is listed as not judged (exit 1); a suite without a judge, or no labels, is said."""
    cases = [
        {
            "case_id": "two",
            "input": "GOOD",
            "slice": "s",
            "assert": [
                {"type": "llm-rubric", "value": "first"},
                {"type": "llm-rubric", "value": "second", "path": "$.a"},
            ],
        },
        {"case_id": "none", "input": "x", "slice": "s"},
    ]
    suite.cases(cases)
    rules = {**JUDGE_RULES, "rules": [{"match": "garble", "reply": "no verdict"}, *JUDGE_RULES["rules"]]}
    suite.write("judge.json", json.dumps(rules))
    suite.config('[models.judge]\nspec = "fake:judge.json"\n')
    labels = [
        {"case_id": "two", "output": "GOOD", "rubric": "first", "label": "pass"},
        {"case_id": "two", "output": "GOOD", "check": "assert[0]", "label": "pass"},
        {"case_id": "two", "output": "GOOD", "rubric": "a rubric of no check", "label": "fail"},
        {"output": "garble GOOD", "rubric": "inline", "label": "pass"},
        {"case_id": "two", "output": "GOOD", "check": "assert[1]", "label": "pass"},  # $.a: not JSON
    ]
    suite.write("labels.jsonl", "".join(json.dumps(line) + "\n" for line in labels))
    args = [
        "calibrate",
        "--prompt-suite",
        str(suite.path / "cases.jsonl"),
        "--labels",
        str(suite.path / "labels.jsonl"),
    ]
    assert cli_main(args) == 1
    out = capsys.readouterr().out
    data = json.loads((suite.path / "calibration.json").read_text("utf-8"))
    assert data["overall"]["n"] == 3
    assert [r["rubric"] for r in data["rubrics"]] == ["first", "a rubric of no check"]
    assert [e["where"].rsplit(":", 1)[1] for e in data["errors"]] == ["4", "5"]
    assert "unreadable judge reply" in data["errors"][0]["error"] and "not judged: " in out
    assert "cannot read $.a" in data["errors"][1]["error"]

    suite.write(
        "labels.jsonl",
        json.dumps({"case_id": "two", "output": "x", "check": "assert[7]", "label": "pass"})
        + "\n"
        + json.dumps({"case_id": "none", "output": "x", "label": "pass"})
        + "\n",
    )
    assert cli_main(args) == 1
    err = capsys.readouterr().err
    assert (
        "labels.jsonl:1: case 'two' has no llm-rubric check at 'assert[7]'; its llm-rubric checks: assert[0], assert[1]"
        in err
    )
    assert "labels.jsonl:2: case 'none' has no llm-rubric check: give the 'rubric' it is labelled for" in err

    assert cli_main(args[:3]) == 1
    assert "no labels: give --labels FILE" in capsys.readouterr().err
    suite.config('[model]\nspec = "fake"\n')
    suite.cases(cases[1:])
    assert cli_main(args) == 1
    assert "the suite has no judge model" in capsys.readouterr().err
