"""The metric layer: latency, tokens and cost of the call, a judge model's rubric, your function."""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Mapping
from typing import Any

from pytest_promptsuite.checks.calibration import JudgeGate
from pytest_promptsuite.checks.check_api import NO_JUDGE
from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Judge
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.check_api import json_text
from pytest_promptsuite.checks.check_api import shorten
from pytest_promptsuite.checks.fingerprint import judge_fingerprint
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.config.suite import Prices
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import find_json
from pytest_promptsuite.models.cache import model_identity
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import Usage
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.prompts.files.substitute import substitute
from pytest_promptsuite.safety.deadline import BudgetExceeded
from pytest_promptsuite.safety.deadline import time_budget
from pytest_promptsuite.safety.limits import JSON_SEARCH_SECONDS


class Latency(Check):
    """``latency``: the model call took at most ``threshold`` ms. A cached response (or a model that
    measures none) has no latency: the check says so and is skipped, it does not pass."""

    layer = Layer.METRIC
    reads_output = False

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        response = ctx.response
        if response is None:
            return Verdict.skipped("no model response to time")
        if response.cached:
            return Verdict.skipped("no latency: the response came from the cache (run without the cache to measure it)")
        if response.latency_ms is None:
            return Verdict.skipped("no latency: the model did not measure one")
        return Verdict(
            response.latency_ms <= self.threshold,
            f"latency <= {self.threshold:g} ms",
            f"{response.latency_ms:.0f} ms",
            details={"latency_ms": response.latency_ms},
        )


_TOKEN_FIELDS = ("total", "prompt", "completion")


class Tokens(Check):
    """``tokens``: at most ``threshold`` tokens of ``field`` (``total``, ``prompt``, ``completion``)."""

    layer = Layer.METRIC
    reads_output = False

    def __init__(self, threshold: int, field: str) -> None:
        self.threshold = threshold
        self.field = field

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        usage = ctx.response.usage if ctx.response is not None else None
        count = getattr(usage, f"{self.field}_tokens", None) if usage is not None else None
        if count is None:
            return Verdict.skipped(f"no {self.field} token count reported by the model")
        return Verdict(count <= self.threshold, f"at most {self.threshold} {self.field} tokens", f"{count} tokens")


class Cost(Check):
    """``cost``: at most ``threshold`` USD for the call, its token usage priced at ``prices`` (USD per
    1M prompt and completion tokens), else at the answering model's ``[model] prices``."""

    layer = Layer.METRIC
    reads_output = False

    def __init__(self, threshold: float, prices: Prices | None = None) -> None:
        self.threshold = threshold
        self.prices = prices

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        prices = self.prices or ctx.prices
        expected = f"cost <= ${self.threshold:g}"
        reported = ctx.response.cost_usd if ctx.response is not None and self.prices is None else None
        if reported is not None:  # the model's own cost (echo: 0)
            return Verdict(reported <= self.threshold, expected, f"${reported:.6f} (reported by the model)")
        if prices is None:
            return Verdict(False, expected, "no prices: give the check 'prices' or set [model] prices")
        return self._priced(ctx.response.usage if ctx.response is not None else None, prices, expected)

    def _priced(self, usage: Usage | None, prices: Prices, expected: str) -> Verdict:
        """Return the verdict of the call's token usage at ``prices`` (skipped without usage)."""
        cost = None if usage is None else prices.cost(usage.prompt_tokens, usage.completion_tokens)
        if usage is None or cost is None:
            return Verdict.skipped("no token usage reported by the model, so no cost")
        return Verdict(
            cost <= self.threshold,
            expected,
            f"${cost:.6f} ({usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens)",
            details={"cost_usd": cost},
        )


#: What the judge is sent; ``{rubric}`` and ``{output}`` are filled in (``[judge] template`` replaces it).
RUBRIC_PROMPT = """You are grading an output against a rubric.

<rubric>
{rubric}
</rubric>

<output>
{output}
</output>

Reply with one JSON object and nothing else:
{"reason": "<one sentence>", "pass": true or false, "score": <number from 0 to 1>}"""


def rubric_prompt(template: str, rubric: str, output: str) -> str:
    """Return what the judge is sent: ``template`` with ``{rubric}`` and ``{output}`` filled in, in one pass."""
    return substitute(template, {"rubric": rubric, "output": output})


