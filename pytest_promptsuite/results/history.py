"""Earlier runs (``--prompt-history``, ``promptsuite history``): each slice's counts, pass rate and 95 %
interval in each run, read from the ``summary.json`` files under a folder."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import ClassVar
from typing import Literal

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.results.io import read_summary
from pytest_promptsuite.results.summary import Summary


#: How many of the latest runs ``--prompt-history`` keeps (the dashboard draws them all).
HISTORY_RUNS = 20
_NUMBER = re.compile(r"(\d+)")
#: How the fields of a ``summary.json`` are checked: strictly (no string for a number, no true for
#: 1), other keys ignored (a summary holds much that history does not read).
_STRICT: dict[str, Any] = {"extra": "ignore", "strict": True, "allow_inf_nan": False}
_COUNT = {"ge": 0, "le": 2**63 - 1}  # what the frames' Int64 columns hold
_SHARE = {"ge": 0, "le": 1}


@dataclass(frozen=True)
class _Slice:
    """A slice of an earlier ``summary.json``, each field history reads as we write it."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    slice: str = field(metadata={"min_length": 1})
    cases: int = field(metadata=_COUNT)
    passed: int = field(metadata=_COUNT)
    review: int = field(default=0, metadata=_COUNT)
    skipped: int = field(default=0, metadata=_COUNT)
    pass_rate: float | None = field(default=None, metadata=_SHARE)
    ci_low: float | None = field(default=None, metadata=_SHARE)
    ci_high: float | None = field(default=None, metadata=_SHARE)
    gate: Literal["pass", "fail"] | None = None

    def __post_init__(self) -> None:
        if self.review + self.skipped > self.cases:
            raise ValueError(f"review and skipped ({self.review} + {self.skipped}) are more than cases ({self.cases})")
        if self.passed > self.cases - self.review - self.skipped:
            raise ValueError(f"passed ({self.passed}) is more than the cases counted (cases - review - skipped)")
        if self.ci_low is not None and self.ci_high is not None and self.ci_low > self.ci_high:
            raise ValueError(f"ci_low ({self.ci_low}) is above ci_high ({self.ci_high})")


@dataclass(frozen=True)
class _Summary:
    """What history reads of a ``summary.json``."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    slices: list[_Slice]


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
        """Read a run from a ``summary.json``'s content, every field it uses checked (pydantic: the
        ``_Summary`` table); ConfigError naming ``where`` and each field that is not as we write it."""
        from pytest_promptsuite.config.config_schema import read_tables

        if not isinstance(data, dict) or not isinstance(data.get("slices"), list):
            raise ConfigError(f"{where}: not a promptsuite summary.json (no 'slices' list)")
        summary = read_tables(_Summary, data, path=Path(where), prefix="", lines={})
        slices: dict[str, HistoryPoint] = {}
        for i, s in enumerate(summary.slices):
            if s.slice in slices:
                raise ConfigError(f"{where}: slices[{i}].slice: {s.slice!r} is there twice")
            counted = s.cases - s.review - s.skipped
            slices[s.slice] = HistoryPoint(s.cases, s.passed, counted, s.pass_rate, s.ci_low, s.ci_high, s.gate)
        gate = data.get("gate")  # an odd gate is shown as unknown ("?"), as it always was
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
            runs.append(HistoryRun.from_document(_label(file, folder), read_summary(file), str(file)))
    if limit is None:
        return History(tuple(runs))
    return History(tuple(runs[-limit:]) if limit else ())
