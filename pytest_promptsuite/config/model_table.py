"""The config's table types (:class:`ConfigTable`, :class:`Override`), the ``[model]`` table with its
prices, and what a model's base URL may be."""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import Generic
from typing import Literal
from typing import TypeVar
from urllib.parse import urlsplit


if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

__all__ = ["ConfigTable", "ModelConfig", "Override", "Prices", "about", "base_url_problem"]

T = TypeVar("T", bound="DataclassInstance")


def about(text: str, **metadata: Any) -> dict[str, Any]:
    """A field's metadata: its one-line description (the JSON Schema's) and any other ``metadata``."""
    return {"description": text, **metadata}


@dataclass(frozen=True)
class ConfigTable:
    """A table of the suite config: frozen; validated by :mod:`.schema` as pydantic reads a
    dataclass, strictly (no string for a number, no bool for an int) and with no unknown key."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid", "strict": True, "allow_inf_nan": False}


class Override(Mapping[str, Any], Generic[T]):
    """The keys of a ``T`` table that a file sets (never None: TOML has no null), laid over a whole
    ``T``. Validated as ``T`` with every field optional, so a key has ``T``'s own bounds."""

    def __init__(self, keys: Mapping[str, Any] | None = None) -> None:
        self._keys = dict(keys or {})

    def __getitem__(self, key: str) -> Any:
        return self._keys[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"Override({self._keys!r})"

    def over(self, base: T) -> T:
        """``base`` with this table's keys in place of its own."""
        return dataclasses.replace(base, **self._keys)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        (table,) = typing.get_args(source)
        return core_schema.no_info_after_validator_function(
            lambda keys: cls({f.name: getattr(keys, f.name) for f in dataclasses.fields(keys)
                              if getattr(keys, f.name) is not None}),
            handler.generate_schema(cls.table(table)),
        )

    @staticmethod
    @functools.cache
    def table(table: type[DataclassInstance]) -> type[ConfigTable]:
        """The table an override of ``table`` is validated as: ``table`` with every field optional
        (default None), its bounds and descriptions kept, less the fields whose metadata says
        ``"override": False`` (keys no override sets)."""
        hints = typing.get_type_hints(table, include_extras=True)
        fields = [(f.name, hints[f.name] | None, field(default=None, metadata=f.metadata))
                  for f in dataclasses.fields(table) if f.metadata.get("override", True)]
        doc = f"The keys of {table.__name__} an override sets."
        return dataclasses.make_dataclass(f"{table.__name__}Override", fields, bases=(ConfigTable,), frozen=True,
                                          namespace={"__module__": table.__module__, "__doc__": doc})


@dataclass(frozen=True)
class Prices(ConfigTable):
    """``[model] prices``: USD per million tokens, the one place a run's prices live (the reports'
    cost figures, a ``cost`` check without prices of its own, a budget)."""

    prompt: float = field(metadata=about("USD per million prompt tokens.", ge=0))
    completion: float = field(metadata=about("USD per million completion tokens.", ge=0))

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call's token counts; None when either count is unknown."""
        if prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


@dataclass(frozen=True)
class ModelConfig(ConfigTable):
    """A model: its spec and how to reach it. ``api_key_env`` names a variable, never a key."""

    spec: str = field(default="fake", metadata=about("The model: fake, fake:RULES.json, echo or openai:MODEL."))
    base_url: str | None = field(default=None, metadata=about(
        "The endpoint of an openai: model (default: OPENAI_BASE_URL)."))
    api_key_env: str = field(default="OPENAI_API_KEY", metadata=about(
        "The name of the variable that holds the API key, never the key."))
    endpoint: Literal["chat", "completions"] = field(default="chat", metadata=about(
        "Which endpoint a text prompt goes to (message prompts always go to chat)."))
    meta_template: str | dict[str, Any] | None = field(default=None, metadata=about(
        "A built-in meta template's name, or an inline meta template."))
    params: dict[str, Any] = field(default_factory=dict, metadata=about(
        "Request parameters sent with every call (temperature, max_tokens, ...)."))
    batch: bool = field(default=False, metadata=about("Send the run's calls as one OpenAI Batch job.", override=False))
    budget_usd: float | None = field(default=None, metadata=about(
        "The most the run may spend on this model, in USD (needs prices).", ge=0, override=False))
    concurrency: int | None = field(default=None, metadata=about(
        "Calls in flight at once, over the run (--prompt-concurrency beats it).", ge=1, le=1024))
    timeout_s: float = field(default=60.0, metadata=about("Seconds one call may take.", gt=0, le=86400))
    max_retries: int = field(default=3, metadata=about("How often a failed call is tried again.", ge=0, le=100))
    prices: Prices | None = field(default=None, metadata=about(
        "USD per million tokens, for the reports' costs, cost checks and the budget."))

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
