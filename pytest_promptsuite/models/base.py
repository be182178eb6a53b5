"""What goes into a model and what comes out: ``ModelRequest``, ``Response``, ``Usage``, ``Model``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol
from typing import Union
from typing import runtime_checkable


__all__ = [
    "Message",
    "Model",
    "ModelRequest",
    "Prompt",
    "Response",
    "SyncModel",
    "Usage",
    "is_sync",
    "prompt_hash",
    "prompt_text",
]

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


def prompt_hash(prompt: Prompt) -> str:
    """A short, stable hash of exactly what was sent, so a diff can tell prompt changes apart."""
    data = json.dumps(prompt, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Usage:
    """Token counts as the endpoint reported them (None where it did not)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True)
class ModelRequest:
    """One call: the prompt, the generation params that change output, and which repeat it is."""

    prompt: Prompt
    params: Mapping[str, Any] = field(default_factory=dict)
    repeat: int = 0
    #: For messages only ("case refund-001"); never part of a cache key.
    case_id: str = ""


@dataclass(frozen=True)
class Response:
    """What a model answered. ``latency_ms`` is None for a cache hit and for the fake model."""

    text: str
    finish_reason: str | None = None
    usage: Usage | None = None
    latency_ms: float | None = None
    cached: bool = False


@runtime_checkable
class Model(Protocol):
    """A model: one async method. Implementations are the fake model and the HTTP client."""

    #: The spec the model was made from, e.g. ``fake`` or ``openai:qwen2.5-7b``.
    spec: str

    async def generate(self, request: ModelRequest) -> Response:
        """Answer one request or raise :class:`~pytest_promptsuite.errors.ModelError`."""
        ...


@runtime_checkable
class SyncModel(Model, Protocol):
    """A model that answers without I/O can be called inline, without the event loop."""

    def generate_sync(self, request: ModelRequest) -> Response: ...


def is_sync(model: object) -> bool:
    """Whether ``model`` answers without I/O (:class:`SyncModel`), so it is called inline.

    A plain attribute test: ``isinstance`` against a runtime-checkable Protocol inspects every
    member on each call, which is too slow for the per-case path.
    """
    return callable(getattr(model, "generate_sync", None))
