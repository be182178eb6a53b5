"""What the templates stage produces: the ``Prompt`` that is sent, a string or chat messages."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from typing import Union


__all__ = ["Message", "Prompt", "prompt_display", "prompt_hash", "prompt_text"]

#: One chat message with an OpenAI role (``system``, ``user``, ``assistant``, ``tool``).
Message = dict[str, Any]
#: What is sent: a string (completion, or one user message on chat endpoints) or chat messages.
Prompt = Union[str, list[Message]]


def prompt_text(prompt: Prompt) -> str:
    """The prompt as one string: itself, or the messages' text contents joined with newlines."""
    if isinstance(prompt, str):
        return prompt
    parts: list[str] = []
    for message in prompt:
        content = message.get("content", "")
        if isinstance(content, str):
            parts.append(content)
        else:  # content parts (multimodal): only the text parts count
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def prompt_display(prompt: Any) -> str | None:
    """What was sent, as readable text for reports: the string, or ``[role] content`` lines for
    messages (a prompt read back from ``results.jsonl`` may be any JSON value; None stays None)."""
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(
            f"[{m.get('role', '?')}] {m.get('content', '')}" if isinstance(m, dict) else str(m)
            for m in prompt
        )
    return json.dumps(prompt, ensure_ascii=False)


#: What :func:`prompt_hash` hashes: ``json.dumps(prompt, ensure_ascii=False, sort_keys=True,
#: separators=(",", ":"))``, with one encoder (``dumps`` with arguments builds one each call).
_HASHED = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def prompt_hash(prompt: Prompt) -> str:
    """A short, stable hash of exactly what was sent, so a diff can tell prompt changes apart."""
    data = _HASHED.encode(prompt)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:12]
