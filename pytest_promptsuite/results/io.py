"""Reading result sets back: a ``results.jsonl`` and the ``summary.json`` beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..checks.base import CaseResult
from ..errors import ConfigError


__all__ = ["load_results", "load_summary_json"]


def load_results(path: Path) -> list[CaseResult]:
    """The rows of a ``results.jsonl``, or of the one in a report folder.

    Raises :class:`ConfigError` naming the file (and line) when it is missing or unreadable.
    """
    file = path / "results.jsonl" if path.is_dir() else path
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read results ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text ({exc.reason})") from exc
    rows: list[CaseResult] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(CaseResult.from_json(line))
        except (ValueError, KeyError, TypeError) as exc:
            what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ConfigError(f"{file}:{number}: not a results.jsonl row ({what})") from exc
    return rows


def load_summary_json(path: Path) -> dict[str, Any] | None:
    """The ``summary.json`` of a report folder (or beside a ``results.jsonl``); None if absent."""
    folder = path if path.is_dir() else path.parent
    file = folder / "summary.json"
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: cannot read the summary ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: not a promptsuite summary (expected a JSON object)")
    return data
