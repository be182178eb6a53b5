"""Walks one case through the stages: prompt (templates), response (models), verdict (checks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .cases import PromptCase
from .checks import CaseResult
from .checks import evaluate
from .checks import outcome_of
from .errors import ModelError
from .errors import TemplateError
from .models import Model
from .models import ModelRequest
from .models import prompt_hash
from .models.runner import ModelRunner
from .templates import case_prompt


__all__ = ["CasePipeline"]


class CasePipeline:
    """Everything needed to run the cases of one suite config against one model."""

    def __init__(
        self,
        model: Model,
        runner: ModelRunner,
        *,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.runner = runner
        self.params = dict(params or {})

    def run(self, case: PromptCase, *, location: str, variant: str | None = None,
            repeat: int = 0) -> CaseResult:
        """The case's result; a render or model failure is an ``error`` outcome, not a raise."""
        base: dict[str, Any] = {
            "case_id": case.case_id,
            "slice": case.slice,
            "location": location,
            "variant": variant,
            "repeat": repeat,
            "tags": tuple(case.tags),
            "metadata": case.metadata,
        }
        try:
            prompt = case_prompt(case)
        except TemplateError as exc:
            return CaseResult(outcome="error", error=f"render: {exc}", **base)
        base["prompt"] = prompt
        base["prompt_hash"] = prompt_hash(prompt)
        request = ModelRequest(prompt=prompt, params=self.params, repeat=repeat,
                               case_id=case.case_id)
        try:
            response = self.runner.call(self.model, request)
        except ModelError as exc:
            return CaseResult(outcome="error", error=str(exc), **base)
        checks = evaluate(case, response.text)
        outcome = outcome_of(case, checks, error=None)
        return CaseResult(
            outcome=outcome.value,
            output=response.text,
            checks=checks,
            latency_ms=response.latency_ms,
            usage=response.usage.to_dict() if response.usage else None,
            **base,
        )
