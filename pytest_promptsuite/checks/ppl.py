"""The check of the ppl mode: the label of lowest perplexity must be the case's ``answer``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer


if TYPE_CHECKING:
    from pytest_promptsuite.models.scoring import LabelScore


def label_check(case: PromptCase, predicted: str, scores: Sequence[tuple[str, LabelScore]]) -> CheckResult:
    """Pass when ``predicted`` is the case's ``answer``; the message gives each label's perplexity."""
    table = ", ".join(f"{label}: {score.perplexity:.4g}" for label, score in scores)
    details = {"perplexity": {label: score.perplexity for label, score in scores}, "predicted": predicted}
    if case.answer is None:
        message = f"the case has no answer to check the predicted label {predicted!r} against ({table})"
        return CheckResult(Layer.CONTENT.value, "ppl-label", False, message, details=details)
    passed = predicted == case.answer
    relation = "is the answer" if passed else f"is not the answer {case.answer!r}"
    message = f"predicted label {predicted!r} (lowest perplexity) {relation}; perplexity by label: {table}"
    return CheckResult(Layer.CONTENT.value, "ppl-label", passed, message, details=details)
