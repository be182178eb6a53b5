"""Reading result sets back: a ``results.jsonl`` and the ``summary.json`` beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..checks.base import CaseResult
from ..errors import ConfigError
from ..formats.jsonio import decode
from ..formats.jsonio import read_jsonl


__all__ = ["load_results", "load_summary_json"]


def load_results(path: Path) -> list[CaseResult]:
    """The rows of a ``results.jsonl``, or of the one in a report folder.

    Raises :class:`ConfigError` naming the file (and line) when it is missing or unreadable.
    """
    file = path / "results.jsonl" if path.is_dir() else path
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read results ({exc.strerror or exc})") from exc
    rows: list[CaseResult] = []
    for line in read_jsonl(data, strict=False):  # lines end at "\n" only, never at U+2028
        if line.problem is not None:
            raise ConfigError(f"{file}:{line.number}: not a results.jsonl row ({line.problem})")
        try:
            rows.append(CaseResult.from_dict(line.value))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ConfigError(f"{file}:{line.number}: not a results.jsonl row ({what})") from exc
    return rows


def load_summary_json(path: Path) -> dict[str, Any] | None:
    """The ``summary.json`` of a report folder (or beside a ``results.jsonl``); None if absent."""
    folder = path if path.is_dir() else path.parent
    file = folder / "summary.json"
    if not file.is_file():
        return None
    try:
        data = decode(file.read_bytes().decode("utf-8"), strict=False)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: cannot read the summary ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: not a promptsuite summary (expected a JSON object)")
    return data
