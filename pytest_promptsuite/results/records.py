"""The records of a summary (outcome counts, slice and group stats, repeats, flips, diffs, regression
tests, what a run used) and the counting of outcomes per group; each ``to_dict`` gives the keys, in
order, of ``summary.json`` and ``slices.csv``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any
from typing import Literal
from typing import TypeVar

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.stats import wilson_interval


K = TypeVar("K", bound=Hashable)

#: Outcomes a pass rate leaves out: a human decides, or the case did not run.
UNCOUNTED = frozenset({Outcome.REVIEW, Outcome.SKIPPED})


@dataclass(frozen=True)
class Counts:
    """How many cases ended in each outcome, and their pass rate ``passed / (cases - review - skipped)``
    (an error counts as not passed): the totals, every slice, tag and variant."""

    cases: int = 0
    passed: int = 0
    failed: int = 0
    error: int = 0
    review: int = 0
    skipped: int = 0

    @classmethod
    def from_tally(cls, tally: Mapping[Outcome, int]) -> Counts:
        """Count from the number of cases per outcome (a missing outcome is 0)."""
        per = {outcome.value: int(tally.get(outcome, 0)) for outcome in Outcome}
        return cls(cases=sum(per.values()), **per)

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> Counts:
        """Count these outcomes, one per case."""
        return cls.from_tally(Counter(outcomes))

    def __add__(self, other: Counts) -> Counts:
        """Add both counts up (the totals are the sum of the slices)."""
        mine, theirs = self.tallies(), other.tallies()
        return Counts(**{key: mine[key] + theirs[key] for key in mine})

    @property
    def counted(self) -> int:
        """The pass rate's denominator: the cases that are neither review nor skipped."""
        return self.cases - self.review - self.skipped

    @property
    def pass_rate(self) -> float | None:
        """``passed / counted``; None when no case counts."""
        n = self.counted
        return self.passed / n if n > 0 else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % Wilson interval of the pass rate; None when no case counts."""
        n = self.counted
        return wilson_interval(self.passed, n) if n > 0 else None

    def tallies(self) -> dict[str, int]:
        """Return ``cases`` and the number per outcome (the ``totals`` of ``summary.json``)."""
        return dict(vars(self))

    def to_dict(self) -> dict[str, Any]:
        """Return the tallies, the pass rate and its interval: the nine count columns of every table."""
        low, high = self.interval or (None, None)
        return {**self.tallies(), "pass_rate": self.pass_rate, "ci_low": low, "ci_high": high}


@dataclass(frozen=True)
class SliceFlips:
    """One slice's paired flips between two row sets, with the exact McNemar p-value."""

    regressions: int
    fixes: int
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        """Return ``regressions``, ``fixes`` and ``p_value``."""
        return dict(vars(self))


@dataclass(frozen=True)
class SliceStats:
    """One row of the slice table: counts, threshold and gate, and the baseline comparison."""

    slice: str
    counts: Counts
    threshold: float
    threshold_source: str
    gate: str  # "pass" | "fail"
    baseline_pass_rate: float | None = None
    delta: float | None = None
    regressions: int | None = None
    fixes: int | None = None
    p_value: float | None = None
    #: The regression test against the baseline (None without one).
    test: RegressionTest | None = None
    #: The slice's judged checks were decided by another judge in the baseline: those cases are not compared.
    judge_changed: bool = False

    @property
    def verdict(self) -> str | None:
        """The regression test's verdict; ``judge changed`` where that is all it could say (no regression)."""
        verdict = None if self.test is None else self.test.verdict
        return "judge changed" if self.judge_changed and verdict != "regressed" else verdict

    def to_dict(self) -> dict[str, Any]:
        """Return the row of ``slices.csv`` and of ``summary.json``'s ``slices``."""
        test = self.test
        return {
            "slice": self.slice,
            **self.counts.to_dict(),
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            "baseline_pass_rate": self.baseline_pass_rate,
            "delta": self.delta,
            "regressions": self.regressions,
            "fixes": self.fixes,
            "p_value": self.p_value,
            "p_regression": None if test is None else test.p_regression,
            "verdict": self.verdict,
            "detectable_drop": None if test is None else test.detectable_drop,
            "gate": self.gate,
        }


@dataclass(frozen=True)
class GroupStats:
    """Counts and pass rate of a group that has no gate of its own: a tag or a prompt variant."""

    name: str
    counts: Counts

    def to_dict(self) -> dict[str, Any]:
        """Return the group's name and its count columns."""
        return {"name": self.name, **self.counts.to_dict()}


@dataclass(frozen=True)
class RepeatStats:
    """A repeated case (one variant): how many of its counted runs passed."""

    case_id: str
    variant: str | None
    slice: str
    runs: int
    passed: int
    pass_fraction: float | None
    #: Under ``[gate] case_pass``: whether the case met it (None without the rule).
    case_passed: bool | None = None

    @property
    def key(self) -> CaseKey:
        """The case and variant (of every repeat)."""
        return CaseKey(self.case_id, self.variant)

    @property
    def flaky(self) -> bool:
        """Passed in some repeats only."""
        return self.pass_fraction is not None and 0 < self.pass_fraction < 1

    def to_dict(self) -> dict[str, Any]:
        """Return the entry of ``summary.json``'s ``flaky`` and ``repeated_cases`` lists (``case_passed``
        only under ``[gate] case_pass``)."""
        found = dict(vars(self))
        if self.case_passed is None:
            del found["case_passed"]
        return found


