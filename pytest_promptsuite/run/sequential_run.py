"""A ``--prompt-sequential`` run: the seeded stratified order of its cases, its comparisons planned from
the items and the baseline, each case's rows fed to the sequential gate as they arrive."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.eprocess import SequentialGate
from pytest_promptsuite.results.eprocess import stratified_order
from pytest_promptsuite.results.gate import GateDecision
from pytest_promptsuite.results.gate import GateResult
from pytest_promptsuite.results.gate import SettledRegression
from pytest_promptsuite.results.gate import SliceBelowThreshold
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.gate import ThresholdRule
from pytest_promptsuite.results.records import case_outcome
from pytest_promptsuite.results.records import passes


if TYPE_CHECKING:
    from pytest_promptsuite.results.summary import Baseline
    from pytest_promptsuite.results.summary import Summary
    from pytest_promptsuite.run.pipeline import PlannedCase


#: The seed of the order (the same suite runs in the same order; another seed is another sample).
ORDER_SEED = 2026


def run_order(planned: Sequence[PlannedCase]) -> list[int]:
    """Return the positions of ``planned`` in the sequential order: the cases (each with all its
    variants and repeats together) shuffled within their slice by a seed, the slices interleaved."""
    by_case: dict[str, list[int]] = {}
    slices: dict[str, list[str]] = {}
    for position, one in enumerate(planned):
        case_id = one.key.case_id
        if case_id not in by_case:
            slices.setdefault(one.slice, []).append(case_id)
        by_case.setdefault(case_id, []).append(position)
    seed = zlib.crc32("\0".join(sorted(by_case)).encode()) ^ ORDER_SEED
    return [position for case_id in stratified_order(slices, seed) for position in by_case[case_id]]


def _fraction(rows: Sequence[CaseResult], settings: GateSettings) -> float | None:
    """Return the pass fraction of a case's runs (its verdict, 0 or 1, under ``case_pass``); None when none counts."""
    passed, counted = passes(rows)
    if not counted:
        return None
    if settings.case_pass is not None:
        return float(settings.case_passes(passed, counted))
    return passed / counted


