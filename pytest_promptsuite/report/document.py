"""``summary.json``'s content: the summary as one JSON document (also embedded in the dashboard)."""

from __future__ import annotations

from typing import Any

from pytest_promptsuite.report.reasons import reason
from pytest_promptsuite.results.gate import GateResult
from pytest_promptsuite.results.summary import Summary
from pytest_promptsuite.results.usage import UsageReport


#: Bumped whenever a field of ``summary.json`` changes meaning.
SUMMARY_FORMAT_VERSION = 3


def gate_document(gate: GateResult) -> dict[str, Any]:
    """Return ``{"passed": ..., "reasons": [...]}``: whether the run passed, and each failure's sentence."""
    return {"passed": gate.passed, "reasons": [reason(d) for d in gate.decisions]}


def summary_document(summary: Summary, *, usage: UsageReport | None = None) -> dict[str, Any]:
    """Return everything ``summary.json`` holds, in its key order (``usage`` when given)."""
    return {
        "format_version": SUMMARY_FORMAT_VERSION,
        **_outcomes_part(summary),
        **_comparison_part(summary),
        **_run_part(summary, usage),
    }


def _outcomes_part(summary: Summary) -> dict[str, Any]:
    """Return the counts: totals, slices, the baseline's changed ids, the gate, tags, variants and repeats."""
    return {
        "totals": summary.totals.tallies(),
        "slices": [s.to_dict() for s in summary.slices],
        "regressions": list(summary.regressions),
        "fixes": list(summary.fixes),
        "new": list(summary.new),
        "removed": list(summary.removed),
        "gate": gate_document(summary.gate),
        "tags": [t.to_dict() for t in summary.tags],
        "variants": [v.to_dict() for v in summary.variants],
        "flaky": [r.to_dict() for r in summary.flaky],
        **({} if summary.settings.case_pass is None else {"repeated_cases": [r.to_dict() for r in summary.repeats]}),
    }


def _comparison_part(summary: Summary) -> dict[str, Any]:
    """Return what the run was compared with and under which rule: baseline, policy, variants, tests."""
    return {
        "baseline": summary.baseline.to_dict() if summary.baseline is not None else None,
        "policy": summary.policy.to_dict(),
        "compared_variants": (summary.compared_variants.to_dict() if summary.compared_variants is not None else None),
        **summary.settings.to_dict(),
        "max_regression": summary.policy.max_regression()[0],
        "regression_tests": [t.to_dict() for t in summary.tests],
    }


def _run_part(summary: Summary, usage: UsageReport | None) -> dict[str, Any]:
    """Return what the runs used: this run's and the baseline's, the usage, the sequential test."""
    return {
        "run": summary.run.to_dict() if summary.run is not None else None,
        "baseline_run": summary.baseline_run.to_dict() if summary.baseline_run is not None else None,
        **({} if usage is None else {"usage": usage.to_dict()}),
        **({} if summary.sequential is None else {"sequential": dict(summary.sequential)}),
        **summary.judges.to_dict(),
    }
