"""``promptsuite comment REPORT [--baseline REPORT]``: the pull request's comment in Markdown, read from report
folders (the run's own gate, or the gate of ``--prompt-baseline`` when the run compared with none)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.github.baseline_artifact import ORIGIN_FILE
from pytest_promptsuite.report.markdown import first_failure
from pytest_promptsuite.report.pr_comment import MAX_LISTED
from pytest_promptsuite.report.pr_comment import CaseNote
from pytest_promptsuite.report.pr_comment import CommentSource
from pytest_promptsuite.report.pr_comment import comment_markdown
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import load_summary_json
from pytest_promptsuite.results.io import stream_results


@dataclass
class _Seen:
    """What one pass over a report's rows keeps: the wanted cases' notes and every judge the rows name."""

    wanted: frozenset[str]
    notes: dict[str, CaseNote] = field(default_factory=dict)
    judges: set[str] = field(default_factory=set)

    def __call__(self, row: CaseResult, value: Any) -> None:
        """Note one row (its whole line's ``value``)."""
        checks = _checks(value)
        self.judges.update(_judges(checks))
        name = row.key.name(with_repeat=False)
        if name in self.wanted and name not in self.notes:
            self.notes[name] = CaseNote(row.slice, first_failure(checks, row.error))


def _checks(value: Any) -> list[dict[str, Any]]:
    """Return the checks of a row's line, each an object."""
    found = value.get("checks") if isinstance(value, dict) else None
    return [c for c in found or () if isinstance(c, dict)]


def _judges(checks: list[dict[str, Any]]) -> set[str]:
    """Return the judge models a row's checks name (``llm-rubric``'s ``details.judge``)."""
    details = [c.get("details") for c in checks]
    return {d["judge"] for d in details if isinstance(d, dict) and isinstance(d.get("judge"), str)}


def _read_rows(path: Path, wanted: frozenset[str]) -> _Seen:
    """Read a report's rows once (their texts left on disk), keeping the notes of ``wanted`` and the judges."""
    seen = _Seen(wanted)
    stream_results(path, on_row=seen).close()
    return seen


def _origin(path: Path) -> dict[str, Any] | None:
    """Read the baseline's ``origin.json`` when it has one (a folder, or beside its ``results.jsonl``)."""
    file = (path if path.is_dir() else path.parent) / ORIGIN_FILE
    if not file.is_file():
        return None
    try:
        found = decode(file.read_text(encoding="utf-8"), strict=False)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: cannot read where the baseline came from ({exc})") from exc
    return found if isinstance(found, dict) else None


def _required_summary(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    found = load_summary_json(path)
    if found is None:
        raise ConfigError(f"{path}: no summary.json; give a report folder written by --prompt-report")
    return found


def _compared(report: Path, baseline: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """Return the report's ``summary.json`` as a run with ``--prompt-baseline BASELINE`` writes it: the same
    summarize, thresholds and gate settings as the run's (what ``promptsuite merge`` does)."""
    from pytest_promptsuite.cli.diff_merge import policy_from_summary
    from pytest_promptsuite.config.settings import GateSettings
    from pytest_promptsuite.report.document import summary_document
    from pytest_promptsuite.results.io import load_results
    from pytest_promptsuite.results.records import RunInfo
    from pytest_promptsuite.results.summary import Baseline
    from pytest_promptsuite.results.summary import summarize
    from pytest_promptsuite.results.usage import usage_report

    rows, base_rows = load_results(report), load_results(baseline)
    run = RunInfo.from_dict(summary["run"]) if isinstance(summary.get("run"), dict) else None
    base_summary = load_summary_json(baseline) or {}
    base_run = RunInfo.from_dict(base_summary["run"]) if isinstance(base_summary.get("run"), dict) else None
    against = Baseline(base_rows, str(baseline), None, base_run, usage=usage_report(base_rows, base_run))
    found = summarize(
        rows,
        policy_from_summary(summary),
        baseline=against,
        settings=GateSettings.from_dict(summary),
        run=run,
        usage=usage_report(rows, run),
    )
    return {**summary, **summary_document(found, usage=found.usage)}


def comment_source(report: Path, baseline: Path | None = None, key: str = "") -> CommentSource:
    """Read what the comment on REPORT says; ConfigError naming the file when one cannot be read."""
    summary = _required_summary(report)
    base_summary = origin = None
    if baseline is not None:
        base_summary = _required_summary(baseline)
        origin = _origin(baseline)
        if not isinstance(summary.get("baseline"), Mapping):
            summary = _compared(report, baseline, summary)
    wanted = frozenset(str(i) for kind in ("regressions", "fixes") for i in list(summary.get(kind) or ())[:MAX_LISTED])
    seen = _read_rows(report, wanted)
    judges = None if baseline is None else (frozenset(_read_rows(baseline, frozenset()).judges), frozenset(seen.judges))
    return CommentSource(summary, base_summary, origin, seen.notes, judges, key)


def run_comment(report: Path, baseline: Path | None = None, key: str = "") -> str:
    """Return the comment's Markdown for REPORT (compared with BASELINE when given)."""
    return comment_markdown(comment_source(report, baseline, key))
