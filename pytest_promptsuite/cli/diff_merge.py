"""What ``promptsuite diff`` and ``promptsuite merge`` do over result files, with the plugin's :func:`summarize`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from typing import TextIO

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.config.settings import Thresholds
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.report.reasons import reason
from pytest_promptsuite.report.text import summary_lines
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.gate import NoCommonCases
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.io import load_results
from pytest_promptsuite.results.io import load_summary_json
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.summary import Baseline
from pytest_promptsuite.results.summary import Summary
from pytest_promptsuite.results.summary import summarize
from pytest_promptsuite.results.usage import usage_report


#: Exit status for input that cannot be read (argparse uses 2 for usage errors too).
UNREADABLE = 2


def policy_from_summary(data: dict[str, Any] | None) -> ThresholdPolicy:
    """Read the thresholds a run used from its ``summary.json``: its ``policy``, or else (older summaries)
    the per-slice ``threshold`` and ``threshold_source`` columns."""
    if not data:
        return ThresholdPolicy()
    if isinstance(data.get("policy"), dict):
        return ThresholdPolicy.from_dict(data["policy"])
    slices: dict[str, float] = {}
    option = config_default = None
    for s in data.get("slices") or ():
        source, value = s.get("threshold_source"), s.get("threshold")
        if source == "config slice":
            slices[s["slice"]] = value
        elif source == "option":
            option = value
        elif source == "config default":
            config_default = value
    return ThresholdPolicy(Thresholds(default=config_default, slices=slices), option=option)


def _read(path: Path, err: TextIO) -> tuple[list[CaseResult], dict[str, Any] | None] | None:
    """Read a result set's rows and the ``summary.json`` beside them (None when it has none); None, said on
    ``err``, when either cannot be read or a field is not as we write it."""
    if not path.exists():
        print(f"{path}: no such file or folder", file=err)
        return None
    try:
        return load_results(path), load_summary_json(path)
    except PromptSuiteError as exc:
        print(str(exc), file=err)
        return None


def _streams(out: TextIO | None, err: TextIO | None) -> tuple[TextIO, TextIO]:
    """Return ``out`` and ``err``, stdout and stderr where not given (as they are when the command runs)."""
    return out or sys.stdout, err or sys.stderr


def _run_of(summary: dict[str, Any] | None) -> RunInfo | None:
    run = summary.get("run") if summary else None
    return RunInfo.from_dict(run) if isinstance(run, dict) else None


def run_diff(
    old: Path,
    new: Path,
    *,
    alpha: float | None = None,
    max_regression: float | None = None,
    baseline_variant: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Compare NEW with OLD under the regression rule; print the slice table, verdicts and every changed id.

    Exit 1 when a slice regressed (or nothing could be compared), 0 otherwise, 2 when a result set cannot be
    read. The rule's settings come from NEW's ``summary.json`` unless given (``paired`` for a bare
    ``results.jsonl``); slice thresholds only fill the table. ``out`` and ``err``: stdout and stderr.
    """
    out, err = _streams(out, err)
    old_set, new_set = _read(old, err), _read(new, err)
    if old_set is None or new_set is None:
        return UNREADABLE
    (old_rows, old_summary), (new_rows, new_summary) = old_set, new_set
    policy, settings = _rule_of(new_summary, alpha, max_regression)
    against = Baseline(old_rows, str(old), baseline_variant, _run_of(old_summary))
    summary = summarize(new_rows, policy, baseline=against, settings=settings, run=_run_of(new_summary))
    print(f"promptsuite diff: {old} -> {new}", file=out)
    _print_changes(summary, out)
    failed = [d for d in summary.gate.decisions if isinstance(d, (SliceRegressed, NoCommonCases))]
    if not failed:
        print("promptsuite diff: no slice regressed", file=out)
        return 0
    print("promptsuite diff: REGRESSED", file=out)
    for decision in failed:
        print(f"  - {reason(decision)}", file=out)
    return 1


