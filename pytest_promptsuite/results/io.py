"""Reading result sets back: a ``results.jsonl`` (whole, or streamed with the texts left on disk)
and the ``summary.json`` beside it."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from array import array
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import IO
from typing import Annotated
from typing import Any
from typing import ClassVar
from typing import Literal

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.config.settings import Share
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.jsonl import line_problem
from pytest_promptsuite.formats.jsonl import read_jsonl
from pytest_promptsuite.results.case_result import RESULT_FORMAT_VERSION
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.safety.scrub import scrub


#: What a stored row leaves on disk until a report shows it.
_ON_DISK = ("output", "prompt", "checks", "replies", "metadata", "usage", "turns")
_KEPT = tuple(f.name for f in dataclasses.fields(CaseResult) if f.name not in _ON_DISK)
_BLOCK_BYTES = 1 << 20
#: Told of each row a spool keeps, with everything its line holds.
OnRow = Callable[[CaseResult, dict[str, Any]], None]
#: How the fields of a stored row (or a summary's ``run``) are checked: strictly (no string for a number,
#: no true for 1), keys this version does not read ignored (a row's ``tool_calls`` are read on their own).
_STRICT: dict[str, Any] = {"extra": "ignore", "strict": True}
_NAME = {"min_length": 1}
_COUNT = {"ge": 0, "le": 2**63 - 1}
_REQUIRED = ("case_id", "slice", "outcome")


@dataclass(frozen=True)
class _StoredCheck(CheckResult):
    """An entry of a row's ``checks``: :class:`CheckResult`'s fields as a run writes them (no other key)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {**_STRICT, "extra": "forbid"}


@dataclass(frozen=True)
class _StoredRow:
    """A ``results.jsonl`` row (a baseline's, a shard's, a report's), each field a reader uses as we write it."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    case_id: str = field(metadata=_NAME)
    slice: str = field(metadata=_NAME)
    outcome: Literal["passed", "failed", "error", "review", "skipped"]
    variant: str | None = field(default=None, metadata=_NAME)
    repeat: int = field(default=0, metadata=_COUNT)
    output: str | None = None
    checks: list[_StoredCheck] = field(default_factory=list)
    error: str | None = None
    prompt: Any = None
    prompt_hash: str | None = None
    #: Counted where they are read (usage.py): a value not as we write it counts as not reported.
    latency_ms: Any = None
    usage: Any = None
    location: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    replies: list[str] = field(default_factory=list)
    cached: bool = False
    format_version: int = 1


@dataclass(frozen=True)
class _StoredModel:
    """A model of a summary's ``run.models``, each field a reader uses as we write it."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    spec: str | None = None
    base_url: str | None = None
    params: dict[str, Any] | None = None
    deterministic: bool = False
    prices: dict[str, Any] | None = None


@dataclass(frozen=True)
class _StoredRun:
    """A ``summary.json``'s ``run``: what that run used."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    promptsuite_version: str | None = None
    models: dict[str, _StoredModel] = field(default_factory=dict)
    suite_hash: str | None = None
    prompt_hash: str | None = None


_SHARE = {"ge": 0, "le": 1}


@dataclass(frozen=True)
class _StoredPolicy:
    """A ``summary.json``'s ``policy``: the thresholds ``diff`` and ``merge`` reuse."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    slices: dict[str, Annotated[float, Share]] = field(default_factory=dict)
    option: float | None = field(default=None, metadata=_SHARE)
    config_default: float | None = field(default=None, metadata=_SHARE)
    builtin: float = field(default=1.0, metadata=_SHARE)
    max_regression_option: float | None = field(default=None, metadata=_SHARE)
    max_regression_config: float | None = field(default=None, metadata=_SHARE)


def encode_row(row: CaseResult) -> tuple[str, dict[str, Any] | None]:
    """Return ``row.to_json()`` and, when that line reads back as ``row.to_dict()`` (nothing scrubbed, its
    numbers finite), that dict, so :meth:`StoredResults.append` need not parse the line again."""
    value = row.to_dict()
    raw = encode(value, compact=True, scrub=False)
    line = scrub(raw)  # the very object when nothing was scrubbed
    numbers = (row.latency_ms, *(row.usage or {}).values())
    if line is not raw or any(isinstance(n, float) and not math.isfinite(n) for n in numbers):
        return line, None
    return line, value


def _open(path: Path) -> tuple[Path, IO[bytes]]:
    file = path / "results.jsonl" if path.is_dir() else path
    try:
        return file, file.open("rb")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read results ({exc.strerror or exc})") from exc


def load_results(path: Path) -> list[CaseResult]:
    """Read the rows of a ``results.jsonl``, or of the one in a report folder; ConfigError naming the file
    (and line) when it is missing or a row is not one."""
    file, fp = _open(path)
    seen: dict[tuple[str, str | None, int], int] = {}
    with fp:
        rows = []
        for line in read_jsonl(fp, strict=False):
            row = _row(file, line.number, line.problem, _checked(file, line.number, line.problem, line.value))
            _once(file, line.number, row, seen)
            rows.append(row)
        return rows


