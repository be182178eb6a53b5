"""The built-in Jinja filters of task prompts and ``jinja`` templates: the turns of a history (a list
of messages, or NeMo's Colang text), message roles and NeMo's ``indent``."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Union

from pytest_promptsuite.errors import TemplateError


#: ``make_filter(name) -> callable | None`` (the ``pytest_promptsuite_make_jinja_filter`` hook).
MakeFilter = Callable[[str], Union[Callable[..., Any], None]]

#: NeMo's message types and the OpenAI role each becomes.
ROLES = {"system": "system", "user": "user", "assistant": "assistant", "bot": "assistant"}


def role_of(message: Mapping[str, Any]) -> str:
    """Give the OpenAI role of a message: its ``role`` (or NeMo's ``type``), ``bot`` as ``assistant``."""
    role = message.get("role", message.get("type"))
    return ROLES.get(str(role), str(role))


def _check_history(value: Any, name: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(m, Mapping) for m in value):
        raise TemplateError(
            f"filter {name!r} expects a history: a list of {{'role', 'content'}} turns, got {type(value).__name__}"
        )
    return list(value)


def split_turns(history: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Group a history into turns: a user message and the messages after it, up to the next user
    message (messages before the first user message form a turn of their own)."""
    turns: list[list[Mapping[str, Any]]] = []
    for message in history:
        if role_of(message) == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _starts_turn(line: str) -> bool:
    return line.startswith('user "') or line.startswith("user action: ")


def colang_first_turns(text: str, n: int) -> str:
    """Cut Colang history text after its first ``n`` turns, as NeMo's ``first_turns`` does: a turn
    starts at a ``user "..."`` line (Colang 1.0) or a ``user action: `` line (2.x)."""
    lines = text.split("\n")
    count = 0
    for i, line in enumerate(lines):
        count += _starts_turn(line)
        if count == n + 1:
            return "\n".join(lines[:i])
    return text


def colang_last_turns(text: str, n: int) -> str:
    """Keep the last ``n`` turns of Colang history text, as NeMo's ``last_turns`` does."""
    lines = text.split("\n")
    count = 0
    i = len(lines) - 1
    while i > 0:
        count += _starts_turn(lines[i])
        if count == n:
            break
        i -= 1
    return "\n".join(lines[i:])


def first_turns(history: Any, n: int) -> Any:
    """Keep the first ``n`` turns of a history (a list of turns, or NeMo's Colang text)."""
    if isinstance(history, str):
        return colang_first_turns(history, n)
    turns = split_turns(_check_history(history, "first_turns"))
    return [m for turn in turns[: max(n, 0)] for m in turn]


def last_turns(history: Any, n: int) -> Any:
    """Keep the last ``n`` turns of a history (a list of turns, or NeMo's Colang text)."""
    if isinstance(history, str):
        return colang_last_turns(history, n)
    turns = split_turns(_check_history(history, "last_turns"))
    return [m for turn in (turns[-n:] if n > 0 else []) for m in turn]


_SPEAKERS = {"user": "User", "assistant": "Assistant", "system": "System"}


def user_assistant_sequence(history: Any) -> str:
    """Render a history as ``User: ...`` / ``Assistant: ...`` lines (NeMo's format)."""
    lines = []
    for message in _check_history(history, "user_assistant_sequence"):
        role = role_of(message)
        lines.append(f"{_SPEAKERS.get(role, role.capitalize())}: {message.get('content', '')}")
    return "\n".join(lines)


def to_messages(history: Any) -> list[dict[str, Any]]:
    """Turn a history into chat messages with OpenAI roles (``bot`` becomes ``assistant``), for a
    ``messages`` entry written as a plain string: ``- "{{ history | to_messages }}"``."""
    return [{"role": role_of(m), "content": m.get("content", "")} for m in _check_history(history, "to_messages")]


def indent(text: Any, n: int = 4) -> str:
    """Indent every non-blank line of ``text`` by ``n`` spaces, the first one included (NeMo's
    ``indent``, not Jinja's, which skips the first line)."""
    return textwrap.indent(str(text), " " * n)


_FILTERS: dict[str, Callable[..., Any]] = {
    "first_turns": first_turns,
    "last_turns": last_turns,
    "user_assistant_sequence": user_assistant_sequence,
    "to_messages": to_messages,
    "indent": indent,
}
#: The names :func:`builtin_filter` answers (``indent`` replaces Jinja's own).
BUILTIN_FILTERS = tuple(_FILTERS)


def builtin_filter(name: str) -> Callable[..., Any] | None:
    """Give our filter ``name``, or None (Jinja's own filters then still apply): the built-in answer
    of ``pytest_promptsuite_make_jinja_filter``."""
    return _FILTERS.get(name)