def parse_judge_reply(reply: str) -> dict[str, Any]:
    """Return the grade in a judge's reply: its first JSON object with a boolean ``pass``."""
    try:
        with time_budget(JSON_SEARCH_SECONDS, "looking for the verdict in the judge's reply"):
            values = [value for value, _, _ in find_json(reply, opening="{", nested=True)]
    except BudgetExceeded as exc:
        raise ValueError(str(exc)) from None
    for value in values:
        if isinstance(value, dict) and isinstance(value.get("pass"), bool):
            _check_score(value.get("score"))
            return value
    raise ValueError("no JSON object with a boolean 'pass' in the reply")


def _check_score(score: Any) -> None:
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)
    ):
        raise ValueError(f"'score' is {score!r}, not a number")


class _Unreadable(ValueError):
    """A judge reply with no grade in it (the reply kept)."""

    def __init__(self, problem: ValueError, reply: str) -> None:
        super().__init__(str(problem))
        self.reply = reply


class LlmRubric(Check):
    """``llm-rubric``: a judge model grades the output against the rubric in ``value`` (its pass, score
    and reason are recorded); with ``threshold`` the score must reach it."""

    layer = Layer.METRIC
    needs_judge = True

    def __init__(self, rubric: str, threshold: float | None) -> None:
        self.rubric = rubric
        self.threshold = threshold

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = f"the judge passes rubric {shorten(self.rubric, 60)}" + (
            f" with score >= {self.threshold:g}" if self.threshold is not None else ""
        )
        if ctx.judge is None:
            return Verdict(False, expected, NO_JUDGE)
        judge = ctx.judge
        verdict = self._asked(judge, json_text(value), expected, {"judge": ctx.judge_name})
        own = _fingerprinted(judge)  # after the asks: the served model name an answer gave is part of it
        verdict = dataclasses.replace(verdict, details={**(verdict.details or {}), **own})
        return _gated(verdict, getattr(judge, "gate", None), self.rubric, own.get("judge_fingerprint"))

    def _asked(self, judge: Judge, output: str, expected: str, own: dict[str, Any]) -> Verdict:
        """Return the verdict of the judge's grades of ``output``; a failed call or an unreadable reply fails."""
        prompt = rubric_prompt(getattr(judge, "template", RUBRIC_PROMPT), self.rubric, output)
        try:
            grades, usage = _grades(judge, prompt)
        except ModelError as exc:
            return Verdict(False, expected, f"the judge call failed: {exc}", details=dict(own))
        except _Unreadable as exc:
            message = f"an unreadable judge reply ({exc}): {shorten(exc.reply)}"
            return Verdict(False, expected, message, details={**own, "reply": exc.reply})
        except Exception as exc:  # whatever a judge model raised: this check fails, the case runs on
            message = f"the judge call failed: {type(exc).__name__}: {exc}"
            return Verdict(False, expected, message, details=dict(own))
        return self._graded(grades, expected, {**own, **usage})

    def _graded(self, grades: list[dict[str, Any]], expected: str, details: dict[str, Any]) -> Verdict:
        """Return the verdict of the judge's grades: the majority's pass (a tie fails) and the mean score,
        the score held against ``threshold`` when there is one."""
        verdicts = [grade["pass"] for grade in grades]
        passed = 2 * sum(verdicts) > len(verdicts)
        score = sum(_score(grade) for grade in grades) / len(grades)
        reason = str(next(grade for grade in grades if grade["pass"] == passed).get("reason", ""))
        ok = score >= self.threshold if self.threshold is not None else passed
        said = f"{'pass' if passed else 'fail'}, score {score:g}: {reason}"
        if len(grades) > 1:
            details["verdicts"] = verdicts
            said += f" ({sum(verdicts)} of {len(verdicts)} asks passed)"
        details.update({"verdict": passed, "score": score, "reason": reason})
        return Verdict(ok, expected, said, score=score, details=details)


def _score(grade: dict[str, Any]) -> float:
    """Return a grade's score: its own, else 1 for a pass and 0 for a fail."""
    score = grade.get("score")
    return float(score) if score is not None else (1.0 if grade["pass"] else 0.0)