def stream_results(path: Path, on_row: OnRow | None = None) -> StoredResults:
    """Read the rows of a ``results.jsonl`` (or the one in a report folder) without their texts; errors as
    :func:`load_results`. ``on_row`` is told of each row with its line's whole value."""
    file, fp = _open(path)
    stored = StoredResults(file, on_row=on_row)
    seen: dict[tuple[str, str | None, int], int] = {}
    with fp:
        for line in read_jsonl(fp, strict=False):
            value = _checked(file, line.number, line.problem, line.value)
            _once(file, line.number, stored.keep(line.start, line.end, line.number, line.problem, value), seen)
    return stored


def _checked(file: Path, number: int, problem: str | None, value: Any) -> Any:
    """Return a line's value once every field a reader uses is as we write it (pydantic: ``_StoredRow``);
    ConfigError ``file:line: field: ...`` naming each that is not. A row of a newer format is left to
    :meth:`CaseResult.from_dict`, which says to upgrade."""
    if problem is not None:
        raise ConfigError(f"{file}:{number}: not a results.jsonl row ({problem})")
    if not isinstance(value, dict):
        raise ConfigError(f"{file}:{number}: not a results.jsonl row (expected a JSON object)")
    version = value.get("format_version")
    if isinstance(version, int) and version > RESULT_FORMAT_VERSION:
        return value
    missing = next((name for name in _REQUIRED if name not in value), None)
    if missing is not None:
        raise ConfigError(f"{file}:{number}: not a results.jsonl row (missing field {missing!r})")
    from pytest_promptsuite.config.config_schema import validate

    try:
        validate(_StoredRow, value)
    except ValueError:  # pydantic's ValidationError: said again with the file, the line and each field
        from pytest_promptsuite.config.config_schema import read_tables

        read_tables(_StoredRow, value, path=Path(f"{file}:{number}"), prefix="", lines={})
    return value


def _once(file: Path, number: int, row: CaseResult, seen: dict[tuple[str, str | None, int], int]) -> None:
    """Note the line of ``row``'s (case, variant, repeat); ConfigError naming both lines when it was seen."""
    key = (row.case_id, row.variant, row.repeat)
    first = seen.setdefault(key, number)
    if first != number:
        raise ConfigError(
            f"{file}:{number}: case {row.case_id!r} (variant {row.variant}, repeat {row.repeat}) is also on line "
            f"{first}: a result set holds each case, variant and repeat once (was a shard appended twice?)"
        )


