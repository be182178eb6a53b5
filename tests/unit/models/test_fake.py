"""Stage tests for the fake model, through its public ``Model`` methods."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.fake import FakeRule
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response


def _rules(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_echo_string_prompt() -> None:
    assert FakeModel().generate_sync(ModelRequest("hello\nworld")).text == "hello\nworld"


def test_echo_last_user_message() -> None:
    prompt = [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"},
    ]
    assert FakeModel().generate_sync(ModelRequest(prompt)).text == "second"


def test_async_generate_matches_sync() -> None:
    response = asyncio.run(FakeModel().generate(ModelRequest("x")))
    assert response == Response(text="x", finish_reason="stop", latency_ms=response.latency_ms, cost_usd=0.0)


def test_reports_cost_zero_and_its_latency_as_echo_does() -> None:
    # promptfoo's providers report a cost and a latency for every call: cost and latency asserts run on fake
    for response in (
        FakeModel().generate_sync(ModelRequest("x")),
        FakeModel([FakeRule(re.compile("x"), "", (("lookup", {}),))]).generate_sync(ModelRequest("x")),
    ):
        assert response.cost_usd == 0.0
        assert isinstance(response.latency_ms, float) and 0 <= response.latency_ms < 1000


def test_rules_first_match_wins_then_default(tmp_path: Path) -> None:
    model = FakeModel.from_rules_file(
        _rules(tmp_path, {"rules": [{"match": "退", "reply": "A"}, {"match": "退款", "reply": "B"}], "default": "D"})
    )
    assert model.generate_sync(ModelRequest("能退款吗")).text == "A"
    assert model.generate_sync(ModelRequest("hello")).text == "D"


def test_rules_match_joined_messages(tmp_path: Path) -> None:
    model = FakeModel.from_rules_file(_rules(tmp_path, {"rules": [{"match": "a\nb", "reply": "joined"}]}))
    prompt = [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}]
    assert model.generate_sync(ModelRequest(prompt)).text == "joined"


def test_no_default_falls_back_to_echo(tmp_path: Path) -> None:
    model = FakeModel.from_rules_file(_rules(tmp_path, {"rules": [{"match": "^x$", "reply": "X"}]}))
    assert model.generate_sync(ModelRequest("y")).text == "y"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"rules": [{"match": "(", "reply": "x"}]}, "rules[0]: bad regex '('"),
        ({"rules": [{"match": "a"}]}, "rules[0]: a rule needs 'reply' or 'tool_calls'"),
        ({"rules": [{"match": "a", "reply": "b", "x": 1}]}, "rules[0]: a rule is an object with 'match' and 'reply'"),
        ({"rulez": []}, "unknown key 'rulez'"),
        ([], "must be a JSON object"),
        ({"default": 3}, "'default' must be a string"),
    ],
)
def test_bad_rules_file(tmp_path: Path, data: object, message: str) -> None:
    path = _rules(tmp_path, data)
    with pytest.raises(ConfigError) as excinfo:
        FakeModel.from_rules_file(path)
    assert str(excinfo.value).startswith(str(path))
    assert message in str(excinfo.value)
