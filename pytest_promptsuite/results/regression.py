"""The regression rule: each compared (slice, variant) against the baseline (or the first variant)
judged by ``delta`` or ``paired``, into its regression test and the gate's failures."""

from __future__ import annotations

import math
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.results.gate import EPS
from pytest_promptsuite.results.gate import GateDecision
from pytest_promptsuite.results.gate import NoCommonCases
from pytest_promptsuite.results.gate import RegressionRule
from pytest_promptsuite.results.gate import check_regression
from pytest_promptsuite.results.pairing import Comparison
from pytest_promptsuite.results.records import RegressionTest
from pytest_promptsuite.results.records import RegressionVerdict
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.stats import Stratum
from pytest_promptsuite.results.stats import detectable_drop
from pytest_promptsuite.results.stats import holm
from pytest_promptsuite.results.stats import mcnemar_p
from pytest_promptsuite.results.stats import settling_size
from pytest_promptsuite.results.stats import stratified_p


@dataclass(frozen=True)
class Comparand:
    """One compared (slice, variant): its paired cases and the rule that judges it."""

    slice: str
    variant: str | None
    #: ``baseline`` or ``variant NAME``.
    against: str
    strata: tuple[Stratum, ...]
    rule: str  # "paired" | "delta"

    def rates(self) -> tuple[float | None, float | None]:
        """Return the pass rates of the other side and of this one over the compared runs."""
        runs_old = sum(s.k_old for s in self.strata)
        runs_new = sum(s.k_new for s in self.strata)
        old = sum(s.old for s in self.strata) / runs_old if runs_old else None
        new = sum(s.new for s in self.strata) / runs_new if runs_new else None
        return old, new


def _delta_detectable(comparand: Comparand, max_drop: float) -> float | None:
    """Return, under ``delta``, the smallest drop of whole runs that exceeds the allowed one."""
    runs = sum(s.k_new for s in comparand.strata)
    if not runs:
        return None
    return (math.floor(max_drop * runs + 1e-9) + 1) / runs


_Settle = tuple[int | None, int | None]


def _delta_verdict(comparand: Comparand, beyond: bool, max_drop: float) -> tuple[float | None, RegressionVerdict]:
    """Return, under ``delta``, the detectable drop and the verdict: a drop beyond the allowed one regressed."""
    return _delta_detectable(comparand, max_drop), "regressed" if beyond else "no evidence of a drop"


def _paired_verdict(
    strata: tuple[Stratum, ...], drop: float | None, significant: bool, level: float
) -> tuple[float | None, RegressionVerdict, _Settle]:
    """Return, under ``paired``, the detectable drop, the verdict and, when inconclusive, what would settle it
    (``drop`` is only given when it is beyond the allowed one)."""
    detectable = detectable_drop(strata, level)
    if drop is None:
        return detectable, "no evidence of a drop", (None, None)
    if significant:
        return detectable, "regressed", (None, None)
    if detectable is None or drop < detectable - EPS:
        return detectable, "inconclusive", settling_size(strata, level, drop)
    return detectable, "no evidence of a drop", (None, None)


def _test(
    comparand: Comparand, p: float, p_adjusted: float | None, settings: GateSettings, max_drop: float, level: float
) -> RegressionTest:
    """Return one comparison's figures, verdict and, when inconclusive, what would settle it."""
    old, new = comparand.rates()
    drop = None if old is None or new is None else old - new
    beyond = drop is not None and drop > max_drop + EPS
    strata = comparand.strata
    settle: _Settle = (None, None)
    if comparand.rule == "delta":
        detectable, verdict = _delta_verdict(comparand, beyond, max_drop)
    else:
        significant = (p_adjusted if p_adjusted is not None else p) <= settings.alpha
        detectable, verdict, settle = _paired_verdict(strata, drop if beyond else None, significant, level)
    repeats = max((min(s.k_old, s.k_new) for s in strata), default=0)
    return RegressionTest(
        slice=comparand.slice,
        variant=comparand.variant,
        against=comparand.against,
        rule=comparand.rule,
        cases=len(strata),
        repeats=repeats,
        baseline_pass_rate=old,
        pass_rate=new,
        drop=drop,
        regressions=sum(s.dropped for s in strata),
        fixes=sum(s.rose for s in strata),
        p_regression=p,
        p_adjusted=p_adjusted,
        detectable_drop=detectable,
        verdict=verdict,
        settle_cases=settle[0],
        settle_repeats=settle[1],
    )


