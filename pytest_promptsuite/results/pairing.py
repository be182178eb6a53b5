"""Pairing two row sets case by case (a run with its baseline, or one prompt variant with another):
each case's pass fraction on both sides, the flips, the new and removed cases."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.prompts.core import prompt_display
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.records import BaselineDiff
from pytest_promptsuite.results.records import CaseRule
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.records import Flip
from pytest_promptsuite.results.records import FlipKind
from pytest_promptsuite.results.records import SliceFlips
from pytest_promptsuite.results.records import passes
from pytest_promptsuite.results.records import per_case
from pytest_promptsuite.results.records import tally
from pytest_promptsuite.results.stats import Stratum
from pytest_promptsuite.results.stats import mcnemar_p


#: Reads a row back whole when it left its texts on disk (a run's spool).
Reader = Callable[[CaseResult], CaseResult]


def read_as(full: Reader | None, variant: str | None) -> Reader | None:
    """Return ``full`` reading each row as variant ``variant``'s row, given back with its own variant."""
    if full is None:
        return None
    read = full
    return lambda r: replace(read(replace(r, variant=variant)), variant=r.variant)


@dataclass(frozen=True)
class PairedCase:
    """A case both row sets have (its first ``min(k)`` repeats on each side): how its runs passed, and
    the rows behind them."""

    key: CaseKey
    slice: str
    stratum: Stratum
    old_rows: tuple[CaseResult, ...]
    new_rows: tuple[CaseResult, ...]

    @property
    def kind(self) -> FlipKind | None:
        """``regression`` when the pass fraction dropped, ``fix`` when it rose, else None."""
        return "regression" if self.stratum.dropped else "fix" if self.stratum.rose else None


@dataclass(frozen=True)
class Comparison:
    """The current rows against other rows: the diff, the paired cases, and per slice the flips
    and the other side's counts."""

    diff: BaselineDiff
    #: Every paired case, in key order.
    paired: tuple[PairedCase, ...]
    #: Per slice of the current rows (sorted): the paired flips.
    flips: dict[str, SliceFlips]
    #: Per slice of the other rows (sorted): their counts over all their rows.
    baseline_counts: dict[str, Counts]
    #: Runs per case on each side (the most repeats of any case), and how many were compared.
    repeats: tuple[int, int, int] = (1, 1, 1)
    #: Per slice: its cases in only one of the two row sets (new or removed).
    unpaired: dict[str, int] = field(default_factory=dict)

    def strata(self, slice_name: str) -> tuple[Stratum, ...]:
        """Return the strata of a slice's paired cases (of every variant)."""
        return tuple(p.stratum for p in self.paired if p.slice == slice_name)


def _by_case(rows: Iterable[CaseResult]) -> dict[CaseKey, list[CaseResult]]:
    """Group rows by case and variant, in repeat order (the last row of a repeat wins, as when a shard
    is merged twice)."""
    grouped: dict[CaseKey, dict[int, CaseResult]] = {}
    for row in rows:
        grouped.setdefault(CaseKey(row.case_id, row.variant), {})[row.repeat] = row
    return {key: [runs[r] for r in sorted(runs)] for key, runs in grouped.items()}


def _flip(paired: PairedCase, kind: FlipKind, full: Reader | None = None, full_new: Reader | None = None) -> Flip:
    """Show a case's flip by the first repeat that went the ``kind`` way (each side's row read back
    whole by ``full`` / ``full_new`` when it left its texts on disk)."""
    wanted = (True, False) if kind == "regression" else (False, True)
    pairs = list(zip(paired.old_rows, paired.new_rows, strict=False))
    old, new = next(
        ((o, n) for o, n in pairs if (o.outcome is Outcome.PASSED, n.outcome is Outcome.PASSED) == wanted), pairs[0]
    )
    if full is not None:
        old = full(old)
    if full_new is not None:
        new = full_new(new)
    old_prompt, new_prompt = prompt_display(old.prompt), prompt_display(new.prompt)
    return Flip(
        id=paired.key.name(with_repeat=False),
        slice=new.slice,
        kind=kind,
        old_outcome=old.outcome,
        new_outcome=new.outcome,
        old_output=old.output,
        new_output=new.output,
        old_prompt=old_prompt,
        new_prompt=new_prompt,
        prompt_diff=_prompt_diff(old_prompt, new_prompt),
        checks=tuple(c.to_dict() for c in new.checks),
    )


def _prompt_diff(old_prompt: str | None, new_prompt: str | None) -> str | None:
    """Return the unified diff of the baseline's prompt and the current one (None when they are the same)."""
    import difflib

    if old_prompt is None or new_prompt is None or old_prompt == new_prompt:
        return None
    return "\n".join(
        difflib.unified_diff(old_prompt.splitlines(), new_prompt.splitlines(), "baseline", "current", lineterm="")
    )


