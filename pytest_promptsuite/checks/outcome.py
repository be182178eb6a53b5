"""What checks produce: a ``CheckResult`` per check, in its ``Layer``, and a case's ``Outcome``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


__all__ = ["CheckResult", "Layer", "Outcome", "OUTCOMES"]


class Layer(str, Enum):
    """The layers, in the order they run."""

    STRUCTURE = "structure"
    CONTENT = "content"
    REVIEW = "review"
    METRIC = "metric"


class Outcome(str, Enum):
    """A case's outcome; the first that applies wins: error, failed, review, passed."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    REVIEW = "review"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


#: Each outcome by its value (a dict lookup: ``Outcome(value)`` is a call into ``EnumType``).
OUTCOMES = {outcome.value: outcome for outcome in Outcome}


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict. ``gating`` is False for checks that only record (weight 0) and for
    checks whose verdict counts through a threshold (the threshold's own result gates).

    ``score`` is the check's score from 0 to 1 where it has one (a judge's score, a similarity
    ratio); ``details`` holds what a check wants on record (a judge's verdict and reason, the
    JSON path it read, a review reason).
    """

    layer: str
    name: str
    passed: bool
    message: str
    gating: bool = True
    skipped: bool = False
    score: float | None = None
    details: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        # by hand: dataclasses.asdict deep-copies, and this runs for every check of every case
        """The check as an entry of a row's ``checks``."""
        return {
            "layer": self.layer,
            "name": self.name,
            "passed": self.passed,
            "message": self.message,
            "gating": self.gating,
            "skipped": self.skipped,
            "score": self.score,
            "details": self.details,
        }