@dataclass
class SequentialRun:
    """The sequential side of a run: what it compares, the rows of each case until it is whole, and why
    calls stopped (the reason the cases not run end ``skipped`` with)."""

    gate: SequentialGate
    settings: GateSettings
    #: Rows each case has before it is whole (its variants x repeats).
    expected: dict[str, int]
    #: The baseline's rows by (case, variant) (its ``--prompt-baseline-variant`` rows stand for every variant).
    baseline: dict[tuple[str, str | None], list[CaseResult]]
    baseline_repeats: int
    #: With ``compare_variants``: the first variant, which the others are compared with.
    first: str | None
    #: ``--prompt-baseline-variant``: the baseline's variant every variant of this run pairs with.
    baseline_variant: str | None = None
    pending: dict[str, list[CaseResult]] = field(default_factory=dict)
    #: Set once the verdict is settled: the reason every later case is skipped with.
    stopped: str | None = None

    @classmethod
    def plan(
        cls,
        planned: Sequence[PlannedCase],
        *,
        baseline: Baseline | None,
        settings: GateSettings,
        policy: ThresholdPolicy,
        variant_order: Sequence[str],
        deterministic: bool,
    ) -> SequentialRun:
        """Plan the comparisons and thresholds of the cases ``planned`` (in run order); ``deterministic``:
        this run's models answer the same every time (the ``delta`` rule then judges what they compare)."""
        gate = SequentialGate(alpha=settings.alpha, max_drop=policy.max_regression()[0])
        old: dict[tuple[str, str | None], list[CaseResult]] = {}
        k_old = 1
        if baseline is not None:
            for row in baseline.rows:
                if baseline.variant is None or row.variant == baseline.variant:
                    old.setdefault((row.case_id, row.variant), []).append(row)
            for runs in old.values():
                runs.sort(key=lambda r: r.repeat)
                k_old = max(k_old, len(runs))
        present = {one.key.variant for one in planned}
        order = [v for v in variant_order if v in present]
        first = order[0] if settings.compare_variants and len(order) > 1 else None
        expected: dict[str, int] = {}
        units: dict[tuple[str, str | None], int] = {}
        paired: dict[tuple[str, str | None, str], int] = {}
        seen: set[tuple[str, str | None]] = set()
        for one in planned:
            case_id, variant = one.key.case_id, one.key.variant
            expected[case_id] = expected.get(case_id, 0) + 1
            quota = (one.slice, variant)
            if settings.case_pass is None or (case_id, variant) not in seen:
                units[quota] = units.get(quota, 0) + 1
            if (case_id, variant) in seen:
                continue
            seen.add((case_id, variant))
            if baseline is not None and (case_id, baseline.variant or variant) in old:
                key = (one.slice, variant, "baseline")
                paired[key] = paired.get(key, 0) + 1
            if first is not None and variant not in (None, first):
                key = (one.slice, variant, f"variant {first}")
                paired[key] = paired.get(key, 0) + 1
        other = baseline.run.deterministic if baseline is not None and baseline.run is not None else deterministic
        for (slice_name, variant, against), count in sorted(paired.items(), key=lambda p: (p[0][0], p[0][1] or "")):
            both = deterministic and (other if against == "baseline" else True)
            gate.compare(slice_name, variant, against, count, exact=settings.rule_for(both) == "delta")
        for (slice_name, variant), count in units.items():
            gate.threshold(slice_name, variant, policy.threshold(slice_name)[0], count)
        gate.planned = len(expected)
        return cls(gate, settings, expected, old, k_old, first, baseline.variant if baseline is not None else None)

    def add(self, row: CaseResult) -> bool:
        """Take one row; once its case is whole feed the gate. Return whether calls should stop now."""
        if self.stopped is not None or row.case_id not in self.expected:
            return False
        rows = self.pending.setdefault(row.case_id, [])
        rows.append(row)
        if len(rows) < self.expected[row.case_id]:
            return False
        del self.pending[row.case_id]
        self._feed(rows)
        if self.gate.case_done():
            self.stopped = f"verdict settled after {self.gate.settled_after} of {self.gate.planned} cases"
            return True
        return False

    def _feed(self, rows: list[CaseResult]) -> None:
        by_variant: dict[str | None, list[CaseResult]] = {}
        for row in sorted(rows, key=lambda r: r.repeat):
            by_variant.setdefault(row.variant, []).append(row)
        settings, gate = self.settings, self.gate
        for variant, runs in by_variant.items():
            slice_name = runs[0].slice
            if settings.case_pass is not None:
                outcomes = [case_outcome(runs, settings.case_passes)]
            else:
                outcomes = [r.outcome for r in runs]
            for outcome in outcomes:
                counted = outcome not in (Outcome.REVIEW, Outcome.SKIPPED)
                gate.add_unit(slice_name, variant, outcome is Outcome.PASSED if counted else None)
            key = (slice_name, variant, "baseline")
            theirs = self.baseline.get((runs[0].case_id, self.baseline_variant or variant))
            if key in gate.streams and theirs is not None:
                used = min(self.baseline_repeats, len(runs))
                before, now = _fraction(theirs[:used], settings), _fraction(runs[:used], settings)
                if before is not None and now is not None:
                    gate.add_drop(slice_name, variant, "baseline", before - now)
        if self.first is not None and self.first in by_variant:
            base = by_variant[self.first]
            for variant, runs in by_variant.items():
                key = (runs[0].slice, variant, f"variant {self.first}")
                if variant == self.first or key not in gate.streams:
                    continue
                used = min(len(base), len(runs))
                before, now = _fraction(base[:used], settings), _fraction(runs[:used], settings)
                if before is not None and now is not None:
                    gate.add_drop(*key, before - now)

    def skipped(self, row: CaseResult) -> bool:
        """Tell whether ``row`` is a case skipped because the verdict was settled."""
        return self.stopped is not None and row.outcome is Outcome.SKIPPED and row.error == self.stopped

    def judge(self, summary: Summary, *, calls_saved: int) -> Summary:
        """Return the summary with the sequential gate's verdicts: for a stopped run its settled regressions
        and missed thresholds in place of the fixed gate's (tests at a stopping time chosen by the data
        would not keep their level); for a whole run the fixed gate's (at the level left) and any
        regression the sequential test settled. Each slice's gate column follows."""
        settled = self._settled()
        if self.stopped is not None:
            kept = [d for d in summary.gate.decisions if not isinstance(d, (SliceBelowThreshold, SliceRegressed))]
            decisions: list[GateDecision] = [*settled, *self._missed(), *kept]
        else:
            fixed = {(d.slice, d.variant) for d in summary.gate.decisions if isinstance(d, SliceRegressed)}
            extra = [d for d in settled if (d.slice, d.variant) not in fixed]
            decisions = [*summary.gate.decisions, *extra]
        failing = {
            d.slice for d in decisions if isinstance(d, (SliceBelowThreshold, SliceRegressed, SettledRegression))
        }
        slices = tuple(replace(s, gate="fail" if s.slice in failing else "pass") for s in summary.slices)
        record = {**self.gate.to_dict(), "calls_saved": calls_saved, "stopped": self.stopped}
        return replace(summary, gate=GateResult.of(decisions), slices=slices, sequential=record)

    def _settled(self) -> list[SettledRegression]:
        gate = self.gate
        regressed = gate.regressed()
        return [
            SettledRegression(
                slice=s.slice,
                variant=s.variant,
                against=s.against,
                drop=s.drop or 0.0,
                cases=s.n,
                planned=s.planned,
                p_sequential=s.p_value,
                alpha=gate.sequential_alpha,
                family=sum(not other.exact for other in gate.streams.values()),
                exact=s.exact,
                max_drop=gate.max_drop,
            )
            for key, s in gate.streams.items()
            if key in regressed
        ]

    def _missed(self) -> list[SliceBelowThreshold]:
        found = []
        for q in self.gate.quotas.values():
            counted = q.ran - q.uncounted
            if q.verdict == "missed" and counted:
                rule = ThresholdRule(q.threshold, "settled")
                found.append(SliceBelowThreshold(q.slice, q.variant, rule, q.passed / counted, q.passed, counted))
        return found

    def final_settings(self) -> GateSettings:
        """Return the settings of the fixed test of a run that was not stopped: the level left to it."""
        return replace(self.settings, alpha=self.gate.final_alpha)
