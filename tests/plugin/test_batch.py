"""Batch mode end to end against the loopback server's Batch API (``tests/loopback_batch.py``):
one job for the run's calls, the same results as direct calls, partial failures, a failed and an
expired job, the cache, ``--prompt-batch-file``, ``--prompt-batch-results``, Ctrl-C and SIGTERM, and a
hostile Batch API (null counts, unreadable or twice-answered lines, broken polls, a job that never ends)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.loopback import LoopbackServer
from tests.suite import UNUSED_PLUGINS
from tests.suite import Suite
from tests.suite import default_sigint


def test_batch_mode_sends_one_job_and_gives_the_results_of_direct_calls(suite: Suite, loopback: LoopbackServer) -> None:
    prompts = [f"question {i}" for i in range(30)] + ["不 ascii \u2028 text"]
    ids = suite.prompts(prompts)
    suite.config({"model": loopback.model(params={"temperature": 0, "max_tokens": 20})})
    direct = suite.run("--prompt-no-cache", "--prompt-report", "direct")
    direct.assert_outcomes(passed=len(ids))
    assert loopback.stats.requests == len(ids)

    loopback.reset()
    batched = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "batched")
    batched.assert_outcomes(passed=len(ids))
    assert batched.ret == pytest.ExitCode.OK
    assert loopback.stats.requests == 0  # no direct call
    assert (loopback.batch.stats.uploads, loopback.batch.stats.created) == (1, 1)
    assert loopback.batch.stats.lines == len(ids)
    assert loopback.batch.stats.endpoints == ["/v1/chat/completions"]
    batched.stdout.fnmatch_lines(
        ["batch: sending 31 requests to /v1/chat/completions", "batch batch_1: completed, 31 of 31 done, 0 failed"]
    )
    one, other = suite.by_id("direct"), suite.by_id("batched")
    assert sorted(other) == ids
    for case_id in ids:
        for key in ("outcome", "output", "prompt", "prompt_hash", "usage", "checks"):
            assert one[case_id][key] == other[case_id][key], (case_id, key)
        assert other[case_id]["latency_ms"] is None  # a batch measures no per-call latency
    # the request file: the OpenAI batch format, the same body a direct call sends
    request_file = loopback.batch.files["file-1"].decode("utf-8").splitlines()
    line = json.loads(request_file[0])
    assert set(line) == {"custom_id", "method", "url", "body"}
    assert (line["method"], line["url"]) == ("POST", "/v1/chat/completions")
    assert line["body"] == {
        "model": "loop-model",
        "messages": [{"role": "user", "content": "question 0"}],
        "temperature": 0,
        "max_tokens": 20,
    }
    assert line["custom_id"].startswith("c-00#")


def test_lines_the_batch_failed_or_lost_are_errors_with_the_reason(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["fine", "bad [[batch-error]]", "gone [[batch-lost]]", "also fine"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "report")
    result.assert_outcomes(passed=2, failed=2)
    rows = suite.by_id()
    assert rows["c-01"]["outcome"] == "error"
    assert rows["c-01"]["error"] == "HTTP 400 in batch batch_1 (completed): Invalid request: batch-error"
    assert rows["c-02"]["outcome"] == "error"
    assert "no answer for c-02#" in rows["c-02"]["error"]
    assert loopback.stats.requests == 0


@pytest.mark.parametrize(
    ("knobs", "reason", "passed"),
    [
        ({"fail": "line 1: the model is unknown"}, "the batch failed: line 1: the model is unknown", 0),
        ({"expire_after": 2}, "the batch expired before this request ran", 2),
    ],
    ids=["failed", "expired"],
)
def test_a_failed_or_expired_batch_errors_each_case_it_did_not_answer(
    suite: Suite, loopback: LoopbackServer, knobs: dict[str, Any], reason: str, passed: int
) -> None:
    loopback.batch.reset(**knobs)
    suite.prompts(["a", "b", "c", "d", "e"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "report")
    result.assert_outcomes(passed=passed, failed=5 - passed)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    errors = [row for row in suite.rows() if row["outcome"] == "error"]
    assert len(errors) == 5 - passed
    assert all(row["error"].endswith(reason) for row in errors), errors


def test_batch_answers_are_cached_and_recorded_like_direct_ones(suite: Suite, loopback: LoopbackServer) -> None:
    """``[model] batch = true`` in the config; a second run is answered by the cache, no job."""
    suite.prompts(["one", "two", "three"])
    suite.config({"model": loopback.model(batch=True)})
    first = suite.run("--prompt-record", "cassette.jsonl")
    first.assert_outcomes(passed=3)
    assert loopback.batch.stats.created == 1
    loopback.reset()
    again = suite.run()
    again.assert_outcomes(passed=3)
    assert (loopback.batch.stats.created, loopback.stats.requests) == (0, 0)
    replay = suite.run("--prompt-no-cache", "--prompt-replay", "cassette.jsonl")
    replay.assert_outcomes(passed=3)
    assert (loopback.batch.stats.created, loopback.stats.requests) == (0, 0)


def test_batch_file_then_batch_results(suite: Suite, loopback: LoopbackServer) -> None:
    """``--prompt-batch-file`` writes the requests and sends nothing; an offline runner answers
    them; ``--prompt-batch-results`` runs the checks on its output."""
    suite.prompts(["one", "two", "three"])
    suite.config({"model": loopback.model()})
    written = suite.run("--prompt-no-cache", "--prompt-batch-file", "requests.jsonl")
    written.assert_outcomes(skipped=3)
    assert written.ret == pytest.ExitCode.OK
    written.stdout.fnmatch_lines(["batch: 3 requests written to requests.jsonl"])
    assert loopback.stats.requests == 0 and loopback.batch.stats.created == 0
    lines = [json.loads(line) for line in (suite.path / "requests.jsonl").read_text().splitlines()]
    assert [line["body"]["messages"][0]["content"] for line in lines] == ["one", "two", "three"]
    assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions" for line in lines)

    outputs = suite.path / "outputs.jsonl"  # what vllm run-batch writes
    with outputs.open("w", encoding="utf-8") as out:
        for line in lines[:2]:
            text = line["body"]["messages"][0]["content"]
            body = {
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
            }
            out.write(
                json.dumps(
                    {
                        "id": "x",
                        "custom_id": line["custom_id"],
                        "error": None,
                        "response": {"status_code": 200, "body": body},
                    }
                )
                + "\n"
            )
    answered = suite.run("--prompt-no-cache", "--prompt-batch-results", "outputs.jsonl", "--prompt-report", "report")
    answered.assert_outcomes(passed=2, failed=1)
    rows = suite.by_id()
    assert rows["c-00"]["output"] == "one"
    assert rows["c-02"]["outcome"] == "error"
    assert "is not in it" in rows["c-02"]["error"] and "outputs.jsonl" in rows["c-02"]["error"]
    assert loopback.stats.requests == 0 and loopback.batch.stats.created == 0


def test_batch_results_refuse_an_unreadable_line_and_error_a_case_answered_twice(
    suite: Suite, loopback: LoopbackServer
) -> None:
    """A results file is the user's: a line that is no batch output line is a usage error naming it, before
    any case runs; a case answered on two lines ends as error naming both."""
    suite.prompts(["one", "two"])
    suite.config({"model": loopback.model()})
    suite.run("--prompt-no-cache", "--prompt-batch-file", "requests.jsonl")
    ids = [json.loads(line)["custom_id"] for line in (suite.path / "requests.jsonl").read_text().splitlines()]

    def output(custom_id: str, text: str) -> str:
        message = {"role": "assistant", "content": text}
        body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        return json.dumps({"custom_id": custom_id, "response": {"status_code": 200, "body": body}}) + "\n"

    suite.write("outputs.jsonl", output(ids[0], "one") + output(ids[1], "two") + output(ids[0], "not one"))
    twice = suite.run("--prompt-no-cache", "--prompt-batch-results", "outputs.jsonl", "--prompt-report", "report")
    twice.assert_outcomes(passed=1, failed=1)
    rows = suite.by_id()
    assert rows["c-00"]["error"] == f"{ids[0]} answered twice in outputs.jsonl:1 and outputs.jsonl:3"
    assert rows["c-01"]["output"] == "two"

    suite.write("outputs.jsonl", output(ids[0], "one") + '{"custom_id": 7}\n')
    bad = suite.run("--prompt-no-cache", "--prompt-batch-results", "outputs.jsonl")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*outputs.jsonl:2: not a batch output line (no custom_id)*"])
    assert loopback.stats.requests == 0 and loopback.batch.stats.created == 0


def test_batch_mode_refuses_xdist(suite: Suite) -> None:
    suite.prompts(["one"])
    result = suite.run("--prompt-batch", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*one batch of the run's calls in one process: drop -n*"])


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_and_sigterm_cancel_the_batch(suite: Suite, loopback: LoopbackServer, signum: int) -> None:
    """SIGTERM (a CI runner's cancel) cancels the job as Ctrl-C does."""
    loopback.batch.reset(delay_s=60)
    suite.prompts(["one", "two"])
    suite.config({"model": loopback.model()})
    process = suite.pytester.popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--prompt-suite",
            "cases.jsonl",
            "-p",
            "no:randomly",
            *UNUSED_PLUGINS,
            "--prompt-batch",
            "--prompt-no-cache",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=default_sigint,
    )
    try:
        loopback.wait_for(lambda: loopback.batch.stats.created == 1)
        time.sleep(0.3)
        process.send_signal(signum)
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == pytest.ExitCode.INTERRUPTED, out
    assert loopback.batch.stats.cancelled == 1
    assert loopback.batch.jobs["batch_1"]["status"] == "cancelling"
    assert not (suite.path / "report").exists()