def _pair(
    current: dict[CaseKey, list[CaseResult]], other: dict[CaseKey, list[CaseResult]], rule: CaseRule | None = None
) -> tuple[list[PairedCase], tuple[int, int, int]]:
    """Pair the cases both sides have, each over the first ``min(k)`` repeats; under a case ``rule`` each
    side of a case is one run, passed when the rule holds over those repeats (so both sides' verdicts
    come from as many repeats, and a case's flip is McNemar's)."""
    k_new = max((len(v) for v in current.values()), default=1)
    k_old = max((len(v) for v in other.values()), default=1)
    used = min(k_new, k_old)
    paired = []
    for key in sorted(current.keys() & other.keys(), key=lambda k: k.name(with_repeat=False)):
        old_rows, new_rows = tuple(other[key][:used]), tuple(current[key][:used])
        (old, k_o), (new, k_n) = passes(old_rows), passes(new_rows)
        if k_o and k_n:
            if rule is not None:
                old, k_o, new, k_n = int(rule(old, k_o)), 1, int(rule(new, k_n)), 1
            paired.append(PairedCase(key, new_rows[0].slice, Stratum(old, k_o, new, k_n), old_rows, new_rows))
    return paired, (k_old, k_new, used)


def compare(
    rows: Sequence[CaseResult],
    baseline: Sequence[CaseResult],
    source: str,
    policy: ThresholdPolicy,
    *,
    full: Reader | None = None,
    full_new: Reader | None = None,
    rule: CaseRule | None = None,
) -> Comparison:
    """Pair ``rows`` with ``baseline`` case by case: the flips, the new and removed ids, and per slice
    the regressions, fixes and two-sided McNemar p-value. ``full`` (``full_new``) reads a baseline
    (current) row back whole for a flip, when its texts stayed on disk. Under a case ``rule``
    (``[gate] case_pass``) cases pair by their verdicts over as many repeats on each side."""
    current, other = _by_case(rows), _by_case(baseline)
    paired, repeats = _pair(current, other, rule)
    flips_of, changed = _flips(rows, paired, full, full_new)
    base_counts = tally((r.slice, r.outcome) for r in (baseline if rule is None else per_case(baseline, rule)))
    limit, limit_source = policy.max_regression()
    diff = BaselineDiff(
        source=source,
        max_regression=limit,
        max_regression_source=limit_source,
        regressions=tuple(f.id for f in changed if f.kind == "regression"),
        fixes=tuple(f.id for f in changed if f.kind == "fix"),
        new=_only_in(current, other),
        removed=_only_in(other, current),
        flips=tuple(changed),
        missing_slices={n: c.pass_rate for n, c in base_counts.items() if n not in flips_of},
        repeats=repeats,
    )
    flips = {name: SliceFlips(b, c, mcnemar_p(b, c)) for name, (b, c) in flips_of.items()}
    return Comparison(
        diff=diff,
        paired=tuple(paired),
        flips=flips,
        baseline_counts=base_counts,
        repeats=repeats,
        unpaired=_unpaired(current, other),
    )


def _only_in(side: dict[CaseKey, list[CaseResult]], others: dict[CaseKey, list[CaseResult]]) -> tuple[str, ...]:
    """Return the names of the cases one side has and the other lacks, sorted."""
    return tuple(sorted(k.name(with_repeat=False) for k in side.keys() - others.keys()))


def _flips(
    rows: Sequence[CaseResult], paired: list[PairedCase], full: Reader | None, full_new: Reader | None
) -> tuple[dict[str, list[int]], list[Flip]]:
    """Return each slice's (regressions, fixes) and the flipped cases, regressions first."""
    flipped = [(case, kind) for case in paired if (kind := case.kind) is not None]
    flips_of = {name: [0, 0] for name in sorted({r.slice for r in rows})}
    changed: list[Flip] = []
    for wanted in ("regression", "fix"):
        for case, kind in flipped:
            if kind == wanted:
                flips_of[case.slice][0 if kind == "regression" else 1] += 1
                changed.append(_flip(case, kind, full, full_new))
    return flips_of, changed


def _unpaired(current: dict[CaseKey, list[CaseResult]], other: dict[CaseKey, list[CaseResult]]) -> dict[str, int]:
    """Count, per slice, the cases only one side has."""
    unpaired: dict[str, int] = {}
    for side, others in ((current, other), (other, current)):
        for key in side.keys() - others.keys():
            name = side[key][0].slice
            unpaired[name] = unpaired.get(name, 0) + 1
    return unpaired


def compare_variants(
    rows: Sequence[CaseResult],
    first: str,
    later: str,
    policy: ThresholdPolicy,
    full: Reader | None = None,
    rule: CaseRule | None = None,
) -> Comparison | None:
    """Pair variant ``later``'s rows with variant ``first``'s, case by case; None when either has no
    row. ``full`` reads a row back whole for a flip, when its texts stayed on disk."""
    old = [replace(r, variant=None) for r in rows if r.variant == first]
    new = [replace(r, variant=None) for r in rows if r.variant == later]
    if not old or not new:
        return None
    full_old, full_new = read_as(full, first), read_as(full, later)
    return compare(new, old, f"variant {first}", policy, full=full_old, full_new=full_new, rule=rule)


def runs_by_case(rows: Iterable[CaseResult]) -> dict[CaseKey, list[CaseResult]]:
    """Return ``rows`` by (case, variant) in repeat order, as every comparison pairs them."""
    return _by_case(rows)
