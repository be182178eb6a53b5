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


def _baseline_runs(baseline: Baseline | None) -> tuple[dict[tuple[str, str | None], list[CaseResult]], int]:
    """Return the baseline's rows by (case, variant) in repeat order (only its ``--prompt-baseline-variant``
    rows when given), and the most repeats a case has (1 without a baseline)."""
    old: dict[tuple[str, str | None], list[CaseResult]] = {}
    k_old = 1
    if baseline is None:
        return old, k_old
    for row in baseline.rows:
        if baseline.variant is None or row.variant == baseline.variant:
            old.setdefault((row.case_id, row.variant), []).append(row)
    for runs in old.values():
        runs.sort(key=lambda r: r.repeat)
        k_old = max(k_old, len(runs))
    return old, k_old


@dataclass
class _Tally:
    """What a sequential run counts of its planned items: the rows of each case, the units of each (slice,
    variant) quota, and the cases each comparison pairs."""

    settings: GateSettings
    first: str | None
    old: dict[tuple[str, str | None], list[CaseResult]]
    baseline_variant: str | None
    expected: dict[str, int] = field(default_factory=dict)
    units: dict[tuple[str, str | None], int] = field(default_factory=dict)
    paired: dict[tuple[str, str | None, str], int] = field(default_factory=dict)
    seen: set[tuple[str, str | None]] = field(default_factory=set)

    def add(self, one: PlannedCase) -> None:
        """Count one planned item (under ``case_pass`` a case's repeats are one unit)."""
        case_id, variant = one.key.case_id, one.key.variant
        self.expected[case_id] = self.expected.get(case_id, 0) + 1
        quota = (one.slice, variant)
        if self.settings.case_pass is None or (case_id, variant) not in self.seen:
            self.units[quota] = self.units.get(quota, 0) + 1
        if (case_id, variant) in self.seen:
            return
        self.seen.add((case_id, variant))
        if (case_id, self.baseline_variant or variant) in self.old:
            self._pair((one.slice, variant, "baseline"))
        if self.first is not None and variant not in (None, self.first):
            self._pair((one.slice, variant, f"variant {self.first}"))

    def _pair(self, key: tuple[str, str | None, str]) -> None:
        self.paired[key] = self.paired.get(key, 0) + 1

    def plan(self, gate: SequentialGate, policy: ThresholdPolicy, deterministic: bool, other: bool) -> None:
        """Plan the gate's comparisons (``delta`` when both sides are deterministic: this run, ``other`` the
        baseline's) and thresholds from the counts."""
        for (slice_name, variant, against), count in sorted(
            self.paired.items(), key=lambda p: (p[0][0], p[0][1] or "")
        ):
            both = deterministic and (other if against == "baseline" else True)
            gate.compare(slice_name, variant, against, count, exact=self.settings.rule_for(both) == "delta")
        for (slice_name, variant), count in self.units.items():
            gate.threshold(slice_name, variant, policy.threshold(slice_name)[0], count)
        gate.planned = len(self.expected)


def _first_variant(planned: Sequence[PlannedCase], variant_order: Sequence[str], settings: GateSettings) -> str | None:
    """Return, with ``compare_variants`` and several variants planned, the first one (the others compare with it)."""
    present = {one.key.variant for one in planned}
    order = [v for v in variant_order if v in present]
    return order[0] if settings.compare_variants and len(order) > 1 else None


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
        old, k_old = _baseline_runs(baseline)
        first = _first_variant(planned, variant_order, settings)
        tally = _Tally(settings, first, old, baseline.variant if baseline is not None else None)
        for one in planned:
            tally.add(one)
        other = baseline.run.deterministic if baseline is not None and baseline.run is not None else deterministic
        tally.plan(gate, policy, deterministic, other)
        return cls(gate, settings, tally.expected, old, k_old, first, tally.baseline_variant)

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
        for variant, runs in by_variant.items():
            self._feed_units(variant, runs)
            self._feed_baseline_drop(variant, runs)
        if self.first is not None and self.first in by_variant:
            self._feed_variant_drops(by_variant, by_variant[self.first])

    def _feed_units(self, variant: str | None, runs: list[CaseResult]) -> None:
        settings = self.settings
        if settings.case_pass is not None:
            outcomes = [case_outcome(runs, settings.case_passes)]
        else:
            outcomes = [r.outcome for r in runs]
        for outcome in outcomes:
            counted = outcome not in (Outcome.REVIEW, Outcome.SKIPPED)
            self.gate.add_unit(runs[0].slice, variant, outcome is Outcome.PASSED if counted else None)

    def _feed_baseline_drop(self, variant: str | None, runs: list[CaseResult]) -> None:
        key = (runs[0].slice, variant, "baseline")
        theirs = self.baseline.get((runs[0].case_id, self.baseline_variant or variant))
        if key not in self.gate.streams or theirs is None:
            return
        used = min(self.baseline_repeats, len(runs))
        before, now = _fraction(theirs[:used], self.settings), _fraction(runs[:used], self.settings)
        if before is not None and now is not None:
            self.gate.add_drop(runs[0].slice, variant, "baseline", before - now)

    def _feed_variant_drops(self, by_variant: dict[str | None, list[CaseResult]], base: list[CaseResult]) -> None:
        for variant, runs in by_variant.items():
            key = (runs[0].slice, variant, f"variant {self.first}")
            if variant == self.first or key not in self.gate.streams:
                continue
            used = min(len(base), len(runs))
            before, now = _fraction(base[:used], self.settings), _fraction(runs[:used], self.settings)
            if before is not None and now is not None:
                self.gate.add_drop(*key, before - now)

    def skipped(self, row: CaseResult) -> bool:
        """Tell whether ``row`` is a case skipped because the verdict was settled."""
        return self.stopped is not None and row.outcome is Outcome.SKIPPED and row.error == self.stopped

    def judge(self, summary: Summary, *, calls_saved: int) -> Summary:
        """Return the summary with the sequential gate's verdicts: for a stopped run its settled regressions
        and missed thresholds in place of the fixed gate's (tests at a stopping time chosen by the data
        would not keep their level); for a whole run the fixed gate's (at the level left) and any
        regression the sequential test settled. Each slice's gate column follows."""
        decisions = self._decisions(summary.gate.decisions)
        failing = {
            d.slice for d in decisions if isinstance(d, (SliceBelowThreshold, SliceRegressed, SettledRegression))
        }
        slices = tuple(replace(s, gate="fail" if s.slice in failing else "pass") for s in summary.slices)
        record = {**self.gate.to_dict(), "calls_saved": calls_saved, "stopped": self.stopped}
        return replace(summary, gate=GateResult.of(decisions), slices=slices, sequential=record)

    def _decisions(self, fixed_gate: Sequence[GateDecision]) -> list[GateDecision]:
        settled = self._settled()
        if self.stopped is not None:
            kept = [d for d in fixed_gate if not isinstance(d, (SliceBelowThreshold, SliceRegressed))]
            return [*settled, *self._missed(), *kept]
        fixed = {(d.slice, d.variant) for d in fixed_gate if isinstance(d, SliceRegressed)}
        extra = [d for d in settled if (d.slice, d.variant) not in fixed]
        return [*fixed_gate, *extra]

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
