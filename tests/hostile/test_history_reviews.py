"""History and review files (wave 3, finding 7): a ``--prompt-history`` summary whose fields are not
what we write is refused where it is read, naming the file and the field, before any call (and by
``promptsuite history``); a review decision made in the dashboard applies to an output that holds
credential-like text, since both sides hash the text the dashboard shows."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pytest_promptsuite.cli.main import main
from tests.hostile.support import assert_clean
from tests.hostile.support import case
from tests.hostile.support import endpoint
from tests.hostile.support import output
from tests.loopback import LoopbackServer
from tests.suite import Suite


#: A slice of a summary.json as a run writes it.
GOOD = {"slice": "s", "cases": 4, "passed": 2, "review": 1, "skipped": 0, "pass_rate": 2 / 3}
GOOD |= {"ci_low": 0.2, "ci_high": 0.94, "gate": "fail"}

#: name -> (what the slice's fields become, or the document; the field the message names, and what it says)
BAD: dict[str, tuple[dict[str, Any], str]] = {
    "pass-rate-string": ({"pass_rate": "66%"}, "slices[0].pass_rate: Input should be a valid number"),
    "pass-rate-true": ({"pass_rate": True}, "slices[0].pass_rate: Input should be a valid number"),
    "pass-rate-above-one": ({"pass_rate": 66.7}, "slices[0].pass_rate: Input should be less than or equal to 1"),
    "pass-rate-negative": ({"pass_rate": -0.1}, "slices[0].pass_rate: Input should be greater than or equal to 0"),
    "ci-low-string": ({"ci_low": "0.2"}, "slices[0].ci_low: Input should be a valid number"),
    "ci-high-above-one": ({"ci_high": 94}, "slices[0].ci_high: Input should be less than or equal to 1"),
    "ci-low-above-high": ({"ci_low": 0.9, "ci_high": 0.1}, "slices[0]: Value error, ci_low (0.9) is above ci_high"),
    "gate-other-word": ({"gate": "FAILED"}, "slices[0].gate: Input should be 'pass' or 'fail'"),
    "gate-object": ({"gate": {"passed": False}}, "slices[0].gate: Input should be 'pass' or 'fail'"),
    "gate-bool": ({"gate": False}, "slices[0].gate: Input should be 'pass' or 'fail'"),
    "cases-huge": ({"cases": 10**30}, "slices[0].cases: Input should be less than or equal to 9223372036854775807"),
    "cases-float": ({"cases": 4.5}, "slices[0].cases: Input should be a valid integer"),
    "cases-negative": ({"cases": -4}, "slices[0].cases: Input should be greater than or equal to 0"),
    "passed-over-counted": ({"passed": 4}, "slices[0]: Value error, passed (4) is more than the cases counted"),
    "passed-missing": ({"passed": None}, "slices[0].passed: Field required"),
    "review-null": ({"review": None}, "slices[0].review: Input should be a valid integer"),
    "review-over-cases": ({"review": 9}, "slices[0]: Value error, review and skipped (9 + 0) are more than cases"),
    "slice-number": ({"slice": 7}, "slices[0].slice: Input should be a valid string"),
    "slice-empty": ({"slice": ""}, "slices[0].slice: String should have at least 1 character"),
    "slice-twice": ({"twice": True}, "slices[1].slice: 's' is there twice"),
}


def _summary(change: dict[str, Any]) -> dict[str, Any]:
    """Return a summary.json whose slice has ``change`` (``passed: None``: none; ``twice``: the slice twice)."""
    bad = {**GOOD, **{k: v for k, v in change.items() if k != "twice"}}
    if "passed" in change and change["passed"] is None:
        del bad["passed"]
    return {"slices": [bad, GOOD] if change.get("twice") else [bad], "gate": {"passed": False, "reasons": []}}


@pytest.mark.parametrize("name", list(BAD))
def test_a_history_summary_not_as_we_write_it_stops_the_run_before_any_call(
    name: str, suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    change, said = BAD[name]
    suite.write("history/run-1/summary.json", json.dumps({"slices": [GOOD], "gate": {"passed": False}}))
    suite.write("history/run-2/summary.json", json.dumps(_summary(change)))
    suite.config(endpoint(loopback.base_url))
    suite.cases([case("a"), case("b")])
    message = f"history/run-2/summary.json: {said}"

    result = suite.run("--prompt-history", "history", "--prompt-report", "report")
    assert_clean(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert message in output(result)
    assert loopback.stats.requests == 0  # refused before any call
    assert not (suite.path / "report").exists()

    capsys.readouterr()
    assert main(["history", str(suite.path / "history")]) == 1  # the command says the same, no traceback
    assert f"{suite.path}/{message}" in capsys.readouterr().err


def test_every_field_of_a_summary_we_write_passes_the_check(suite: Suite) -> None:
    """The runs of a real history (a passed, a failed and a review case) read back as written."""
    suite.cases([case("a"), case("b", must_include=["zzz"]), case("c", review="look")])
    for run in range(2):
        suite.run("--prompt-report", f"history/{run}", "--prompt-min-pass-rate", "0")
    result = suite.run("--prompt-history", "history", "--prompt-report", "report", "--prompt-min-pass-rate", "0")
    assert result.ret == 0, output(result)
    assert (suite.path / "report" / "summary.md").is_file() and (suite.path / "report" / "dashboard.html").is_file()
    assert main(["history", str(suite.path / "history")]) == 0


#: An output with credential-like text: a URL's user and password, a bearer token, the API key.
LEAKY = "call http://admin:hunter2@intranet/x with Bearer abc.def-12345678 and sk-review-KEY-0000111122223333"


def _page_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="promptsuite-data">(.*?)</script>', page, re.S)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def _decisions_the_page_downloads(data: dict[str, Any], verdict: str) -> list[dict[str, Any]]:
    """What the dashboard's "download decisions" writes (dashboard.js, reviewItem): a row's detail's hash."""
    decided = []
    for row in data["rows"]:
        case_id, slice_, variant, repeat, outcome, detail = row[:6]
        if outcome == "review" and detail >= 0 and data["details"][detail].get("output_sha256"):
            sha = data["details"][detail]["output_sha256"]
            decided.append({"case_id": case_id, "variant": variant, "slice": slice_, "repeat": repeat})
            decided[-1] |= {"output_sha256": sha, "decision": verdict, "reviewer": "alice", "comment": ""}
    return decided