#: Which way a case flipped: it passed and now does not, or the other way round.
FlipKind = Literal["regression", "fix"]


@dataclass(frozen=True)
class Flip:
    """A case that passed in the baseline and does not now, or the other way round, with what shows why."""

    id: str
    slice: str
    kind: FlipKind
    old_outcome: Outcome
    new_outcome: Outcome
    old_output: str | None
    new_output: str | None
    old_prompt: str | None
    new_prompt: str | None
    prompt_diff: str | None  # unified diff of the prompt text; None when the prompt is unchanged
    checks: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the flip as the dashboard shows it."""
        outcomes = {"old_outcome": self.old_outcome.value, "new_outcome": self.new_outcome.value}
        return {**vars(self), **outcomes, "checks": list(self.checks)}


@dataclass(frozen=True)
class BaselineDiff:
    """The current run against a baseline: the ids that changed and the flips behind them."""

    source: str
    max_regression: float
    max_regression_source: str
    regressions: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    flips: tuple[Flip, ...] = ()
    #: Baseline slices with no row in the current run: slice -> baseline pass rate.
    missing_slices: Mapping[str, float | None] = field(default_factory=dict)
    #: The most runs of a case in the baseline and now, and how many of each were compared.
    repeats: tuple[int, int, int] = (1, 1, 1)

    def to_dict(self) -> dict[str, Any]:
        """Return ``summary.json``'s ``baseline``: where it came from and the regression allowed."""
        return {
            "source": self.source,
            "max_regression": self.max_regression,
            "max_regression_source": self.max_regression_source,
            "missing_slices": dict(self.missing_slices),
            "repeats": dict(zip(("baseline", "current", "compared"), self.repeats, strict=True)),
        }


@dataclass(frozen=True)
class VariantSlice:
    """One slice under one prompt variant: its own pass rate, gated like a slice."""

    slice: str
    variant: str
    counts: Counts
    threshold: float
    gate: str  # "pass" | "fail"
    #: With ``[gate] compare_variants``, this variant's regression test against the first.
    test: RegressionTest | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the row of ``summary.json``'s ``compared_variants.slices``."""
        return {
            "slice": self.slice,
            "variant": self.variant,
            **self.counts.to_dict(),
            "threshold": self.threshold,
            "gate": self.gate,
            **({} if self.test is None else {"against_first": self.test.to_dict()}),
        }


@dataclass(frozen=True)
class VariantComparison:
    """Prompt versions compared in one run: every slice's pass rate per variant, and the cases that
    flipped from the first variant to the second, with McNemar p-values per slice."""

    variants: tuple[str, ...]
    slices: tuple[VariantSlice, ...]
    #: Per slice, the flips from the first variant to the second.
    flips_by_slice: Mapping[str, SliceFlips] = field(default_factory=dict)
    #: The second variant against the first (None with fewer than two variants).
    diff: BaselineDiff | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return ``summary.json``'s ``compared_variants``."""
        return {
            "variants": list(self.variants),
            "slices": [s.to_dict() for s in self.slices],
            "flips_by_slice": {k: v.to_dict() for k, v in self.flips_by_slice.items()},
            "regressions": list(self.diff.regressions) if self.diff else [],
            "fixes": list(self.diff.fixes) if self.diff else [],
        }


#: What a regression test concluded about a drop (``summary.json``'s ``verdict``, the contract's words).
RegressionVerdict = Literal["regressed", "inconclusive", "no evidence of a drop"]


