"""NeMo Guardrails' Jinja filters with NeMo's names and input shapes: event histories
(``history | colang``) and Colang history text (``sample_conversation | to_messages``)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from pytest_promptsuite.dialects.nemo.colang import check_events
from pytest_promptsuite.dialects.nemo.colang import colang_history
from pytest_promptsuite.dialects.nemo.colang import remove_identifiers
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.core import Message
from pytest_promptsuite.prompts.files.history_filters import colang_first_turns
from pytest_promptsuite.prompts.files.history_filters import colang_last_turns


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TemplateError(
            f"NeMo filter {name!r} expects Colang history text (e.g. 'history | colang' or "
            f"'sample_conversation'), got {type(value).__name__}"
        )
    return value


def colang(events: Any) -> str:
    """Render an event history as Colang 1.0 text."""
    return colang_history(check_events(events or [], "colang"))


def colang_without_identifiers(events: Any) -> str:
    """Render an event history as Colang text, without 2.x's ``bot intent: ``-style prefixes."""
    return remove_identifiers(colang_history(check_events(events or [], "colang_without_identifiers")))


#: Actions whose results ``co_v2`` leaves out of the history (NeMo's list).
_CO_V2_SKIPPED = frozenset(
    """retrieve_relevant_chunks|create_event|wolfram alpha request|summarize_document|
apify|bing_search|google_search|google_serper|openweather_query|searx_search|serp_api_query|wikipedia_query|
wolframalpha_query|zapier_nla_query|call activefence api|call gcpnlp api|jailbreak_detection_heuristics|
self_check_hallucination|llama_guard_check_input|llama_guard_check_output|alignscore_check_facts|
alignscore request|self_check_facts|self_check_input|self_check_output|AddFlowsAction|RemoveFlowsAction|
CheckForActiveEventMatchAction|CheckFlowDefinedAction|CheckValidFlowExistsAction|generate_bot_message|
GenerateFlowAction|GenerateFlowContinuationAction|GenerateFlowFromInstructionsAction|
GenerateFlowFromNameAction|generate_intent_steps_message|generate_next_step|GenerateUserIntentAction|
GenerateValueAction|GetLastUserMessageAction""".replace("\n", "").split("|")
)
_CO_V2_KEYS = frozenset(("type", "uid", "event_created_at", "source_uid", "flow_name"))


def co_v2(events: Any) -> str:
    """Render an event history as Colang 2 lines: ``  user said "..."``, ``  bot say "..."``, tools."""
    history, seen = "", set()
    for event in check_events(events, "co_v2") if events else ():
        if event.get("uid") is not None and event["uid"] in seen:
            continue
        history += _co_v2_line(event)
        seen.add(event.get("uid"))
    return history


def _co_v2_line(event: Mapping[str, Any]) -> str:
    """Write one event as its Colang 2 line (none for the events the history leaves out)."""
    kind = event["type"]
    if kind == "UtteranceUserActionFinished":
        return f'  user said "{event["final_transcript"]}"\n'
    if kind == "StartUtteranceBotAction":
        return f'  bot say "{event["script"]}"\n'
    if kind == "StartTool":
        args = "".join(f' ${k}="{v}"' for k, v in event.items() if k not in _CO_V2_KEYS)
        return f"  await {event['flow_name']}{args}\n"
    if kind.endswith("ActionFinished") and event.get("action_name") not in _CO_V2_SKIPPED | {None, ""}:
        return f"  # {event.get('return_value')!s}\n"
    return ""


def _bot_line(line: str, after_user: bool) -> str:
    if after_user:
        return "User intent: " + line.strip()
    if line.startswith("user "):
        return "User intent: " + line[5:].strip()
    if line.startswith("bot "):
        return "Bot intent: " + line[4:].strip()
    if line.startswith('  "'):
        return "Bot message: " + line[2:].strip()
    return line


def _previous_line(lines: list[str], i: int) -> str:
    i -= 1
    while i > 0 and lines[i].strip().startswith("#"):
        i -= 1
    return lines[i]


