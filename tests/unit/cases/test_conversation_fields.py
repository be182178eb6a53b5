"""Stage tests for ``cases.conversation_fields``: the rules a conversation's fields follow together, stopped at
collection with the case's path and line."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.compile_checks import compile_case
from pytest_promptsuite.errors import CheckError


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"turns": [{}], "user": {}}, "'turns' and 'user' both given"),
        ({"input": ["a", "b"], "turns": [{}]}, "'input' must be one message in a conversation"),
        ({"input": ["a", "b"], "user": {}}, "'input' must be one message in a conversation"),
        ({"turns": [{}, {}]}, "'turns[1]' has no 'input'"),
    ],
)
def test_conversation_rules(fields: dict[str, Any], said: str) -> None:
    case = PromptCase.from_dict({"case_id": "c", "input": "hi", "slice": "s", **fields})
    with pytest.raises(CheckError, match=r"<memory>:0: case 'c': " + said.replace("[", r"\[")):
        compile_case(case)


def test_a_user_without_fields_is_a_conversation_and_no_turns_is_none() -> None:
    assert PromptCase.from_dict({"case_id": "c", "input": "hi", "slice": "s", "user": {}}).is_conversation
    assert not PromptCase.from_dict({"case_id": "c", "input": "hi", "slice": "s", "turns": []}).is_conversation


def test_a_bad_max_turns_says_what_it_got() -> None:
    with pytest.raises(ValueError, match="'user.max_turns' must be a whole number from 1, got 0"):
        PromptCase.from_dict({"case_id": "c", "input": "hi", "slice": "s", "user": {"max_turns": 0}})
