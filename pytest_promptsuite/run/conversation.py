"""A conversation case through the stages: each user turn (scripted, or written by a simulated user) sent with
the conversation so far, each reply checked by its turn's checks, the transcript kept in the row."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.checks.compile_checks import CompiledChecks
from pytest_promptsuite.checks.evaluator import outcome_of
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.simulated_user import DEFAULT_MAX_TURNS
from pytest_promptsuite.models.simulated_user import ends
from pytest_promptsuite.prompts.core import Message
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.template_row import case_row
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.safety.limits import REGEX_SECONDS
from pytest_promptsuite.safety.user_regex import RegexBudget
from pytest_promptsuite.safety.user_regex import user_regex


if TYPE_CHECKING:
    from pytest_promptsuite.cases.prompt_case import PromptCase
    from pytest_promptsuite.models.model_api import ModelRequest
    from pytest_promptsuite.models.tool_calls import Step
    from pytest_promptsuite.run.pipeline import CasePipeline
    from pytest_promptsuite.run.pipeline import PlannedCase


@dataclass(frozen=True)
class TurnRecord:
    """One turn of a transcript: the user's message, the reply, its tool steps, its checks, tokens and time."""

    turn: int
    user: str
    reply: str
    checks: tuple[CheckResult, ...] = ()
    usage: dict[str, Any] | None = None
    latency_ms: float | None = None
    steps: tuple[Step, ...] = ()
    user_usage: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """Tell whether every gating check of the turn passed."""
        return not any(_fails(check) for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """Return the turn as an entry of a row's ``turns``."""
        entry: dict[str, Any] = {
            "turn": self.turn,
            "user": self.user,
            "reply": self.reply,
            "passed": self.passed,
            "checks": [check.to_dict() for check in self.checks],
            "usage": self.usage,
            "latency_ms": self.latency_ms,
        }
        if self.steps:
            entry["tool_steps"] = [step.to_dict() for step in self.steps]
        if self.user_usage is not None:
            entry["user_usage"] = self.user_usage
        return entry


def _fails(check: CheckResult) -> bool:
    return check.gating and not check.passed and not check.skipped


def as_messages(prompt: Prompt) -> list[Message]:
    """Return a prompt as chat messages (a string prompt: one user message)."""
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)


def next_request(history: Sequence[Message], rendered: Prompt) -> list[Message]:
    """Return the request of a later turn: the conversation so far, then the turn's rendered messages without
    the system messages they start with (the conversation has them from its first turn)."""
    messages = as_messages(rendered)
    start = 0
    while start < len(messages) and messages[start].get("role") == "system":
        start += 1
    return [*history, *messages[start:]]


def turn_checks(case: PromptCase, index: int) -> PromptCase:
    """Return the case as the checks of turn ``index`` (0-based) see it: that turn's ``must_include``,
    ``must_not_include`` and ``assert``, no threshold and no review of its own."""
    turn = case.turns[index] if index < len(case.turns) else {}
    return dataclasses.replace(
        case,
        must_include=list(turn.get("must_include", [])),
        must_not_include=list(turn.get("must_not_include", [])),
        assert_=list(turn.get("assert", [])),
        threshold=None,
        review=False,
    )


def named_turn(check: CheckResult, turn: int) -> CheckResult:
    """Return ``check`` with its message naming the turn (``turn 3: ...``)."""
    details = {**(check.details or {}), "turn": turn}
    return dataclasses.replace(check, message=f"turn {turn}: {check.message}", details=details)


