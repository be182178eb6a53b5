"""promptfoo's providers as the suite's models: ``echo`` and ``openai:`` ones with their settings, tools and
``prompts:`` filters, read from the config or from a file."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pytest_promptsuite.dialects.promptfoo.config_file import ConfigFile
from pytest_promptsuite.dialects.promptfoo.prompt_forms import ImportedPrompt
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.yamlio import load_yaml
from pytest_promptsuite.safety.scrub import register


@dataclass
class Provider:
    """A provider as the suite runs it: its label, ``[model]`` keys, ``prompts:`` filter, the
    ``[template]`` keys of its variants (the tools it offers), and the ``{id, label}`` a prompt
    function is given."""

    label: str
    model: dict[str, Any]
    allowed: Any = None
    template: dict[str, Any] = field(default_factory=dict)
    who: dict[str, str] = field(default_factory=lambda: {"id": "echo", "label": ""})


def _ident(raw: Any, where: str) -> tuple[str, dict[str, Any]]:
    """Return a provider's id and its options: an id string, ``{id, label, config}`` or ``{ID: {config}}``."""
    options: dict[str, Any] = {}
    if isinstance(raw, dict) and "id" not in raw and len(raw) == 1:  # {"openai:gpt-4o": {config: ...}}
        ((ident, inner),) = raw.items()
        options = inner if isinstance(inner, dict) else {}
    elif isinstance(raw, dict):
        ident, options = raw.get("id"), raw
    else:
        ident = raw
    if not isinstance(ident, str):
        raise ConfigError(f"{where}: a provider is an id string or {{id, label, config}}")
    return ident, options


def _provider(config: ConfigFile, raw: Any, where: str) -> Provider | None:
    """Convert a provider; None (listed) when we have no such model."""
    ident, options = _ident(raw, where)
    label = str(options.get("label") or ident)
    settings: dict[str, Any] = options["config"] if isinstance(options.get("config"), dict) else {}
    if isinstance(settings.get("apiKey"), str):  # never carried over, and scrubbed wherever it shows
        register(settings["apiKey"])
    extra = sorted(set(map(str, options)) - {"id", "label", "config", "prompts"})
    if extra:
        config.notes.append(f"{where}: provider {ident} keys not carried over: {', '.join(extra)}")
    allowed = options.get("prompts")
    who = {"id": ident, "label": str(options.get("label") or "")}  # loadApiProvider's label: "" when none
    if ident == "echo":
        return Provider(label, {"spec": "echo"}, allowed, who=who)
    if ident.startswith("openai:"):
        table, template = _openai_table(ident, settings), _tools(config, settings, where)
        dropped = sorted(set(settings) - set(_PARAMS) - {"apiBaseUrl", "tools", "functions", "tool_choice"})
        if dropped:
            config.notes.append(f"{where}: provider {ident} settings not carried over: {', '.join(dropped)}")
        return Provider(label, table, allowed, template, who)
    config.notes.append(f"{where}: provider {ident} is not supported (supported: echo, openai:...)")
    return None


