"""What a first run against an endpoint says before and after its calls: a hosted endpoint with no key set (once,
before the first call, naming the variable), and ``tool_choice = "required"`` that no answer honoured (once, after
the totals; its ``not-trajectory:tool-used`` checks skipped, as they would pass on a model that cannot call tools)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.models.openai import OpenAIModel
from tests.loopback import LoopbackServer
from tests.suite import Suite


TOOLS = [{"type": "function", "function": {"name": "issue_refund", "parameters": {"type": "object"}}}]
NOT_USED = {"type": "not-trajectory:tool-used", "value": ["issue_refund"]}


@pytest.mark.parametrize(
    ("base_url", "hosted"),
    [
        ("https://api.openai.com/v1", True),
        ("https://my-resource.openai.azure.com/openai?api-version=2024-06-01", True),
        ("http://8.8.8.8:8000/v1", True),
        ("http://127.0.0.1:8080/v1", False),
        ("http://localhost:11434/v1", False),
        ("http://[::1]:8000/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://vllm:8000/v1", False),  # a compose service
        ("http://gpu-box.local:8000/v1", False),
        ("https://proxy.example.com/v1?key=abc123secretvalue", False),  # a key in the URL
        ("https://user:pw@proxy.example.com/v1", False),
    ],
)
def test_a_hosted_endpoint_without_a_key_is_said(base_url: str, hosted: bool) -> None:
    model = OpenAIModel("m", base_url=base_url, api_key_env="MY_KEY")
    hint = model.key_hint()
    assert (hint is not None) is hosted
    if hint is not None:
        assert hint.startswith("openai:m: $MY_KEY is not set, so the calls to ")
    assert OpenAIModel("m", base_url=base_url, api_key="sk-x").key_hint() is None


def test_a_run_against_a_hosted_endpoint_with_no_key_says_so_before_the_first_call(suite: Suite) -> None:
    suite.prompts(["hello"])
    model = {"spec": "openai:gpt-4o-mini", "base_url": "https://api.promptsuite.invalid/v1", "max_retries": 0}
    suite.config({"model": {**model, "api_key_env": "PROMPTSUITE_NO_SUCH_KEY", "params": {"max_tokens": 8}}})
    result = suite.run()

    said = [i for i, line in enumerate(result.stdout.lines) if "$PROMPTSUITE_NO_SUCH_KEY is not set" in line]
    assert len(said) == 1
    first_result = next(i for i, line in enumerate(result.stdout.lines) if line.startswith("cases.jsonl"))
    assert said[0] < first_result
    assert "https://api.promptsuite.invalid/v1 go without an API key" in result.stdout.lines[said[0]]


def test_a_local_endpoint_without_a_key_says_nothing(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["hello"])
    suite.config({"model": loopback.model(params={"max_tokens": 8})})
    assert "without an API key" not in suite.run().stdout.str()


def _cases(**fields: Any) -> list[dict[str, Any]]:
    return [
        {"case_id": f"c-{i}", "input": f"refund order {i}", "slice": "s", "assert": [NOT_USED], **fields}
        for i in range(3)
    ]


def test_tool_choice_required_with_no_call_in_any_answer_gets_a_hint(suite: Suite, loopback: LoopbackServer) -> None:
    suite.cases(_cases(tools=TOOLS, tool_choice="required"))  # the loopback echoes: it never calls a tool
    suite.config({"model": loopback.model(params={"max_tokens": 8})})
    result = suite.run("--prompt-report", "report", "--prompt-no-cache")

    rows = suite.by_id()
    assert {row["tool_stop"] for row in rows.values()} == {
        'tool_choice "required" was sent and the answer called no tool: the endpoint ignored it'
    }
    check = rows["c-0"]["checks"][0]
    assert check["skipped"] and 'tool_choice "required" was sent and the model called no tool' in check["message"]
    assert check["message"].endswith("so not calling 'issue_refund' shows nothing")
    hints = [line for line in result.stdout.lines if line.startswith('hint: tool_choice "required"')]
    assert len(hints) == 1 and "was sent with 3 cases and no answer called a tool" in hints[0]


def test_not_tool_used_with_no_tool_offered_is_skipped(suite: Suite, loopback: LoopbackServer) -> None:
    suite.cases(_cases())
    suite.config({"model": loopback.model(params={"max_tokens": 8})})
    result = suite.run("--prompt-report", "report", "--prompt-no-cache")

    check = suite.by_id()["c-0"]["checks"][0]
    assert check["skipped"]
    assert "no tool was offered to the model (no tools in the case or its [template])" in check["message"]
    assert "hint: tool_choice" not in result.stdout.str()


def test_not_tool_used_still_passes_when_tools_were_offered_and_not_called(
    suite: Suite, loopback: LoopbackServer
) -> None:
    suite.cases(_cases(tools=TOOLS, tool_choice="auto"))
    suite.config({"model": loopback.model(params={"max_tokens": 8})})
    result = suite.run("--prompt-report", "report", "--prompt-no-cache")

    result.assert_outcomes(passed=3)
    check = suite.by_id()["c-0"]["checks"][0]
    assert check["passed"] and not check["skipped"]
