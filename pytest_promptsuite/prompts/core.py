"""The prompt a case sends (a string or chat messages), as text and as a hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any
from typing import Union


#: One chat message with an OpenAI role (``system``, ``user``, ``assistant``, ``tool``).
Message = dict[str, Any]
#: A string (a completion, or one user message on chat endpoints) or chat messages.
Prompt = Union[str, list[Message]]


def prompt_text(prompt: Prompt) -> str:
    """Return the prompt as one string: itself, or its messages' text joined with newlines."""
    if isinstance(prompt, str):
        return prompt
    parts: list[str] = []
    for message in prompt:
        content = message.get("content", "")
        if isinstance(content, str):
            parts.append(content)
        elif content is None:  # an assistant message that only calls tools
            continue
        else:  # multimodal content parts: only the text parts count
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def prompt_display(prompt: Any) -> str | None:
    """Show a prompt read back from ``results.jsonl`` (any JSON value) as text: the string, or
    ``[role] content`` lines for messages."""
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(
            f"[{m.get('role', '?')}] {m.get('content', '')}" if isinstance(m, dict) else str(m) for m in prompt
        )
    return json.dumps(prompt, ensure_ascii=False)


# One encoder for every case: json.dumps with arguments builds a new one per call (1 µs a case).
_HASHED = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def prompt_hash(prompt: Prompt, tools: Mapping[str, Any] | None = None) -> str:
    """Hash exactly what was sent (12 hex digits), so a diff can tell prompt changes apart: the prompt,
    and the ``tools`` and ``tool_choice`` it offered (a prompt without tools hashes as it always did)."""
    sent: Any = {"prompt": prompt, **tools} if tools else prompt
    return hashlib.sha256(_HASHED.encode(sent).encode("utf-8")).hexdigest()[:12]
