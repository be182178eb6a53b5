"""A ``--prompt-sequential`` run: the seeded stratified order of its cases, its comparisons planned from
the items and the baseline, each case's rows fed to the sequential gate as they arrive."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.eprocess import Group
from pytest_promptsuite.results.eprocess import SequentialGate
from pytest_promptsuite.results.eprocess import stratified_order
from pytest_promptsuite.results.gate import GateDecision
from pytest_promptsuite.results.gate import GateResult
from pytest_promptsuite.results.gate import SettledRegression
from pytest_promptsuite.results.gate import SliceBelowThreshold
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.gate import ThresholdRule
from pytest_promptsuite.results.pairing import runs_by_case
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
    rows when given), paired as the fixed comparison pairs them, and the most repeats a case has (1 without)."""
    if baseline is None:
        return {}, 1
    chosen = [row for row in baseline.rows if baseline.variant is None or row.variant == baseline.variant]
    old = {(key.case_id, key.variant): runs for key, runs in runs_by_case(chosen).items()}
    return old, max((len(runs) for runs in old.values()), default=1)


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
    #: Cases of each (slice, variant), and each case's slice.
    cases: dict[Group, int] = field(default_factory=dict)
    slice_of: dict[str, str] = field(default_factory=dict)

    def add(self, one: PlannedCase) -> None:
        """Count one planned item (under ``case_pass`` a case's repeats are one unit)."""
        case_id, variant = one.key.case_id, one.key.variant
        self.expected[case_id] = self.expected.get(case_id, 0) + 1
        self.slice_of[case_id] = one.slice
        quota = (one.slice, variant)
        if self.settings.case_pass is None or (case_id, variant) not in self.seen:
            self.units[quota] = self.units.get(quota, 0) + 1
        if (case_id, variant) in self.seen:
            return
        self.seen.add((case_id, variant))
        self.cases[quota] = self.cases.get(quota, 0) + 1
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
            fed_by = [] if against == "baseline" else [(slice_name, self.first)]
            exact = self.settings.rule_for(both) == "delta"
            gate.compare(slice_name, variant, against, count, exact=exact, fed_by=fed_by)
        for (slice_name, variant), count in self.units.items():
            gate.threshold(slice_name, variant, policy.threshold(slice_name)[0], count)
        for group, count in self.cases.items():
            gate.plan_group(group, count)
        gate.planned = len(self.expected)


def _first_variant(planned: Sequence[PlannedCase], variant_order: Sequence[str], settings: GateSettings) -> str | None:
    """Return, with ``compare_variants`` and several variants planned, the first one (the others compare with it)."""
    present = {one.key.variant for one in planned}
    order = [v for v in variant_order if v in present]
    return order[0] if settings.compare_variants and len(order) > 1 else None


