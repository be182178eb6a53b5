"""Gate decisions as data: which rule failed, for which slice (and variant), on which figures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from typing import Union

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.records import CaseRule
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.records import RegressionTest
from pytest_promptsuite.results.records import case_outcome


#: Pass rates are compared with this slack so that 0.9 of 10 cases meets a 0.9 threshold.
EPS = 1e-9


@dataclass(frozen=True)
class ThresholdRule:
    """The smallest pass rate a slice must reach, and where it came from (``config slice``, ``option``,
    ``config default`` or ``default``)."""

    threshold: float
    source: str

    def holds(self, pass_rate: float | None) -> bool:
        """Return whether ``pass_rate`` meets the threshold (a slice with no counted case always does)."""
        return pass_rate is None or pass_rate + EPS >= self.threshold


@dataclass(frozen=True)
class RegressionRule:
    """The largest drop of a slice's pass rate against the baseline that is allowed, and where it
    came from (``option``, ``config`` or ``default``); under the ``paired`` ``kind`` the drop must
    also be significant at ``alpha`` after the ``correction``."""

    max_drop: float
    source: str
    kind: str = "delta"  # "delta" | "paired"
    alpha: float = GateSettings.alpha
    correction: str = GateSettings.correction

    def allows(self, drop: float) -> bool:
        """Return whether a drop of ``drop`` (a fraction; negative for a rise) stays within the rule."""
        return not drop > self.max_drop + EPS


@dataclass(frozen=True)
class SliceBelowThreshold:
    """A slice (or one prompt variant of it) whose pass rate is below its threshold."""

    slice: str
    variant: str | None
    rule: ThresholdRule
    pass_rate: float
    passed: int
    #: The pass rate's denominator (cases that are neither review nor skipped).
    counted: int


@dataclass(frozen=True)
class SliceRegressed:
    """A slice whose pass rate dropped against the baseline by more than the rule allows."""

    slice: str
    variant: str | None
    rule: RegressionRule
    baseline_pass_rate: float
    pass_rate: float
    #: ``baseline_pass_rate - pass_rate``.
    drop: float
    #: The exact two-sided McNemar p-value of the slice's paired flips.
    p_value: float
    #: The ids that passed in the baseline and do not now, in key order.
    regressions: tuple[str, ...]
    #: ``baseline`` or ``variant NAME``.
    against: str = "baseline"
    #: Under the paired rule: the one-sided p-value, and after the correction (None without one).
    p_regression: float | None = None
    p_adjusted: float | None = None
    #: (the other side's model, this run's) when they differ: a model change, not only a prompt's.
    models: tuple[str, str] | None = None
    #: How many comparisons the correction was over.
    family: int = 1
    #: The paired cases the rates are over, when the slice also has cases in one run only.
    paired_cases: int | None = None


@dataclass(frozen=True)
class NoCommonCases:
    """A comparison (against the baseline, or the first variant) with no case in common."""

    against: str
    source: str


@dataclass(frozen=True)
class CasesErrored:
    """Cases that ended in an error (the model call or the rendering failed): errors always fail."""

    #: Every run (case, variant, repeat) that ended in an error, in row order.
    cases: tuple[CaseKey, ...]
    #: Under ``[gate] case_pass``: the errored runs of cases that passed over their repeats all the same.
    passed: tuple[CaseKey, ...] = ()

    @property
    def count(self) -> int:
        """How many cases (each case and variant once, as the slice table counts them) ended in an error."""
        return len(self.by_case()[0])

    def by_case(self) -> tuple[dict[CaseKey, list[int]], dict[CaseKey, list[int]]]:
        """Return the errored repeats of each case (and variant) that ended in an error, and of each that
        passed under ``case_pass`` all the same, in row order."""
        held = set(self.passed)
        errored: dict[CaseKey, list[int]] = {}
        passed: dict[CaseKey, list[int]] = {}
        for key in self.cases:
            side = passed if key in held else errored
            side.setdefault(CaseKey(key.case_id, key.variant), []).append(key.repeat)
        return errored, passed


@dataclass(frozen=True)
class UsageIncreased:
    """The tested model's tokens (or cost) per case rose against the baseline by more than ``[gate]
    max_tokens_increase`` (``max_cost_increase``) allows, in a slice or in ``total``."""

    #: A slice's name, or ``total``.
    scope: str
    measure: Literal["tokens", "cost"]
    #: Per case: the baseline's and this run's (tokens, or USD).
    baseline: float
    current: float
    #: The allowed increase, a share of the baseline (0.2: 20 %).
    limit: float
    #: The prompt variant of a run with variants (None: the slice or total of a run without).
    variant: str | None = None

    @property
    def increase(self) -> float | None:
        """The rise as a share of the baseline (None when the baseline's is 0)."""
        return self.current / self.baseline - 1 if self.baseline else None


@dataclass(frozen=True)
class SettledRegression:
    """A comparison the sequential gate (``--prompt-sequential``) settled as regressed before every case ran:
    its always-valid p-value reached the level the sequential test spends, after Holm's correction."""

    slice: str
    variant: str | None
    #: ``baseline`` or ``variant NAME``.
    against: str
    #: The mean drop of the pass rate over the paired cases that ran.
    drop: float
    cases: int
    planned: int
    p_sequential: float
    alpha: float
    family: int
    #: Settled by the drop alone (``delta``): certain whatever the cases not run would do.
    exact: bool = False
    #: The allowed drop.
    max_drop: float = 0.0


#: Why a gate failed: one of the decision records.
GateDecision = Union[
    SliceBelowThreshold, SliceRegressed, CasesErrored, NoCommonCases, UsageIncreased, SettledRegression, "RunIncomplete"
]


@dataclass(frozen=True)
class GateResult:
    """Whether the run passed the gate, and every decision that failed it (none when it passed)."""

    passed: bool
    decisions: tuple[GateDecision, ...] = ()

    @classmethod
    def of(cls, decisions: Iterable[GateDecision]) -> GateResult:
        """Make the result of these failures: passed exactly when there is none."""
        found = tuple(decisions)
        return cls(passed=not found, decisions=found)


def check_threshold(
    slice_name: str, counts: Counts, rule: ThresholdRule, *, variant: str | None = None
) -> SliceBelowThreshold | None:
    """Return the failure of ``slice_name`` (under ``variant``) against ``rule``; None when it holds."""
    rate = counts.pass_rate
    if rate is None or rule.holds(rate):
        return None
    return SliceBelowThreshold(
        slice=slice_name, variant=variant, rule=rule, pass_rate=rate, passed=counts.passed, counted=counts.counted
    )


def check_regression(
    test: RegressionTest,
    rule: RegressionRule,
    regressions: tuple[str, ...],
    *,
    p_value: float,
    models: tuple[str, str] | None = None,
    family: int = 1,
    unpaired: int = 0,
) -> SliceRegressed | None:
    """Return the failure of a regression test whose verdict is ``regressed``; None otherwise."""
    if test.verdict != "regressed" or test.drop is None or test.pass_rate is None:
        return None
    assert test.baseline_pass_rate is not None
    return SliceRegressed(
        slice=test.slice,
        variant=test.variant,
        rule=rule,
        baseline_pass_rate=test.baseline_pass_rate,
        pass_rate=test.pass_rate,
        drop=test.drop,
        p_value=p_value,
        regressions=regressions,
        against=test.against,
        p_regression=test.p_regression if rule.kind == "paired" else None,
        p_adjusted=test.p_adjusted if rule.kind == "paired" else None,
        models=models,
        family=family,
        paired_cases=test.cases if unpaired else None,
    )


def check_errors(rows: Iterable[CaseResult], rule: CaseRule | None = None) -> CasesErrored | None:
    """Return the rows that ended in an error, in row order (under a ``case_pass`` ``rule``, those of cases
    that passed over their repeats apart); None when there is none."""
    rows = list(rows)
    erred = tuple(r.key for r in rows if r.outcome is Outcome.ERROR)
    if not erred:
        return None
    return CasesErrored(cases=erred, passed=_held(rows, erred, rule) if rule is not None else ())


def _held(rows: list[CaseResult], erred: tuple[CaseKey, ...], rule: CaseRule) -> tuple[CaseKey, ...]:
    """Return the errored runs of the cases whose repeats pass ``rule`` all the same."""
    cases = {(key.case_id, key.variant) for key in erred}
    runs: dict[tuple[str, str | None], list[CaseResult]] = {}
    for row in rows:
        if (row.case_id, row.variant) in cases:
            runs.setdefault((row.case_id, row.variant), []).append(row)
    held = {case for case, of in runs.items() if case_outcome(of, rule) is Outcome.PASSED}
    return tuple(key for key in erred if (key.case_id, key.variant) in held)


@dataclass(frozen=True)
class RunIncomplete:
    """The run stopped before every collected case ran (Ctrl-C, ``-x`` / ``--maxfail``, an
    unusable endpoint, a crashed worker): whatever the rows say, a partial run never passes."""

    #: Why it stopped, in pytest's or our words ("interrupted", "stopping after 1 failures").
    why: str
    #: Rows of cases that ran.
    ran: int
    #: Collected cases that never ran (they have no row: rows are of executed cases).
    not_run: int
