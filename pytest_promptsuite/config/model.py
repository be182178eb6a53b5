"""Stage 1 (continued): the ``[model]`` table of a suite config, a variant's override of it, and
what a model's base URL may be. :mod:`.suite` re-exports these with the rest of the config."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Annotated
from typing import Any
from typing import Literal
from typing import Union
from urllib.parse import urlsplit

from pytest_promptsuite.config.tables import Range


__all__ = ["ConfigTable", "ModelConfig", "ModelOverride", "Prices", "base_url_problem"]


@dataclass(frozen=True)
class ConfigTable:
    """A table of the suite config: frozen; :func:`.tables.fill` makes one from a file's table
    (unknown keys, wrong types, ``nan`` and ``inf`` refused)."""


@dataclass(frozen=True)
class Prices(ConfigTable):
    """``[model] prices``: USD per million tokens, the one place a run's prices live (the reports'
    cost figures, a ``cost`` check without prices of its own, a budget)."""

    prompt: Annotated[float, Range(ge=0)]
    completion: Annotated[float, Range(ge=0)]

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call's token counts; None when either count is unknown."""
        if prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


@dataclass(frozen=True)
class ModelConfig(ConfigTable):
    """A model: its spec and how to reach it. ``api_key_env`` names a variable, never a key."""

    spec: str = "fake"
    base_url: Union[str, None] = None
    api_key_env: str = "OPENAI_API_KEY"
    endpoint: Literal["chat", "completions"] = "chat"
    meta_template: Union[str, dict[str, Any], None] = None
    params: dict[str, Any] = field(default_factory=dict)
    batch: bool = False
    budget_usd: Union[Annotated[float, Range(ge=0)], None] = None
    concurrency: Union[Annotated[int, Range(ge=1, le=1024)], None] = None
    timeout_s: Annotated[float, Range(gt=0, le=86400)] = 60.0
    max_retries: Annotated[int, Range(ge=0, le=100)] = 3
    prices: Union[Prices, None] = None

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call at this model's ``prices``; None without prices or token counts."""
        return None if self.prices is None else self.prices.cost(prompt_tokens, completion_tokens)


def base_url_problem(url: str) -> str | None:
    """What is wrong with an endpoint's base URL (None: nothing). Credentials in it are refused:
    httpx would silently send ``user:password@`` as Basic auth in place of the bearer key."""
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        return "holds whitespace or a control character"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if parts.username is not None or parts.password is not None:
        return (
            "carries 'user:password@', which httpx would send as Basic auth in place of the API "
            "key; drop it and put the key in the variable api_key_env names"
        )
    try:
        parts.port  # noqa: B018 (reading it checks it)
    except ValueError:
        return "has a port that is not a number from 0 to 65535"
    if not parts.hostname:
        return "has no host"
    return None


@dataclass(frozen=True)
class ModelOverride(ConfigTable):
    """``[variants.NAME.model]``: the keys of ``[model]`` a prompt variant changes (the rest
    stay), so two models can be compared in one run under the same rule."""

    spec: Union[str, None] = None
    base_url: Union[str, None] = None
    api_key_env: Union[str, None] = None
    endpoint: Union[Literal["chat", "completions"], None] = None
    meta_template: Union[str, dict[str, Any], None] = None
    params: Union[dict[str, Any], None] = None
    concurrency: Union[Annotated[int, Range(ge=1)], None] = None
    timeout_s: Union[Annotated[float, Range(gt=0)], None] = None
    max_retries: Union[Annotated[int, Range(ge=0)], None] = None
    prices: Union[Prices, None] = None
