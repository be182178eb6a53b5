"""One case through the stages: its prompt (templates), response (models) and verdict (checks).
A case's first request is rendered and hashed once, by :meth:`CasePipeline.prefetch` or by :meth:`CasePipeline.run`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.cases.prompt_case import CaseLocation
from pytest_promptsuite.cases.prompt_case import CaseRef
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.compile_checks import CompiledChecks
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.checks.evaluator import outcome_of
from pytest_promptsuite.checks.fingerprint import fingerprint_of
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.suite import Prices
from pytest_promptsuite.errors import CaseFileError
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import is_sync
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.models.spend import NotIssued
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.models.tool_calls import result_for
from pytest_promptsuite.prompts.case_prompts import CasePrompts
from pytest_promptsuite.prompts.core import Message
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.core import prompt_hash
from pytest_promptsuite.prompts.output_parsers import OutputParserError
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.safety.limits import TOOL_CALLS
from pytest_promptsuite.safety.limits import TOOL_REQUEST


if TYPE_CHECKING:
    from pytest_promptsuite.checks.response_format import ResponseFormat
    from pytest_promptsuite.models.simulated_user import SimulatedUser


#: The ``finish_reason`` of an answer the endpoint cut at ``max_tokens``.
CUT = "length"
#: The ``tool_stop`` of a case sent ``tool_choice = "required"`` whose answer called no tool.
REQUIRED_IGNORED = 'tool_choice "required" was sent and the answer called no tool: the endpoint ignored it'
#: What a failed check of a cut answer adds to its message.
CUT_NOTE = " (the answer was cut at max_tokens: finish_reason 'length'; raise max_tokens if it needs more)"


class ToolLoopLimit(ModelError):
    """A tool loop went past a limit (:data:`.TOOL_CALLS`, :data:`.TOOL_REQUEST`): the case ends as ``error``
    naming it, with ``steps``, the trajectory made so far."""

    def __init__(self, message: str, steps: Sequence[Step]) -> None:
        super().__init__(message)
        self.steps = tuple(steps)


class PlannedCase:
    """One run of one case, as collection planned it: where the case is (read back when it runs), which run
    it is, the item's name, its suite, its compiled checks, and what names and selects the item."""

    __slots__ = ("ref", "key", "name", "suite", "checks", "shown", "slice", "tags")

    def __init__(
        self,
        ref: CaseRef,
        key: CaseKey,
        name: str,
        suite: Path | None,
        checks: CompiledChecks,
        *,
        shown: Path,
        slice: str,
        tags: tuple[str, ...],
    ) -> None:
        self.ref = ref
        self.key = key
        self.name = name
        #: The suite's config file (None: a case file without one).
        self.suite = suite
        self.checks = checks
        #: The case file as the user reads it (relative to the invocation).
        self.shown = shown
        self.slice = slice
        self.tags = tags

    @property
    def case(self) -> PromptCase:
        """The case, read back from its file (a CaseFileError when the file changed since)."""
        return self.ref.read(str(self.shown))

    @property
    def location(self) -> CaseLocation:
        """Where the case is, as the user reads it (``path:line`` relative to the invocation)."""
        return CaseLocation(self.shown, self.ref.line)


@dataclass(frozen=True)
class _Prepared:
    """A case's first request, rendered and hashed once (with the case it was read as)."""

    case: PromptCase
    prompt: Prompt
    prompt_hash: str
    request: ModelRequest


