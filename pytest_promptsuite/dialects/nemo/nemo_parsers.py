"""NeMo Guardrails' output parsers with NeMo's names and results (``User intent: x`` becomes Colang's
``  x``; ``is_content_safe`` gives its verdict as JSON, ``{"safe": true, "violated_policies": []}``)."""

from __future__ import annotations

import re
from collections.abc import Callable

from pytest_promptsuite.formats.jsonio import encode


def _replace_prefix(text: str, prefix: str, replacement: str) -> str:
    return replacement + text[len(prefix) :].strip() if text.startswith(prefix) else text


def user_intent(text: str) -> str:
    """Rewrite ``User intent: x`` as Colang's ``  x``."""
    return _replace_prefix(text.strip(), "User intent: ", "  ")


def bot_intent(text: str) -> str:
    """Rewrite ``Bot intent: x`` as Colang's ``bot x``."""
    return _replace_prefix(text.strip(), "Bot intent: ", "bot ")


def bot_message(text: str) -> str:
    """Rewrite ``Bot message: "x"`` as Colang's ``  "x"``."""
    return _replace_prefix(text.strip(), "Bot message: ", "  ")


_VERBOSE = (("User message: ", "user "), ("Bot message: ", "  "), ("User intent: ", "  "), ("Bot intent: ", "bot "))


def verbose_v1(text: str) -> str:
    """Rewrite lines written with the ``verbose_v1`` filter's prefixes back to Colang (any case of prefix)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        line = line.strip()
        for prefix, replacement in _VERBOSE:
            line = _replace_prefix(line, prefix, replacement)
            line = _replace_prefix(line, prefix.lower(), replacement)
        lines[i] = line
    return "\n".join(lines)


def content_safety(text: str) -> tuple[bool, list[str]]:
    """Judge a safety check's answer as NeMo does: (safe, violated policies). The first two words
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
    """Give NeMo's ``is_content_safe`` verdict as JSON: ``{"safe": ..., "violated_policies": [...]}``."""
    safe, policies = content_safety(text)
    return encode({"safe": safe, "violated_policies": policies})


NEMO_OUTPUT_PARSERS: dict[str, Callable[[str], str]] = {
    "user_intent": user_intent,
    "bot_intent": bot_intent,
    "bot_message": bot_message,
    "verbose_v1": verbose_v1,
    "is_content_safe": is_content_safe,
}
