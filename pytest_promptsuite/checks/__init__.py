"""Stage 4: layered checks on a model's output (structure, content, review, metric)."""

from __future__ import annotations

from .base import RESULT_FORMAT_VERSION
from .base import CaseResult
from .base import CheckResult
from .base import Layer
from .base import Outcome
from .content import must_checks
from .evaluate import evaluate
from .evaluate import outcome_of


__all__ = [
    "RESULT_FORMAT_VERSION",
    "CaseResult",
    "CheckResult",
    "Layer",
    "Outcome",
    "evaluate",
    "must_checks",
    "outcome_of",
]
