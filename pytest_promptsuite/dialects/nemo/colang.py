"""NeMo Guardrails' event histories (dicts with a ``type``: ``UserMessage``, ``BotIntent``, ...) and
their Colang text: a case's turns as the events NeMo logs, the input shapes of NeMo's filters."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.files.history_filters import role_of


Event = Mapping[str, Any]

#: Event types of a Colang 2.x log: a history holding any of them is 2.x, which dict events
#: never render (NeMo reads 2.x logs from its own event objects only).
COLANG_2_EVENTS = frozenset(
    "StartFlow FinishFlow StopFlow FlowStarted FlowFinished FlowFailed UnhandledEvent BotIntentLog UserIntentLog"
    " BotActionLog UserActionLog".split()
)

_HIDDEN = "<<<This text is hidden because the assistant should not talk about this.>>>"


def check_events(value: Any, name: str) -> list[Event]:
    """Return ``value`` as a list of events, or raise a TemplateError naming the filter ``name``."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(e, Mapping) and "type" in e for e in value):
        raise TemplateError(
            f"NeMo filter {name!r} expects an event history (a list of {{'type', ...}} events, "
            f"e.g. 'history'), got {type(value).__name__}"
        )
    return list(value)


def events_of(row: Mapping[str, Any]) -> list[Event]:
    """Give the events of a row: its ``events`` (given by the case), else its turns as NeMo logs them
    (a user turn: ``UtteranceUserActionFinished`` and ``UserMessage``; an assistant turn:
    ``StartUtteranceBotAction``)."""
    given = row.get("events")
    if given is not None:
        return check_events(given, "events")
    events: list[Event] = []
    for message in row.get("history") or ():
        if role_of(message) == "user":
            text = message.get("content", "")
            events.append({"type": "UtteranceUserActionFinished", "final_transcript": text})
            events.append({"type": "UserMessage", "text": text})
        elif role_of(message) == "assistant":
            events.append({"type": "StartUtteranceBotAction", "script": message.get("content", "")})
    return events


def _last_user_text(events: Sequence[Event]) -> str | None:
    for event in reversed(events):
        if event["type"] == "UserMessage":
            return str(event["text"])
    return None


def _line_of(events: Sequence[Event], idx: int, last_bot_intent: int, include_texts: bool) -> str:
    event = events[idx]
    kind = event["type"]
    if kind == "UserMessage" and include_texts:
        return f'user "{event["text"]}"\n'
    if kind == "UserIntent":
        return f"  {event['intent']}\n" if include_texts else f"user {event['intent']}\n"
    if kind == "BotIntent":
        note = f"# {event['instructions']}\n" if "instructions" in event and idx == last_bot_intent else ""
        return note + f"bot {event['intent']}\n"
    if kind == "StartUtteranceBotAction" and include_texts:
        return f'  "{event["script"]}"\n'
    return _action_line(event, kind)


def _action_line(event: Event, kind: str) -> str:
    """Write the line of an action a flow ran (not a system action's), or of its result."""
    if kind == "StartInternalSystemAction" and not event.get("is_system_action"):
        return f"execute {event['action_name']}\n"
    if kind == "InternalSystemActionFinished" and not event.get("is_system_action"):
        value = str(event["return_value"]).replace("\n", " ")
        return f"# The result was {value}\n"
    return ""


def colang_history(events: Sequence[Event], include_texts: bool = True) -> str:
    """Write NeMo's Colang 1.0 history of ``events`` (``user "..."`` / ``  intent`` / ``bot intent`` /
    ``  "..."`` lines, each ending in a newline); empty for a Colang 2.x log."""
    if not events or any(e["type"] in COLANG_2_EVENTS for e in events):
        return ""
    last_bot_intent = max((i for i, e in enumerate(events) if e["type"] == "BotIntent"), default=-1)
    history = ""
    for idx, event in enumerate(events):
        if event["type"] == "mask_prev_user_message":
            hidden = _last_user_text(events[:idx])
            if hidden is not None:
                head, sep, tail = history.rpartition(hidden)
                history = head + _HIDDEN + tail if sep else history
            continue
        history += _line_of(events, idx, last_bot_intent, include_texts)
    return history


def remove_identifiers(text: str) -> str:
    """Strip Colang 2.x's ``bot intent: `` / ``user action: `` ... prefixes."""
    for prefix in ("bot intent: ", "bot action: ", "user intent: ", "user action: "):
        text = text.replace(prefix, "")
    return text
