"""The review layer: ``human-review`` marks an output for a human look (the case ends ``review``)."""

from __future__ import annotations

from typing import Any

from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.outcome import Layer


class HumanReview(Check):
    """``human-review``: mark the case for a human, with the reason in ``value``."""

    layer = Layer.REVIEW
    negatable = False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        return Verdict(True, "a human review", self.reason, details={"review": self.reason})


def make_human_review(p: Params) -> Check:
    """Make ``human-review``: mark the output for a human, with the reason ``value``."""
    reason = p.string("value", required=True, what="the reason a human should look")
    assert reason is not None
    return HumanReview(reason)
