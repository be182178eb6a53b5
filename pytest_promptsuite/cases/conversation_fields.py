"""The shape rules of a conversation's case fields: ``turns`` (each user turn and its checks) and ``user``
(the simulated user), as the case loader checks them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pytest_promptsuite.errors import describe_type
from pytest_promptsuite.errors import did_you_mean


#: The keys of one entry of ``turns``.
TURN_KEYS = ("input", "must_include", "must_not_include", "assert")
#: The keys of ``user``.
USER_KEYS = ("persona", "goal", "first", "max_turns", "stop")
_USER_TEXTS = ("persona", "goal", "first", "stop")


def conversation_problems(data: dict[str, Any]) -> Iterator[str]:
    """Yield every way the ``turns`` and ``user`` of a line do not fit their shape."""
    if "turns" in data:
        yield from _turns_problems(data["turns"])
    if "user" in data:
        yield from _user_problems(data["user"])


def _turns_problems(turns: Any) -> Iterator[str]:
    if not isinstance(turns, list):
        yield f"'turns' must be a list of turns, got {describe_type(turns)}"
        return
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            yield f"'turns[{i}]' must be an object, got {describe_type(turn)}"
        else:
            yield from _turn_problems(turn, f"turns[{i}]")


def _turn_problems(turn: dict[str, Any], where: str) -> Iterator[str]:
    yield from _unknown(turn, TURN_KEYS, where)
    if "input" in turn:
        yield from _text_problems(turn["input"], f"{where}.input")
    for key in ("must_include", "must_not_include"):
        yield from string_list_problems(turn.get(key, []), f"{where}.{key}")
    checks = turn.get("assert", [])
    if not isinstance(checks, list):
        yield f"'{where}.assert' must be a list of checks, got {describe_type(checks)}"
        return
    for j, check in enumerate(checks):
        if not isinstance(check, dict):
            yield f"'{where}.assert[{j}]' must be an object, got {describe_type(check)}"


def _user_problems(user: Any) -> Iterator[str]:
    if not isinstance(user, dict):
        yield f"'user' must be an object, got {describe_type(user)}"
        return
    yield from _unknown(user, USER_KEYS, "user")
    for key in _USER_TEXTS:
        if key in user:
            yield from _text_problems(user[key], f"user.{key}")
    turns = user.get("max_turns", 1)
    if type(turns) is not int or turns < 1:
        got = repr(turns) if type(turns) is int else describe_type(turns)
        yield f"'user.max_turns' must be a whole number from 1, got {got}"


def _unknown(obj: dict[str, Any], known: tuple[str, ...], where: str) -> Iterator[str]:
    for key in obj:
        if key not in known:
            yield f"unknown key '{where}.{key}'" + did_you_mean(key, known)


def _text_problems(value: Any, where: str) -> Iterator[str]:
    if not isinstance(value, str):
        yield f"'{where}' must be a string, got {describe_type(value)}"
    elif not value.strip():
        yield f"'{where}' is empty"


def string_list_problems(value: Any, where: str) -> Iterator[str]:
    """Yield what keeps ``value`` (at ``where``) from being a list of non-empty strings."""
    if not isinstance(value, list):
        yield f"'{where}' must be a list of strings, got {describe_type(value)}"
        return
    for i, item in enumerate(value):
        if not isinstance(item, str):
            yield f"'{where}[{i}]' must be a string, got {describe_type(item)}"
        elif not item:
            yield f"'{where}[{i}]' is an empty string"


def conversation_rules(turns: list[dict[str, Any]], user: dict[str, Any] | None, opening: Any) -> Iterator[str]:
    """Yield what is wrong with a conversation's fields together (each field's shape already passed):
    ``turns`` and ``user`` at once, a later turn without ``input``, a multi-turn ``input`` (``opening``)."""
    if turns and user is not None:
        yield "'turns' and 'user' both given: a conversation is scripted (turns) or simulated (user), not both"
    if (turns or user is not None) and not isinstance(opening, str):
        yield "'input' must be one message in a conversation (its turns go in 'turns')"
    for i, turn in enumerate(turns[1:], 1):
        if "input" not in turn:
            yield f"'turns[{i}]' has no 'input' (only the first turn may leave it out: it is then the case's input)"
