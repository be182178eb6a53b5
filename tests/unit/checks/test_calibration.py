"""Stage tests for ``checks.calibration`` and ``checks.fingerprint``: when a judge's verdict gates, and what
changes its fingerprint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.checks.calibration import JudgeGate
from pytest_promptsuite.checks.calibration import read_calibration
from pytest_promptsuite.checks.fingerprint import fingerprint_of
from pytest_promptsuite.checks.fingerprint import judge_fingerprint
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.errors import ConfigError


def _figures(n: int, kappa: float, low: float, high: float) -> dict[str, Any]:
    return {"n": n, "kappa": kappa, "kappa_low": low, "kappa_high": high}


CALIBRATION = {
    "judge_fingerprint": "fp",
    "overall": _figures(60, 0.8, 0.7, 0.9),
    "rubrics": [
        {"rubric": "polite", **_figures(40, 0.9, 0.75, 1.0)},
        {"rubric": "short", **_figures(20, 0.5, 0.1, 0.8)},
    ],
}


@pytest.mark.parametrize(
    ("rubric", "fingerprint", "min_labels", "reason"),
    [
        ("polite", "fp", 30, None),
        ("unlabelled", "fp", 30, None),  # the judge's overall figures
        ("short", "fp", 10, "its rubric's calibration: kappa 0.50, 95 % interval 0.10 to 0.80, whose lower end is "),
        ("short", "fp", 30, "its rubric's calibration has 20 labels, fewer than min_labels = 30"),
        ("unlabelled", "fp", 100, "the judge's calibration (this rubric has no labels) has 60 labels, fewer than"),
        ("polite", "other", 30, "the judge changed since cal.json was written (fingerprint other, calibrated fp)"),
    ],
)
def test_a_verdict_gates_only_under_a_calibration_of_this_judge(
    rubric: str, fingerprint: str, min_labels: int, reason: str | None
) -> None:
    said = JudgeGate(0.6, min_labels, "cal.json", CALIBRATION).reason(rubric, fingerprint)
    assert said is None if reason is None else said is not None and said.startswith(reason)


def test_no_calibration_and_no_interval() -> None:
    assert JudgeGate(0.6, 1, "cal.json").reason("r", "fp") == (
        "the judge is not calibrated: no cal.json (run promptsuite calibrate)"
    )
    undefined = {"judge_fingerprint": "fp", "overall": {"n": 5, "kappa": None, "kappa_low": None}}
    said = JudgeGate(0.6, 1, "cal.json", undefined).reason("r", "fp")
    assert said is not None and "kappa none, 95 % interval none to none" in said


def test_read_calibration(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    assert read_calibration(path, "calibration.json") is None
    path.write_text(json.dumps(CALIBRATION), "utf-8")
    assert read_calibration(path, "calibration.json") == CALIBRATION
    path.write_text("{nope", "utf-8")
    with pytest.raises(ConfigError, match="calibration.json: not a calibration written by promptsuite calibrate"):
        read_calibration(path, "calibration.json")
    path.write_text("{}", "utf-8")
    with pytest.raises(ConfigError, match=r"\(no judge_fingerprint\)"):
        read_calibration(path, "calibration.json")
    path.write_bytes(b"\xff")
    with pytest.raises(ConfigError, match="cannot read the calibration"):
        read_calibration(path, "calibration.json")


def test_the_fingerprint_changes_with_what_decides_verdicts() -> None:
    base = judge_fingerprint({"model": "openai:m"}, {"temperature": 0}, "T {output}")
    assert base == judge_fingerprint({"model": "openai:m"}, {"temperature": 0}, "T {output}")
    assert len(base) == 16
    others = {
        judge_fingerprint({"model": "openai:n"}, {"temperature": 0}, "T {output}"),
        judge_fingerprint({"model": "openai:m"}, {"temperature": 1}, "T {output}"),
        judge_fingerprint({"model": "openai:m"}, {"temperature": 0}, "U {output}"),
        judge_fingerprint({"model": "openai:m"}, {"temperature": 0}, "T {output}", served="m-2026"),
        judge_fingerprint({"model": "openai:m"}, {"temperature": 0}, "T {output}", repeat=3),
    }
    assert base not in others and len(others) == 5
    assert base == judge_fingerprint({"model": "openai:m"}, {"temperature": 0}, "T {output}", repeat=1)


def test_fingerprint_of_checks() -> None:
    plain = CheckResult("content", "contains", True, "ok")
    judged = CheckResult("metric", "llm-rubric", True, "ok", details={"judge_fingerprint": "abc"})
    assert fingerprint_of([plain, judged]) == "abc"
    assert fingerprint_of([plain]) is None
