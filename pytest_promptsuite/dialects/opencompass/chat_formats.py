"""Built-in meta templates for common chat formats, picked by name (``[model] meta_template = "chatml"``);
none writes a BOS token, which completion endpoints add when they tokenize."""

from __future__ import annotations

import copy
from typing import Any

from pytest_promptsuite.errors import TemplateError


def _role(role: str, begin: str, end: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "begin": begin, "end": end, **extra}


_CHATML = {
    "round": [
        _role("HUMAN", "<|im_start|>user\n", "<|im_end|>\n"),
        _role("BOT", "<|im_start|>assistant\n", "<|im_end|>\n", generate=True),
    ],
    "reserved_roles": [_role("SYSTEM", "<|im_start|>system\n", "<|im_end|>\n")],
    "eos_token_id": 151645,
}
_LLAMA3 = {
    "round": [
        _role("HUMAN", "<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>"),
        _role("BOT", "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", generate=True),
    ],
    "reserved_roles": [_role("SYSTEM", "<|start_header_id|>system<|end_header_id|>\n\n", "<|eot_id|>")],
    "eos_token_id": 128009,
}
_LLAMA2 = {
    "round": [_role("HUMAN", "[INST] ", " [/INST]"), _role("BOT", " ", " </s><s>", generate=True)],
    "reserved_roles": [_role("SYSTEM", "<<SYS>>\n", "\n<</SYS>>\n\n")],
    "eos_token_id": 2,
}
_MISTRAL = {  # no system role: a SYSTEM item with fallback_role HUMAN becomes an [INST] turn
    "round": [_role("HUMAN", "[INST] ", " [/INST]"), _role("BOT", "", "</s>", generate=True)],
    "eos_token_id": 2,
}
_GEMMA = {  # no system role either
    "round": [
        _role("HUMAN", "<start_of_turn>user\n", "<end_of_turn>\n"),
        _role("BOT", "<start_of_turn>model\n", "<end_of_turn>\n", generate=True),
    ],
    "eos_token_id": 107,
}
_PHI3 = {
    "round": [_role("HUMAN", "<|user|>\n", "<|end|>\n"), _role("BOT", "<|assistant|>\n", "<|end|>\n", generate=True)],
    "reserved_roles": [_role("SYSTEM", "<|system|>\n", "<|end|>\n")],
    "eos_token_id": 32007,
}
_API = {
    "round": [{"role": "HUMAN", "api_role": "HUMAN"}, {"role": "BOT", "api_role": "BOT", "generate": True}],
    "reserved_roles": [{"role": "SYSTEM", "api_role": "SYSTEM"}],
}
_API_NOSYSTEM = {"round": _API["round"]}

#: Name -> meta template (None: no meta template).
BUILTIN_META_TEMPLATES: dict[str, dict[str, Any] | None] = {
    "chatml": _CHATML,
    "qwen": _CHATML,
    "llama3": _LLAMA3,
    "llama2": _LLAMA2,
    "mistral": _MISTRAL,
    "gemma": _GEMMA,
    "phi3": _PHI3,
    "plain": None,
    "api": _API,
    "api_nosystem": _API_NOSYSTEM,
}
_ALIASES = {
    **{k.replace("_", ""): k for k in BUILTIN_META_TEMPLATES},
    **{"llama31": "llama3", "llama32": "llama3", "qwen2": "qwen", "qwen25": "qwen", "phi": "phi3", "none": "plain"},
}


def builtin_meta(name: str) -> dict[str, Any] | None:
    """Return a copy of the built-in meta template ``name``; an unknown name lists the known ones."""
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    if key not in _ALIASES:
        raise TemplateError(
            f"meta_template = {name!r} is not a built-in meta template "
            f"(built-ins: {', '.join(BUILTIN_META_TEMPLATES)}); or write it as an inline table"
        )
    return copy.deepcopy(BUILTIN_META_TEMPLATES[_ALIASES[key]])


def resolve_meta(value: Any) -> dict[str, Any] | None:
    """Return the meta template of a config value: a built-in name, an inline table, or None."""
    if value is None:
        return None
    if isinstance(value, str):
        return builtin_meta(value)
    if isinstance(value, dict):
        return value
    raise TemplateError(f"meta_template must be a built-in name or a table, got {type(value).__name__}")
