"""Human review decisions (``--prompt-reviews FILE``): a reviewer's pass or fail on a ``review``
case, kept so the same output is looked at once.

The dashboard downloads decisions as JSON Lines, one per reviewed output::

    {"case_id": "refund-003", "variant": null, "output_sha256": "9f2c...", "decision": "pass",
     "reviewer": "alice", "comment": "wording checked with legal", "decided_at": "2026-12-01T10:00:00Z"}

A decision applies to a later run's row of the same case (and variant, when it names one) whose
output text has the same SHA-256: the row then ends ``passed`` or ``failed`` with a ``review
decision`` check saying who decided and why. A changed output is reviewed again.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonl import read_jsonl
from pytest_promptsuite.results.row import CaseResult


__all__ = ["REVIEW_CHECK", "ReviewBook", "ReviewDecision", "load_reviews", "output_sha256"]

#: The name of the check a decision adds to a row.
REVIEW_CHECK = "review decision"
_DECISIONS = ("pass", "fail")
_KEYS = frozenset({"case_id", "variant", "output_sha256", "decision", "reviewer", "comment", "decided_at",
                   "slice", "repeat"})


def output_sha256(text: str) -> str:
    """The hex SHA-256 of an output's text (UTF-8; lone surrogates escaped as the reports write them)."""
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


@dataclass(frozen=True)
class ReviewDecision:
    """One reviewer's verdict on one output of one case."""

    case_id: str
    output_sha256: str
    decision: str  # "pass" | "fail"
    variant: str | None = None
    reviewer: str = ""
    comment: str = ""
    decided_at: str = ""
    where: str = ""

    def check(self) -> CheckResult:
        """The row's record of this decision: who, what and why."""
        who = self.reviewer or "a reviewer"
        message = f"{who} decided {self.decision}" + (f": {self.comment}" if self.comment else "")
        details = {
            "decision": self.decision, "reviewer": self.reviewer, "comment": self.comment,
            "decided_at": self.decided_at, "output_sha256": self.output_sha256, "source": self.where,
        }
        return CheckResult(Layer.REVIEW.value, REVIEW_CHECK, self.decision == "pass", message, details=details)


def _is_mark(check: CheckResult) -> bool:
    """A review mark (the case's ``review``, a ``human-review`` check)."""
    return check.layer == Layer.REVIEW.value and bool(check.details) and "review" in (check.details or {})


class ReviewBook:
    """The decisions of a file, by (case, output hash); the last decision for an output wins."""

    def __init__(self, decisions: list[ReviewDecision]) -> None:
        self._by: dict[tuple[str, str], list[ReviewDecision]] = {}
        for d in decisions:
            self._by.setdefault((d.case_id, d.output_sha256), []).insert(0, d)

    def __len__(self) -> int:
        return sum(len(v) for v in self._by.values())

    def find(self, row: CaseResult) -> ReviewDecision | None:
        """The decision for this row's output, if a reviewer made one."""
        if row.output is None or row.outcome not in (Outcome.REVIEW, Outcome.FAILED):
            return None
        for d in self._by.get((row.case_id, output_sha256(row.output)), ()):
            if d.variant is None or d.variant == row.variant:
                return d
        return None

    def apply(self, row: CaseResult) -> CaseResult:
        """``row`` with its review decided: ``passed`` or ``failed``, the decision among its checks.

        Only a row whose sole reason not to pass is a review mark changes (a ``review`` outcome,
        or ``failed`` by ``[review] outcome = "failed"`` alone); any other failure stands.
        """
        marks = [c for c in row.checks if _is_mark(c)]
        if not marks:
            return row
        failing = [c for c in row.checks if not c.passed and c.gating and not c.skipped]
        if any(not _is_mark(c) for c in failing):
            return row
        decision = self.find(row)
        if decision is None:
            return row
        outcome = Outcome.PASSED if decision.decision == "pass" else Outcome.FAILED
        return dataclasses.replace(row, outcome=outcome, checks=(*row.checks, decision.check()))


def _decision(value: Any, where: str) -> ReviewDecision:
    if not isinstance(value, dict):
        raise ValueError("a decision is a JSON object")
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    for key in ("case_id", "output_sha256", "decision"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise ValueError(f"{key!r} must be a non-empty string")
    if value["decision"] not in _DECISIONS:
        raise ValueError(f"'decision' must be 'pass' or 'fail', got {value['decision']!r}")
    digest = value["output_sha256"].lower()
    if len(digest) != 64 or any(ch not in "0123456789abcdef" for ch in digest):
        raise ValueError("'output_sha256' must be 64 hex digits (the SHA-256 of the output text)")
    for key in ("variant", "reviewer", "comment", "decided_at"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise ValueError(f"{key!r} must be a string")
    return ReviewDecision(
        case_id=value["case_id"], output_sha256=digest, decision=value["decision"],
        variant=value.get("variant"), reviewer=value.get("reviewer") or "",
        comment=value.get("comment") or "", decided_at=value.get("decided_at") or "", where=where,
    )


def load_reviews(path: Path, *, display: str | None = None) -> ReviewBook:
    """The decisions of ``path`` (JSON Lines); a ConfigError listing every bad line as
    ``path:line: what is wrong``."""
    shown = display or str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--prompt-reviews {shown}: cannot read it ({exc.strerror or exc})") from exc
    decisions, problems = [], []
    for line in read_jsonl(data):
        where = f"{shown}:{line.number}"
        if line.problem is not None:
            problems.append(f"{where}: {line.problem}")
            continue
        try:
            decisions.append(_decision(line.value, where))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        raise ConfigError("\n".join(problems))
    return ReviewBook(decisions)
