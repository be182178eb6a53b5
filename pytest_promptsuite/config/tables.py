"""The config's table types (:class:`ConfigTable`, :class:`Override`), the ``[model]`` table with its prices,
and what a model's base URL may be."""

from __future__ import annotations

import dataclasses
import functools
import inspect
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

from pytest_promptsuite.errors import did_you_mean


if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

T = TypeVar("T", bound="DataclassInstance")


def key(default: Any, text: str, **metadata: Any) -> Any:
    """Declare a config key: its default (a type makes a fresh one each time), description and bounds."""
    about = {"description": text, **metadata}
    if isinstance(default, type):
        return field(default_factory=default, metadata=about)
    return field(default=default, metadata=about)


def _describe(schema: dict[str, Any], table: type) -> None:
    """Give a table's JSON Schema its docstring as description (pydantic does so itself from 2.13 on)."""
    if table.__doc__:
        schema.setdefault("description", inspect.cleandoc(table.__doc__))


@dataclass(frozen=True)
class ConfigTable:
    """A table of the suite config, validated strictly by :mod:`.schema` (no string for a number, no unknown key)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {
        "extra": "forbid",
        "strict": True,
        "allow_inf_nan": False,
        "json_schema_extra": _describe,
    }


class Override(Mapping[str, Any], Generic[T]):
    """The keys of a ``T`` table that a file sets, laid over a whole ``T``; validated as ``T``, every field optional."""

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
        """Return ``base`` with this table's keys in place of its own."""
        return dataclasses.replace(base, **self._keys)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        (table,) = typing.get_args(source)

        def keep_set(keys: Any) -> Override[Any]:
            return cls(
                {f.name: getattr(keys, f.name) for f in dataclasses.fields(keys) if getattr(keys, f.name) is not None}
            )

        return core_schema.no_info_after_validator_function(keep_set, handler.generate_schema(cls.table(table)))

    @staticmethod
    @functools.cache
    def table(table: type[DataclassInstance]) -> type[ConfigTable]:
        """Return ``table`` with every field optional, less those marked ``override=False``: an override's table."""
        hints = typing.get_type_hints(table, include_extras=True)
        fields = [
            (f.name, hints[f.name] | None, field(default=None, metadata=f.metadata))
            for f in dataclasses.fields(table)
            if f.metadata.get("override", True)
        ]
        namespace = {"__module__": table.__module__, "__doc__": f"The keys of {table.__name__} an override sets."}
        name = f"{table.__name__}Override"
        return dataclasses.make_dataclass(name, fields, bases=(ConfigTable,), frozen=True, namespace=namespace)


class CallCount(int):
    """A number of calls in flight, 1 to 1024, where a field's own bounds cannot reach it (a union with ``"auto"``)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        return core_schema.int_schema(ge=1, le=1024)


@dataclass(frozen=True)
class Prices(ConfigTable):
    """``[model] prices``: USD per million tokens, for the reports' costs, ``cost`` checks and budgets."""

    prompt: float = key(dataclasses.MISSING, "USD per million prompt tokens.", ge=0)
    completion: float = key(dataclasses.MISSING, "USD per million completion tokens.", ge=0)

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """Return the USD of one call's token counts; None when either count is unknown."""
        if prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


