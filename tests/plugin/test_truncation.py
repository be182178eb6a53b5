"""Answers cut at ``max_tokens`` are visible: ``finish_reason`` in every row with an answer, a totals line naming
the cut answers, and a failed check of a cut answer that says it was cut (the dashboard's mark: tests/browser)."""

from __future__ import annotations

from tests.loopback import LoopbackServer
from tests.suite import Suite


CASES = [
    {"case_id": "long", "input": "the refund takes five days", "slice": "s", "must_include": ["five days", "receipt"]},
    {"case_id": "short", "input": "yes", "slice": "s", "must_include": ["yes"]},
    {"case_id": "broken", "input": "oops [[400]]", "slice": "s"},
]


def test_answers_cut_at_max_tokens_are_said_in_the_rows_the_checks_and_the_totals(
    suite: Suite, loopback: LoopbackServer
) -> None:
    loopback.reset(finish_reason="length")
    suite.cases(CASES)
    suite.config({"model": loopback.model(params={"max_tokens": 5})})
    result = suite.run("--prompt-report", "report", "--prompt-no-cache")

    rows = suite.by_id()
    assert rows["long"]["finish_reason"] == rows["short"]["finish_reason"] == "length"
    assert "finish_reason" not in rows["broken"]  # an error: no answer
    failed = [c for c in rows["long"]["checks"] if not c["passed"]]
    assert [c["message"] for c in failed] == [
        "missing required text 'receipt' (the answer was cut at max_tokens: finish_reason 'length'; "
        "raise max_tokens if it needs more)"
    ]
    assert all("cut" not in c["message"] for c in rows["short"]["checks"])  # a passed check says nothing more
    said = [line for line in result.stdout.lines if "cut at max_tokens (finish_reason" in line]
    assert said == ['2 answers cut at max_tokens (finish_reason "length"): long, short']
    summary_md = (suite.path / "report" / "summary.md").read_text(encoding="utf-8").splitlines()
    assert [line for line in summary_md if "cut at max\\_tokens (finish" in line] == [
        '2 answers cut at max\\_tokens (finish\\_reason "length"): long, short'
    ]


def test_an_answer_that_stopped_says_so_and_no_totals_line(suite: Suite, loopback: LoopbackServer) -> None:
    suite.cases(CASES[:2])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-report", "report", "--prompt-no-cache")

    assert [row["finish_reason"] for row in suite.rows()] == ["stop", "stop"]
    assert "cut at max_tokens" not in result.stdout.str()
    assert "cut at max" not in (suite.path / "report" / "summary.md").read_text(encoding="utf-8")


def test_a_finish_reason_that_is_a_text_is_kept_as_a_word(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.reset(finish_reason="length" + "x" * 100_000)
    suite.prompts(["hello"])
    suite.config({"model": loopback.model(params={"max_tokens": 8})})
    suite.run("--prompt-report", "report", "--prompt-no-cache")

    assert suite.rows()[0]["finish_reason"] == "length" + "x" * 34
