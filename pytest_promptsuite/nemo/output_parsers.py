"""NeMo Guardrails' output parsers, with NeMo's names and results, for NeMo prompts.

Under NeMo semantics a prompt's ``output_parser: user_intent`` is NeMo's (``User intent: x``
becomes ``  x``, as NeMo's runtime sees it), asked of the output parser hook as
``nemo.user_intent``. ``is_content_safe`` returns a verdict, not text: the checks see it as JSON,
``{"safe": true, "violated_policies": []}``, so ``{"type": "equals", "path": "$.safe", "value":
false}`` asserts a block.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.nemo.filters import NEMO_PREFIX
from pytest_promptsuite.prompts.pluggable import check_params


__all__ = ["NEMO_OUTPUT_PARSERS", "is_content_safe", "nemo_output_parser"]


def _replace_prefix(text: str, prefix: str, replacement: str) -> str:
    return replacement + text[len(prefix) :].strip() if text.startswith(prefix) else text


def user_intent(text: str) -> str:
    """``User intent: x`` as Colang's ``  x``."""
    return _replace_prefix(text.strip(), "User intent: ", "  ")


def bot_intent(text: str) -> str:
    """``Bot intent: x`` as Colang's ``bot x``."""
    return _replace_prefix(text.strip(), "Bot intent: ", "bot ")


def bot_message(text: str) -> str:
    """``Bot message: "x"`` as Colang's ``  "x"``."""
    return _replace_prefix(text.strip(), "Bot message: ", "  ")


_VERBOSE = (("User message: ", "user "), ("Bot message: ", "  "), ("User intent: ", "  "), ("Bot intent: ", "bot "))


def verbose_v1(text: str) -> str:
    """Lines written with the ``verbose_v1`` filter's prefixes back to Colang (any case of prefix)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        line = line.strip()
        for prefix, replacement in _VERBOSE:
            line = _replace_prefix(line, prefix, replacement)
            line = _replace_prefix(line, prefix.lower(), replacement)
        lines[i] = line
    return "\n".join(lines)


def content_safety(text: str) -> tuple[bool, list[str]]:
    """NeMo's verdict on a safety check's answer: (safe, violated policies). The first two words
    decide: ``safe`` or ``no`` is safe; ``unsafe`` (with the policies after it) or ``yes`` is not;
    anything else is unsafe."""
    words = re.sub(r"\W+", " ", text.lower().strip())
    first = words.split(" ")[:2]
    if "safe" in first:
        return True, []
    if "unsafe" in first:
        return False, words.split("unsafe")[1].strip().split(" ")
    if "yes" in first:
        return False, []
    return ("no" in first), []


def is_content_safe(text: str) -> str:
    """NeMo's ``is_content_safe`` verdict as JSON: ``{"safe": ..., "violated_policies": [...]}``."""
    safe, policies = content_safety(text)
    return encode({"safe": safe, "violated_policies": policies})


NEMO_OUTPUT_PARSERS: dict[str, Callable[[str], str]] = {
    "user_intent": user_intent,
    "bot_intent": bot_intent,
    "bot_message": bot_message,
    "verbose_v1": verbose_v1,
    "is_content_safe": is_content_safe,
}


def nemo_output_parser(name: str, params: dict[str, Any]) -> Callable[[str], str] | None:
    """NeMo's output parser for ``nemo.NAME`` (None for any other name); they take no params."""
    if not name.startswith(NEMO_PREFIX) or name[len(NEMO_PREFIX) :] not in NEMO_OUTPUT_PARSERS:
        return None
    check_params("output parser", name[len(NEMO_PREFIX) :], params, ())
    return NEMO_OUTPUT_PARSERS[name[len(NEMO_PREFIX) :]]
