"""Stage tests for ``run.conversation``: the request of a later turn, usage summed over turns, the turn checks
(including a plugin model that raises mid-conversation: an error row that keeps the turns sent), run through
``PromptSession`` (``tests/session.py``) and on the helpers directly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.run.conversation import add_usage
from pytest_promptsuite.run.conversation import named_turn
from pytest_promptsuite.run.conversation import next_request
from tests.session import collect


def _suite(folder: Path, cases: list[dict[str, Any]], rules: dict[str, Any], config: str = "") -> Path:
    (folder / "rules.json").write_text(json.dumps(rules), encoding="utf-8")
    (folder / "promptsuite.toml").write_text('[model]\nspec = "fake:rules.json"\n' + config, encoding="utf-8")
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return folder


def _rows(folder: Path) -> dict[str, CaseResult]:
    with collect(folder, "--prompt-suite", ".") as run:
        rows = run.run()
    return {row.case_id: row for row in rows}


def test_a_later_turn_sends_the_conversation_then_its_messages_without_their_system_message() -> None:
    history = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
    ]
    rendered = [{"role": "system", "content": "S"}, {"role": "user", "content": "c"}]
    assert next_request(history, rendered) == [*history, {"role": "user", "content": "c"}]
    assert next_request(history, "c") == [*history, {"role": "user", "content": "c"}]


def test_usage_sums_count_by_count() -> None:
    assert add_usage(None, None) is None
    assert add_usage(None, {"prompt_tokens": 3}) == {"prompt_tokens": 3}
    summed = add_usage({"prompt_tokens": 3, "completion_tokens": None}, {"prompt_tokens": 4, "completion_tokens": 2})
    assert summed == {"prompt_tokens": 7, "completion_tokens": 2}
    assert add_usage({"prompt_tokens": 1}, None) == {"prompt_tokens": 1}


def test_a_named_turn_keeps_the_check_and_says_its_turn() -> None:
    check = named_turn(CheckResult("content", "contains", False, "no match", details={"x": 1}), 2)
    assert check.message == "turn 2: no match" and check.details == {"x": 1, "turn": 2}


def test_a_template_renders_every_turn_and_the_fake_matches_the_conversation_so_far(tmp_path: Path) -> None:
    rules = {"rules": [{"turn": 2, "match": "order A1", "reply": "got A1"}, {"match": "Q:", "reply": "hello"}]}
    case = {
        "case_id": "c",
        "slice": "s",
        "input": "hi",
        "vars": {"shop": "ACME"},
        "turns": [{"must_include": ["hello"]}, {"input": "order A1", "must_include": ["A1"]}],
    }
    _suite(tmp_path, [case], rules, '[template]\ntemplate = "Q: {input} ({shop})"\n')
    row = _rows(tmp_path)["c"]
    assert row.outcome is Outcome.PASSED, row.checks
    assert row.prompt == [
        {"role": "user", "content": "Q: hi (ACME)"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "Q: order A1 (ACME)"},
    ]
    assert [turn["user"] for turn in row.turns] == ["hi", "order A1"]
    assert CaseResult.from_json(row.to_json()).turns == row.turns


def test_a_model_that_raises_mid_conversation_ends_it_as_an_error_with_the_turns_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_promptsuite.models.fake import FakeModel

    real = FakeModel.generate_sync

    def flaky(self: FakeModel, request: Any) -> Any:
        if isinstance(request.prompt, list) and len(request.prompt) > 2:
            raise RuntimeError("the plugin model broke")
        return real(self, request)

    monkeypatch.setattr(FakeModel, "generate_sync", flaky)
    case = {"case_id": "c", "slice": "s", "input": "hi", "turns": [{}, {"input": "more"}, {"input": "again"}]}
    _suite(tmp_path, [case], {"rules": [], "default": "ok"})
    row = _rows(tmp_path)["c"]
    assert row.outcome is Outcome.ERROR
    assert row.error == "the model call raised RuntimeError: the plugin model broke"
    assert [turn["reply"] for turn in row.turns] == ["ok"]


def test_a_simulated_user_on_the_model_under_test_with_a_replaced_prompt(tmp_path: Path) -> None:
    rules = {"rules": [{"match": "You play Bob", "reply": "###STOP###"}], "default": "fine"}
    case = {"case_id": "u", "slice": "s", "input": "hi", "user": {"first": "Hello there", "persona": "Bob"}}
    _suite(tmp_path, [case], rules, '[template]\nuser_prompt = "You play {persona}; end with {stop_marker}"\n')
    row = _rows(tmp_path)["u"]
    assert [(t["user"], t["reply"]) for t in row.turns] == [("Hello there", "fine")]
    assert row.turns[0].get("user_usage") is None


def test_a_turn_runs_its_tool_loop_and_its_checks_see_its_steps(tmp_path: Path) -> None:
    rules = {
        "rules": [
            {"turn": 3, "match": "A1234", "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1234"}}]},
            {"match": "shipped", "on_tool": True, "reply": "It has shipped."},
            {"turn": 1, "reply": "Your order number?"},
        ]
    }
    tool = {"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object"}}}
    used = {"type": "trajectory:tool-used", "value": "lookup_order"}
    case = {
        "case_id": "t",
        "slice": "s",
        "input": "Where is my order?",
        "tools": [tool],
        "tool_results": {"lookup_order": "shipped"},
        "turns": [{"input": "Hi"}, {"input": "It is A1234", "assert": [used]}],  # the case's input opens
    }
    _suite(tmp_path, [case], rules)
    row = _rows(tmp_path)["t"]
    assert row.outcome is Outcome.PASSED, row.checks
    assert [t["user"] for t in row.turns] == ["Where is my order?", "Hi", "It is A1234"]
    assert "tool_steps" not in row.turns[1]
    steps = row.turns[2]["tool_steps"]
    assert [s["tool_calls"][0]["name"] for s in steps if s["tool_calls"]] == ["lookup_order"]
    assert row.output == "It has shipped."
    assert [m["role"] for m in row.prompt][-3:] == ["user", "assistant", "tool"]