@dataclass(frozen=True)
class RegressionTest:
    """One compared (slice, variant) against the baseline or the first variant: its paired
    figures, the rule that judged it, the p-values and what the data can and cannot show."""

    slice: str
    variant: str | None
    #: ``baseline`` or ``variant NAME``.
    against: str
    #: ``paired`` (the drop must also be significant) or ``delta`` (the drop alone).
    rule: str
    #: Paired cases, and the runs of each compared.
    cases: int
    repeats: int
    #: Pass rates over the paired cases' compared runs, and the drop between them.
    baseline_pass_rate: float | None
    pass_rate: float | None
    drop: float | None
    #: Cases whose pass fraction dropped, and rose.
    regressions: int
    fixes: int
    #: The one-sided exact test of the drop, and after the correction over every comparison.
    p_regression: float
    p_adjusted: float | None
    #: The smallest drop this comparison catches with 90 % power (a fraction).
    detectable_drop: float | None
    verdict: RegressionVerdict
    #: When inconclusive: the cases (at these repeats) or repeats (at these cases) that would settle it.
    settle_cases: int | None = None
    settle_repeats: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the test as ``summary.json`` shows it."""
        return dict(vars(self))


@dataclass(frozen=True)
class RunInfo:
    """What a run used, so that a baseline can be told apart from a prompt change: the model of
    each variant (``""`` without variants), the suite and prompt hashes, our version."""

    version: str
    #: Per variant: ``spec``, ``base_url`` (without credentials), ``params``, ``deterministic``.
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    suite_hash: str | None = None
    prompt_hash: str | None = None

    @property
    def deterministic(self) -> bool:
        """Whether every model of the run answers the same every time (the fake model, a replay)."""
        return bool(self.models) and all(bool(m.get("deterministic")) for m in self.models.values())

    def model(self, variant: str | None) -> Mapping[str, Any] | None:
        """Return the model of ``variant`` (the run's only model when it has one for every variant)."""
        found = self.models.get(variant or "")
        if found is None and len({repr(sorted(m.items())) for m in self.models.values()}) == 1:
            found = next(iter(self.models.values()))
        return found

    @staticmethod
    def prompts_hash(rows: Iterable[CaseResult]) -> str:
        """Hash what every row sent (its key and prompt hash, in key order), short."""
        import hashlib

        digest = hashlib.sha256()
        for name, hashed in sorted((r.key.name(with_repeat=True), r.prompt_hash or "") for r in rows):
            digest.update(f"{name}\t{hashed}\n".encode())
        return digest.hexdigest()[:16]

    @staticmethod
    def model_change(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> tuple[str, str] | None:
        """Name both models (spec, base URL, params) when both are known and differ, else return None."""
        if old is None or new is None:
            return None
        a, b = _describe(old), _describe(new)
        return (a, b) if a != b else None

    def to_dict(self) -> dict[str, Any]:
        """Return ``summary.json``'s ``run``."""
        return {
            "promptsuite_version": self.version,
            "models": {name: dict(model) for name, model in self.models.items()},
            "deterministic": self.deterministic,
            "suite_hash": self.suite_hash,
            "prompt_hash": self.prompt_hash,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunInfo:
        """Read a ``run`` back from a ``summary.json``."""
        models = data.get("models")
        return cls(
            version=str(data.get("promptsuite_version", "")),
            models={str(k): dict(v) for k, v in models.items() if isinstance(v, Mapping)}
            if isinstance(models, Mapping)
            else {},
            suite_hash=data.get("suite_hash"),
            prompt_hash=data.get("prompt_hash"),
        )


def _describe(model: Mapping[str, Any]) -> str:
    text = str(model.get("spec"))
    if model.get("base_url"):
        text += f" at {model['base_url']}"
    if model.get("params"):
        text += " with " + ", ".join(f"{k}={v!r}" for k, v in sorted(dict(model["params"]).items()))
    return text


def tally(pairs: Iterable[tuple[K, Outcome]]) -> dict[K, Counts]:
    """Count outcomes per group of ``(group, outcome)`` pairs, groups in sorted order."""
    groups: dict[K, dict[Outcome, int]] = {}
    for group, outcome in pairs:
        counts = groups.get(group)
        if counts is None:
            counts = groups[group] = dict.fromkeys(Outcome, 0)
        counts[outcome] += 1
    return {group: Counts.from_tally(groups[group]) for group in sorted(groups)}  # type: ignore[type-var]


def passes(rows: Iterable[CaseResult]) -> tuple[int, int]:
    """Count (passed, counted) over some runs of a case: review and skipped runs do not count."""
    counted = [r for r in rows if r.outcome not in UNCOUNTED]
    return sum(1 for r in counted if r.outcome is Outcome.PASSED), len(counted)


#: Whether a case with ``passed`` of ``counted`` counted runs passes (``[gate] case_pass``).
CaseRule = Callable[[int, int], bool]


def case_outcome(rows: Iterable[CaseResult], rule: CaseRule) -> Outcome:
    """Return the outcome of one case over its repeats under ``rule``: passed when it holds; else an error
    when a repeat erred, else failed; review (or skipped) when no repeat counts."""
    runs = list(rows)
    passed, counted = passes(runs)
    if counted and rule(passed, counted):
        return Outcome.PASSED
    if not counted:
        return Outcome.REVIEW if any(r.outcome is Outcome.REVIEW for r in runs) else Outcome.SKIPPED
    return Outcome.ERROR if any(r.outcome is Outcome.ERROR for r in runs) else Outcome.FAILED


def per_case(rows: Iterable[CaseResult], rule: CaseRule) -> list[CaseResult]:
    """Return a row per case and variant (its first repeat's, in first-seen order) with the outcome of
    all its repeats under ``rule``: what the pass rates count under ``[gate] case_pass``."""
    groups: dict[tuple[str, str | None], list[CaseResult]] = {}
    for row in rows:
        groups.setdefault((row.case_id, row.variant), []).append(row)
    out = []
    for runs in groups.values():
        first = min(runs, key=lambda r: r.repeat)
        outcome = case_outcome(runs, rule)
        out.append(first if first.outcome is outcome and len(runs) == 1 else replace(first, outcome=outcome))
    return out
