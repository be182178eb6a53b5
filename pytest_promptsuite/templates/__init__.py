"""Stage 2: a case into the prompt that is sent (a string, or chat messages)."""

from __future__ import annotations

from ..cases import PromptCase
from ..models.base import Prompt


__all__ = ["case_prompt"]


def case_prompt(case: PromptCase) -> Prompt:
    """The prompt of a case with no template: its input, or one user message per turn."""
    if isinstance(case.input, str):
        return case.input
    return [{"role": "user", "content": turn} for turn in case.input]