def _rule_of(
    summary: dict[str, Any] | None, alpha: float | None, max_regression: float | None
) -> tuple[ThresholdPolicy, GateSettings]:
    """Return the policy and gate settings of a diff: NEW's ``summary.json``'s (``paired`` without one), the
    options over them."""
    policy = policy_from_summary(summary)
    if max_regression is not None:
        policy = replace(policy, max_regression_option=max_regression)
    settings = GateSettings.from_dict(summary) if summary else GateSettings(regression="paired")
    if alpha is not None:
        settings = replace(settings, alpha=alpha)
    return policy, settings


def _print_changes(summary: Summary, out: TextIO) -> None:
    """Print the slice table and verdicts, then every changed id under its kind, one a line."""
    for line in summary_lines(summary, max_ids=10**9, gate=False):
        if not line.startswith(("regressions: ", "fixes: ")):  # listed one per line below
            print(line, file=out)
    diff = summary.baseline
    assert diff is not None
    changed = {"regressions": diff.regressions, "fixes": diff.fixes, "new": diff.new, "removed": diff.removed}
    for title, ids in changed.items():
        print(f"{title} ({len(ids)}):", file=out)
        for case in ids:
            print(f"  {case}", file=out)


def _shard_rows(shards: Sequence[Path], err: TextIO) -> tuple[list[CaseResult], list[dict[str, Any]]] | None:
    """Read every shard's rows and ``summary.json``; None, reported, when one cannot be read or two overlap."""
    rows: list[CaseResult] = []
    summaries: list[dict[str, Any]] = []
    owner: dict[CaseKey, Path] = {}
    for shard in shards:
        found = _read(shard, err)
        if found is None:
            return None
        shard_rows, shard_summary = found
        for row in shard_rows:
            if row.key in owner:
                print(
                    f"{shard}: case {row.case_id!r} (variant {row.variant}, repeat {row.repeat}) "
                    f"is also in {owner[row.key]}; shards must not overlap",
                    file=err,
                )
                return None
            owner[row.key] = shard
        rows.extend(shard_rows)
        summaries.append(shard_summary or {})
    return rows, summaries


def run_merge(
    shards: Sequence[Path],
    out_dir: Path,
    *,
    baseline: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Merge shard reports into one report in ``out_dir``, with the shards' thresholds, settings and run record.

    Exit 0 when its gate holds, 1 when it fails, 2 when a shard or the baseline cannot be read or two shards
    ran the same case. ``out`` and ``err``: stdout and stderr.
    """
    out, err = _streams(out, err)
    found = _shard_rows(shards, err)
    against = None if baseline is None else _read_baseline(baseline, err)
    if found is None or (baseline is not None and against is None):
        return UNREADABLE
    rows, summaries = found
    policy = _merge_policies([policy_from_summary(s) for s in summaries], err)
    first = summaries[0] if summaries else {}
    run = _run_of(first)
    run = replace(run, prompt_hash=RunInfo.prompts_hash(rows)) if run is not None else None
    settings = GateSettings.from_dict(first)
    summary = summarize(rows, policy, baseline=against, settings=settings, run=run, usage=usage_report(rows, run))
    write_report(out_dir, rows, summary, usage=summary.usage, baseline=against.rows if against is not None else None)
    for line in summary_lines(summary):
        print(line, file=out)
    print(f"promptsuite report: {out_dir}", file=out)
    return 0 if summary.gate.passed else 1


def _read_baseline(baseline: Path, err: TextIO) -> Baseline | None:
    """Read a baseline's rows, run record and usage; None, reported, when it cannot be read."""
    found = _read(baseline, err)
    if found is None:
        return None
    baseline_rows, summary = found
    base_run = _run_of(summary)
    return Baseline(baseline_rows, str(baseline), None, base_run, usage=usage_report(baseline_rows, base_run))


def _merge_policies(policies: Sequence[ThresholdPolicy], err: TextIO) -> ThresholdPolicy:
    """Merge the shards' policies: the per-slice thresholds of all, the rest from the first."""
    if not policies:
        return ThresholdPolicy()
    first = policies[0]
    slices: dict[str, float] = {}
    for policy in policies:
        slices.update(policy.config.slices)
    if any(
        (p.option, p.config.default, p.max_regression()) != (first.option, first.config.default, first.max_regression())
        for p in policies
    ):
        print("warning: the shards used different thresholds; using the first shard's", file=err)
    return replace(first, config=replace(first.config, slices=slices))