def regression_tests(comparands: Sequence[Comparand], settings: GateSettings, max_drop: float) -> list[RegressionTest]:
    """Judge every comparison, in the order given; the ``paired`` ones are one family for the correction."""
    p_values = [stratified_p(c.strata) for c in comparands]
    family = [i for i, c in enumerate(comparands) if c.rule == "paired"]
    adjusted, level = _corrected(p_values, family, settings)
    return [_test(c, p_values[i], adjusted.get(i), settings, max_drop, level) for i, c in enumerate(comparands)]


def _corrected(p_values: list[float], family: list[int], settings: GateSettings) -> tuple[dict[int, float], float]:
    """Return the family's Holm-adjusted p-values by position, and the level the family's smallest p-value must
    reach (Bonferroni's: what the detectable drop is computed at); none and ``alpha`` without a correction."""
    if settings.correction != "holm" or not family:
        return {}, settings.alpha
    adjusted = dict(zip(family, holm([p_values[i] for i in family]), strict=True))
    return adjusted, settings.alpha / len(family)


@dataclass(frozen=True)
class Judgement:
    """Every comparison of a run judged: its tests, the test each slice row shows, each later variant's
    tests against the first, and the gate's failures."""

    tests: tuple[RegressionTest, ...] = ()
    #: Per slice: the baseline test its row shows (the slice's own, or pooled over its variants).
    by_slice: dict[str, RegressionTest] = field(default_factory=dict)
    #: Per (slice, variant): a later variant's test against the first.
    by_variant: dict[tuple[str, str], RegressionTest] = field(default_factory=dict)
    decisions: tuple[GateDecision, ...] = ()


_SEVERITY = {"regressed": 2, "inconclusive": 1, "no evidence of a drop": 0}


def _units(comparison: Comparison, against: str, rule: str, variant: str | None = None) -> list[Comparand]:
    """Return a comparand per (slice, variant) of a comparison's paired cases, in order (all of them
    ``variant`` when given: a variant's rows compared with the first's carry none)."""
    grouped: dict[tuple[str, str | None], list[Stratum]] = {}
    for case in comparison.paired:
        grouped.setdefault((case.slice, variant or case.key.variant), []).append(case.stratum)
    return [
        Comparand(name, variant, against, tuple(strata), rule)
        for (name, variant), strata in sorted(grouped.items(), key=lambda g: (g[0][0], g[0][1] or ""))
    ]


def _ids(comparison: Comparison, slice_name: str, variant: str | None) -> tuple[str, ...]:
    """Return the regressed cases of one compared (slice, variant), by key name."""
    return tuple(
        p.key.name(with_repeat=False)
        for p in comparison.paired
        if p.slice == slice_name and p.key.variant == variant and p.kind == "regression"
    )


def _pooled(
    tests: list[RegressionTest], strata: tuple[Stratum, ...], settings: GateSettings, max_drop: float
) -> RegressionTest:
    """Return a slice's row over all its variants: the pooled figures, the worst variant's verdict."""
    first = tests[0]
    if len(tests) == 1:
        return first
    alone = replace(settings, correction="none")
    pooled = regression_tests([Comparand(first.slice, None, first.against, strata, first.rule)], alone, max_drop)[0]
    worst = max(tests, key=lambda t: _SEVERITY[t.verdict])
    return replace(pooled, verdict=worst.verdict, settle_cases=worst.settle_cases, settle_repeats=worst.settle_repeats)


def pair_rows(
    baseline: Comparison | None,
    variants: Mapping[str, Comparison | None],
    settings: GateSettings,
    run: RunInfo | None = None,
    baseline_run: RunInfo | None = None,
) -> list[Comparand]:
    """Return the compared (slice, variant)s of a run: against its baseline, then, with ``compare_variants``,
    each later variant's against the first, each under the rule its runs allow."""
    current = run.deterministic if run is not None else False
    other = baseline_run.deterministic if baseline_run is not None else current
    comparands: list[Comparand] = []
    if baseline is not None:
        comparands += _units(baseline, "baseline", settings.rule_for(current and other))
    if settings.compare_variants:
        for name, comparison in variants.items():
            if comparison is not None:
                comparands += _units(comparison, comparison.diff.source, settings.rule_for(current), name)
    return comparands