def test_a_decision_on_an_output_with_credential_like_text_applies(
    suite: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-review-KEY-0000111122223333")
    suite.cases([case("leaky", LEAKY, review="legal wording"), case("plain", "hello", review="legal wording")])
    first = suite.run("--prompt-report", "rep")
    assert suite.by_id("rep")["leaky"]["outcome"] == "review", output(first)
    page = (suite.path / "rep" / "dashboard.html").read_text("utf-8")
    decisions = _decisions_the_page_downloads(_page_data(page), "pass")
    assert sorted(d["case_id"] for d in decisions) == ["leaky", "plain"]
    suite.write("decisions.jsonl", "".join(json.dumps(d) + "\n" for d in decisions))

    second = suite.run("--prompt-report", "rep2", "--prompt-reviews", "decisions.jsonl")
    rows = suite.by_id("rep2")
    assert rows["plain"]["outcome"] == "passed"
    assert rows["leaky"]["outcome"] == "passed", output(second)  # the page's hash names this output
    assert second.ret == 0


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"repeat": "0"}, "'repeat' must be a whole number from 0, got '0'"),
        ({"repeat": True}, "'repeat' must be a whole number from 0, got True"),
        ({"repeat": -1}, "'repeat' must be a whole number from 0, got -1"),
        ({"slice": 3}, "'slice' must be a string"),
    ],
)
def test_a_review_file_with_a_field_not_as_the_page_writes_it_stops_the_run(
    suite: Suite, change: dict[str, Any], said: str
) -> None:
    decision = {"case_id": "a", "output_sha256": "0" * 64, "decision": "pass", "slice": "s", "repeat": 0}
    suite.write("decisions.jsonl", json.dumps(decision | change) + "\n")
    suite.cases([case("a", review="look")])
    result = suite.run("--prompt-reviews", "decisions.jsonl")
    assert_clean(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"decisions.jsonl:1: {said}" in output(result)
