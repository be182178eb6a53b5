"""Human review decisions (``--prompt-reviews FILE``): a reviewer's pass or fail on an output of a
``review`` case, applied to a later run's row with the same output."""

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
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.safety.scrub import scrub


#: The name of the check a decision adds to a row.
REVIEW_CHECK = "review decision"
_DECISIONS = ("pass", "fail")
#: What a decision check's details hold (and ``source``).
_DETAILS = ("decision", "reviewer", "comment", "decided_at", "output_sha256")
_KEYS = frozenset({"case_id", "variant", "slice", "repeat", *_DETAILS})


def output_sha256(text: str) -> str:
    """Return the hex SHA-256 of an output's text as the reports show it: scrubbed (the dashboard, where
    decisions are made, sees no other), UTF-8 with lone surrogates escaped as the reports write them."""
    return hashlib.sha256(scrub(text).encode("utf-8", "backslashreplace")).hexdigest()


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
        """Return the row's record of this decision: who, what and why."""
        who = self.reviewer or "a reviewer"
        message = f"{who} decided {self.decision}" + (f": {self.comment}" if self.comment else "")
        details = {key: getattr(self, key) for key in _DETAILS} | {"source": self.where}
        return CheckResult(Layer.REVIEW.value, REVIEW_CHECK, self.decision == "pass", message, details=details)


def is_mark(check: CheckResult) -> bool:
    """Tell whether ``check`` is a review mark (the case's ``review``, a ``human-review`` check)."""
    return check.layer == Layer.REVIEW.value and "review" in (check.details or {})


class ReviewBook:
    """The decisions of a file, by (case, output hash); the last decision for an output wins."""

    def __init__(self, decisions: list[ReviewDecision]) -> None:
        self._by: dict[tuple[str, str], list[ReviewDecision]] = {}
        for d in decisions:
            self._by.setdefault((d.case_id, d.output_sha256), []).insert(0, d)

    def __len__(self) -> int:
        return sum(len(v) for v in self._by.values())

    def find(self, row: CaseResult) -> ReviewDecision | None:
        """Return the decision for this row's output, if a reviewer made one."""
        if row.output is None or row.outcome not in (Outcome.REVIEW, Outcome.FAILED):
            return None
        for d in self._by.get((row.case_id, output_sha256(row.output)), ()):
            if d.variant is None or d.variant == row.variant:
                return d
        return None

    def apply(self, row: CaseResult) -> CaseResult:
        """Return ``row`` with its review decided (``passed`` or ``failed``, the decision among its checks)
        when a review mark is its only reason not to pass; any other failure stands."""
        if not _only_review(row):
            return row
        decision = self.find(row)
        if decision is None:
            return row
        outcome = Outcome.PASSED if decision.decision == "pass" else Outcome.FAILED
        return dataclasses.replace(row, outcome=outcome, checks=(*row.checks, decision.check()))


def _only_review(row: CaseResult) -> bool:
    """Tell whether a review mark is all that keeps ``row`` from passing."""
    failing = [c for c in row.checks if not c.passed and c.gating and not c.skipped]
    return any(is_mark(c) for c in row.checks) and all(is_mark(c) for c in failing)


def decision_of(value: Any, where: str) -> ReviewDecision:
    """Return the decision a line holds; ValueError saying what is wrong with it."""
    if not isinstance(value, dict):
        raise ValueError("a decision is a JSON object")
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    _check_required(value)
    digest = value["output_sha256"].lower()
    if len(digest) != 64 or any(ch not in "0123456789abcdef" for ch in digest):
        raise ValueError("'output_sha256' must be 64 hex digits (the SHA-256 of the output text)")
    _check_optional(value)
    texts = {key: value.get(key) or "" for key in ("reviewer", "comment", "decided_at")}
    return ReviewDecision(value["case_id"], digest, value["decision"], value.get("variant"), **texts, where=where)


def _check_required(value: dict[str, Any]) -> None:
    for key in ("case_id", "output_sha256", "decision"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise ValueError(f"{key!r} must be a non-empty string")
    if value["decision"] not in _DECISIONS:
        raise ValueError(f"'decision' must be 'pass' or 'fail', got {value['decision']!r}")


def _check_optional(value: dict[str, Any]) -> None:
    for key in ("variant", "slice", "reviewer", "comment", "decided_at"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise ValueError(f"{key!r} must be a string")
    repeat = value.get("repeat")
    if repeat is not None and (not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 0):
        raise ValueError(f"'repeat' must be a whole number from 0, got {repeat!r}")


def load_reviews(path: Path, *, display: str | None = None) -> ReviewBook:
    """Read the decisions of ``path`` (JSON Lines); ConfigError listing every bad line as ``path:line: ...``."""
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
            decisions.append(decision_of(line.value, where))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        raise ConfigError("\n".join(problems))
    return ReviewBook(decisions)
