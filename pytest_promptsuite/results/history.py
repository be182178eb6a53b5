"""Earlier runs (``--prompt-history``, ``promptsuite history``): each slice's counts, pass rate and 95 %
interval in each run, read from the ``summary.json`` files under a folder."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.results.summary import Summary


#: How many of the latest runs ``--prompt-history`` keeps (the dashboard draws them all).
HISTORY_RUNS = 20
_NUMBER = re.compile(r"(\d+)")


@dataclass(frozen=True)
class HistoryPoint:
    """One slice in one run: its counts and pass rate with the 95 % Wilson interval."""

    cases: int
    passed: int
    counted: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    gate: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the point as the dashboard embeds it."""
        return {key: value for key, value in vars(self).items() if key != "cases"}


@dataclass(frozen=True)
class HistoryRun:
    """One earlier (or the current) run: its label, whether it passed the gate, and its slices."""

    label: str
    passed: bool | None
    slices: dict[str, HistoryPoint] = field(default_factory=dict)

    @classmethod
    def from_document(cls, label: str, data: Any, where: str) -> HistoryRun:
        """Read a run from a ``summary.json``'s content; ConfigError naming ``where`` if it is none."""
        if not isinstance(data, dict) or not isinstance(data.get("slices"), list):
            raise ConfigError(f"{where}: not a promptsuite summary.json (no 'slices' list)")
        slices = {}
        for s in data["slices"]:
            try:
                cases = int(s["cases"])
                counted = cases - int(s.get("review", 0)) - int(s.get("skipped", 0))
                rate, low, high = (_number(s, key) for key in ("pass_rate", "ci_low", "ci_high"))
                slices[str(s["slice"])] = HistoryPoint(cases, int(s["passed"]), counted, rate, low, high, s.get("gate"))
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigError(f"{where}: a slice of this summary.json is unreadable ({exc!r})") from None
        gate = data.get("gate")
        passed = gate.get("passed") if isinstance(gate, dict) and isinstance(gate.get("passed"), bool) else None
        return cls(label, passed, slices)

    @classmethod
    def from_summary(cls, label: str, summary: Summary) -> HistoryRun:
        """Make the current run's entry from its summary."""
        slices = {}
        for s in summary.slices:
            c = s.counts
            low, high = c.interval or (None, None)
            slices[s.slice] = HistoryPoint(c.cases, c.passed, c.counted, c.pass_rate, low, high, s.gate)
        return cls(label, summary.gate.passed, slices)

    def to_dict(self) -> dict[str, Any]:
        """Return the run as the dashboard embeds it."""
        slices = {name: point.to_dict() for name, point in self.slices.items()}
        return {"label": self.label, "passed": self.passed, "slices": slices}


@dataclass(frozen=True)
class History:
    """Runs oldest first (the current one last, once :meth:`with_current` added it)."""

    runs: tuple[HistoryRun, ...] = ()

    def with_current(self, summary: Summary, label: str = "this run") -> History:
        """Return these runs followed by the current one, keeping the latest :data:`HISTORY_RUNS`."""
        return History((*self.runs, HistoryRun.from_summary(label, summary))[-HISTORY_RUNS:])

    def to_dict(self) -> dict[str, Any]:
        """Return what the dashboard draws."""
        return {"runs": [run.to_dict() for run in self.runs]}


def _number(entry: dict[str, Any], key: str) -> float | None:
    """Check that ``entry[key]`` is a number or null (kept as written: the dashboard embeds it)."""
    value = entry.get(key)
    if value is not None and not isinstance(value, (int, float)):
        raise ValueError(f"{key} {value!r} is not a number")
    return value


def _order(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in _NUMBER.split(path.as_posix())]


def _summary_files(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    found = {p for p in folder.rglob("summary.json") if p.is_file()}
    found |= {p for p in folder.glob("*.json") if p.is_file()}
    return sorted(found, key=lambda p: _order(p.relative_to(folder)))


def _label(file: Path, folder: Path) -> str:
    if file == folder:
        return file.stem
    relative = file.relative_to(folder)
    if relative.name == "summary.json":
        return relative.parent.as_posix() if relative.parent.parts else folder.name
    return relative.stem


def load_history(folders: Iterable[Path], *, limit: int | None = HISTORY_RUNS) -> History:
    """Load the runs under ``folders`` (each a folder or one ``summary.json``), ordered by path
    with numbers compared as numbers (``run-9`` before ``run-10``), the latest ``limit`` kept
    (None: all); ConfigError naming the file that is not a readable summary."""
    runs: list[HistoryRun] = []
    for folder in folders:
        if not folder.exists():
            raise ConfigError(f"{folder}: no such file or folder")
        files = _summary_files(folder)
        for file in files:
            try:
                data = decode(file.read_bytes().decode("utf-8"), strict=False)
            except (OSError, ValueError) as exc:
                raise ConfigError(f"{file}: cannot read this summary.json ({exc})") from exc
            runs.append(HistoryRun.from_document(_label(file, folder), data, str(file)))
    if limit is None:
        return History(tuple(runs))
    return History(tuple(runs[-limit:]) if limit else ())
