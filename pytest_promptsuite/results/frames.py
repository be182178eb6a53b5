"""Results as pandas DataFrames: ``read_results`` and ``read_history`` for analysis, and the slice table
``slices.csv`` is written from (pandas is imported when a function is called)."""

from __future__ import annotations

import os
from collections.abc import Callable
from collections.abc import Iterable
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.history import History
from pytest_promptsuite.results.history import load_history
from pytest_promptsuite.results.io import load_results
from pytest_promptsuite.results.summary import Summary


if TYPE_CHECKING:
    import pandas as pd


#: What the name of a check's column starts with: ``check:must_include``.
CHECK_PREFIX = "check:"
#: A check column's value for a name that several checks of a row share: the highest rank wins.
_RANK = {"skipped": 0, "passed": 1, "failed": 2}
#: The token counts of a row's ``usage``, each a column.
_TOKENS = ("prompt_tokens", "completion_tokens", "total_tokens")
_HISTORY_COLUMNS = "run label run_passed slice cases counted passed pass_rate ci_low ci_high gate".split()
_HISTORY_TYPES = {"run": "int64", "run_passed": "boolean", **dict.fromkeys(("cases", "counted", "passed"), "Int64")}
_HISTORY_TYPES.update(dict.fromkeys(("pass_rate", "ci_low", "ci_high"), "float64"))

StrPath = str | os.PathLike[str]


def _states(row: CaseResult) -> dict[str, str]:
    """Map each check name of ``row`` (as its column) to ``failed`` when a check of that name
    failed, else ``passed`` when one ran, else ``skipped``."""
    states: dict[str, str] = {}
    for check in row.checks:
        state = "skipped" if check.skipped else "passed" if check.passed else "failed"
        column = CHECK_PREFIX + check.name
        seen = states.get(column)
        if seen is None or _RANK[state] > _RANK[seen]:
            states[column] = state
    return states


def _tokens(usage: dict[str, Any] | None, name: str) -> int | None:
    value = usage.get(name) if usage else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _outcome(row: CaseResult) -> str:
    return row.outcome.value


def _checks(row: CaseResult) -> list[dict[str, Any]]:
    return [c.to_dict() for c in row.checks]


def _token(name: str, row: CaseResult) -> int | None:
    return _tokens(row.usage, name)


def _location(row: CaseResult) -> str | None:
    return None if row.location is None else str(row.location)


#: The columns of :func:`read_results` before the check columns: (name, its value in a row, its dtype; None:
#: pandas infers it).
_COLUMNS: tuple[tuple[str, Callable[[CaseResult], Any], str | None], ...] = (
    ("case_id", attrgetter("case_id"), None),
    ("slice", attrgetter("slice"), None),
    ("variant", attrgetter("variant"), None),
    ("repeat", attrgetter("repeat"), "int64"),
    ("outcome", _outcome, None),
    ("output", attrgetter("output"), None),
    ("checks", _checks, None),
    ("error", attrgetter("error"), None),
    ("prompt", attrgetter("prompt"), None),
    ("prompt_hash", attrgetter("prompt_hash"), None),
    ("latency_ms", attrgetter("latency_ms"), "float64"),
    *((name, partial(_token, name), "Int64") for name in _TOKENS),
    ("location", _location, None),
    ("tags", attrgetter("tags"), None),
    ("metadata", attrgetter("metadata"), None),
    ("replies", attrgetter("replies"), None),
    ("cached", attrgetter("cached"), "bool"),
)


def read_results(path: StrPath) -> pd.DataFrame:
    """Read a ``results.jsonl`` (or a report folder's) into a DataFrame: a row per case, variant and
    repeat, and a ``check:NAME`` column per check name; ConfigError if unreadable."""
    import pandas as pd

    rows = load_results(Path(path))
    fields: dict[str, Any] = {
        name: [get(r) for r in rows] if dtype is None else pd.Series([get(r) for r in rows], dtype=dtype)
        for name, get, dtype in _COLUMNS
    }
    frame = pd.DataFrame(fields)
    joined: pd.DataFrame = pd.concat([frame, pd.DataFrame([_states(r) for r in rows], index=frame.index)], axis=1)
    return joined


def history_frame(history: History) -> pd.DataFrame:
    """Lay ``history`` out as a row per run and slice, runs oldest first (``run`` counts them from
    0); a run whose summary has no slice is one row with the slice missing."""
    import pandas as pd

    records: list[dict[str, Any]] = []
    for order, run in enumerate(history.runs):
        head = {"run": order, "label": run.label, "run_passed": run.passed}
        if not run.slices:
            records.append(head)
        for name, point in run.slices.items():
            records.append({**head, "slice": name, "cases": point.cases, **point.to_dict()})
    frame: pd.DataFrame = pd.DataFrame.from_records(records, columns=_HISTORY_COLUMNS).astype(_HISTORY_TYPES)
    return frame


def read_history(paths: StrPath | Iterable[StrPath], *, last: int | None = None) -> pd.DataFrame:
    """Read the earlier runs under ``paths`` (report folders, ``summary.json`` files or folders of
    them, as ``promptsuite history`` does) into :func:`history_frame`'s rows; ``last``: the latest N."""
    folders = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    return history_frame(load_history([Path(p) for p in folders], limit=last))


def slices_frame(summary: Summary) -> pd.DataFrame:
    """Tabulate the summary's slices, ``summary.json``'s keys as columns, each value as the
    summary holds it (object columns): ``slices.csv`` writes them exactly."""
    import pandas as pd

    table = [s.to_dict() for s in summary.slices]
    frame: pd.DataFrame = pd.DataFrame(table, columns=list(table[0]) if table else ["slice"], dtype=object)
    return frame


#: The columns of :func:`read_turns`, in order.
TURN_COLUMNS = (
    "case_id",
    "slice",
    "variant",
    "repeat",
    "outcome",
    "turn",
    "user",
    "reply",
    "passed",
    "failed_checks",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
)


def _turn_records(row: CaseResult) -> list[dict[str, Any]]:
    """Return a record per turn of a conversation's row (none for a single-turn row)."""
    head = {"case_id": row.case_id, "slice": row.slice, "variant": row.variant, "repeat": row.repeat}
    records = []
    for turn in row.turns:
        usage = turn.get("usage") or {}
        failed = [c.get("message", "") for c in turn.get("checks", []) if not c.get("passed") and not c.get("skipped")]
        records.append(
            {
                **head,
                "outcome": row.outcome.value,
                "turn": turn.get("turn"),
                "user": turn.get("user"),
                "reply": turn.get("reply"),
                "passed": turn.get("passed"),
                "failed_checks": failed,
                "latency_ms": turn.get("latency_ms"),
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
            }
        )
    return records


def read_turns(path: StrPath) -> pd.DataFrame:
    """Read the conversations of a ``results.jsonl`` (or a report folder's) into a DataFrame: a row per turn
    (its user message, reply, verdict and failed checks' messages, tokens, latency); ConfigError if unreadable."""
    import pandas as pd

    records = [record for row in load_results(Path(path)) for record in _turn_records(row)]
    frame: pd.DataFrame = pd.DataFrame.from_records(records, columns=list(TURN_COLUMNS))
    return frame
