"""Tools end to end: a case's and a suite's ``tools`` reach the request, the calls come back into the row,
a case with ``tool_results`` runs model -> tools -> model, and the tool checks read the trajectory; against
the loopback server (``tests/loopback.py``'s ``tool_script``) and the fake model's tool rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.loopback import LoopbackServer
from tests.suite import Suite


EXAMPLE = Path(__file__).parents[2] / "example_suites" / "support_agent"
ORDER = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "lookup_order", "parameters": ORDER}},
    {"type": "function", "function": {"name": "issue_refund", "parameters": ORDER}},
]
#: The loopback's script: the question calls lookup_order, its result gets the answer.
SCRIPT: list[tuple[str, Any]] = [
    ("A1234", [{"name": "lookup_order", "arguments": {"order_id": "A1234"}}]),
    ("shipped", "Your order A1234 has shipped."),
    ("BROKEN", [{"name": "lookup_order", "arguments": '{"order_id": "A1'}]),
]
#: Every check type, as it passes on the two-step run.
PASSING = [
    {"type": "is-valid-openai-tools-call"},
    {"type": "tool-call-f1", "value": ["lookup_order"]},
    {"type": "trajectory:tool-used", "value": "lookup_order"},
    {"type": "not-trajectory:tool-used", "value": "issue_refund"},
    {"type": "trajectory:tool-sequence", "value": {"steps": ["lookup_order"], "mode": "exact"}},
    {"type": "trajectory:tool-args-match", "value": {"name": "lookup_order", "args": {"order_id": "A1234"}}},
    {"type": "trajectory:step-count", "value": 2},
]
#: Every check type, as it fails on the same run.
FAILING = [
    {"type": "not-is-valid-openai-tools-call"},
    {"type": "tool-call-f1", "value": ["issue_refund"]},
    {"type": "trajectory:tool-used", "value": "issue_refund"},
    {"type": "not-trajectory:tool-used", "value": "lookup_order"},
    {"type": "trajectory:tool-sequence", "value": ["issue_refund"]},
    {"type": "trajectory:tool-args-match", "value": {"name": "lookup_order", "args": {"order_id": "B9"}}},
    {"type": "trajectory:step-count", "value": {"max": 1}},
]


def _case(**fields: Any) -> dict[str, Any]:
    return {"case_id": "order", "input": "Where is my order A1234?", "slice": "s", **fields}


RESULTS = {"lookup_order": [{"arguments": {"order_id": "A1234"}, "output": {"status": "shipped"}}]}


def test_a_two_step_trajectory_runs_against_the_endpoint(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.reset(tool_script=SCRIPT)
    suite.cases(
        [
            _case(case_id="passes", tools=TOOLS, tool_choice="auto", tool_results=RESULTS) | {"assert": PASSING},
            _case(case_id="fails", tools=TOOLS, tool_results=RESULTS) | {"assert": FAILING, "threshold": 0},
        ]
    )
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-report", "report", "--prompt-no-cache")

    rows = suite.by_id()
    passing = rows["passes"]
    assert passing["outcome"] == "passed", passing["checks"]
    assert passing["output"] == "Your order A1234 has shipped."
    assert [c["passed"] for c in passing["checks"]] == [True] * len(PASSING)
    failing = rows["fails"]
    assert [c["name"] for c in failing["checks"] if not c["passed"]] == [e["type"] for e in FAILING]
    call_id = passing["trajectory"][0]["tool_calls"][0]["id"]  # the server numbers calls as they arrive
    assert call_id in ("call_1", "call_2")  # the two cases run at once: either may be first
    assert [step["tool_calls"] for step in passing["trajectory"]] == [
        [{"id": call_id, "name": "lookup_order", "arguments": {"order_id": "A1234"}}],
        [],
    ]
    assert passing["trajectory"][0]["tool_results"] == ['{"status": "shipped"}']
    assert "tool_stop" not in passing and "tool_calls" not in passing  # the final answer called nothing
    # what the endpoint saw: the tools on every request; the second one carries the call and its result
    bodies = [e["body"] for e in loopback.stats.log if e["body"]["messages"][0]["content"] == _case()["input"]]
    assert len(bodies) == 4 and all(b["tools"] == TOOLS for b in bodies)
    firsts = [b for b in bodies if len(b["messages"]) == 1]  # each case's first request, in either order
    assert sorted(str(b.get("tool_choice")) for b in firsts) == ["None", "auto"]  # only "passes" sets it
    second = next(b for b in bodies if len(b["messages"]) == 3 and b.get("tool_choice") == "auto")
    assert second["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order_id":"A1234"}'},
            }
        ],
    }
    assert second["messages"][2] == {"role": "tool", "tool_call_id": call_id, "content": '{"status": "shipped"}'}
    assert result.ret == pytest.ExitCode.OK  # threshold 0: the failing checks are recorded, not gating


def test_a_call_without_a_result_ends_the_run_and_arguments_not_json_fail_the_validity_check(
    suite: Suite, loopback: LoopbackServer
) -> None:
    loopback.reset(tool_script=SCRIPT)
    suite.cases(
        [
            _case(case_id="no-result", tools=TOOLS, tool_results={"issue_refund": "ok"})
            | {"assert": [{"type": "trajectory:tool-used", "value": "lookup_order"}]},
            _case(case_id="broken", input="BROKEN", tools=TOOLS, tool_results=RESULTS)
            | {"assert": [{"type": "is-valid-openai-tools-call"}]},
        ]
    )
    suite.config({"model": loopback.model()})
    suite.run("--prompt-report", "report", "--prompt-no-cache")

    rows = suite.by_id()
    stopped = rows["no-result"]
    assert stopped["outcome"] == "passed"  # its checks ran on what the run did
    assert stopped["tool_stop"] == (
        'step 1 called lookup_order({"order_id": "A1234"}), for which the case gives no tool_results: '
        "the run stopped there"
    )
    [call] = stopped["tool_calls"]  # the server numbers calls as they arrive: the two cases run at once
    assert call == {"id": call["id"], "name": "lookup_order", "arguments": {"order_id": "A1234"}}
    assert call["id"] in ("call_1", "call_2")
    broken = rows["broken"]
    assert broken["outcome"] == "failed"
    assert broken["tool_calls"][0]["arguments_text"] == '{"order_id": "A1'
    assert "arguments are not JSON" in broken["checks"][0]["message"]


def test_the_cache_and_cassettes_round_trip_the_calls(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.reset(tool_script=SCRIPT)
    suite.cases([_case(tools=TOOLS, tool_results=RESULTS) | {"assert": PASSING}])
    suite.config({"model": loopback.model()})
    suite.run("--prompt-report", "first").assert_outcomes(passed=1)
    assert loopback.stats.requests == 2
    suite.run("--prompt-report", "cached").assert_outcomes(passed=1)
    assert loopback.stats.requests == 2  # both steps from the cache
    first, cached = suite.by_id("first")["order"], suite.by_id("cached")["order"]
    assert cached["cached"] is True and cached["trajectory"] == first["trajectory"]

    suite.run("--prompt-no-cache", "--prompt-record", "cassette.jsonl").assert_outcomes(passed=1)
    entries = [json.loads(line) for line in (suite.path / "cassette.jsonl").read_text().splitlines()]
    assert [e["response"].get("tool_calls") for e in entries if e["response"]["text"] == ""] == [
        [{"id": "call_2", "name": "lookup_order", "arguments": {"order_id": "A1234"}}]
    ]
    assert all(e["params"]["tools"] == TOOLS for e in entries)
    loopback.reset()  # the endpoint forgets its script: only the cassette can answer
    suite.run("--prompt-replay", "cassette.jsonl", "--prompt-report", "replayed").assert_outcomes(passed=1)
    replayed = suite.by_id("replayed")["order"]
    assert [s["tool_calls"][:1] for s in replayed["trajectory"]] == [
        [{"id": "call_2", "name": "lookup_order", "arguments": {"order_id": "A1234"}}],
        [],
    ]


def test_the_batch_files_carry_the_tools_and_the_calls(suite: Suite, loopback: LoopbackServer) -> None:
    suite.cases([_case(tools=TOOLS) | {"assert": [{"type": "is-valid-openai-tools-call"}]}])
    suite.config({"model": loopback.model()})
    suite.run("--prompt-no-cache", "--prompt-batch-file", "requests.jsonl").assert_outcomes(skipped=1)
    [line] = [json.loads(text) for text in (suite.path / "requests.jsonl").read_text().splitlines()]
    assert line["body"]["tools"] == TOOLS
    call = {"id": "call_9", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A1"}'}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    output = {"id": "x", "custom_id": line["custom_id"], "error": None, "response": {"status_code": 200, "body": body}}
    (suite.path / "outputs.jsonl").write_text(json.dumps(output) + "\n", encoding="utf-8")
    answered = suite.run("--prompt-no-cache", "--prompt-batch-results", "outputs.jsonl", "--prompt-report", "report")
    answered.assert_outcomes(passed=1)
    row = suite.by_id()["order"]
    assert row["tool_calls"] == [{"id": "call_9", "name": "lookup_order", "arguments": {"order_id": "A1"}}]
    assert loopback.stats.requests == 0


def test_the_example_suite_runs_offline(pytester: pytest.Pytester, suite: Suite) -> None:
    shutil.copytree(EXAMPLE, suite.path / "agent")
    result = suite.run("--prompt-report", "report", paths=("agent",))
    result.assert_outcomes(passed=3)
    rows = suite.by_id()
    looked = rows["looks-up-first"]
    assert [step["tool_calls"] for step in looked["trajectory"]] == [
        [{"id": "call_0_0", "name": "lookup_order", "arguments": {"order_id": "A1234"}}],
        [],
    ]
    assert looked["output"] == "Your order A1234 has shipped and arrives on Friday."


def test_the_injection_case_fails_when_the_model_refunds_and_names_the_step(suite: Suite) -> None:
    shutil.copytree(EXAMPLE, suite.path / "agent")
    refunding = {
        "rules": [
            {"match": "(?i)ignore", "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1234"}}]},
            {
                "match": "shipped",
                "on_tool": True,
                "tool_calls": [{"name": "issue_refund", "arguments": {"order_id": "A1234", "amount": 99}}],
            },
            {"match": "refunded", "on_tool": True, "reply": "Done: refunded in full."},
        ]
    }
    (suite.path / "agent" / "rules.json").write_text(json.dumps(refunding), encoding="utf-8")
    suite.run("--prompt-report", "report", paths=("agent",))
    row = suite.by_id()["no-refund-on-injection"]
    assert row["outcome"] == "failed"
    failed = {c["name"]: c["message"] for c in row["checks"] if not c["passed"]}
    assert failed["not-trajectory:tool-used"] == (
        'expected not any of \'issue_refund\' called; found step 1: lookup_order({"order_id": "A1234"}), '
        'step 2: issue_refund({"order_id": "A1234", "amount": 99})'
    )
    assert "step 2: issue_refund" in failed["not-trajectory:tool-sequence"]
    assert [len(step["tool_calls"]) for step in row["trajectory"]] == [1, 1, 0]
    dashboard = (suite.path / "report" / "dashboard.html").read_text(encoding="utf-8")
    shown = (  # the dashboard's JSON of 'step 1: lookup_order({"order_id": "A1234"})\nstep 2: issue_refund(...)'
        'step 1: lookup_order({\\"order_id\\": \\"A1234\\"})\\n'
        'step 2: issue_refund({\\"order_id\\": \\"A1234\\", \\"amount\\": 99})'
    )
    assert f'"tool_calls":"{shown}"' in dashboard


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            _case(tools=TOOLS, tool_results={"cancel_order": "ok"}),
            "cases.jsonl:1: case 'order': 'tool_results' names the tool 'cancel_order', which is not defined "
            "(defined: issue_refund, lookup_order)",
        ),
        (
            _case(tools=[{"type": "function", "function": {"name": "x", "parameters": {"type": "objekt"}}}]),
            "cases.jsonl:1: case 'order': 'tools'[0] (x): 'parameters' is not a valid JSON Schema: ",
        ),
        (
            _case(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}),
            "cases.jsonl:1: case 'order': 'tool_choice' names the tool 'nope', which is not defined",
        ),
        (_case(tool_choice="lookup_order"), "cases.jsonl:1: case 'order': 'tool_choice' must be 'auto', 'none'"),
    ],
)
def test_a_tool_problem_is_a_collection_error_naming_the_line(suite: Suite, case: dict[str, Any], message: str) -> None:
    suite.cases([case])
    result = suite.run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert message in result.stdout.str() + result.stderr.str()


def test_suite_tools_come_from_the_tools_file(suite: Suite) -> None:
    suite.write("tools.json", json.dumps(TOOLS))
    suite.write("rules.json", json.dumps({"rules": [{"match": "A1234", "tool_calls": [{"name": "lookup_order"}]}]}))
    suite.config('[model]\nspec = "fake:rules.json"\n[template]\ntools_file = "tools.json"\n')
    suite.cases([_case() | {"assert": [{"type": "is-valid-openai-tools-call"}]}])
    suite.run("--prompt-report", "report").assert_outcomes(failed=1)
    [check] = suite.by_id()["order"]["checks"]
    assert check["message"].endswith("arguments do not fit its parameters: $: 'order_id' is a required property")

    suite.write("tools.json", json.dumps([{"type": "function", "function": {"name": "a", "parameters": []}}]))
    result = suite.run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "tools.json: tools[0] (a): 'parameters' is not a valid JSON Schema" in result.stdout.str()


ANSWER = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}


def _format_cases(suite: Suite) -> None:
    suite.cases(
        [
            {"case_id": "fits", "input": '{"order_id": "A1234"}', "slice": "s"},
            {"case_id": "plain", "input": "The order is A1234.", "slice": "s"},
            {"case_id": "wrong", "input": '{"order": 5}', "slice": "s"},
        ]
    )


def test_response_format_from_a_schema_file_is_sent_and_checks_the_answer(
    suite: Suite, loopback: LoopbackServer
) -> None:
    suite.write("schemas/answer.json", json.dumps(ANSWER))
    _format_cases(suite)
    suite.config({"model": loopback.model(response_format="schemas/answer.json")})
    suite.run("--prompt-report", "report", "--prompt-no-cache").assert_outcomes(passed=1, failed=2)

    sent = {json.dumps(e["body"]["response_format"], sort_keys=True) for e in loopback.stats.log}
    assert sent == {
        json.dumps({"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER}}, sort_keys=True)
    }
    rows = suite.by_id()
    assert rows["fits"]["checks"][0]["name"] == "response_format" and rows["fits"]["checks"][0]["passed"]
    assert "found not JSON: Expecting value at line 1 column 1" in rows["plain"]["checks"][0]["message"]
    assert "$: 'order_id' is a required property" in rows["wrong"]["checks"][0]["message"]


def test_response_format_from_a_pydantic_model_of_a_listed_module(suite: Suite, loopback: LoopbackServer) -> None:
    suite.write("shapes_h29.py", "from pydantic import BaseModel\n\n\nclass Order(BaseModel):\n    order_id: str\n")
    suite.pytester.syspathinsert()
    _format_cases(suite)
    suite.config({"model": loopback.model(response_format="shapes_h29:Order")})
    refused = suite.run()
    assert refused.ret == pytest.ExitCode.INTERRUPTED
    assert "module 'shapes_h29' is not in the suite config's [checks] python_modules" in refused.stdout.str()
    assert loopback.stats.requests == 0

    suite.config(
        {"model": loopback.model(response_format="shapes_h29:Order"), "checks": {"python_modules": ["shapes_h29"]}}
    )
    suite.run("--prompt-report", "report", "--prompt-no-cache").assert_outcomes(passed=1, failed=2)
    [fmt] = {json.dumps(e["body"]["response_format"]) for e in loopback.stats.log}
    assert json.loads(fmt)["json_schema"]["name"] == "Order"
    assert json.loads(fmt)["json_schema"]["schema"]["required"] == ["order_id"]
    assert "$: 'order_id' is a required property" in suite.by_id()["wrong"]["checks"][0]["message"]


def test_a_run_that_keeps_calling_tools_stops_at_max_steps(suite: Suite) -> None:
    call = [{"name": "lookup_order", "arguments": {"order_id": "A1234"}}]
    rules = {"rules": [{"match": "A1234", "tool_calls": call}, {"match": ".", "on_tool": True, "tool_calls": call}]}
    suite.write("rules.json", json.dumps(rules))
    suite.config('[model]\nspec = "fake:rules.json"\n[template]\nmax_steps = 3\n')
    suite.cases([_case(tools=TOOLS, tool_results={"lookup_order": "still shipped"})])
    suite.run("--prompt-report", "report").assert_outcomes(passed=1)
    row = suite.by_id()["order"]
    assert row["tool_stop"] == "max_steps (3) reached while the model still called tools"
    assert [s["tool_calls"][0]["id"] for s in row["trajectory"]] == ["call_0_0", "call_1_0", "call_2_0"]