def _fingerprinted(judge: Judge) -> dict[str, Any]:
    """Return the details naming the judge's fingerprint (none for a judge callable without one)."""
    fingerprint = getattr(judge, "fingerprint", None)
    return {"judge_fingerprint": fingerprint} if isinstance(fingerprint, str) else {}


def _gated(verdict: Verdict, gate: JudgeGate | None, rubric: str, fingerprint: str | None) -> Verdict:
    """Return ``verdict``, marked for review with the reason when ``gate`` does not let the judge's verdict gate."""
    reason = gate.reason(rubric, fingerprint) if gate is not None else None
    if reason is None:
        return verdict
    marked = {**(verdict.details or {}), "ungated": True, "rubric": rubric, "review": f"not gated: {reason}"}
    return dataclasses.replace(verdict, details=marked)


def _grades(judge: Judge, prompt: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Ask the judge (its ``repeat`` times); return each grade and, from a judge model, its token usage summed
    (counted apart from the tested model's). An unreadable reply raises :class:`_Unreadable`."""
    if not isinstance(judge, ModelJudge):
        return [_grade(judge(prompt))], {}
    responses = [judge.ask(prompt, repeat=i) for i in range(judge.repeat)]
    grades = [_grade(response.text) for response in responses]
    usages = [r.usage for r in responses if r.usage is not None]
    if not usages:
        return grades, {}
    total = {f: sum(getattr(u, f) or 0 for u in usages) for f in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return grades, {"judge_usage": total}


def _grade(reply: str) -> dict[str, Any]:
    try:
        return parse_judge_reply(reply)
    except ValueError as exc:
        raise _Unreadable(exc, reply) from None


class ModelJudge:
    """A judge callable over a model: sends the rubric prompt (``template``) ``repeat`` times, returns the reply
    text; ``fingerprint`` names what decides its verdicts, ``gate`` whether they gate."""

    def __init__(
        self,
        model: Model,
        runner: ModelRunner,
        params: dict[str, Any] | None = None,
        *,
        template: str = RUBRIC_PROMPT,
        repeat: int = 1,
        gate: JudgeGate | None = None,
        identity: Mapping[str, Any] | None = None,
        served: str | None = None,
    ) -> None:
        self.model = model
        self.runner = runner
        self.params = dict(params or {})
        self.template = template
        self.repeat = repeat
        self.gate = gate
        #: The model part of the fingerprint: the unwrapped model's cache identity (else ``model``'s).
        self.identity = dict(identity if identity is not None else model_identity(model))
        #: The model name the endpoint said answered: given, else learnt from the first answer that names one.
        self.served = served
        #: What the judge's cache keys hold: its fingerprint before any answer (the served name comes with one).
        self.salt = judge_fingerprint(self.identity, self.params, template, served=served, repeat=repeat)

    @property
    def fingerprint(self) -> str:
        """Return the fingerprint of the judge, the model name its endpoint serves included once an answer said it."""
        return judge_fingerprint(self.identity, self.params, self.template, served=self.served, repeat=self.repeat)

    def __call__(self, prompt: str) -> str:
        return self.ask(prompt).text

    def _request(self, prompt: str, repeat: int) -> ModelRequest:
        return ModelRequest(prompt=prompt, params=self.params, repeat=repeat, salt=self.salt)

    def ask(self, prompt: str, *, repeat: int = 0) -> Response:
        """Send the rubric prompt (its ``repeat``-th ask); return the whole response (its token usage too), noting
        the model name the endpoint says answered (the first one named)."""
        response = self.runner.call(self.model, self._request(prompt, repeat), key=("judge", prompt, repeat))
        if self.served is None and response.model is not None:
            self.served = response.model
        return response

    def prefetch(self, prompt: str) -> None:
        """Start every ask of ``prompt`` now (within the judge's bound on calls in flight): :meth:`ask` takes it."""
        for repeat in range(self.repeat):
            self.runner.prefetch(self.model, self._request(prompt, repeat), key=("judge", prompt, repeat))


class PythonCheck(Check):
    """``python``: your function ``(output, case) -> bool | float | CheckResult``, or ``(output, case,
    context)`` to read the :class:`CheckContext` too (the prompt sent, the response). A float is a
    score: it passes at >= ``threshold``, or above 0 without one."""

    layer = Layer.METRIC

    def __init__(self, function: Any, spec: str, threshold: float | None) -> None:
        self.function = function
        self.spec = spec
        self.threshold = threshold
        self.takes_context = _positional_count(function) >= 3

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = f"{self.spec} accepts the output"
        try:
            result = self.function(value, ctx.case, ctx) if self.takes_context else self.function(value, ctx.case)
        except (Exception, SystemExit) as exc:  # the user's function broke: a failure that says how
            return Verdict(False, expected, f"the function raised {exc!r}")
        if isinstance(result, CheckResult):
            return Verdict(result.passed, expected, result.message, score=result.score, details=result.details)
        if isinstance(result, bool):
            return Verdict(result, expected, "True" if result else "False")
        if isinstance(result, (int, float)):
            return self._scored(result, expected)
        return Verdict(False, expected, f"a {type(result).__name__} (return a bool, a float or a CheckResult)")

    def _scored(self, result: float, expected: str) -> Verdict:
        """Return the verdict of a score: at least ``threshold``, else above 0."""
        if not math.isfinite(result):
            return Verdict(False, expected, f"score {result!r}, which is not a number to compare")
        ok = result >= self.threshold if self.threshold is not None else result > 0
        bound = f">= {self.threshold:g}" if self.threshold is not None else "> 0"
        return Verdict(ok, f"{self.spec} scores {bound}", f"score {result:g}", score=float(result))


def _positional_count(function: Any) -> int:
    """Count the parameters ``function`` names for positional arguments (``*args`` not counted; unknown: 2)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in positional for p in parameters)


def make_latency(p: Params) -> Check:
    """Make ``latency``: the call took at most ``threshold`` ms."""
    threshold = p.number("threshold", required=True, minimum=0, what="a bound in milliseconds")
    assert threshold is not None
    return Latency(threshold)


def make_tokens(p: Params) -> Check:
    """Make ``tokens``: at most ``threshold`` tokens of ``field`` (total, prompt or completion)."""
    threshold = p.number("threshold", required=True, minimum=0, what="a whole number of tokens")
    field = p.string("field", what="'total', 'prompt' or 'completion'") or "total"
    if field not in _TOKEN_FIELDS:
        raise CheckError(f"'field' of {p.name!r} must be 'total', 'prompt' or 'completion', got {field!r}")
    assert threshold is not None
    return Tokens(int(threshold), field)


def make_cost(p: Params) -> Check:
    """Make ``cost``: the call cost at most ``threshold`` USD at ``prices`` (else ``[model] prices``)."""
    threshold = p.number("threshold", required=True, minimum=0, what="a bound in USD")
    prices = p.raw("prices", what="{prompt = USD per 1M tokens, completion = USD per 1M tokens}")
    assert threshold is not None
    if prices is None:
        return Cost(threshold)
    if (
        not isinstance(prices, dict)
        or set(prices) != {"prompt", "completion"}
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in prices.values())
    ):
        raise CheckError(
            f"'prices' of {p.name!r} must be {{prompt = USD per 1M tokens, completion = USD per 1M tokens}}, "
            f"got {prices!r}"
        )
    return Cost(threshold, Prices(prompt=float(prices["prompt"]), completion=float(prices["completion"])))


def make_llm_rubric(p: Params) -> Check:
    """Make ``llm-rubric``: a judge model grades the output against the rubric ``value``."""
    rubric = p.string("value", required=True, what="the rubric")
    threshold = p.number("threshold", minimum=0, maximum=1, what="a score from 0 to 1")
    assert rubric is not None
    if not rubric.strip():
        raise CheckError(f"'value' of {p.name!r} is empty: write the rubric")
    return LlmRubric(rubric, threshold)


def make_python(p: Params) -> Check:
    """Make ``python``: your function ``value`` (``module:function`` or ``file://path.py:function``)
    judges the output."""
    spec = p.string("value", required=True, what="a dotted path like 'package.module:function'")
    threshold = p.number("threshold")
    assert spec is not None
    function = p.import_object(spec)
    if not callable(function):
        raise CheckError(f"'value' of {p.name!r}: {spec!r} is not callable")
    return PythonCheck(function, spec, threshold)