@dataclass
class SequentialRun:
    """The sequential side of a run: what it compares, the rows of each case until it is whole, and which
    (slice, variant)s stopped calling once their verdicts were settled (the reason their cases left end
    ``skipped`` with)."""

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
    #: Each case's slice.
    slice_of: dict[str, str] = field(default_factory=dict)
    pending: dict[str, list[CaseResult]] = field(default_factory=dict)
    #: Set once every verdict is settled before the last case: why the run stopped calling.
    stopped: str | None = None
    #: Each stopped (slice, variant): the reason its cases left are skipped with.
    reasons: dict[Group, str] = field(default_factory=dict)
    #: Each stopped (slice, variant): its rows skipped, and of those the calls started ahead that reached
    #: the endpoint anyway (made and paid for, not saved).
    skips: dict[Group, int] = field(default_factory=dict)
    unused: dict[Group, int] = field(default_factory=dict)

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
        return cls(gate, settings, tally.expected, old, k_old, first, tally.baseline_variant, tally.slice_of)

    def skip_reason(self, key: CaseKey) -> str | None:
        """Return why the run ``key`` makes no call (its slice and variant are settled), or None."""
        slice_name = self.slice_of.get(key.case_id)
        return None if slice_name is None else self.reasons.get((slice_name, key.variant))

    def skips_call(self, what: object) -> bool:
        """Tell whether the call of ``what`` (a :class:`CaseKey`, or a planned case) will not be used."""
        key = getattr(what, "key", what)
        return isinstance(key, CaseKey) and self.skip_reason(key) is not None

    def add(self, row: CaseResult) -> list[Group]:
        """Take one row; once its case is whole feed the gate with the rows that ran. Return the
        (slice, variant)s settled now: their calls stop."""
        if row.case_id not in self.expected:
            return []
        rows = self.pending.setdefault(row.case_id, [])
        rows.append(row)
        if len(rows) < self.expected[row.case_id]:
            return []
        del self.pending[row.case_id]
        ran = [r for r in rows if not self._count_skip(r)]
        if not ran:
            return []
        self._feed(ran)
        for group in dict.fromkeys((r.slice, r.variant) for r in ran):
            self.gate.group_done(group)
        self.gate.case_done()
        fresh = self.gate.settle_groups()
        if self.gate.settled_after is not None and self.stopped is None:
            self.stopped = f"verdict settled after {self.gate.settled_after} of {self.gate.planned} cases"
        for group in fresh:  # those settled last stop with the run
            self.reasons[group] = self.stopped or self._reason(group)
        return fresh

    def _count_skip(self, row: CaseResult) -> bool:
        """Count ``row`` if its call was skipped as settled; tell whether it was."""
        if not self.skipped(row):
            return False
        group = (row.slice, row.variant)
        self.skips[group] = self.skips.get(group, 0) + 1
        return True

    def _reason(self, group: Group) -> str:
        settled = f"verdict settled after {self.gate.stopped[group]} of {self.gate.group_planned[group]} cases"
        return f"{_where(*group)}: {settled}"

    def note_unused(self, keys: Sequence[object]) -> None:
        """Count the calls started ahead for ``keys`` that reached the endpoint though their case is skipped."""
        for key in keys:
            if isinstance(key, CaseKey) and (slice_name := self.slice_of.get(key.case_id)) is not None:
                group = (slice_name, key.variant)
                self.unused[group] = self.unused.get(group, 0) + 1

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
        """Tell whether ``row`` is a case skipped because its slice's verdict was settled."""
        return (
            row.outcome is Outcome.SKIPPED
            and row.error is not None
            and row.error == self.reasons.get((row.slice, row.variant))
        )

    def judge(self, summary: Summary) -> Summary:
        """Return the summary with the sequential gate's verdicts: for each (slice, variant) that stopped
        calling, its settled regressions and missed thresholds in place of the fixed gate's (tests at a
        stopping time chosen by the data would not keep their level); for the rest the fixed gate's (at the
        level left) and any regression the sequential test settled. Each slice's gate column follows."""
        decisions = self._decisions(summary.gate.decisions)
        failing = {
            d.slice for d in decisions if isinstance(d, (SliceBelowThreshold, SliceRegressed, SettledRegression))
        }
        slices = tuple(replace(s, gate="fail" if s.slice in failing else "pass") for s in summary.slices)
        return replace(summary, gate=GateResult.of(decisions), slices=slices, sequential=self.record())

    def record(self) -> dict[str, Any]:
        """Return ``summary.json``'s ``sequential``: the gate's, with the calls saved (in all and per
        (slice, variant)) and those started ahead that reached the endpoint for a case then skipped."""
        record = self.gate.to_dict()
        groups = [{**g, **self._calls((g["slice"], g["variant"]))} for g in record.pop("groups")]
        saved = sum(g["calls_saved"] for g in groups)
        unused = sum(g["started_unused"] for g in groups)
        return {**record, "calls_saved": saved, "started_unused": unused, "stopped": self.stopped, "slices": groups}

    def _calls(self, group: Group) -> dict[str, int]:
        skipped, unused = self.skips.get(group, 0), self.unused.get(group, 0)
        return {"skipped": skipped, "calls_saved": skipped - unused, "started_unused": unused}

    def _decisions(self, fixed_gate: Sequence[GateDecision]) -> list[GateDecision]:
        early = set(self.gate.stopped)
        cut = {key for group in early for key in self.gate.needs.get(group, ())}
        kept = [d for d in fixed_gate if not _replaced(d, early, cut)]
        fixed = {(d.slice, d.variant, d.against) for d in kept if isinstance(d, SliceRegressed)}
        settled = [d for d in self._settled() if (d.slice, d.variant, d.against) not in fixed]
        return [*settled, *self._missed(early), *kept]

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

    def _missed(self, early: set[Group]) -> list[SliceBelowThreshold]:
        found = []
        for key, q in self.gate.quotas.items():
            counted = q.ran - q.uncounted
            if key in early and q.verdict == "missed" and counted:
                rule = ThresholdRule(q.threshold, "settled")
                found.append(SliceBelowThreshold(q.slice, q.variant, rule, q.passed / counted, q.passed, counted))
        return found

    def final_settings(self) -> GateSettings:
        """Return the settings of the fixed test, for what ran every case: the level left to it."""
        return replace(self.settings, alpha=self.gate.final_alpha)


def _replaced(decision: GateDecision, early: set[Group], cut: set[tuple[str, str | None, str]]) -> bool:
    """Tell whether a fixed gate's decision is one the sequential gate makes instead: a threshold of a (slice,
    variant) that stopped early, or a comparison one of them fed."""
    if isinstance(decision, SliceBelowThreshold):
        return (decision.slice, decision.variant) in early
    if isinstance(decision, SliceRegressed):
        return (decision.slice, decision.variant, decision.against) in cut
    return False


def _where(slice_name: str, variant: str | None) -> str:
    """Name a (slice, variant) as the gate's reasons do."""
    return f"slice {slice_name!r}" + ("" if variant is None else f" [variant {variant}]")
