"""Running a case's checks, layer by layer, into its check results and its outcome."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import Union

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Embed
from pytest_promptsuite.checks.check_api import Judge
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.compile_checks import CheckSet
from pytest_promptsuite.checks.compile_checks import CompiledCheck
from pytest_promptsuite.checks.compile_checks import CompiledChecks
from pytest_promptsuite.checks.compile_checks import MakeCheck
from pytest_promptsuite.checks.compile_checks import SuiteChecks
from pytest_promptsuite.checks.compile_checks import compile_case
from pytest_promptsuite.checks.content import must_checks
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.suite import Prices
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.tool_set import ToolSet
from pytest_promptsuite.safety.deadline import BudgetExceeded


#: ``transform(output, case, response) -> str | None``: the text the checks see (None: unchanged).
Transform = Callable[[str, PromptCase, Union[Response, None]], Union[str, None]]

_ORDER = {layer: rank for rank, layer in enumerate(Layer)}


class Evaluator:
    """The checker of one suite's outputs: its ``[[checks]]``, judge, review policy and output transform.

    Args:
        make: makes a check from an entry (the ``pytest_promptsuite_make_check`` hook).
        judge: sends a prompt to the judge model (``llm-rubric``); ``judge_name`` is recorded.
        embed: embeds texts with the embedding model (``similar:cosine``).
        review_fails: ``[review] outcome = "failed"``: a review mark fails the case.
        transform: rewrites the output before the checks (``pytest_promptsuite_transform_output``).
    """

    def __init__(
        self,
        *,
        make: MakeCheck = make_builtin_check,
        suite: SuiteChecks | None = None,
        judge: Judge | None = None,
        judge_name: str | None = None,
        review_fails: bool = False,
        transform: Transform | None = None,
        embed: Embed | None = None,
    ) -> None:
        self.make = make
        self.embed = embed
        self.suite = suite
        self.judge = judge
        self.judge_name = judge_name
        self.review_fails = review_fails
        self.transform = transform

    def compile(self, case: PromptCase, *, display: str | None = None) -> CompiledChecks:
        """Compile the case's checks (raises :class:`~pytest_promptsuite.errors.CheckError`)."""
        return compile_case(case, self.make, suite=self.suite, display=display)

    def evaluate(
        self,
        case: PromptCase,
        response: Response | str,
        checks: CompiledChecks | None = None,
        *,
        prices: Prices | None = None,
        trajectory: tuple[Step, ...] = (),
        tools: ToolSet | None = None,
        prompt: Prompt | None = None,
        transcript: tuple[dict[str, Any], ...] = (),
    ) -> tuple[CheckResult, ...]:
        """Return every check result for a response (or a bare output): ``must_include`` and
        ``must_not_include`` first, then by layer, then the assert-sets and the case threshold."""
        if isinstance(response, str):
            output, reply = response, None
        else:
            output, reply = response.text, response
        if checks is None:
            checks = self.compile(case)
        if self.transform is not None:
            try:
                changed = self.transform(output, case, reply)
            except Exception as exc:  # the hook broke: the case fails and says so, it is not lost
                message = f"pytest_promptsuite_transform_output raised {type(exc).__name__}: {exc}"
                return (CheckResult(Layer.STRUCTURE.value, "transform_output", False, message),)
            if changed is not None:
                output = changed
        if not (checks.entries or checks.suite or case.review):  # only must_include / must_not_include
            return tuple(must_checks(case, output))
        ctx = CheckContext(
            case=case,
            output=output,
            response=reply,
            judge=self.judge,
            judge_name=self.judge_name,
            prices=prices,
            trajectory=trajectory,
            tools=tools,
            embed=self.embed,
            prompt=prompt,
            transcript=transcript,
        )
        return _Run(ctx, checks, self.review_fails).results()


def evaluate(case: PromptCase, output: str, **settings: Any) -> tuple[CheckResult, ...]:
    """Return every check result for ``output``; ``settings`` are :class:`Evaluator`'s arguments."""
    return Evaluator(**settings).evaluate(case, output)


