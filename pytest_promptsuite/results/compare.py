"""Pairing two row sets case by case: the current run with a baseline, or one prompt variant
with another. Rows pair by their :class:`~pytest_promptsuite.cases.CaseKey` (case, variant and,
when either set repeats cases, the repeat); what changed is counted per slice with McNemar p-values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from typing import TYPE_CHECKING

from ..checks.base import CaseResult
from ..checks.base import Outcome
from ..templates.prompt import prompt_display
from .frames import counts_by
from .frames import frame
from .policy import ThresholdPolicy
from .records import UNCOUNTED
from .records import BaselineDiff
from .records import Counts
from .records import Flip
from .records import FlipKind
from .records import SliceFlips
from .stats import mcnemar_p


if TYPE_CHECKING:
    import pandas as pd


__all__ = ["Comparison", "compare", "compare_variants"]

_UNCOUNTED = [o.value for o in UNCOUNTED]


@dataclass(frozen=True)
class Comparison:
    """The current rows against a baseline's: the diff, and per slice the flips and the counts."""

    diff: BaselineDiff
    #: Per slice of the current rows (sorted): the paired flips.
    flips: dict[str, SliceFlips]
    #: Per slice of the baseline rows (sorted): the baseline's counts.
    baseline_counts: dict[str, Counts]


def _keyed(rows: Sequence[CaseResult], table: pd.DataFrame, *, with_repeat: bool) -> pd.DataFrame:
    """``table`` (the frame of ``rows``) with each row's position (``idx``) and its key's name
    (``key``); of rows with the same key the last one stays."""
    keys = [r.key.name(with_repeat=with_repeat) for r in rows]
    keyed = table.assign(idx=range(len(rows)), key=keys)
    last: pd.DataFrame = keyed.drop_duplicates("key", keep="last")
    return last


def _flip(key: str, kind: FlipKind, old: CaseResult, new: CaseResult) -> Flip:
    """The flip of one case, with both prompts as text and their unified diff."""
    import difflib

    old_prompt, new_prompt = prompt_display(old.prompt), prompt_display(new.prompt)
    diff = None
    if old_prompt is not None and new_prompt is not None and old_prompt != new_prompt:
        diff = "\n".join(
            difflib.unified_diff(
                old_prompt.splitlines(), new_prompt.splitlines(), "baseline", "current", lineterm=""
            )
        )
    return Flip(
        id=key, slice=new.slice, kind=kind, old_outcome=old.outcome, new_outcome=new.outcome,
        old_output=old.output, new_output=new.output, old_prompt=old_prompt, new_prompt=new_prompt,
        prompt_diff=diff, checks=tuple(c.to_dict() for c in new.checks),
    )


def _flips(
    kind: FlipKind, paired: pd.DataFrame, rows: Sequence[CaseResult], baseline: Sequence[CaseResult]
) -> list[Flip]:
    """A flip per line of ``paired`` (the merged frame's lines of one kind), in key order."""
    return [
        _flip(str(key), kind, baseline[int(j)], rows[int(i)])
        for key, i, j in zip(paired["key"], paired["idx"], paired["idx_old"], strict=True)
    ]


def compare(
    rows: Sequence[CaseResult],
    baseline: Sequence[CaseResult],
    source: str,
    policy: ThresholdPolicy,
    *,
    table: pd.DataFrame | None = None,
) -> Comparison:
    """Pair ``rows`` with ``baseline`` by :class:`CaseKey`; the flips, new and removed ids (sorted
    by key name) and per slice the regressions, fixes and McNemar p-value.

    A flip needs both outcomes counted (neither review nor skipped). ``source`` names the
    baseline; ``policy`` gives the allowed regression the diff records; ``table`` is
    ``frame(rows)`` when the caller has already built it.
    """
    with_repeat = any(r.repeat != 0 for r in rows) or any(r.repeat != 0 for r in baseline)
    base_frame = frame(baseline)
    cur = _keyed(rows, frame(rows) if table is None else table, with_repeat=with_repeat)
    old = _keyed(baseline, base_frame, with_repeat=with_repeat)
    both = cur.merge(old, on="key", how="outer", suffixes=("", "_old"), indicator=True, sort=True)
    paired = both[both["_merge"] == "both"]
    counted = ~paired["outcome"].isin(_UNCOUNTED) & ~paired["outcome_old"].isin(_UNCOUNTED)
    now_ok, was_ok = paired["outcome"].eq(Outcome.PASSED.value), paired["outcome_old"].eq(Outcome.PASSED.value)
    reg = paired[counted & was_ok & ~now_ok]
    fix = paired[counted & ~was_ok & now_ok]
    reg_by_slice, fix_by_slice = Counter(reg["slice"]), Counter(fix["slice"])
    current_slices = sorted({r.slice for r in rows})
    flips = {}
    for name in current_slices:
        b, c = reg_by_slice[name], fix_by_slice[name]
        flips[name] = SliceFlips(regressions=b, fixes=c, p_value=mcnemar_p(b, c))
    base_counts = counts_by(base_frame, "slice")
    limit, limit_source = policy.max_regression()
    diff = BaselineDiff(
        source=source, max_regression=limit, max_regression_source=limit_source,
        regressions=tuple(reg["key"]), fixes=tuple(fix["key"]),
        new=tuple(both.loc[both["_merge"] == "left_only", "key"]),
        removed=tuple(both.loc[both["_merge"] == "right_only", "key"]),
        flips=(*_flips("regression", reg, rows, baseline), *_flips("fix", fix, rows, baseline)),
        missing_slices={n: c.pass_rate for n, c in base_counts.items() if n not in flips},
    )
    return Comparison(diff=diff, flips=flips, baseline_counts=base_counts)


def compare_variants(
    rows: Sequence[CaseResult], order: Sequence[str], policy: ThresholdPolicy
) -> Comparison | None:
    """The second variant of ``order`` paired with the first, case by case and repeat by repeat
    (with the variant stripped, so rows pair across variants); None without two such variants."""
    if len(order) < 2:
        return None
    first = [replace(r, variant=None) for r in rows if r.variant == order[0]]
    second = [replace(r, variant=None) for r in rows if r.variant == order[1]]
    if not first or not second:
        return None
    return compare(second, first, f"variant {order[0]}", policy)
