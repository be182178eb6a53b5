"""Rows as a pandas frame and outcome counts per group, the aggregation behind every table.

pandas is imported inside the functions, so that loading the plugin stays cheap for runs that
never aggregate. Frames hold an outcome as its ``.value`` (a plain string column).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..checks.base import CaseResult
from ..checks.base import Outcome
from .records import Counts


if TYPE_CHECKING:
    import pandas as pd


__all__ = ["counts_by", "counts_by_pair", "frame", "tag_frame"]

#: Each outcome's ``.value``: a dict lookup, where the enum's ``value`` property costs a call per row.
_VALUE = {outcome: outcome.value for outcome in Outcome}


def frame(rows: Sequence[CaseResult]) -> pd.DataFrame:
    """One line per row: ``case_id``, ``slice``, ``variant``, ``repeat`` and ``outcome``."""
    import pandas as pd

    table: pd.DataFrame = pd.DataFrame(
        {
            "case_id": [r.case_id for r in rows],
            "slice": [r.slice for r in rows],
            "variant": [r.variant for r in rows],
            "repeat": [r.repeat for r in rows],
            "outcome": [_VALUE[r.outcome] for r in rows],
        }
    )
    return table


def tag_frame(rows: Sequence[CaseResult]) -> pd.DataFrame:
    """One line per (row, tag): ``tag`` and ``outcome``; rows without tags have none."""
    import pandas as pd

    pairs = [(tag, _VALUE[r.outcome]) for r in rows for tag in r.tags]
    table: pd.DataFrame = pd.DataFrame(pairs, columns=["tag", "outcome"])
    return table


def _tallies(df: pd.DataFrame, by: list[str]) -> list[tuple[tuple[str, ...], Counts]]:
    """Counts per distinct value of the ``by`` columns, sorted by them."""
    if df.empty:
        return []
    table = df.groupby([*by, "outcome"], sort=True).size().unstack(fill_value=0)
    out = []
    for name, row in table.iterrows():
        key = tuple(str(part) for part in name) if isinstance(name, tuple) else (str(name),)
        counts = Counts.from_tally({o: int(row.get(o.value, 0)) for o in Outcome})
        out.append((key, counts))
    return out


def counts_by(df: pd.DataFrame, column: str) -> dict[str, Counts]:
    """Outcome counts per value of ``column``, in sorted order of the values."""
    return {key[0]: counts for key, counts in _tallies(df, [column])}


def counts_by_pair(df: pd.DataFrame, first: str, second: str) -> dict[tuple[str, str], Counts]:
    """Outcome counts per pair of values of two columns (rows with a missing value are left out)."""
    return {(key[0], key[1]): counts for key, counts in _tallies(df, [first, second])}