def _bot_text(lines: list[str], i: int, skip_comments: bool) -> str:
    """Return line ``i`` as a line of a bot message (``skip_comments``: a comment after a user line stays one)."""
    line = lines[i]
    if not skip_comments:
        return _bot_line(line, i > 0 and lines[i - 1].startswith('user "'))
    after_user = i > 0 and _previous_line(lines, i).startswith('user "')
    return line if after_user and line.strip().startswith("#") else _bot_line(line, after_user)


def _colang_messages(text: str, *, skip_comments: bool) -> list[Message]:
    """Split Colang text by NeMo's ``to_messages`` heuristic: ``user "x"`` lines are user messages, the lines after
    them (intents, bot lines) assistant messages; a blank line closes a bot message."""
    messages: list[Message] = []
    lines = text.split("\n")
    bot: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith('user "') or not line.strip():
            if bot:
                messages.append({"type": "assistant", "content": "\n".join(bot)})
                bot = []
            if line.strip():
                messages.append({"type": "user", "content": line[6:-1]})
            continue
        bot.append(_bot_text(lines, i, skip_comments))
    if bot:
        messages.append({"type": "bot", "content": "\n".join(bot)})
    return messages


def to_messages(colang_history: Any) -> list[Message]:
    """Turn Colang history text into chat messages (``type`` user / assistant / bot)."""
    return _colang_messages(_text(colang_history, "to_messages"), skip_comments=False)


def to_messages_nemollm(colang_history: Any) -> str:
    """Turn Colang history text into NeMo LLM's ``<extra_id_1>User`` / ``<extra_id_1>Assistant`` chat."""
    out = ""
    for m in _colang_messages(_text(colang_history, "to_messages_nemollm"), skip_comments=True):
        speaker = "User" if m["type"] == "user" else "Assistant"
        out += f"<extra_id_1>{speaker}\n{m['content']}\n"
    return out


def to_messages_v2(colang_history: Any) -> list[Message]:
    """Turn Colang 2 history text (``user action:`` / ``user intent:`` / ``bot ...`` lines) as messages."""
    messages: list[Message] = []
    user: list[str] = []
    bot: list[str] = []
    for line in _text(colang_history, "to_messages_v2").split("\n"):
        if line.startswith("user action:"):
            _close(messages, bot, "assistant")
            user.append(line)
        elif line.startswith("user intent:") or line.startswith("bot"):
            _close(messages, user, "user")
            bot.append(line)
        elif line.strip():
            (user if user else bot if bot else []).append(line)
    if user:
        _close(messages, user, "user")
    else:
        _close(messages, bot, "assistant")
    return messages


def _close(messages: list[Message], lines: list[str], kind: str) -> None:
    """Close the message being gathered in ``lines`` (if any) as a message of ``kind``; ``lines`` empties."""
    if lines:
        messages.append({"type": kind, "content": "\n".join(lines)})
        lines.clear()


def to_intent_messages(colang_history: Any) -> list[Message]:
    """Turn Colang history text into intent-only messages (``User intent:`` / ``Bot intent:``)."""
    messages: list[Message] = []
    lines = _text(colang_history, "to_intent_messages").split("\n")
    for i, line in enumerate(lines):
        if line.startswith('user "'):
            continue
        if i > 0 and lines[i - 1].startswith('user "'):
            messages.append({"type": "user", "content": "User intent: " + line.strip()})
        elif line.startswith("user "):
            messages.append({"type": "user", "content": "User intent: " + line[5:].strip()})
        elif line.startswith("bot "):
            messages.append({"type": "assistant", "content": "Bot intent: " + line[4:].strip()})
    return messages


def to_intent_messages_2(colang_history: Any) -> list[Message]:
    """Turn Colang history text into user messages, bot intents and bot messages (no user intents)."""
    messages: list[Message] = []
    lines = _text(colang_history, "to_intent_messages_2").split("\n")
    for i, line in enumerate(lines):
        if line.startswith('user "'):
            messages.append({"type": "user", "content": line[6:-1]})
        elif i > 0 and lines[i - 1].startswith('user "'):
            continue
        elif line.startswith("bot "):
            messages.append({"type": "assistant", "content": "Bot intent: " + line[4:].strip()})
        elif line.startswith('  "'):
            messages.append({"type": "assistant", "content": "Bot message: " + line[2:].strip()})
    return messages