def test_null_request_counts_are_shown_as_unknown(suite: Suite, loopback: LoopbackServer) -> None:
    """Servers type ``request_counts`` (and each count) as optional: null is no count, not a crash."""
    loopback.batch.reset(null_counts=True, delay_s=0.2)
    suite.prompts(["one", "two", "three"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "report")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["batch batch_1: completed"])
    assert loopback.batch.stats.polls >= 1 and loopback.stats.requests == 0


def test_an_unreadable_output_line_errors_its_case_and_keeps_the_others(suite: Suite, loopback: LoopbackServer) -> None:
    """A line cut in half still names its case: that case's error says which line; a line that names none
    (no ``custom_id``) is named in the error of every case left without an answer, since it may be theirs."""
    suite.prompts(["one", "cut [[batch-garbled]]", "three", "gone [[batch-lost]]", "x [[batch-nameless]]"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "report")
    result.assert_outcomes(passed=2, failed=3)
    rows = suite.by_id()
    assert rows["c-00"]["output"] == "one" and rows["c-02"]["output"] == "three"
    assert re.fullmatch(
        r"no answer for c-01#[0-9a-f]{16}: batch batch_1 output file:2: not a batch output line "
        r"\(invalid JSON: Unterminated string starting at \(column \d+\)\)",
        rows["c-01"]["error"],
    ), rows["c-01"]["error"]
    for case_id in ("c-03", "c-04"):
        assert re.fullmatch(
            rf"no answer for {case_id}#[0-9a-f]{{16}} in batch batch_1 \(completed\): the batch ended 'completed' "
            r"without it; or its line could not be read: batch batch_1 output file:4: not a batch output line "
            r"\(no custom_id\)",
            rows[case_id]["error"],
        ), rows[case_id]["error"]
    assert loopback.stats.requests == 0


def test_a_custom_id_answered_twice_errors_its_case(suite: Suite, loopback: LoopbackServer) -> None:
    """Twice in the output file, or in the output and the error file: no answer is taken silently."""
    suite.prompts(["one", "two [[batch-twice]]", "three [[batch-both]]"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "report")
    result.assert_outcomes(passed=1, failed=2)
    rows = suite.by_id()
    assert rows["c-00"]["outcome"] == "passed"
    twice, both = rows["c-01"], rows["c-02"]
    assert (twice["outcome"], both["outcome"]) == ("error", "error")
    assert twice["output"] is None and both["output"] is None
    assert twice["error"].endswith(" answered twice in batch batch_1 output file:2 and batch batch_1 output file:3"), (
        twice["error"]
    )
    assert both["error"].endswith(" answered twice in batch batch_1 output file:4 and batch batch_1 error file:1"), (
        both["error"]
    )


def test_an_error_file_that_cannot_be_downloaded_loses_not_the_output_file(
    suite: Suite, loopback: LoopbackServer
) -> None:
    loopback.batch.reset(broken_error_file=True)
    suite.prompts(["one", "bad [[batch-error]]", "three"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "report")
    result.assert_outcomes(passed=2, failed=1)
    error = suite.by_id()["c-01"]["error"]
    assert re.fullmatch(
        r"no answer for c-01#[0-9a-f]{16} in batch batch_1 \(completed\): the batch ended 'completed' without it; "
        r"the batch batch_1 error file could not be downloaded: HTTP 500 from GET http://127\.0\.0\.1:\d+/v1/files/"
        r"file-3/content: the file store is down",
        error,
    ), error


def test_a_broken_poll_cancels_the_job_and_errors_its_cases(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.batch.reset(broken_polls=True, delay_s=60)
    suite.prompts(["one", "two"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", "--prompt-batch", "--prompt-report", "report")
    result.assert_outcomes(failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert loopback.batch.stats.cancelled == 1
    assert loopback.batch.jobs["batch_1"]["status"] == "cancelling"
    errors = {row["error"] for row in suite.rows()}
    assert errors == {f"GET {loopback.base_url}/batches/batch_1: the answer is not a JSON object"}, errors


def test_a_job_past_its_time_limit_is_cancelled_and_its_cases_error(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.batch.reset(delay_s=3600)  # never completes
    suite.prompts(["one", "two"])
    suite.config({"model": loopback.model()})
    result = suite.run(
        "--prompt-no-cache", "--prompt-batch", "--prompt-batch-timeout", "1.5", "--prompt-report", "report"
    )
    result.assert_outcomes(failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert loopback.batch.stats.cancelled == 1
    assert loopback.batch.jobs["batch_1"]["status"] == "cancelling"
    errors = {row["error"] for row in suite.rows()}
    assert errors == {"batch batch_1 did not end within 1.5 s (--prompt-batch-timeout): cancelled"}, errors
    result.stdout.fnmatch_lines(["batch batch_1: cancel requested"])


def test_a_batch_error_shared_by_many_calls_is_raised_as_a_new_instance_each_time() -> None:
    """A --prompt-batch-file run or a failed job gives every call one error: each call raises its
    own copy, so no traceback grows with the calls (and keeps their frames alive)."""
    import asyncio

    from pytest_promptsuite.models.batch.requests import BatchAnswers
    from pytest_promptsuite.models.batch.requests import NotSent
    from pytest_promptsuite.models.batch.requests import custom_id
    from pytest_promptsuite.models.model_api import ModelRequest
    from pytest_promptsuite.models.openai import OpenAIModel

    answers = BatchAnswers(OpenAIModel("m", base_url="http://127.0.0.1:9/v1"))
    shared = NotSent("written to out.jsonl (--prompt-batch-file), not sent")
    requests = [ModelRequest(prompt=f"q{i}", case_id=f"c{i}") for i in range(50)]
    answers.answers.update({custom_id(answers.identity, r): shared for r in requests})
    raised = []
    for request in requests:
        with pytest.raises(NotSent) as info:
            asyncio.run(answers.generate(request))
        raised.append(info.value)
    assert len({id(e) for e in raised}) == 50 and shared not in raised
    assert all(str(e) == str(shared) for e in raised) and shared.__traceback__ is None
    depth = 0
    tb = raised[-1].__traceback__
    while tb is not None:
        depth, tb = depth + 1, tb.tb_next
    assert depth < 10  # its own frames only, not one per earlier call
