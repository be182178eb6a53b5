"""Stage tests for the fake model's ``turn`` rules: a rule for one turn of a conversation, counted as the
prompt's user messages, with or without ``match``; bad ``turn`` values named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.model_api import ModelRequest


def _model(tmp_path: Path, rules: list[dict[str, Any]]) -> FakeModel:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": rules, "default": "?"}), encoding="utf-8")
    return FakeModel.from_rules_file(path)


def _ask(model: FakeModel, prompt: Any) -> str:
    return model.generate_sync(ModelRequest(prompt=prompt)).text


def test_a_rule_answers_at_its_turn_only(tmp_path: Path) -> None:
    model = _model(tmp_path, [{"turn": 2, "match": "A1", "reply": "two"}, {"turn": 1, "reply": "one"}])
    first = [{"role": "system", "content": "S"}, {"role": "user", "content": "A1"}]
    assert _ask(model, "A1") == "one"  # a string prompt is turn 1
    assert _ask(model, first) == "one"
    second = [*first, {"role": "assistant", "content": "one"}, {"role": "user", "content": "hi"}]
    assert _ask(model, second) == "two"  # match searches the conversation so far
    third = [*second, {"role": "assistant", "content": "two"}, {"role": "user", "content": "x"}]
    assert _ask(model, third) == "?"


@pytest.mark.parametrize("turn", [0, "2", True, 1.5])
def test_a_bad_turn_is_named(tmp_path: Path, turn: Any) -> None:
    with pytest.raises(ConfigError, match=r"rules\[0\]: 'turn' must be a whole number from 1"):
        _model(tmp_path, [{"turn": turn, "reply": "x"}])
