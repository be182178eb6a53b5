"""Run every check of a case, layer by layer, and decide its outcome."""

from __future__ import annotations

from ..cases import PromptCase
from .base import CheckResult
from .base import Outcome
from .content import must_checks


__all__ = ["evaluate", "outcome_of"]


def evaluate(case: PromptCase, output: str) -> tuple[CheckResult, ...]:
    """Every check result for ``output``, in layer order; all failures, not the first."""
    return tuple(must_checks(case, output))


def outcome_of(case: PromptCase, checks: tuple[CheckResult, ...], *, error: str | None) -> Outcome:
    """error, failed, review, passed: the first that applies."""
    if error is not None:
        return Outcome.ERROR
    if any(not c.passed and c.gating and not c.skipped for c in checks):
        return Outcome.FAILED
    if case.review:
        return Outcome.REVIEW
    return Outcome.PASSED