def _openai_table(ident: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Return the ``[model]`` table of an ``openai:`` provider (``openai:[chat:|completion:]MODEL``)."""
    parts = ident.split(":")
    typed = parts[1] in ("chat", "completion") and len(parts) > 2
    kind, name = (parts[1], ":".join(parts[2:])) if typed else ("chat", ":".join(parts[1:]))
    endpoint = "completions" if kind == "completion" else "chat"
    table: dict[str, Any] = {"spec": f"openai:{name}", "endpoint": endpoint}
    params = {k: v for k, v in settings.items() if k in _PARAMS}
    if params:
        table["params"] = params
    if isinstance(settings.get("apiBaseUrl"), str):
        table["base_url"] = settings["apiBaseUrl"]
    return table


#: The provider (or prompt) settings carried over as request params of an ``openai:`` model;
#: ``response_format`` sent as written, as promptfoo sends it (not checked).
_PARAMS = ("temperature", "max_tokens", "top_p", "seed", "stop", "response_format")


def _tools(config: ConfigFile, settings: dict[str, Any], where: str) -> dict[str, Any]:
    """Return the ``[template]`` keys of an OpenAI provider's ``tools`` (a list, or a ``file://`` JSON or
    YAML file, as promptfoo loads it), its legacy ``functions`` (offered as function tools) and
    ``tool_choice``: the checks of tool calls read them, as promptfoo's read the provider's."""
    keys: dict[str, Any] = {}
    tools = [tool for key in ("tools", "functions") for tool in _tool_list(config, settings, key, where)]
    if tools:
        keys["tools"] = tools
    if settings.get("functions") is not None:
        config.notes.append(f"{where}: the provider's functions are offered as tools (OpenAI's tools API)")
    if settings.get("tool_choice") is not None:
        keys["tool_choice"] = settings["tool_choice"]
    return keys


def _tool_list(config: ConfigFile, settings: dict[str, Any], key: str, where: str) -> list[Any]:
    """Return a provider's ``tools`` (or ``functions``, as function tools): a list, or a ``file://`` file's."""
    value = settings.get(key)
    if isinstance(value, str) and value.startswith("file://"):
        relative = value[len("file://") :]
        value = load_yaml(config.read_text(relative, where), str(config.root / relative), core=True)[0]
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ConfigError(f"{where}: the provider's {key} is a list of {key} (objects)")
    return value if key == "tools" else [{"type": "function", "function": f} for f in value]


def with_prompt_config(config: ConfigFile, model: dict[str, Any], prompt: ImportedPrompt) -> dict[str, Any]:
    """Return a provider's ``[model]`` table with ``prompt``'s own ``config`` over its params (promptfoo merges
    the prompt's config over the provider's); what cannot be carried is listed. ``echo`` reads none of it."""
    if not prompt.config or not str(model.get("spec", "")).startswith("openai:"):
        return model
    carried = {k: v for k, v in prompt.config.items() if k in _PARAMS}
    dropped = sorted(set(map(str, prompt.config)) - set(carried))
    if dropped:
        config.notes.append(f"prompt {prompt.label}: config not carried over: {', '.join(dropped)}")
    return {**model, "params": {**model.get("params", {}), **carried}} if carried else model


def config_providers(config: ConfigFile) -> list[Provider]:
    """Read the config's ``providers`` (or ``targets``): each written twice alike once, as promptfoo runs them;
    echo when none is supported."""
    key = "targets" if "targets" in config.data else "providers"  # promptfoo's alias
    if "targets" in config.data and "providers" in config.data:
        raise ConfigError(f"{config.where('targets')}: a config has targets or providers, not both")
    raw = config.data.get(key)
    items = raw if isinstance(raw, list) else [raw] if raw is not None else []
    found = []
    for i, item in _written_once(items):
        where = config.where(key, i) if isinstance(raw, list) else config.where(key)
        found += [made for one in _provider_file(config, item, where) if (made := _provider(config, one, where))]
    if not found:
        config.notes.append("no supported provider: the suite uses the echo model")
        found = [Provider("echo", {"spec": "echo"})]  # promptfoo's echo: id "echo", label ""
    return found


def _written_once(items: list[Any]) -> Iterator[tuple[int, Any]]:
    """Yield each item with its index, one written twice alike once: promptfoo runs such a provider once
    (its providerDedupeKey)."""
    seen: set[str] = set()
    for i, item in enumerate(items):
        written = encode(item, compact=True, scrub=False)
        if written not in seen:
            seen.add(written)
            yield i, item


def _provider_file(config: ConfigFile, item: Any, where: str) -> list[Any]:
    """Read the providers of a ``file://x.yaml`` (``.yml``, ``.json``) reference as promptfoo's
    ``loadProvidersFromFile`` does: one provider, or a list of them, each with an ``id``; any other item as it is."""
    if not (isinstance(item, str) and item.startswith("file://") and item.endswith((".yaml", ".yml", ".json"))):
        return [item]
    relative = item[len("file://") :]
    value = load_yaml(config.read_text(relative, where), str(config.root / relative), core=True)[0]
    providers = value if isinstance(value, list) else [value]
    for provider in providers:
        if not isinstance(provider, dict) or not isinstance(provider.get("id"), str):
            raise ConfigError(f"{config.root / relative}: each provider in {relative} is a mapping with an 'id'")
    return providers