class _Run:
    """One case's evaluation: leaf checks by layer, then sets and the case threshold."""

    def __init__(self, ctx: CheckContext, checks: CompiledChecks, review_fails: bool) -> None:
        self.ctx = ctx
        self.checks = checks
        self.review_fails = review_fails
        self.structure_failure: str | None = None
        self.leaf: dict[int, CheckResult] = {}

    def results(self) -> tuple[CheckResult, ...]:
        case = self.ctx.case
        by_layer = self._run_leaves(self._leaves())
        if case.review:
            by_layer[Layer.REVIEW].append(self._case_review(case.review))
        ordered = list(must_checks(case, self.ctx.output))
        for layer in _ORDER:
            ordered.extend(by_layer[layer])
        sets, scored = self._set_results()
        ordered += sets
        if self.checks.threshold is not None and scored:
            ordered.append(_share_result("threshold", "case", scored, self.checks.threshold, gating=True))
        return tuple(ordered)

    def _leaves(self) -> list[tuple[CompiledCheck, bool, str | None]]:
        """Return every leaf check (the case's, an assert-set's members, the suite's) with whether it gates and
        its label, in layer order."""
        thresholded = self.checks.threshold is not None
        leaves: list[tuple[CompiledCheck, bool, str | None]] = []  # (check, gating, label)
        for entries, suite in ((self.checks.entries, False), (self.checks.suite, True)):
            for entry in entries:
                label = f"suite {entry.where}" if suite else None
                if isinstance(entry, CheckSet):
                    leaves.extend((m, False, f"{label or entry.where} assert-set") for m in entry.members)
                else:
                    # a review mark neither passes nor fails: a case threshold does not weigh it
                    own = suite or not thresholded or entry.layer is Layer.REVIEW
                    leaves.append((entry, entry.weight > 0 and own, label))
        leaves.sort(key=lambda item: _ORDER[item[0].layer])
        return leaves

    def _run_leaves(self, leaves: list[tuple[CompiledCheck, bool, str | None]]) -> dict[Layer, list[CheckResult]]:
        by_layer: dict[Layer, list[CheckResult]] = {layer: [] for layer in _ORDER}
        for compiled, gating, label in leaves:
            result = self._run_leaf(compiled, gating, label)
            self.leaf[id(compiled)] = result
            by_layer[compiled.layer].append(result)
            if compiled.layer is Layer.STRUCTURE and not result.passed and not result.skipped:
                self.structure_failure = self.structure_failure or compiled.name
        return by_layer

    def _set_results(self) -> tuple[list[CheckResult], list[tuple[float, CheckResult]]]:
        """Return the assert-sets' results, in entry order, and the (weight, result) of the case's own entries."""
        thresholded = self.checks.threshold is not None
        sets: list[CheckResult] = []
        scored: list[tuple[float, CheckResult]] = []
        for entries, suite in ((self.checks.entries, False), (self.checks.suite, True)):
            for entry in entries:
                if isinstance(entry, CheckSet):
                    gating = entry.weight > 0 and (suite or not thresholded)
                    result = self._set_result(
                        entry, gating=gating, label=f"suite {entry.where}" if suite else entry.where
                    )
                    sets.append(result)
                else:
                    result = self.leaf[id(entry)]
                if not suite and result.layer != Layer.REVIEW.value:
                    scored.append((entry.weight, result))
        return sets, scored

    def _run_leaf(self, compiled: CompiledCheck, gating: bool, label: str | None) -> CheckResult:
        ctx = self.ctx
        path = compiled.path
        prefix = f"{path}: " if path is not None else ""
        details = _details(compiled, label)
        gating = gating and compiled.weight > 0
        value: Any = ctx.output
        if path is not None:
            from pytest_promptsuite.checks.jsonpath import PathMissing  # loaded: the path was parsed

            try:
                value = path.find(ctx.output_json())
            except (ValueError, PathMissing) as exc:
                if self.structure_failure is not None:
                    message = f"{prefix}skipped: {exc}, and structure check {self.structure_failure!r} failed"
                    return self._result(compiled, False, message, gating, details, skipped=True)
                return self._result(compiled, False, f"{prefix}cannot read it: {exc}", gating, details)
        ctx.path = str(path) if path is not None else None
        try:
            verdict = compiled.check.evaluate(value, ctx)
        except BudgetExceeded as exc:
            return self._result(compiled, False, f"{prefix}{exc}", gating, details)
        except Exception as exc:  # a check that breaks fails, with why; the case keeps its row
            message = f"{prefix}the check raised {type(exc).__name__}: {exc}"
            return self._result(compiled, False, message, gating, details)
        finally:
            ctx.path = None
        return self._verdict_result(compiled, verdict, prefix, gating, details)

    def _verdict_result(
        self, compiled: CompiledCheck, verdict: Verdict, prefix: str, gating: bool, details: dict[str, Any]
    ) -> CheckResult:
        if verdict.details:
            details.update(verdict.details)
        if verdict.skip is not None:
            return self._result(compiled, False, f"{prefix}skipped: {verdict.skip}", gating, details, skipped=True)
        if details.get("ungated"):
            return _ungated(compiled, verdict, prefix, gating, details)
        passed = verdict.passed != compiled.negate
        expected = f"not {verdict.expected}" if compiled.negate else verdict.expected
        message = f"{prefix}expected {expected}; found {verdict.found}"
        if compiled.weight == 0:
            message += " (weight 0: recorded only)"
        if "review" in details and gating and self.review_fails:
            passed = False
            message += " (review.outcome = 'failed' in the suite config)"
        return self._result(compiled, passed, message, gating, details, score=verdict.score)

    @staticmethod
    def _result(
        compiled: CompiledCheck,
        passed: bool,
        message: str,
        gating: bool,
        details: dict[str, Any],
        *,
        skipped: bool = False,
        score: float | None = None,
    ) -> CheckResult:
        return CheckResult(
            compiled.layer.value,
            compiled.name,
            passed,
            message,
            gating=gating,
            skipped=skipped,
            score=score,
            details=details or None,
        )

    def _case_review(self, review: str | bool) -> CheckResult:
        reason = review if isinstance(review, str) else "the case is marked review"
        message = f"marked for human review: {reason}"
        if self.review_fails:
            message += " (review.outcome = 'failed' in the suite config)"
        return CheckResult(Layer.REVIEW.value, "review", not self.review_fails, message, details={"review": reason})

    def _set_result(self, entry: CheckSet, *, gating: bool, label: str) -> CheckResult:
        scored = [(m.weight, self.leaf[id(m)]) for m in entry.members]
        layer = max((m.layer for m in entry.members), key=lambda layer: _ORDER[layer])
        return _share_result("assert-set", label, scored, entry.threshold, gating=gating, layer=layer)


