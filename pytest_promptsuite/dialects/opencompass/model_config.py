"""``--model MODEL.py`` of ``promptsuite import opencompass``: an OpenCompass model config as ``[model]`` keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_promptsuite.dialects.opencompass.execute import Ref
from pytest_promptsuite.dialects.opencompass.execute import plain
from pytest_promptsuite.dialects.opencompass.execute import run_config
from pytest_promptsuite.errors import ConfigError


#: Substrings of a model's path or abbr, and the built-in chat format its chat template is.
_CHAT_FORMATS = (
    (("qwen",), "qwen"),
    (("internlm2", "internlm3", "yi-", "yi1.5", "deepseek-v2"), "chatml"),
    (("llama-3", "llama3", "llama_3"), "llama3"),
    (("llama-2", "llama2", "llama_2"), "llama2"),
    (("mistral", "mixtral"), "mistral"),
    (("gemma",), "gemma"),
    (("phi-3", "phi3"), "phi3"),
)
_PASSED = ("temperature", "top_p", "seed", "max_tokens", "presence_penalty", "frequency_penalty")


@dataclass
class ModelImport:
    """The ``[model]`` keys a model config gives, and what was not carried over."""

    table: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _chat_format(model: Mapping[str, Any]) -> str | None:
    text = f"{model.get('path', '')} {model.get('abbr', '')}".lower()
    for needles, name in _CHAT_FORMATS:
        if any(n in text for n in needles):
            return name
    return None


def _params(model: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if isinstance(model.get("max_out_len"), int):
        params["max_tokens"] = model["max_out_len"]
    stops = model.get("stop_words")
    if isinstance(stops, (list, tuple)) and all(isinstance(s, str) for s in stops) and stops:
        params["stop"] = list(stops)
    kwargs = model.get("generation_kwargs")
    if isinstance(kwargs, Mapping):
        params.update(_generation_kwargs(kwargs, notes))
    return params


def _generation_kwargs(kwargs: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """Return the ``generation_kwargs`` a request can send as they are; note the others."""
    params: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in _PASSED and isinstance(value, (int, float, str)) and not isinstance(value, bool):
            params[key] = value
        else:
            notes.append(f"model: generation_kwargs.{key} not carried over")
    return params


def _meta(model: Mapping[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    kind = model.get("type")
    kind_name = kind.name if isinstance(kind, Ref) else str(kind or "")
    meta = model.get("meta_template")
    if isinstance(meta, Mapping):
        return _written_meta(meta, where)
    if "withchattemplate" in kind_name.lower():
        name = _chat_format(model)
        if name is None:
            notes.append(
                f"model: {kind_name} applies the tokenizer's chat template, which matches no built-in chat "
                "format; the suite sends chat messages and the server applies its own template"
            )
            return {"endpoint": "chat"}
        notes.append(f"model: {kind_name}'s chat template imported as the built-in {name!r} format")
        return {"meta_template": name, "endpoint": "completions"}
    notes.append(f"model: {kind_name or 'the model'} has no meta_template; prompts are sent as rendered")
    return {}


def _written_meta(meta: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Return a model's own ``meta_template``, sent to the chat endpoint when every role has an ``api_role``."""
    table = plain(meta, f"{where}: meta_template")
    rounds = table.get("round", [])
    if not isinstance(rounds, list):
        raise ConfigError(f"{where}: meta_template.round: expected a list of roles")
    roles = [r for r in rounds if isinstance(r, Mapping)]
    api = bool(roles) and all("api_role" in r for r in roles)
    return {"meta_template": table, "endpoint": "chat" if api else "completions"}


def import_model(path: Path, *, root: Path | None = None) -> ModelImport:
    """Convert the first model of an OpenCompass model config to ``[model]`` keys."""
    names = run_config(path, root=root)
    models = names.get("models")
    if not isinstance(models, list) or not models or not isinstance(models[0], Mapping):
        raise ConfigError(f"{path}: the model config defines no 'models' list of dicts")
    model = models[0]
    notes: list[str] = []
    if len(models) > 1:
        notes.append(f"model: the first of {len(models)} models ({model.get('abbr', '?')}) was imported")
    table = _meta(model, str(path), notes)
    params = _params(model, notes)
    if params:
        table["params"] = params
    notes.append(
        f"model: spec 'fake' (offline); to run {model.get('path') or model.get('abbr') or 'the model'}, "
        'set [model] spec = "openai:NAME" and base_url'
    )
    return ModelImport(table, notes)