class StoredResults:
    """Rows whose texts (output, prompt, replies, checks, usage, metadata, turns) stay on disk: a streamed
    ``results.jsonl``, or a run's spool (:meth:`spool`); :meth:`full` reads a row back whole."""

    def __init__(self, file: Path, fp: IO[bytes] | None = None, *, on_row: OnRow | None = None) -> None:
        self.file = file
        self.rows: list[CaseResult] = []
        self._on_row = on_row
        self._fp = fp
        self._owner: Any = None  # a spool's temporary file, which removes the file when closed
        self._end = 0
        self._at_end = True  # where the next append writes (a read back moves away from it)
        self._spans = array("q")  # each row's line start and stop, in pairs: 16 bytes a row
        self._index: dict[tuple[str, str | None, int], int] = {}

    @classmethod
    def spool(cls, on_row: OnRow | None = None) -> StoredResults:
        """Return an empty spool in a temporary file (removed by :meth:`close`); ``on_row`` is told of each
        row as it is appended, with its line's whole value, so nothing need read the texts back."""
        owner = tempfile.NamedTemporaryFile(prefix="promptsuite-rows-", suffix=".jsonl")  # noqa: SIM115
        stored = cls(Path(owner.name), owner.file, on_row=on_row)  # the file itself: no wrapper per call
        stored._owner = owner
        return stored

    def keep(
        self, start: int, end: int, number: int, problem: str | None, value: Any, row: CaseResult | None = None
    ) -> CaseResult:
        """Keep the line from ``start`` to ``end`` (``value``, or its ``problem``) as a row without its texts."""
        if row is None:
            kept = value
            if isinstance(value, dict):
                kept = {key: item for key, item in value.items() if key not in _ON_DISK}
            row = _row(self.file, number, problem, kept)
        if self._on_row is not None:
            self._on_row(row, value)
        self._index[(row.case_id, row.variant, row.repeat)] = len(self.rows)
        self.rows.append(row)
        self._spans.extend((start, end))
        self._end = end
        return row

    def append(self, line: str, known: tuple[CaseResult, dict[str, Any]] | None = None) -> CaseResult:
        """Spool a row's line and keep the row without its texts; ``known`` (the row and its
        :func:`encode_row` value) spares parsing the line again."""
        assert self._fp is not None, "append to a spool"
        raw = line.encode("utf-8") + b"\n"
        if not self._at_end:
            self._fp.seek(self._end)
            self._at_end = True
        self._fp.write(raw)
        start, end, number = self._end, self._end + len(raw), len(self.rows) + 1
        if known is not None:
            # built by __init__: a third less memory than a __dict__ filled in
            row = CaseResult(**{name: getattr(known[0], name) for name in _KEPT})
            return self.keep(start, end, number, None, known[1], row)
        try:
            value, problem = decode(line, strict=False), None
        except JsonError as exc:
            value, problem = None, line_problem(exc)
        return self.keep(start, end, number, problem, value)

    def full(self, row: CaseResult) -> CaseResult:
        """Return ``row`` with everything the file holds for it (as it is when the file lacks it)."""
        span = self._span(row)
        if span is None:
            return row
        try:  # a BOM: the file's first row
            return CaseResult.from_dict(decode(self._read(*span).decode("utf-8-sig"), strict=False))
        except (UnicodeDecodeError, JsonError):
            return row

    def lines(self, rows: Iterable[CaseResult], *, scrubbed: bool = False) -> Iterator[bytes]:
        """Yield the lines of ``rows`` in that order as the file holds them (UTF-8, a newline each, a row it
        lacks as its ``to_json()``), scrubbed again; ``scrubbed``: no secret was registered since they
        were written, so they are copied as they are, a run in the file's order as one block."""
        start = stop = -1
        for row in rows:
            span = self._span(row)
            if scrubbed and span is not None and span[0] == stop and stop - start < _BLOCK_BYTES:
                stop = span[1]
                continue
            if start >= 0:
                yield self._block(start, stop)
                start = stop = -1
            if span is None:
                yield (row.to_json() + "\n").encode("utf-8")
            elif scrubbed:
                start, stop = span
            else:
                yield self._scrubbed(span)
        if start >= 0:
            yield self._block(start, stop)

    def _scrubbed(self, span: tuple[int, int]) -> bytes:
        """Return the file's bytes of ``span``, scrubbed again (the same bytes when nothing was scrubbed)."""
        data = self._block(*span)
        text = data.decode("utf-8")
        clean = scrub(text)  # the very object when nothing was scrubbed
        return data if clean is text else clean.encode("utf-8")

    def _span(self, row: CaseResult) -> tuple[int, int] | None:
        index = self._index.get((row.case_id, row.variant, row.repeat))
        return None if index is None else (self._spans[2 * index], self._spans[2 * index + 1])

    def _block(self, start: int, stop: int) -> bytes:
        data = self._read(start, stop)
        if b"\r" in data:  # only at a line's end: JSON escapes it inside a string
            data = data.replace(b"\r\n", b"\n")
        return data if data.endswith(b"\n") else data + b"\n"

    def _read(self, start: int, stop: int) -> bytes:
        if self._fp is not None:
            self._at_end = False
            self._fp.seek(start)
            return self._fp.read(stop - start)
        with self.file.open("rb") as fp:
            fp.seek(start)
            return fp.read(stop - start)

    def close(self) -> None:
        """Close (and so remove) a spool's file."""
        if self._owner is not None:
            self._owner.close()


def _row(file: Path, number: int, problem: str | None, value: Any) -> CaseResult:
    if problem is not None:
        raise ConfigError(f"{file}:{number}: not a results.jsonl row ({problem})")
    try:
        return CaseResult.from_dict(value)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ConfigError(f"{file}:{number}: not a results.jsonl row ({what})") from exc


def load_summary_json(path: Path) -> dict[str, Any] | None:
    """Read the ``summary.json`` of a report folder (or beside a ``results.jsonl``); None if absent."""
    file = (path if path.is_dir() else path.parent) / "summary.json"
    if not file.is_file():
        return None
    data = read_summary(file)
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: not a promptsuite summary (expected a JSON object)")
    return data


def read_summary(file: Path) -> Any:
    """Read a ``summary.json`` (a baseline's, a shard's, an earlier run's): its content, with the ``run`` and
    ``policy`` of an object checked; ConfigError naming the file (and field) when it cannot be read."""
    try:
        data = decode(file.read_bytes().decode("utf-8"), strict=False)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: cannot read the summary ({exc})") from exc
    if isinstance(data, dict):
        _check_table(file, data, "run", _StoredRun)
        _check_table(file, data, "policy", _StoredPolicy)
    return data


def _check_table(file: Path, data: dict[str, Any], name: str, table: type) -> None:
    """Check the fields of a summary's ``run`` (or ``policy``) that a reader uses (pydantic); ConfigError
    ``file: run.field: ...`` naming each that is not as we write it (the run without variants' model is
    ``run.models[""]``)."""
    from pytest_promptsuite.config.config_schema import read_tables

    if data.get(name) is None:  # a run that recorded none
        return
    if not isinstance(data[name], dict):
        raise ConfigError(f"{file}: {name}: Input should be a valid dictionary")
    try:
        read_tables(table, data[name], path=file, prefix=name, lines={})
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("run.models..", 'run.models[""].')) from None
