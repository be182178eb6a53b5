"""What a run's judges did: their fingerprints, the rubric checks left ungated (and why), and the slices whose
judged checks a different judge decided than the baseline's ("judge changed", never a regression)."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_promptsuite.results.case_result import CaseResult


@dataclass(frozen=True)
class UngatedCheck:
    """Checks of one rubric that did not gate for one reason, and how many."""

    rubric: str
    reason: str
    checks: int

    def to_dict(self) -> dict[str, Any]:
        """Return the entry of ``summary.json``'s ``ungated_judge_checks``."""
        return {"rubric": self.rubric, "reason": self.reason, "checks": self.checks}


@dataclass(frozen=True)
class JudgeChange:
    """A slice whose judged checks were decided by another judge than in the baseline."""

    slice: str
    baseline: str
    current: str

    def to_dict(self) -> dict[str, Any]:
        """Return the entry of ``summary.json``'s ``judge_changed``."""
        return {"slice": self.slice, "baseline_fingerprint": self.baseline, "fingerprint": self.current}


class UngatedTally:
    """Counts the ungated rubric checks of rows as they arrive (each row's line, its checks included)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    def add_checks(self, checks: Iterable[Any]) -> None:
        """Count the ungated checks among a row's ``checks`` (dicts as a line holds them)."""
        for check in checks:
            details = check.get("details") if isinstance(check, Mapping) else None
            if isinstance(details, Mapping) and details.get("ungated") is True:
                key = (str(details.get("rubric", "")), str(details.get("review", "")))
                self.counts[key] = self.counts.get(key, 0) + 1

    def add_line(self, line: Mapping[str, Any]) -> None:
        """Count the ungated checks of one ``results.jsonl`` line."""
        checks = line.get("checks")
        if isinstance(checks, list):
            self.add_checks(checks)

    def report(self) -> tuple[UngatedCheck, ...]:
        """Return the ungated checks, one entry per (rubric, reason), in the order first seen."""
        return tuple(UngatedCheck(rubric, reason, n) for (rubric, reason), n in self.counts.items())


def ungated_of(rows: Iterable[CaseResult]) -> tuple[UngatedCheck, ...]:
    """Return the ungated checks of whole rows (their checks in memory)."""
    tally = UngatedTally()
    for row in rows:
        tally.add_checks(check.to_dict() for check in row.checks)
    return tally.report()


def _fingerprints(baseline: Sequence[CaseResult], variant: str | None) -> dict[tuple[str, str | None], str]:
    """Return the baseline's judge fingerprint of each (case, variant) a judge decided (of ``variant`` only, keyed
    without it, when given)."""
    rows = [r for r in baseline if variant is None or r.variant == variant]
    return {
        (r.case_id, r.variant if variant is None else None): r.judge_fingerprint for r in rows if r.judge_fingerprint
    }


def judge_changes(
    rows: Iterable[CaseResult], baseline: Sequence[CaseResult], variant: str | None = None
) -> tuple[dict[str, JudgeChange], set[str]]:
    """Return, per slice, the first case both runs judged with different judges (by fingerprint), and the ids
    of every such case. ``variant``: the baseline's rows of that variant stand for every variant of ``rows``."""
    before = _fingerprints(baseline, variant)
    changed: dict[str, JudgeChange] = {}
    cases: set[str] = set()
    for row in rows:
        old = before.get((row.case_id, row.variant if variant is None else None))
        if old is not None and row.judge_fingerprint is not None and old != row.judge_fingerprint:
            changed.setdefault(row.slice, JudgeChange(row.slice, old, row.judge_fingerprint))
            cases.add(row.case_id)
    return changed, cases


@dataclass(frozen=True)
class JudgeReport:
    """The judges of a run: their fingerprints, the ungated checks, the slices whose judge changed."""

    fingerprints: tuple[str, ...] = ()
    ungated: tuple[UngatedCheck, ...] = ()
    changed: tuple[JudgeChange, ...] = ()

    @classmethod
    def of(
        cls, rows: Sequence[CaseResult], ungated: tuple[UngatedCheck, ...], changed: Mapping[str, JudgeChange]
    ) -> JudgeReport:
        """Gather the report of ``rows`` (``ungated`` counted as they arrived, ``changed`` against a baseline)."""
        found = tuple(dict.fromkeys(r.judge_fingerprint for r in rows if r.judge_fingerprint is not None))
        return cls(found, ungated, tuple(changed[name] for name in sorted(changed)))

    def to_dict(self) -> dict[str, Any]:
        """Return ``summary.json``'s judge keys: ``judge_fingerprint`` (one, a list, or null), the ungated checks
        and the slices whose judge changed."""
        one = self.fingerprints[0] if len(self.fingerprints) == 1 else list(self.fingerprints) or None
        return {
            "judge_fingerprint": one,
            "ungated_judge_checks": [u.to_dict() for u in self.ungated],
            "judge_changed": [c.to_dict() for c in self.changed],
        }

    def lines(self) -> list[str]:
        """Return the terminal's lines: each ungated rubric with why, each slice whose judge changed."""
        lines = [
            f"judge not gating on {u.checks} check{'s' if u.checks != 1 else ''} of rubric {u.rubric!r}: {u.reason}"
            for u in self.ungated
        ]
        lines += [
            f"judge changed in slice {c.slice!r}: baseline judge {c.baseline}, now {c.current}: its judged checks are "
            "not compared (rerun with --prompt-rejudge, or calibrate and compare runs of one judge)"
            for c in self.changed
        ]
        return lines