def _unpaired(
    baseline: Comparison | None, variants: Mapping[str, Comparison | None], settings: GateSettings
) -> list[GateDecision]:
    """Return the failures of the comparisons with no case in common: the baseline's, then each variant's."""
    decisions: list[GateDecision] = []
    if baseline is not None and not baseline.paired:
        decisions.append(NoCommonCases("baseline", baseline.diff.source))
    if settings.compare_variants:
        first = next((c.diff.source for c in variants.values() if c is not None), "")
        decisions += [
            NoCommonCases(f"first {first}", f"variant {v}")
            for v, c in variants.items()
            if c is not None and not c.paired
        ]
    return decisions


@dataclass(frozen=True)
class _Runs:
    """What a regression failure names beside its test: the two runs and the baseline's variant."""

    run: RunInfo | None
    baseline_run: RunInfo | None
    baseline_variant: str | None

    def models(self, test: RegressionTest) -> tuple[str, str] | None:
        """Return the change of model between the baseline's run and this one for a baseline test."""
        if test.against != "baseline" or self.run is None or self.baseline_run is None:
            return None
        return RunInfo.model_change(
            self.baseline_run.model(self.baseline_variant or test.variant), self.run.model(test.variant)
        )


def _failure(
    test: RegressionTest, comparison: Comparison, settings: GateSettings, rule: RegressionRule, runs: _Runs, family: int
) -> GateDecision | None:
    """Return the gate's failure for one regression test; None when it did not regress."""
    against_baseline = test.against == "baseline"
    return check_regression(
        test,
        replace(rule, kind=test.rule, alpha=settings.alpha, correction=settings.correction),
        _ids(comparison, test.slice, None if not against_baseline else test.variant),
        p_value=mcnemar_p(test.regressions, test.fixes),
        models=runs.models(test),
        family=max(1, family),
        unpaired=comparison.unpaired.get(test.slice, 0),
    )


def _regressed(
    tests: Sequence[RegressionTest],
    baseline: Comparison | None,
    variants: Mapping[str, Comparison | None],
    settings: GateSettings,
    rule: RegressionRule,
    runs: _Runs,
    family: int,
) -> list[GateDecision]:
    """Return the gate's failure of every regression test that regressed, in test order."""
    decisions: list[GateDecision] = []
    for test in tests:
        comparison = baseline if test.against == "baseline" else variants.get(test.variant or "")
        assert comparison is not None
        found = _failure(test, comparison, settings, rule, runs, family)
        if found is not None:
            decisions.append(found)
    return decisions


def decide_regressions(
    *,
    baseline: Comparison | None,
    variants: Mapping[str, Comparison | None],
    settings: GateSettings,
    rule: RegressionRule,
    run: RunInfo | None = None,
    baseline_run: RunInfo | None = None,
    baseline_variant: str | None = None,
) -> Judgement:
    """Decide the run's regressions against its baseline and, with ``compare_variants``, each later variant's
    (``variants``: variant -> its comparison with the first) against the first: pair, test as one family, decide."""
    comparands = pair_rows(baseline, variants, settings, run, baseline_run)
    tests = regression_tests(comparands, settings, rule.max_drop)
    family = sum(1 for c in comparands if c.rule == "paired")
    runs = _Runs(run, baseline_run, baseline_variant)
    decisions = _unpaired(baseline, variants, settings) + _regressed(
        tests, baseline, variants, settings, rule, runs, family
    )
    return Judgement(
        tests=tuple(tests),
        by_slice=_slice_rows(tests, baseline, settings, rule.max_drop),
        by_variant={(t.slice, t.variant or ""): t for t in tests if t.against != "baseline"},
        decisions=tuple(decisions),
    )


def _slice_rows(
    tests: Sequence[RegressionTest], baseline: Comparison | None, settings: GateSettings, max_drop: float
) -> dict[str, RegressionTest]:
    """Return the baseline test each slice row shows."""
    by_slice: dict[str, list[RegressionTest]] = {}
    for test in tests:
        if test.against == "baseline":
            by_slice.setdefault(test.slice, []).append(test)
    if baseline is None:
        return {}
    return {name: _pooled(found, baseline.strata(name), settings, max_drop) for name, found in by_slice.items()}