def add_usage(total: dict[str, Any] | None, more: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Return two rows' ``usage`` summed count by count (None stays None where neither reports one)."""
    if more is None:
        return total
    if total is None:
        return dict(more)
    return {key: _sum(total.get(key), more.get(key)) for key in {**total, **more}}


def _sum(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return a if b is None else b
    return a + b


def _latency(total: float | None, more: float | None) -> float | None:
    return total if more is None else round((total or 0.0) + more, 3)


class Conversation:
    """Runs one conversation case with a pipeline: its turns (each prepared like a single-turn case, the
    conversation so far sent before it), the turn checks, the case checks on the last reply."""

    def __init__(self, pipeline: CasePipeline, planned: PlannedCase, case: PromptCase, base: dict[str, Any]) -> None:
        self.pipeline = pipeline
        self.planned = planned
        self.case = case
        self.base = base
        self.key = planned.key
        self.model = pipeline.model_for(self.key.variant)[0]
        self.records: list[TurnRecord] = []
        self.history: list[Message] = []
        #: The tool steps of the last turn sent (the case-level checks see them).
        self.last_steps: tuple[Step, ...] = ()
        #: Which entry of ``turns`` holds the checks of each turn sent (None: a turn without checks).
        self.entries: list[int | None] = []

    @property
    def compiled(self) -> CompiledChecks:
        """The case's compiled checks (its turns' among them)."""
        return self.planned.checks

    def render(self, text: str) -> list[Message]:
        """Render a later turn's message through the case's template and return the request's messages."""
        turn_case = dataclasses.replace(self.case, input=text)
        rendered = self.pipeline.prompts.prompt(turn_case, variant=self.key.variant)
        return next_request(self.history, rendered)

    def send(self, request: ModelRequest, first: bool) -> tuple[Response, list[Step]]:
        """Send one turn's request (the first may have been started ahead), then its tool loop; keep what was
        sent and the reply in the conversation."""
        pipeline = self.pipeline
        response = pipeline.runner.call(self.model, request, key=self.key if first else None)
        self.base["prompt"] = request.prompt
        response, steps, _ = pipeline._tool_steps(self.case, self.model, request, response, self.key, self.base)
        self.history = [*as_messages(self.base["prompt"]), {"role": "assistant", "content": response.text}]
        self.last_steps = tuple(steps)
        return response, steps

    def check_turn(self, index: int, response: Response, steps: Sequence[Step]) -> tuple[CheckResult, ...]:
        """Run turn ``index``'s own checks on its reply, each naming the turn."""
        entry = self.entries[index] if index < len(self.entries) else None
        if entry is None:
            return ()
        entries = self.compiled.turns[entry] if entry < len(self.compiled.turns) else ()
        case = turn_checks(self.case, entry)
        if not (entries or case.must_include or case.must_not_include):
            return ()
        compiled = CompiledChecks(entries)
        prompt = self.base["prompt"]
        checks = self.pipeline._checks(case, response, compiled, self.key.variant, steps, prompt)
        return tuple(named_turn(check, index + 1) for check in checks)

    def record(self, user: str, response: Response, steps: Sequence[Step], user_usage: Any = None) -> None:
        """Check the reply of the turn just sent and add it to the transcript."""
        index = len(self.records)
        usage = response.usage.to_dict() if response.usage else None
        self.records.append(
            TurnRecord(
                index + 1,
                user,
                response.text,
                self.check_turn(index, response, steps),
                usage,
                response.latency_ms,
                tuple(steps) if len(steps) > 1 or any(s.calls for s in steps) else (),
                user_usage,
            )
        )

    def row(self, response: Response, error: str | None = None) -> CaseResult:
        """Return the case's row: the case checks on the last reply, every turn's checks, the transcript."""
        turns = tuple(record.to_dict() for record in self.records)
        usage: dict[str, Any] | None = None
        latency: float | None = None
        for record in self.records:
            usage, latency = add_usage(usage, record.usage), _latency(latency, record.latency_ms)
        base = {**self.base, "replies": tuple(r.reply for r in self.records)}
        if error is not None:
            return CaseResult(outcome=Outcome.ERROR, error=error, turns=turns, usage=usage, latency_ms=latency, **base)
        turn_results = tuple(check for record in self.records for check in record.checks)
        last = self.pipeline._checks(
            self.case, response, self.compiled, self.key.variant, self.last_steps, self.base["prompt"], transcript=turns
        )
        checks = (*turn_results, *last)
        return CaseResult(
            outcome=outcome_of(self.case, checks, error=None),
            output=response.text,
            checks=checks,
            latency_ms=latency,
            cached=all(record.latency_ms is None for record in self.records),
            usage=usage,
            finish_reason=response.finish_reason,
            turns=turns,
            **base,
        )

    def run(self, first: ModelRequest) -> CaseResult:
        """Run the conversation from its ``first`` request: scripted turns, or a simulated user."""
        if self.case.turns:
            return self.run_script(first)
        return self.run_simulated(first)

    def run_script(self, first: ModelRequest) -> CaseResult:
        """Run the scripted turns: the case's input (or ``turns[0]``'s) first, then each turn's ``input``."""
        texts = [turn.get("input", self.case.input) for turn in self.case.turns]
        self.entries = list(range(len(texts)))
        if "input" in self.case.turns[0]:  # the case's input opens, with no checks of its own
            texts.insert(0, self.case.input)
            self.entries.insert(0, None)
        response, steps = self.send(first, True)
        self.record(texts[0], response, steps)
        for text in texts[1:]:
            request = self._request(text)
            response, steps = self.send(request, False)
            self.record(text, response, steps)
        return self.row(response)

    def run_simulated(self, first: ModelRequest) -> CaseResult:
        """Run a simulated user's conversation: the model and the user take turns until the reply matches
        ``stop``, the user writes the end marker, or ``max_turns`` user turns were sent."""
        user = self.case.user or {}
        simulated = self.pipeline.simulated_user(self.key.variant)
        limit = user.get("max_turns") or self.pipeline.prompts.tables[self.key.variant].max_turns or DEFAULT_MAX_TURNS
        system = simulated.system_prompt(user, case_row(self.case))
        text = user.get("first", self.case.input)
        request = first if text == self.case.input else self._request(text)
        user_usage: dict[str, Any] | None = None
        while True:
            response, steps = self.send(request, request is first)
            self.record(text, response, steps, user_usage)
            if len(self.records) >= limit or _stops(user.get("stop"), response.text, self.case.case_id):
                return self.row(response)
            asked = simulated.request(system, self.history, case_id=self.case.case_id, repeat=self.key.repeat)
            answer = self.pipeline.runner.call(simulated.model, asked)
            user_usage = answer.usage.to_dict() if answer.usage else {}
            if ends(answer.text):
                return self.row(response)
            text = answer.text
            request = self._request(text)

    def _request(self, text: str) -> ModelRequest:
        """Return the request of a later turn whose user message is ``text``."""
        return self.pipeline._request(self.case, self.render(text), self.key)


def _stops(stop: str | None, reply: str, case_id: str) -> bool:
    """Tell whether ``reply`` ends a simulated conversation: the case's ``stop`` regex is found in it."""
    if not stop:
        return False
    budget = RegexBudget(REGEX_SECONDS, f"user.stop of case {case_id}")
    return budget.search(user_regex(stop), reply) is not None
