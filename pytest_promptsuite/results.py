"""Stage 5a: case results into per-slice pass rates, confidence intervals and gate verdicts.

Pure functions over ``CaseResult`` rows: the same rows give the same summary whether they came from
a serial run, pytest-xdist workers or merged CI shards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from .checks.base import CaseResult
from .checks.base import Outcome


__all__ = [
    "GateResult",
    "SliceStats",
    "Summary",
    "ThresholdPolicy",
    "summarize",
    "wilson_interval",
]

SUMMARY_FORMAT_VERSION = 1
#: Pass rates are compared with this slack so that 0.9 of 10 cases meets a 0.9 threshold.
_EPS = 1e-9


def wilson_interval(passed: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95 % Wilson score interval of ``passed / n`` (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class ThresholdPolicy:
    """Where each slice's threshold comes from, most specific first.

    ``slices`` (the config's ``[thresholds.slices]``) beats an explicit ``--prompt-min-pass-rate``
    (``option``), which beats the config's ``[thresholds] default``, which beats 1.0.
    """

    slices: Mapping[str, float] = field(default_factory=dict)
    option: float | None = None
    config_default: float | None = None
    builtin: float = 1.0

    def threshold(self, slice_name: str) -> tuple[float, str]:
        """The threshold of ``slice_name`` and where it came from."""
        if slice_name in self.slices:
            return self.slices[slice_name], "config slice"
        if self.option is not None:
            return self.option, "option"
        if self.config_default is not None:
            return self.config_default, "config default"
        return self.builtin, "default"


@dataclass(frozen=True)
class SliceStats:
    """One row of the slice table."""

    slice: str
    cases: int
    passed: int
    failed: int
    error: int
    review: int
    skipped: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float
    threshold_source: str
    gate: str
    baseline_pass_rate: float | None = None
    delta: float | None = None
    regressions: int | None = None
    fixes: int | None = None
    p_value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "slice": self.slice,
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "error": self.error,
            "review": self.review,
            "skipped": self.skipped,
            "pass_rate": self.pass_rate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            "baseline_pass_rate": self.baseline_pass_rate,
            "delta": self.delta,
            "regressions": self.regressions,
            "fixes": self.fixes,
            "p_value": self.p_value,
            "gate": self.gate,
        }


@dataclass(frozen=True)
class GateResult:
    passed: bool
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reasons": list(self.reasons)}


@dataclass(frozen=True)
class Summary:
    totals: dict[str, int]
    slices: tuple[SliceStats, ...]
    gate: GateResult
    regressions: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": SUMMARY_FORMAT_VERSION,
            "totals": self.totals,
            "slices": [s.to_dict() for s in self.slices],
            "regressions": list(self.regressions),
            "fixes": list(self.fixes),
            "new": list(self.new),
            "removed": list(self.removed),
            "gate": self.gate.to_dict(),
        }


def _pass_rate(passed: int, cases: int, review: int, skipped: int) -> float | None:
    denom = cases - review - skipped
    return passed / denom if denom > 0 else None


def summarize(rows: Iterable[CaseResult], policy: ThresholdPolicy | None = None) -> Summary:
    """Per-slice counts, pass rates (``passed / (cases - review)``), Wilson intervals and gates.

    Slices are listed in the order their first row appears after sorting by slice name, so the
    table does not depend on the order results arrived in.
    """
    policy = policy or ThresholdPolicy()
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        c = counts.setdefault(
            row.slice, {"cases": 0, "passed": 0, "failed": 0, "error": 0, "review": 0, "skipped": 0}
        )
        c["cases"] += 1
        c[row.outcome] += 1
    slices: list[SliceStats] = []
    reasons: list[str] = []
    totals = {"cases": 0, "passed": 0, "failed": 0, "error": 0, "review": 0, "skipped": 0}
    for name in sorted(counts):
        c = counts[name]
        for key in totals:
            totals[key] += c[key]
        rate = _pass_rate(c["passed"], c["cases"], c["review"], c["skipped"])
        n = c["cases"] - c["review"] - c["skipped"]
        low, high = wilson_interval(c["passed"], n) if n > 0 else (None, None)
        threshold, source = policy.threshold(name)
        ok = rate is None or rate + _EPS >= threshold
        if not ok:
            reasons.append(
                f"slice {name!r}: pass rate {rate:.1%} ({c['passed']}/{n}) "
                f"is below its threshold {threshold:.1%} ({source})"
            )
        slices.append(
            SliceStats(
                slice=name,
                cases=c["cases"],
                passed=c["passed"],
                failed=c["failed"],
                error=c["error"],
                review=c["review"],
                skipped=c["skipped"],
                pass_rate=rate,
                ci_low=low,
                ci_high=high,
                threshold=threshold,
                threshold_source=source,
                gate="pass" if ok else "fail",
            )
        )
    if totals["error"]:
        reasons.append(
            f"{totals['error']} case{'s' if totals['error'] != 1 else ''} ended in an error "
            "(the model call or the rendering failed); errors always fail the run"
        )
    return Summary(
        totals=totals,
        slices=tuple(slices),
        gate=GateResult(passed=not reasons, reasons=tuple(reasons)),
    )


def outcome_counts(rows: Iterable[CaseResult]) -> dict[str, int]:
    """How many rows ended in each outcome."""
    out = {o.value: 0 for o in Outcome}
    for row in rows:
        out[row.outcome] += 1
    return out
