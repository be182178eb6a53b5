"""Summarizing a run's rows into per-slice pass rates, intervals, the baseline comparison and the gate
(the same rows give the same summary, serial, under pytest-xdist or from merged shards)."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.gate import GateDecision
from pytest_promptsuite.results.gate import GateResult
from pytest_promptsuite.results.gate import RegressionRule
from pytest_promptsuite.results.gate import SliceBelowThreshold
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.gate import ThresholdRule
from pytest_promptsuite.results.gate import check_errors
from pytest_promptsuite.results.gate import check_threshold
from pytest_promptsuite.results.judge_report import JudgeReport
from pytest_promptsuite.results.judge_report import UngatedCheck
from pytest_promptsuite.results.judge_report import judge_changes
from pytest_promptsuite.results.judge_report import ungated_of
from pytest_promptsuite.results.pairing import Comparison
from pytest_promptsuite.results.pairing import Reader
from pytest_promptsuite.results.pairing import compare
from pytest_promptsuite.results.pairing import compare_variants
from pytest_promptsuite.results.pairing import read_as
from pytest_promptsuite.results.records import BaselineDiff
from pytest_promptsuite.results.records import CaseRule
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.records import GroupStats
from pytest_promptsuite.results.records import RegressionTest
from pytest_promptsuite.results.records import RepeatStats
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.records import SliceStats
from pytest_promptsuite.results.records import VariantComparison
from pytest_promptsuite.results.records import VariantSlice
from pytest_promptsuite.results.records import case_outcome
from pytest_promptsuite.results.records import passes
from pytest_promptsuite.results.records import per_case
from pytest_promptsuite.results.records import tally
from pytest_promptsuite.results.regression import Judgement
from pytest_promptsuite.results.regression import decide_regressions
from pytest_promptsuite.results.usage import UsageReport
from pytest_promptsuite.results.usage import check_usage


@dataclass(frozen=True)
class Summary:
    """Everything a run's report shows: totals, the slice table, the gate, tags, variants,
    repeats and, with a baseline or prompt variants, what changed case by case."""

    totals: Counts
    slices: tuple[SliceStats, ...]
    gate: GateResult
    tags: tuple[GroupStats, ...] = ()
    variants: tuple[GroupStats, ...] = ()
    repeats: tuple[RepeatStats, ...] = ()
    baseline: BaselineDiff | None = None
    policy: ThresholdPolicy = field(default_factory=ThresholdPolicy)
    compared_variants: VariantComparison | None = None
    #: How drops were judged, and every regression test of the run (baseline and variants).
    settings: GateSettings = field(default_factory=GateSettings)
    tests: tuple[RegressionTest, ...] = ()
    #: What this run and the baseline's used (models, hashes), when known.
    run: RunInfo | None = None
    baseline_run: RunInfo | None = None
    #: The run's calls, tokens and cost (with the baseline's per-case figures beside them), when given.
    usage: UsageReport | None = None
    #: ``--prompt-sequential``: its comparisons, when it settled, and the calls it saved.
    sequential: Mapping[str, Any] | None = None
    #: The run's judges: fingerprints, the rubric checks left ungated, the slices whose judge changed.
    judges: JudgeReport = field(default_factory=lambda: JudgeReport())

    @property
    def regressions(self) -> tuple[str, ...]:
        """Ids that passed in the baseline and do not now (none without a baseline)."""
        return self.baseline.regressions if self.baseline is not None else ()

    @property
    def fixes(self) -> tuple[str, ...]:
        """Ids that did not pass in the baseline and do now."""
        return self.baseline.fixes if self.baseline is not None else ()

    @property
    def new(self) -> tuple[str, ...]:
        """Ids of this run that the baseline does not have."""
        return self.baseline.new if self.baseline is not None else ()

    @property
    def removed(self) -> tuple[str, ...]:
        """Ids of the baseline that this run does not have."""
        return self.baseline.removed if self.baseline is not None else ()

    @property
    def flaky(self) -> tuple[RepeatStats, ...]:
        """Repeated cases that passed in some repeats only."""
        return tuple(r for r in self.repeats if r.flaky)

    @property
    def below_case_pass(self) -> tuple[RepeatStats, ...]:
        """Under ``[gate] case_pass``: the repeated cases that did not meet it."""
        return tuple(r for r in self.repeats if r.case_passed is False)


@dataclass(frozen=True)
class Baseline:
    """What the run is compared with: the baseline's rows, where they came from, which of its variants
    (``--prompt-baseline-variant``), and what that run used (its ``summary.json``)."""

    rows: Sequence[CaseResult]
    source: str = "baseline"
    variant: str | None = None
    run: RunInfo | None = None
    #: A row read back whole, when ``rows`` left their outputs and prompts on disk
    #: (:class:`~pytest_promptsuite.results.io.StoredResults`).
    full: Reader | None = None
    #: The baseline's calls, tokens and cost, for ``[gate] max_tokens_increase`` / ``max_cost_increase``.
    usage: UsageReport | None = None


def summarize(
    rows: Iterable[CaseResult],
    policy: ThresholdPolicy | None = None,
    *,
    baseline: Sequence[CaseResult] | Baseline | None = None,
    baseline_source: str = "baseline",
    variant_order: Sequence[str] | None = None,
    settings: GateSettings | None = None,
    run: RunInfo | None = None,
    full: Reader | None = None,
    usage: UsageReport | None = None,
    ungated: tuple[UngatedCheck, ...] | None = None,
) -> Summary:
    """Summarize ``rows``: per-slice counts, pass rates, Wilson intervals and gates, slices by name.

    With ``baseline`` (an earlier run's rows, or a :class:`Baseline`) each slice is also compared
    with it under ``settings``; ``run`` says what this run used. With prompt variants each (slice,
    variant) is gated on its own, ``variant_order`` (else sorted) putting first the variant the
    others are compared with. ``full`` reads a row back whole when ``rows`` left their texts on disk.
    ``usage`` (the rows' calls, tokens and cost) is compared with the baseline's under ``[gate]
    max_tokens_increase`` and ``max_cost_increase``. ``ungated``: the rubric checks whose judge did not gate, as
    counted when the rows arrived (else read from the rows' checks). A case whose judged checks another judge
    decided in the baseline counts as unchanged against it (neither a regression nor a fix): its slice says
    "judge changed".
    """
    policy, settings = policy or ThresholdPolicy(), settings or GateSettings()
    baseline = _as_baseline(baseline, baseline_source)
    rows = list(rows)
    rule, counted = _counted(rows, settings)
    order = _variant_order(rows, variant_order)
    changed, neutral = judge_changes(rows, baseline.rows, baseline.variant) if baseline is not None else ({}, set())
    compared = _compare_baseline(rows, _neutral(baseline, rows, neutral), order, policy, full, rule)
    later = {v: compare_variants(rows, order[0], v, policy, full, rule) for v in order[1:]}
    judgement = _decide(compared, later, settings, policy, run, baseline)
    versions = _compare_variants(counted, order, policy, later, judgement) if order else None
    slices, decisions = _slices(tally((r.slice, r.outcome) for r in counted), policy, versions, compared, judgement)
    slices = [replace(s, judge_changed=s.slice in changed) for s in slices]
    totals = sum((s.counts for s in slices), Counts())
    base_usage = baseline.usage if baseline is not None else None
    return Summary(
        totals=totals,
        slices=tuple(slices),
        gate=_gate(rows, decisions, judgement, usage, baseline, settings),
        tags=_tag_stats(counted),
        variants=_variant_stats(counted),
        repeats=_repeat_stats(rows, rule),
        baseline=compared.diff if compared is not None else None,
        policy=policy,
        compared_variants=versions,
        settings=settings,
        tests=judgement.tests,
        run=run,
        baseline_run=baseline.run if baseline is not None else None,
        usage=None if usage is None else usage.against(base_usage, baseline.variant if baseline else None),
        judges=JudgeReport.of(rows, ungated_of(rows) if ungated is None else ungated, changed),
    )


def _neutral(baseline: Baseline | None, rows: Sequence[CaseResult], cases: set[str]) -> Baseline | None:
    """Return the baseline with the rows of ``cases`` (their judge changed) given this run's outcomes: paired,
    they neither regress nor fix."""
    if baseline is None or not cases:
        return baseline
    now = {(r.case_id, r.repeat): r.outcome for r in rows if r.case_id in cases}
    kept = [
        replace(r, outcome=now.get((r.case_id, r.repeat), r.outcome)) if r.case_id in cases else r
        for r in baseline.rows
    ]
    return replace(baseline, rows=kept)


def _as_baseline(baseline: Sequence[CaseResult] | Baseline | None, source: str) -> Baseline | None:
    if baseline is not None and not isinstance(baseline, Baseline):
        return Baseline(list(baseline), source)
    return baseline


def _counted(rows: list[CaseResult], settings: GateSettings) -> tuple[CaseRule | None, list[CaseResult]]:
    """Return ``[gate] case_pass``'s rule and the rows that count: under it a case counts once."""
    rule = settings.case_passes if settings.case_pass is not None else None
    return rule, rows if rule is None else per_case(rows, rule)


def _decide(
    compared: Comparison | None,
    later: dict[str, Comparison | None],
    settings: GateSettings,
    policy: ThresholdPolicy,
    run: RunInfo | None,
    baseline: Baseline | None,
) -> Judgement:
    """Decide the regressions against the baseline and, with ``compare_variants``, the first variant."""
    return decide_regressions(
        baseline=compared,
        variants=later,
        settings=settings,
        rule=RegressionRule(*policy.max_regression()),
        run=run,
        baseline_run=baseline.run if baseline is not None else None,
        baseline_variant=baseline.variant if baseline is not None else None,
    )


def _gate(
    rows: Sequence[CaseResult],
    thresholds: list[GateDecision],
    judgement: Judgement,
    usage: UsageReport | None,
    baseline: Baseline | None,
    settings: GateSettings,
) -> GateResult:
    """Return the gate: the slices' failures in slice order, the usage increases, the errored cases."""
    errored = check_errors(rows, settings.case_passes if settings.case_pass is not None else None)
    increased = []
    if usage is not None and baseline is not None and baseline.usage is not None:
        increased = check_usage(usage, baseline.usage, settings, baseline.variant)
    ordered = _in_slice_order(thresholds, judgement.decisions)
    return GateResult.of([*ordered, *increased, *([errored] if errored else [])])


def _in_slice_order(thresholds: list[GateDecision], judged: Sequence[GateDecision]) -> list[GateDecision]:
    """Order the failures slice by slice in name order (thresholds before regressions), then the
    comparisons with no case in common."""
    by_slice = sorted(
        [(d.slice, 0, i, d) for i, d in enumerate(thresholds) if isinstance(d, SliceBelowThreshold)]
        + [(d.slice, 1, i, d) for i, d in enumerate(judged) if isinstance(d, SliceRegressed)],
        key=lambda item: item[:3],
    )
    return [d for *_, d in by_slice] + [d for d in judged if not isinstance(d, SliceRegressed)]


def _compare_baseline(
    rows: Sequence[CaseResult],
    baseline: Baseline | None,
    order: Sequence[str],
    policy: ThresholdPolicy,
    full_new: Reader | None = None,
    rule: CaseRule | None = None,
) -> Comparison | None:
    """Pair the rows with the baseline's by (case, variant); with ``--prompt-baseline-variant`` the
    baseline's rows of that variant stand for every variant of this run."""
    if baseline is None:
        return None
    base_rows = list(baseline.rows)
    if baseline.variant is not None:
        chosen = [r for r in base_rows if r.variant == baseline.variant]
        targets: list[str | None] = [*order] or [None]
        base_rows = [replace(r, variant=v) for v in targets for r in chosen]
    full = baseline.full if baseline.variant is None else read_as(baseline.full, baseline.variant)
    return compare(rows, base_rows, baseline.source, policy, full=full, full_new=full_new, rule=rule)


def _variant_order(rows: Sequence[CaseResult], preferred: Sequence[str] | None) -> list[str]:
    """Return the variants of ``rows``: those of ``preferred`` in its order, then the rest sorted."""
    present = sorted({r.variant for r in rows if r.variant is not None})
    first = [v for v in (preferred or ()) if v in present]
    return first + [v for v in present if v not in first]


def _slices(
    counts: dict[str, Counts],
    policy: ThresholdPolicy,
    versions: VariantComparison | None,
    compared: Comparison | None,
    judgement: Judgement,
) -> tuple[list[SliceStats], list[GateDecision]]:
    """Return the slice table and its threshold failures, in slice order (a regression failure is the
    judgement's; the slice's row shows the gate it leads to)."""
    slices: list[SliceStats] = []
    decisions: list[GateDecision] = []
    regressed = {d.slice for d in judgement.decisions if isinstance(d, SliceRegressed)}
    for name, c in counts.items():
        rule = ThresholdRule(*policy.threshold(name))
        failed = _below_threshold(name, c, rule, versions)
        stats = SliceStats(
            slice=name,
            counts=c,
            threshold=rule.threshold,
            threshold_source=rule.source,
            gate="fail" if failed or name in regressed else "pass",
        )
        if compared is not None:
            stats = _against_baseline(stats, compared, judgement.by_slice.get(name))
        slices.append(stats)
        decisions += failed
    return slices, decisions


def _below_threshold(
    name: str, counts: Counts, rule: ThresholdRule, versions: VariantComparison | None
) -> list[GateDecision]:
    """Return a slice's threshold failures: its own, or each prompt version's (each must meet it)."""
    if versions is not None:
        found = [
            check_threshold(name, vs.counts, rule, variant=vs.variant) for vs in versions.slices if vs.slice == name
        ]
    else:
        found = [check_threshold(name, counts, rule)]
    return [d for d in found if d is not None]


def _against_baseline(stats: SliceStats, compared: Comparison, test: RegressionTest | None) -> SliceStats:
    """Fill in the baseline columns of ``stats``."""
    name = stats.slice
    flips = compared.flips[name]
    old = compared.baseline_counts.get(name)
    old_rate = None if old is None else old.pass_rate
    rate = stats.counts.pass_rate
    return replace(
        stats,
        baseline_pass_rate=old_rate,
        delta=rate - old_rate if rate is not None and old_rate is not None else None,
        regressions=flips.regressions,
        fixes=flips.fixes,
        p_value=flips.p_value,
        test=test,
    )


def _compare_variants(
    rows: Sequence[CaseResult],
    order: Sequence[str],
    policy: ThresholdPolicy,
    later: dict[str, Comparison | None],
    judgement: Judgement,
) -> VariantComparison:
    """Gate each (slice, variant) like a slice, and diff the second variant with the first."""
    rank = {v: i for i, v in enumerate(order)}
    pairs = tally(((r.slice, r.variant), r.outcome) for r in rows if r.variant is not None)
    groups = sorted(pairs.items(), key=lambda g: (g[0][0], rank[g[0][1]]))
    table = []
    for (slice_name, variant), c in groups:
        rule = ThresholdRule(*policy.threshold(slice_name))
        table.append(
            VariantSlice(
                slice=slice_name,
                variant=variant,
                counts=c,
                threshold=rule.threshold,
                gate="pass" if rule.holds(c.pass_rate) else "fail",
                test=judgement.by_variant.get((slice_name, variant)),
            )
        )
    compared = later.get(order[1]) if len(order) >= 2 else None
    return VariantComparison(
        variants=tuple(order),
        slices=tuple(table),
        flips_by_slice=compared.flips if compared is not None else {},
        diff=compared.diff if compared is not None else None,
    )


def _tag_stats(rows: Sequence[CaseResult]) -> tuple[GroupStats, ...]:
    """Count outcomes per tag (a row counts once in each of its tags)."""
    return tuple(GroupStats(name, c) for name, c in tally((t, r.outcome) for r in rows for t in r.tags).items())


def _variant_stats(rows: Sequence[CaseResult]) -> tuple[GroupStats, ...]:
    """Count outcomes per prompt variant (``(none)`` for rows without one); none without variants."""
    if all(r.variant is None for r in rows):
        return ()
    named = tally(("(none)" if r.variant is None else r.variant, r.outcome) for r in rows)
    return tuple(GroupStats(name, c) for name, c in named.items())


def _repeat_stats(rows: Sequence[CaseResult], rule: CaseRule | None = None) -> tuple[RepeatStats, ...]:
    """Count, per repeated case and variant, the runs that count and those that passed (and, under a
    case ``rule``, whether the case passed)."""
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for row in rows:
        groups.setdefault((row.case_id, row.variant or ""), []).append(row)
    repeated = sorted(key for key, runs_of in groups.items() if len(runs_of) > 1)
    return tuple(_repeats(case_id, variant, groups[case_id, variant], rule) for case_id, variant in repeated)


def _repeats(case_id: str, variant: str, runs_of: list[CaseResult], rule: CaseRule | None) -> RepeatStats:
    """Count one repeated case's runs that count and those that passed (under a ``rule``, whether it passed)."""
    passed, runs = passes(runs_of)
    fraction = passed / runs if runs else None
    verdict = None if rule is None else case_outcome(runs_of, rule) is Outcome.PASSED
    return RepeatStats(case_id, variant or None, runs_of[0].slice, runs, passed, fraction, case_passed=verdict)