@dataclass(frozen=True)
class ModelConfig(ConfigTable):
    """A model: its spec and how to reach it. ``api_key_env`` names a variable, never a key."""

    spec: str = key("fake", "The model: fake, fake:RULES.json, echo or openai:MODEL.")
    base_url: str | None = key(None, "The endpoint of an openai: model (default: OPENAI_BASE_URL).")
    api_key_env: str = key("OPENAI_API_KEY", "The name of the variable that holds the API key, never the key.")
    endpoint: Literal["chat", "completions"] = key(
        "chat", "Which endpoint a text prompt goes to (message prompts always go to chat)."
    )
    meta_template: str | dict[str, Any] | None = key(
        None, "A built-in meta template's name, or an inline meta template."
    )
    params: dict[str, Any] = key(dict, "Request parameters sent with every call (temperature, max_tokens, ...).")
    batch: bool = key(False, "Send the run's calls as one OpenAI Batch job.", override=False)
    budget_usd: float | None = key(
        None, "The most the run may spend on this model, in USD (needs prices).", ge=0, override=False
    )
    concurrency: CallCount | Literal["auto"] | None = key(
        None,
        "Calls in flight at once over the run, or auto: found from the endpoint's 429s and rate-limit headers "
        "(default: auto for an https:// endpoint, else 8; --prompt-concurrency beats it).",
    )
    max_concurrency: int = key(
        64, "The most calls in flight an auto concurrency may reach, over the run.", ge=1, le=1024
    )
    timeout_s: float = key(60.0, "Seconds one call may take.", gt=0, le=86400)
    max_retries: int = key(3, "How often a failed call is tried again.", ge=0, le=100)
    prices: Prices | None = key(None, "USD per million tokens, for the reports' costs, cost checks and the budget.")
    response_format: str | dict[str, Any] | None = key(
        None,
        "Structured output: a JSON Schema (a table), a schema file (x.json) or a pydantic model (module:Class, "
        "listed in [checks] python_modules); sent as response_format json_schema and checked on each answer.",
    )

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """Return the USD of one call at this model's ``prices``; None without prices or token counts."""
        return None if self.prices is None else self.prices.cost(prompt_tokens, completion_tokens)

    def length_hint(self, table: str = "model") -> str | None:
        """Say what to add when an endpoint model's answers have no length bound, else return None.
        Without ``max_tokens`` a local server (llama.cpp, vLLM) may write until its context is full; a meta
        template ends a completion at its turn's end, so only then is ``stop`` not asked for."""
        if not self.spec.startswith("openai:") or "max_tokens" in self.params or "max_completion_tokens" in self.params:
            return None
        if self.endpoint == "completions" and "stop" not in self.params and self.meta_template is None:
            missing, example = "no max_tokens and no stop", 'params = { max_tokens = 512, stop = ["\\n\\n"] }'
        else:
            missing, example = "no max_tokens", "params = { max_tokens = 512 }"
        return (
            f"{self.spec} ({self.endpoint}) runs with {missing}: a local server may generate until its context "
            f"is full, minutes a call, then time out; bound the answers in [{table}]: {example}"
        )


#: The request parameters servers know: OpenAI's chat and completions ones, and the common ones of vLLM,
#: llama.cpp, Ollama and OpenRouter. ``params`` stay free-form; only a near miss of one of these is refused.
KNOWN_PARAMS = frozenset(
    """model messages prompt temperature top_p n stream stream_options stop max_tokens max_completion_tokens
    presence_penalty frequency_penalty logit_bias logprobs top_logprobs user seed response_format tools
    tool_choice parallel_tool_calls reasoning_effort service_tier store metadata modalities audio prediction
    web_search_options verbosity prompt_cache_key safety_identifier echo best_of suffix top_k top_a min_p
    repetition_penalty repeat_penalty repeat_last_n typical_p min_tokens n_predict num_predict num_ctx
    mirostat mirostat_tau mirostat_eta tfs_z cache_prompt grammar json_schema guided_json guided_regex
    guided_choice guided_grammar chat_template_kwargs skip_special_tokens ignore_eos stop_token_ids
    include_stop_str_in_output length_penalty use_beam_search keep_alive think enable_thinking dry_multiplier
    xtc_probability samplers n_probs min_keep penalize_nl dynatemp_range top_n_sigma provider transforms
    reasoning""".split()
)


def param_problem(name: str) -> str | None:
    """Say that a ``params`` key is a likely typo of a request parameter servers know, else return None."""
    hint = "" if name in KNOWN_PARAMS else did_you_mean(name, sorted(KNOWN_PARAMS))
    if not hint:
        return None
    return f"is no request parameter a server knows{hint}: a server ignores or refuses an unknown one"


def base_url_problem(url: str) -> str | None:
    """Say what is wrong with an endpoint's base URL, or return None; ``user:password@`` in it is refused."""
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