def verbose_v1(colang_history: Any) -> str:
    """Spell Colang history text out: ``User message: "..."``, ``User intent: ...``, ..."""
    lines = _text(colang_history, "verbose_v1").split("\n")
    for i, line in enumerate(lines):
        if line.startswith('user "'):
            lines[i] = 'User message: "' + line[6:]
        elif line.startswith("  ") and i > 0 and lines[i - 1].startswith("User message: "):
            lines[i] = "User intent: " + line.strip()
        elif line.startswith("user "):
            lines[i] = "User intent: " + line[5:].strip()
        elif line.startswith("bot "):
            lines[i] = "Bot intent: " + line[4:]
        elif line.startswith('  "'):
            lines[i] = "Bot message: " + line[2:]
    return "\n".join(lines)


def _utterances(events: Any, name: str, user: str, bot: str) -> list[str]:
    out = []
    for event in check_events(events, name):
        if event["type"] == "UserMessage":
            out.append(user + str(event["text"]))
        elif event["type"] == "StartUtteranceBotAction":
            out.append(bot + str(event["script"]))
    return out


def to_chat_messages(events: Any) -> list[Message]:
    """Turn an event history's user and bot utterances into chat messages."""
    messages: list[Message] = []
    for event in check_events(events, "to_chat_messages"):
        if event["type"] == "UserMessage":
            messages.append({"type": "user", "content": event["text"]})
        elif event["type"] == "StartUtteranceBotAction":
            messages.append({"type": "assistant", "content": event["script"]})
    return messages


def user_assistant_sequence(events: Any) -> str:
    """Render an event history as ``User: ...`` / ``Assistant: ...`` lines."""
    return "\n".join(_utterances(events, "user_assistant_sequence", "User: ", "Assistant: "))


def user_assistant_sequence_nemollm(events: Any) -> str:
    """Render an event history as NeMo LLM's ``<extra_id_1>User`` / ``<extra_id_1>Assistant`` turns."""
    return "\n".join(
        _utterances(events, "user_assistant_sequence_nemollm", "<extra_id_1>User\n", "<extra_id_1>Assistant\n")
    )


def remove_text_messages(colang_history: Any) -> str:
    """Strip the user's and the bot's texts from Colang history text (intents only)."""
    text = re.sub(r'user "[^\n]+"\n {2}', "user ", _text(colang_history, "remove_text_messages"))
    text = re.sub(r"^\s*user [^\n]+\n\n", "", text)
    return re.sub(r'bot ([^\n]+)\n {2}"[\s\S]*?"', r"bot \1", text)


def first_turns(colang_history: Any, n: int) -> str:
    """Cut Colang history text after its first ``n`` turns."""
    return colang_first_turns(_text(colang_history, "first_turns"), n)


def last_turns(colang_history: Any, n: int) -> str:
    """Keep the last ``n`` turns of Colang history text."""
    return colang_last_turns(_text(colang_history, "last_turns"), n)


def indent(text: Any, n_spaces: int) -> str:
    """Indent every non-blank line of ``text`` by ``n_spaces`` spaces (the first one too)."""
    return textwrap.indent(_text(text, "indent"), " " * n_spaces)


NEMO_FILTERS: dict[str, Callable[..., Any]] = {
    "colang": colang,
    "co_v2": co_v2,
    "colang_without_identifiers": colang_without_identifiers,
    "remove_text_messages": remove_text_messages,
    "first_turns": first_turns,
    "last_turns": last_turns,
    "indent": indent,
    "user_assistant_sequence": user_assistant_sequence,
    "user_assistant_sequence_nemollm": user_assistant_sequence_nemollm,
    "to_messages": to_messages,
    "to_messages_v2": to_messages_v2,
    "to_intent_messages": to_intent_messages,
    "to_intent_messages_2": to_intent_messages_2,
    "to_chat_messages": to_chat_messages,
    "to_messages_nemollm": to_messages_nemollm,
    "verbose_v1": verbose_v1,
}
