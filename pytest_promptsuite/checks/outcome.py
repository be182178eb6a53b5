"""What checks produce: a ``CheckResult`` per check, in its ``Layer``, and a case's ``Outcome``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


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


#: Each outcome by its value (a dict lookup is faster than ``Outcome(value)`` on the per-row path).
OUTCOMES = {outcome.value: outcome for outcome in Outcome}


@dataclass(frozen=True)
class CheckResult:
    """One check's result. ``gating`` is False for a check that only records (weight 0) and for one
    that counts through a threshold; ``score`` runs from 0 to 1 where the check has one."""

    layer: str
    name: str
    passed: bool
    message: str
    gating: bool = True
    skipped: bool = False
    score: float | None = None
    details: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the check as an entry of a row's ``checks``: its fields, in order."""
        return dict(vars(self))  # not dataclasses.asdict, which deep-copies: this runs for every check
