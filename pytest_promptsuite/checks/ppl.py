"""The check of the ppl mode: the label of lowest perplexity must be the case's ``answer``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_promptsuite.cases.case import PromptCase
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer


if TYPE_CHECKING:
    from pytest_promptsuite.models.scoring import LabelScore


__all__ = ["label_check"]


def label_check(case: PromptCase, predicted: str, scores: Sequence[tuple[str, LabelScore]]) -> CheckResult:
    """Passes when ``predicted`` is ``answer``; the message gives each label's perplexity."""
    table = ", ".join(f"{label}: {score.perplexity:.4g}" for label, score in scores)
    details = {"perplexity": {label: score.perplexity for label, score in scores}, "predicted": predicted}
    if case.answer is None:
        return CheckResult(Layer.CONTENT.value, "ppl-label", False,
                           f"the case has no answer to check the predicted label {predicted!r} against ({table})",
                           details=details)
    passed = predicted == case.answer
    verdict = "is the answer" if passed else f"is not the answer {case.answer!r}"
    return CheckResult(Layer.CONTENT.value, "ppl-label", passed,
                       f"predicted label {predicted!r} (lowest perplexity) {verdict}; perplexity by label: {table}",
                       details=details)
