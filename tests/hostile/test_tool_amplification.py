"""Tool calls cannot amplify an answer without bound: an answer past the tool calls per answer limit, or a tool
loop whose next request would pass the tool loop request limit, ends its case as ``error`` naming the limit,
with no further request sent."""

from __future__ import annotations

from typing import Any

from pytest_promptsuite.safety.limits import TOOL_CALLS
from pytest_promptsuite.safety.limits import TOOL_REQUEST
from tests.loopback import LoopbackServer
from tests.suite import Suite


TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def _calls(count: int) -> list[dict[str, Any]]:
    return [{"name": "lookup", "arguments": {"n": n}} for n in range(count)]


def _run(suite: Suite, loopback: LoopbackServer, calls: int, result: str) -> dict[str, Any]:
    loopback.reset(tool_script=[("question", _calls(calls)), ("", "done")])
    suite.cases(
        [{"case_id": "amp", "input": "question", "slice": "s", "tools": TOOLS, "tool_results": {"lookup": result}}]
    )
    suite.config({"model": loopback.model()})
    suite.run("--prompt-report", "report", "--prompt-no-cache")
    return suite.by_id()["amp"]


def test_an_answer_with_thousands_of_tool_calls_is_an_error_and_calls_nothing_more(
    suite: Suite, loopback: LoopbackServer
) -> None:
    row = _run(suite, loopback, 5_000, "x" * 20)

    assert row["outcome"] == "error"
    assert row["error"] == (
        "step 1: the answer called 5,000 tools, past the tool calls per answer limit of 128 calls: "
        "none was answered and the case ends here"
    )
    assert loopback.stats.requests == 1


def test_a_tool_loop_request_past_the_limit_is_never_sent(suite: Suite, loopback: LoopbackServer) -> None:
    """100 calls (within the limit) each answered with 100,000 characters: a next request of 10 MB."""
    row = _run(suite, loopback, TOOL_CALLS.value - 28, "y" * 100_000)

    assert row["outcome"] == "error"
    assert row["error"].startswith("step 1: the next request, with the tool results, would be 10,0")
    assert row["error"].endswith(f"past {TOOL_REQUEST}: it was not sent and the case ends here")
    assert len(row["trajectory"]) == 1 and len(row["trajectory"][0]["tool_calls"]) == 100  # the step made is kept
    assert loopback.stats.requests == 1


def test_calls_within_the_limits_run_the_loop(suite: Suite, loopback: LoopbackServer) -> None:
    row = _run(suite, loopback, TOOL_CALLS.value, "z" * 1_000)

    assert row["outcome"] == "passed" and row["output"] == "done"
    assert loopback.stats.requests == 2
