"""What goes into a model and what comes out: ``ModelRequest``, ``Response``, ``Usage``, ``Model``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol
from typing import TypeGuard
from typing import runtime_checkable

from pytest_promptsuite.models.tool_calls import ToolCall
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.safety.limits import USAGE_TOKENS


@dataclass(frozen=True)
class Usage:
    """Token counts as the endpoint reported them (None where it did not).

    Only a count is kept: a non-negative integer up to :data:`~.limits.USAGE_TOKENS`. Anything else (a bool, a
    negative, a fraction, a huge number, a string) is taken as not reported, and ``unreadable`` names its fields.
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    #: The fields given a value that is no token count (dropped to None); never part of a row.
    unreadable: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        dropped = tuple(name for name in _COUNTS if not _is_count(getattr(self, name)))
        for name in dropped:
            object.__setattr__(self, name, None)
        if dropped:
            object.__setattr__(self, "unreadable", (*self.unreadable, *dropped))

    def to_dict(self) -> dict[str, int | None]:
        """Return the counts as a results row's ``usage``."""
        return {name: getattr(self, name) for name in _COUNTS}


#: The token counts of :class:`Usage`.
_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _is_count(value: object) -> bool:
    """Tell whether ``value`` is None or a token count (an ``int``, not a bool, from 0 to the limit)."""
    if value is None:
        return True
    return type(value) is int and 0 <= value <= USAGE_TOKENS.value


@dataclass(frozen=True)
class ModelRequest:
    """One call: the prompt, the generation params that change output, and which repeat it is."""

    prompt: Prompt
    params: Mapping[str, Any] = field(default_factory=dict)
    repeat: int = 0
    #: For messages only ("case refund-001"); never part of a cache key.
    case_id: str = ""
    #: What else decides the answer (a judge's fingerprint): part of the cache key, never sent.
    salt: str = ""


@dataclass(frozen=True)
class Response:
    """What a model answered. ``latency_ms`` is the call's wall time (None for a cache hit, or a model that
    measures none); ``cost_usd`` is a cost the model reports itself (echo and fake: 0), else None (priced from
    ``usage``)."""

    text: str
    finish_reason: str | None = None
    usage: Usage | None = None
    latency_ms: float | None = None
    cached: bool = False
    cost_usd: float | None = None
    #: The tools the model asked to call (OpenAI's ``message.tool_calls``), beside the text.
    tool_calls: tuple[ToolCall, ...] = ()
    #: The model name the endpoint says answered (OpenAI's ``model``: an alias's dated snapshot), None if it says none.
    model: str | None = None


@runtime_checkable
class Model(Protocol):
    """A model: one async method; ``deterministic = True`` on the class says its answers never vary."""

    #: The spec the model was made from, e.g. ``fake`` or ``openai:qwen2.5-7b``.
    spec: str

    async def generate(self, request: ModelRequest) -> Response:
        """Answer one request or raise :class:`~pytest_promptsuite.errors.ModelError`."""
        ...


@runtime_checkable
class SyncModel(Model, Protocol):
    """A model that answers without I/O can be called inline, without the event loop."""

    def generate_sync(self, request: ModelRequest) -> Response:
        """Answer one request at once, without I/O."""
        ...


def is_sync(model: object) -> TypeGuard[SyncModel]:
    """Tell whether ``model`` answers without I/O (:class:`SyncModel`), so it is called inline."""
    # not isinstance(): a runtime-checkable Protocol inspects every member on each call (the per-case path)
    return callable(getattr(model, "generate_sync", None))