class CasePipeline:
    """What runs the cases of one suite config: its model (and each variant's own), prompts and checks."""

    def __init__(
        self,
        model: Model,
        runner: ModelRunner,
        prompts: CasePrompts,
        *,
        params: Mapping[str, Any] | None = None,
        evaluator: Evaluator | None = None,
        variant_models: Mapping[str, tuple[Model, Mapping[str, Any]]] | None = None,
        prices: Mapping[str, Prices | None] | None = None,
        formats: Mapping[str, ResponseFormat] | None = None,
        user: tuple[Model, Mapping[str, Any]] | None = None,
    ) -> None:
        self.model = model
        #: ``[models.user]``: the model that plays a conversation's simulated user, and its params (None: each
        #: variant's own model plays it).
        self.user = user
        self.runner = runner
        self.params = dict(params or {})
        #: Runs the checks: the suite's ``[[checks]]``, judge, review policy, output transform.
        self.evaluator = evaluator or Evaluator()
        #: Renders cases: the suite's ``[template]`` and the model's meta template.
        self.prompts = prompts
        self._prepared: dict[CaseKey, _Prepared | TemplateError | CaseFileError] = {}
        self._params: dict[str | None, dict[str, Any]] = {}  # each variant's request params
        self._last: tuple[CaseRef, PromptCase] | None = None  # the case read back last
        self._own = {name: (m, dict(p)) for name, (m, p) in (variant_models or {}).items()}
        self._scorers: dict[int, Any] = {}  # the ppl mode: one scoring model per model (one bound)
        #: ``[model] prices`` by variant ("" for the suite's model): a ``cost`` check reads them.
        self.prices = dict(prices or {})
        #: ``[model] response_format`` by variant ("" for the suite's model): every answer is checked against it.
        self.formats = dict(formats or {})

    def model_for(self, variant: str | None) -> tuple[Model, dict[str, Any]]:
        """Return the model a variant's cases are sent to, and its params."""
        return self._own.get(variant or "", (self.model, self.params))

    def simulated_user(self, variant: str | None) -> SimulatedUser:
        """Return the simulated user of a variant's conversations: ``[models.user]`` (else the variant's own
        model) with ``[template] user_prompt`` (else the built-in prompt)."""
        from pytest_promptsuite.models.simulated_user import DEFAULT_USER_PROMPT
        from pytest_promptsuite.models.simulated_user import SimulatedUser

        model, params = self.user if self.user is not None else self.model_for(variant)
        template = self.prompts.tables[variant].user_prompt or DEFAULT_USER_PROMPT
        return SimulatedUser(model, params, template)

    def case_of(self, planned: PlannedCase) -> PromptCase:
        """Read ``planned.case`` back once for the items of one case in a row (variants, repeats, labels)."""
        if self._last is None or self._last[0] is not planned.ref:
            self._last = (planned.ref, planned.case)
        return self._last[1]

    def _request(self, case: PromptCase, prompt: Prompt, key: CaseKey) -> ModelRequest:
        params = self._params.get(key.variant)
        if params is None:  # the same for every case of a variant: merged once
            params = self._params[key.variant] = {
                **self.prompts.default_params(variant=key.variant),
                **self.model_for(key.variant)[1],
                **self.prompts.params(variant=key.variant),
            }
        tools = self.prompts.tool_set(case, variant=key.variant)
        sent = {**params, **tools.params()} if tools.tools else dict(params)
        return ModelRequest(prompt=prompt, params=sent, repeat=key.repeat, case_id=case.case_id)

    def _hash(self, case: PromptCase, prompt: Prompt, variant: str | None) -> str:
        tools = self.prompts.tool_set(case, variant=variant)
        return prompt_hash(prompt, tools.params()) if tools.tools else prompt_hash(prompt)

    def _prepare(
        self, planned: PlannedCase, case: PromptCase | None = None
    ) -> _Prepared | TemplateError | CaseFileError:
        """Render the first request of ``planned``, or return the failure :meth:`run` reports."""
        try:
            case = case or self.case_of(planned)
            prompt = self.prompts.prompt(case, variant=planned.key.variant)
            request = self._request(case, prompt, planned.key)
            hashed = self._hash(case, prompt, planned.key.variant)
        except (TemplateError, CaseFileError) as exc:
            return exc
        except ConfigError as exc:  # the suite's tools (collection reports them first)
            return TemplateError(str(exc))
        return _Prepared(case, prompt, hashed, request)

    def first_call(self, planned: PlannedCase) -> tuple[Model, ModelRequest] | None:
        """Return the case's first request (rendered once, kept for :meth:`run`) and its model; None if it fails."""
        prepared = self._prepared.get(planned.key)
        if prepared is None:
            prepared = self._prepared[planned.key] = self._prepare(planned)
        if not isinstance(prepared, _Prepared):
            return None
        return self.model_for(planned.key.variant)[0], prepared.request

    def prefetch(self, planned: PlannedCase) -> None:
        """Render the case's first request now and start its call, before pytest reaches the case."""
        if planned.key in self._prepared or self._ppl(planned.key.variant):
            return
        call = self.first_call(planned)
        if call is not None:
            self.runner.prefetch(*call, key=planned.key)

    def forget(self) -> None:
        """Drop what was prepared for cases that will not run (``-x``, Ctrl-C, end of run)."""
        self._prepared.clear()

    def run(self, planned: PlannedCase) -> CaseResult:
        """Run the case; a render or model failure is an ``error`` outcome, not a raise."""
        key = planned.key
        prepared = self._prepared.pop(key, None)
        try:  # read back from its file (or as the prefetch read it)
            case = prepared.case if isinstance(prepared, _Prepared) else self.case_of(planned)
        except CaseFileError as exc:  # the file changed since collection: an error naming its line
            return CaseResult(outcome=Outcome.ERROR, error=str(exc), **_base(planned, None))
        base = _base(planned, case)
        if self._ppl(key.variant):
            return self._run_ppl(planned, case, base)
        if not isinstance(prepared, (_Prepared, TemplateError)):  # not prepared (or not read) ahead
            prepared = self._prepare(planned, case)
        if not isinstance(prepared, _Prepared):  # a render error (the case is read)
            return CaseResult(outcome=Outcome.ERROR, error=f"render: {prepared}", **base)
        base["prompt"], base["prompt_hash"] = prepared.prompt, prepared.prompt_hash
        if case.is_conversation:
            return self._conversation(planned, case, prepared, base)
        replies: list[str] = []
        try:
            response, steps, stop = self._converse(case, prepared, key, base, replies)
        except ToolLoopLimit as exc:  # past a limit of the tool loop: the steps made so far kept
            return CaseResult(outcome=Outcome.ERROR, error=str(exc), trajectory=exc.steps, **base)
        except ModelError as exc:  # a call deliberately not issued (budget, batch file): skipped
            outcome = Outcome.SKIPPED if isinstance(exc, NotIssued) else Outcome.ERROR
            return CaseResult(outcome=outcome, error=str(exc), replies=tuple(replies), **base)
        except TemplateError as exc:
            return CaseResult(outcome=Outcome.ERROR, error=f"render: {exc}", replies=tuple(replies), **base)
        except Exception as exc:  # whatever a model (ours or a plugin's) raised: an error row, never lost
            error = f"the model call raised {type(exc).__name__}: {exc}"
            return CaseResult(outcome=Outcome.ERROR, error=error, replies=tuple(replies), **base)
        if isinstance(case.input, list):
            base["replies"] = (*replies, response.text)
        return self._row(case, response, planned, steps, stop, base)

    def _conversation(
        self, planned: PlannedCase, case: PromptCase, prepared: _Prepared, base: dict[str, Any]
    ) -> CaseResult:
        """Run a conversation case (:mod:`.conversation`); a failing turn ends it as ``error``, its transcript kept."""
        from pytest_promptsuite.run.conversation import Conversation

        conversation = Conversation(self, planned, case, base)
        try:
            row = conversation.run(prepared.request)
        except NotIssued as exc:  # a call deliberately not issued (budget, batch file): skipped, as a case is
            row = dataclasses.replace(conversation.row(Response(""), error=str(exc)), outcome=Outcome.SKIPPED)
        except (ModelError, TemplateError) as exc:
            row = conversation.row(Response(""), error=str(exc))
        except Exception as exc:  # whatever a model (ours or a plugin's) raised: an error row, never lost
            row = conversation.row(Response(""), error=f"the model call raised {type(exc).__name__}: {exc}")
        if row.prompt is not None:
            row = dataclasses.replace(row, prompt_hash=self._hash(case, row.prompt, planned.key.variant))
        return row

    def _converse(
        self, case: PromptCase, prepared: _Prepared, key: CaseKey, base: dict[str, Any], replies: list[str]
    ) -> tuple[Response, list[Step], str | None]:
        """Call the model with the prepared request, then each turn of a multi-turn case (each reply may feed the
        next request; the checks see the last reply, the earlier ones go to ``replies``), then the tool loop."""
        model = self.model_for(key.variant)[0]
        response = self.runner.call(model, prepared.request, key=key)
        while (follow := self.prompts.follow_up(case, [*replies, response.text], variant=key.variant)) is not None:
            replies.append(response.text)
            base["prompt"], base["prompt_hash"] = follow, self._hash(case, follow, key.variant)
            response = self.runner.call(model, self._request(case, follow, key))
        request = prepared.request if not replies else self._request(case, base["prompt"], key)
        return self._tool_steps(case, model, request, response, key, base)

    def _row(
        self,
        case: PromptCase,
        response: Response,
        planned: PlannedCase,
        steps: list[Step],
        stop: str | None,
        base: dict[str, Any],
    ) -> CaseResult:
        """Check the last response and return the case's row."""
        checks = self._checks(case, response, planned.checks, planned.key.variant, steps, base["prompt"])
        if response.finish_reason == CUT:
            checks = tuple(_said_cut(check) for check in checks)
        return CaseResult(
            outcome=outcome_of(case, checks, error=None),
            output=response.text,
            checks=checks,
            latency_ms=response.latency_ms,
            cached=response.cached,
            usage=response.usage.to_dict() if response.usage else None,
            tool_calls=response.tool_calls,
            trajectory=tuple(steps) if len(steps) > 1 or any(s.calls for s in steps) else (),
            tool_stop=stop,
            finish_reason=response.finish_reason,
            judge_fingerprint=fingerprint_of(checks),
            **base,
        )

    def _tool_steps(
        self,
        case: PromptCase,
        model: Model,
        request: ModelRequest,
        response: Response,
        key: CaseKey,
        base: dict[str, Any],
    ) -> tuple[Response, list[Step], str | None]:
        """Loop model -> tool calls -> ``tool`` messages with the case's ``tool_results`` -> model, up to
        ``max_steps`` model calls; return the last response, every step, and why the loop stopped early."""
        steps: list[Step] = []
        _within_call_limit(response, steps)
        tools = self.prompts.tool_set(case, variant=key.variant)
        if not response.tool_calls and tools.tool_choice == "required" and tools.tools:
            return response, [Step(response.text)], REQUIRED_IGNORED
        if not response.tool_calls or not case.tool_results:
            return response, [Step(response.text, response.tool_calls)], None
        prompt = request.prompt
        messages: list[Message] = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        while True:
            if not response.tool_calls:
                steps.append(Step(response.text))
                return response, steps, None
            given, stop = _tool_step(case, response, steps, tools.max_steps)
            if stop is not None:
                return response, steps, stop
            messages = _with_results(messages, response, given)
            _within_request_limit(messages, steps)
            base["prompt"], base["prompt_hash"] = messages, self._hash(case, messages, key.variant)
            response = self.runner.call(model, self._request(case, messages, key))
            _within_call_limit(response, steps)

    def _ppl(self, variant: str | None) -> bool:
        try:
            return self.prompts.is_ppl(variant=variant)
        except TemplateError:  # reported when the case renders
            return False

    def _run_ppl(self, planned: PlannedCase, case: PromptCase, base: dict[str, Any]) -> CaseResult:
        """Score each label's prompt and predict the label of lowest perplexity, checked against ``answer``."""
        from pytest_promptsuite.checks.ppl import label_check
        from pytest_promptsuite.models.scoring import LabelScore
        from pytest_promptsuite.models.scoring import ScoringModel
        from pytest_promptsuite.models.scoring import predict_label

        key = planned.key
        try:
            labels = self.prompts.label_prompts(case, variant=key.variant)
        except TemplateError as exc:
            return CaseResult(outcome=Outcome.ERROR, error=f"render: {exc}", **base)
        # every label's prompt counts in the hash; the row shows the predicted label's prompt
        base["prompt"], base["prompt_hash"] = labels[0][1], prompt_hash(encode(labels, scrub=False))
        model, params = self.model_for(key.variant)
        try:
            scorer = self._scorers.get(id(model))
            if scorer is None:
                scorer = self._scorers[id(model)] = ScoringModel(model)
            requests = [
                ModelRequest(prompt=p, params=params, repeat=key.repeat, case_id=case.case_id) for _, p in labels
            ]
            if is_sync(scorer):
                answers = [self.runner.call(scorer, request) for request in requests]
            else:  # every label's call in flight at once, under the runner's bound
                answers = [future.result() for future in [self.runner.submit(scorer, r) for r in requests]]
            scores = [(label, LabelScore.from_text(a.text)) for (label, _), a in zip(labels, answers, strict=True)]
        except ModelError as exc:
            return CaseResult(outcome=Outcome.ERROR, error=str(exc), **base)
        except Exception as exc:  # whatever a plugin's model raised: an error row, never lost
            return CaseResult(outcome=Outcome.ERROR, error=f"scoring raised {type(exc).__name__}: {exc}", **base)
        predicted = predict_label(scores)
        base["prompt"] = dict(labels)[predicted]
        response = Response(text=predicted, finish_reason="stop")
        checks = (label_check(case, predicted, scores), *self._checks(case, response, planned.checks, key.variant))
        return CaseResult(outcome=outcome_of(case, checks, error=None), output=predicted, checks=checks, **base)

    def _checks(
        self,
        case: PromptCase,
        response: Response,
        compiled: CompiledChecks,
        variant: str | None,
        steps: Sequence[Step] = (),
        prompt: Prompt | None = None,
        transcript: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[CheckResult, ...]:
        """Run the case's checks on the output parser's reading of the reply (raw output kept in results).
        A reply the parser cannot read fails the structure layer."""
        prices = self.prices.get(variant or "", self.prices.get(""))
        tools: dict[str, Any] = {
            "trajectory": tuple(steps),
            "tools": self.prompts.tool_set(case, variant=variant),
            "prompt": prompt,
        }
        if transcript:
            tools["transcript"] = tuple(transcript)
        try:
            parsed = self.prompts.parse_output(response.text, variant=variant)
        except Exception as exc:  # OutputParserError, or whatever a plugin's parser raised
            message = f"the output parser raised {type(exc).__name__}: {exc}"
            if isinstance(exc, OutputParserError):
                message = str(exc)
            failure = CheckResult(Layer.STRUCTURE.value, "output_parser", False, message)
            return (failure, *self.evaluator.evaluate(case, response, compiled, prices=prices, **tools))
        if parsed != response.text:
            response = dataclasses.replace(response, text=parsed)
        checked = self.evaluator.evaluate(case, response, compiled, prices=prices, **tools)
        fmt = self.formats.get(variant or "", self.formats.get("")) if self.formats else None
        return checked if fmt is None else (fmt.check(response.text), *checked)


def _base(planned: PlannedCase, case: PromptCase | None) -> dict[str, Any]:
    """Return the fields of a case's row known before it runs (no ``metadata`` when it cannot be read)."""
    key = planned.key
    return {
        "case_id": key.case_id,
        "slice": planned.slice,
        "location": planned.location,
        "variant": key.variant,
        "repeat": key.repeat,
        "tags": planned.tags,
        "metadata": {} if case is None else case.metadata,
    }


def error_row(planned: PlannedCase, error: str) -> CaseResult:
    """Make an ``error`` row for a case whose pipeline broke (an internal error) and so made none."""
    try:
        case: PromptCase | None = planned.case
    except PromptSuiteError:  # the case file changed since collection
        case = None
    return CaseResult(outcome=Outcome.ERROR, error=error, **_base(planned, case))


def _tool_step(
    case: PromptCase, response: Response, steps: list[Step], max_steps: int
) -> tuple[tuple[str, ...], str | None]:
    """Record a step that called tools; return the case's results of its calls, or why the loop stops there (a
    call the case gives no result for, or ``max_steps`` reached)."""
    calls = response.tool_calls
    results = [result_for(case.tool_results, call) for call in calls]
    missing = next((call for call, result in zip(calls, results, strict=True) if result is None), None)
    if missing is not None:
        steps.append(Step(response.text, calls))
        return (), (
            f"step {len(steps)} called {missing.display()}, for which the case gives no tool_results: "
            "the run stopped there"
        )
    given = tuple(result for result in results if result is not None)
    steps.append(Step(response.text, calls, given))
    if len(steps) >= max_steps:
        return given, f"max_steps ({max_steps}) reached while the model still called tools"
    return given, None


def _with_results(messages: list[Message], response: Response, given: tuple[str, ...]) -> list[Message]:
    """Return the conversation with the assistant's tool calls and a ``tool`` message per result."""
    calls = response.tool_calls
    return [
        *messages,
        {"role": "assistant", "content": response.text or None, "tool_calls": [c.to_openai() for c in calls]},
        *({"role": "tool", "tool_call_id": c.id, "content": r} for c, r in zip(calls, given, strict=True)),
    ]


def _within_call_limit(response: Response, steps: list[Step]) -> None:
    """Raise :class:`ToolLoopLimit` when ``response`` calls more tools than :data:`.TOOL_CALLS` allows."""
    count = len(response.tool_calls)
    if count > TOOL_CALLS.value:
        raise ToolLoopLimit(
            f"step {len(steps) + 1}: the answer called {count:,} tools, past {TOOL_CALLS}: "
            "none was answered and the case ends here",
            steps,
        )


def _within_request_limit(messages: list[Message], steps: list[Step]) -> None:
    """Raise :class:`ToolLoopLimit` when the tool loop's next request would be larger than :data:`.TOOL_REQUEST`."""
    size = len(encode(messages, compact=True, scrub=False))
    if size > TOOL_REQUEST.value:
        raise ToolLoopLimit(
            f"step {len(steps)}: the next request, with the tool results, would be {size:,} characters, past "
            f"{TOOL_REQUEST}: it was not sent and the case ends here",
            steps,
        )


def _said_cut(check: CheckResult) -> CheckResult:
    """Return a failed check of an answer cut at ``max_tokens`` with a message that says so (others as they are)."""
    if check.passed or check.skipped:
        return check
    return dataclasses.replace(check, message=check.message + CUT_NOTE)


def required_ignored_hint(rows: Sequence[CaseResult]) -> str | None:
    """Say, once for the run, that ``tool_choice = "required"`` was sent and no answer called a tool (the endpoint
    ignores it); None when no case was sent it, or some answer called a tool."""
    ignored = sum(row.tool_stop == REQUIRED_IGNORED for row in rows)
    if not ignored or any(row.tool_calls or any(step.calls for step in row.trajectory) for row in rows):
        return None
    cases = "1 case" if ignored == 1 else f"{ignored:,} cases"
    return (
        f'hint: tool_choice "required" was sent with {cases} and no answer called a tool: the endpoint ignores '
        "tool_choice or cannot call tools (llama.cpp's server needs --jinja; Ollama needs a model with tool "
        "support), so the tool checks see no calls (a not-trajectory:tool-used check is skipped)"
    )
