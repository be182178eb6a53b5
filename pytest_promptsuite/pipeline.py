"""Walks one case through the stages: prompt (templates), response (models), verdict (checks)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .cases import CaseLocation
from .cases import PromptCase
from .checks import CaseResult
from .checks import CheckResult
from .checks import CompiledChecks
from .checks import Evaluator
from .checks import Layer
from .checks import Outcome
from .checks import outcome_of
from .errors import ModelError
from .errors import TemplateError
from .models import Model
from .models import ModelRequest
from .models import Prompt
from .models import Response
from .models import prompt_hash
from .models.runner import ModelRunner
from .templates import CasePrompts
from .templates.task_prompts import OutputParserError


__all__ = ["CasePipeline"]


class CasePipeline:
    """Everything needed to run the cases of one suite config against one model."""

    def __init__(
        self,
        model: Model,
        runner: ModelRunner,
        *,
        params: Mapping[str, Any] | None = None,
        evaluator: Evaluator | None = None,
        prompts: CasePrompts | None = None,
    ) -> None:
        self.model = model
        self.runner = runner
        self.params = dict(params or {})
        #: Runs the checks: the suite's ``[[checks]]``, judge, review policy, output transform.
        self.evaluator = evaluator or Evaluator()
        #: Renders cases: the suite's ``[template]`` and the model's meta template.
        self.prompts = prompts or CasePrompts()

    def prompt_for(self, case: PromptCase, *, variant: str | None = None) -> Prompt:
        """What is sent for ``case``: the render step of :meth:`run`, shared with prefetching."""
        return self.prompts.prompt(case, variant=variant)

    def _request(self, case: PromptCase, prompt: Prompt, repeat: int, variant: str | None) -> ModelRequest:
        params = {
            **self.prompts.default_params(variant=variant),
            **self.params,
            **self.prompts.params(variant=variant),
        }
        return ModelRequest(prompt=prompt, params=params, repeat=repeat, case_id=case.case_id)

    def request_for(
        self, case: PromptCase, *, variant: str | None = None, repeat: int = 0
    ) -> ModelRequest | None:
        """The request :meth:`run` will make for ``case`` (None if it does not render), so the
        plugin can start the call before pytest reaches the case."""
        try:
            return self._request(case, self.prompt_for(case, variant=variant), repeat, variant)
        except TemplateError:
            return None

    def run(self, case: PromptCase, *, location: CaseLocation, variant: str | None = None,
            repeat: int = 0, compiled: CompiledChecks | None = None) -> CaseResult:
        """The case's result; a render or model failure is an ``error`` outcome, not a raise.

        ``compiled`` are the case's checks as collection compiled them (else compiled now)."""
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
            prompt = self.prompt_for(case, variant=variant)
        except TemplateError as exc:
            return CaseResult(outcome=Outcome.ERROR, error=f"render: {exc}", **base)
        base["prompt"] = prompt
        base["prompt_hash"] = prompt_hash(prompt)
        request = self._request(case, prompt, repeat, variant)
        replies: list[str] = []
        try:
            response = self.runner.call(self.model, request)
            # a multi-turn case: each reply may feed the next request; the checks see the last reply
            while (follow := self.prompts.follow_up(case, [*replies, response.text],
                                                    variant=variant)) is not None:
                replies.append(response.text)
                base["prompt"], base["prompt_hash"] = follow, prompt_hash(follow)
                response = self.runner.call(self.model, self._request(case, follow, repeat, variant))
        except ModelError as exc:
            return CaseResult(outcome=Outcome.ERROR, error=str(exc), replies=tuple(replies), **base)
        except TemplateError as exc:
            return CaseResult(outcome=Outcome.ERROR, error=f"render: {exc}", replies=tuple(replies), **base)
        if isinstance(case.input, list):
            base["replies"] = (*replies, response.text)
        checks = self._checks(case, response, compiled, variant)
        outcome = outcome_of(case, checks, error=None)
        return CaseResult(
            outcome=outcome,
            output=response.text,
            checks=checks,
            latency_ms=response.latency_ms,
            usage=response.usage.to_dict() if response.usage else None,
            **base,
        )

    def _checks(
        self, case: PromptCase, response: Response, compiled: CompiledChecks | None, variant: str | None
    ) -> tuple[CheckResult, ...]:
        """Every check of the case on what the prompt's output parser (if any) makes of the reply;
        a reply the parser cannot read fails the structure layer (results keep the raw output)."""
        try:
            parsed = self.prompts.parse_output(response.text, variant=variant)
        except OutputParserError as exc:
            failure = CheckResult(Layer.STRUCTURE.value, "output_parser", False, str(exc))
            return (failure, *self.evaluator.evaluate(case, response, compiled))
        if parsed != response.text:
            response = dataclasses.replace(response, text=parsed)
        return self.evaluator.evaluate(case, response, compiled)