def _ungated(
    compiled: CompiledCheck, verdict: Verdict, prefix: str, gating: bool, details: dict[str, Any]
) -> CheckResult:
    """Return a judged check whose judge may not gate (``[judge] min_agreement``) as a review mark: the
    reason first, then what the judge found."""
    passed = verdict.passed != compiled.negate
    message = (
        f"{prefix}{details['review']}; the judge found {verdict.found} (the check would {'pass' if passed else 'fail'})"
    )
    return CheckResult(
        Layer.REVIEW.value, compiled.name, True, message, gating=gating, score=verdict.score, details=details
    )


def _details(compiled: CompiledCheck, label: str | None) -> dict[str, Any]:
    """Return the details every result of a leaf check carries: its path, the set or suite it is in, its metric."""
    details: dict[str, Any] = {}
    if compiled.path is not None:
        details["path"] = str(compiled.path)
    if label:
        details["in"] = label
    if compiled.metric:
        details["metric"] = compiled.metric
    return details


def _share_result(
    name: str,
    label: str,
    scored: list[tuple[float, CheckResult]],
    threshold: float | None,
    *,
    gating: bool,
    layer: Layer = Layer.METRIC,
) -> CheckResult:
    """Weigh a group's checks: the weighted share that passed against ``threshold`` (default: every
    weighted check passes); skipped and weight-0 checks do not count."""
    counted = [(w, r) for w, r in scored if w > 0 and not r.skipped]
    total = sum(w for w, _ in counted)
    if not counted:
        return CheckResult(
            layer.value, name, False, f"{label}: skipped: no check of it could run", gating=gating, skipped=True
        )
    got = sum(w for w, r in counted if r.passed)
    share = got / total
    n_pass = sum(1 for _, r in counted if r.passed)
    passed, bound = _share_verdict(share, n_pass == len(counted), threshold)
    found = _share_found(counted, n_pass, share)
    return CheckResult(
        layer.value, name, passed, f"{label}: expected {bound}; found {found}", gating=gating, score=share
    )


def _share_found(counted: list[tuple[float, CheckResult]], n_pass: int, share: float) -> str:
    failed = [r.name for _, r in counted if not r.passed]
    found = f"{n_pass} of {len(counted)} passed, weighted share {share:.2f}"
    if failed:
        found += f" (failed: {', '.join(failed)})"
    return found


def _share_verdict(share: float, every: bool, threshold: float | None) -> tuple[bool, str]:
    """Return whether a group passed and the bound it is held to: ``threshold`` on the share, else ``every`` check."""
    if threshold is None:
        return every, "every weighted check passes"
    return share >= threshold - 1e-12, f"a weighted share >= {threshold:g}"


def outcome_of(case: PromptCase, checks: tuple[CheckResult, ...], *, error: str | None) -> Outcome:
    """Decide a case's outcome: error, failed, review or passed, the first that applies."""
    if error is not None:
        return Outcome.ERROR
    if any(_fails(c) for c in checks):
        return Outcome.FAILED
    if case.review or any(_marks_review(c) for c in checks):
        return Outcome.REVIEW
    return Outcome.PASSED


def _fails(check: CheckResult) -> bool:
    return not check.passed and check.gating and not check.skipped


def _marks_review(check: CheckResult) -> bool:
    return bool(
        check.layer == Layer.REVIEW and check.gating and check.passed and check.details and "review" in check.details
    )
