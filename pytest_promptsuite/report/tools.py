"""What ``promptsuite diff`` and ``promptsuite merge`` do, over result files only (nothing runs).

Both read ``results.jsonl`` rows and aggregate them with the same :func:`summarize` the plugin
uses, so merged shards give the report the unsharded run would have written.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import TextIO

from ..cases import CaseKey
from ..checks.base import CaseResult
from ..errors import PromptSuiteError
from ..results import ThresholdPolicy
from ..results import load_results
from ..results import load_summary_json
from ..results import summarize
from .files import write_report
from .text import summary_lines


__all__ = ["policy_from_summary", "run_diff", "run_merge"]

#: Exit status for input that cannot be read (argparse uses 2 for usage errors too).
UNREADABLE = 2


def policy_from_summary(data: dict[str, Any] | None) -> ThresholdPolicy:
    """The thresholds a run used, from its ``summary.json``: its ``policy``, or else (older
    summaries) the per-slice ``threshold`` and ``threshold_source`` columns."""
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
    return ThresholdPolicy(slices=slices, option=option, config_default=config_default)


def _read(path: Path, err: TextIO) -> list[CaseResult] | None:
    if not path.exists():
        print(f"{path}: no such file or folder", file=err)
        return None
    try:
        return load_results(path)
    except PromptSuiteError as exc:
        print(str(exc), file=err)
        return None


def run_diff(old: Path, new: Path, *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Print the per-slice comparison of NEW against OLD and every changed id; 0, or 2 when a
    result set cannot be read. NEW's thresholds (from its summary.json) fill the table."""
    old_rows = _read(old, err)
    new_rows = _read(new, err)
    if old_rows is None or new_rows is None:
        return UNREADABLE
    try:
        policy = policy_from_summary(load_summary_json(new))
    except PromptSuiteError as exc:
        print(f"{exc}; using the default thresholds", file=err)
        policy = ThresholdPolicy()
    summary = summarize(new_rows, policy, baseline=old_rows, baseline_source=str(old))
    print(f"promptsuite diff: {old} -> {new}", file=out)
    for line in summary_lines(summary, max_ids=10**9):
        if line.startswith(("regressions: ", "fixes: ")):
            continue  # listed one per line below
        print(line, file=out)
    diff = summary.baseline
    assert diff is not None
    for title, ids in (("regressions", diff.regressions), ("fixes", diff.fixes), ("new", diff.new),
                       ("removed", diff.removed)):
        print(f"{title} ({len(ids)}):", file=out)
        for case in ids:
            print(f"  {case}", file=out)
    return 0


def run_merge(
    shards: Sequence[Path],
    out_dir: Path,
    *,
    baseline: Path | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Merge shard reports into one report in ``out_dir``: 0 when its gate holds, 1 when it
    fails, 2 when a shard or the baseline cannot be read or two shards ran the same case."""
    rows: list[CaseResult] = []
    owner: dict[CaseKey, Path] = {}
    policies: list[ThresholdPolicy] = []
    for shard in shards:
        shard_rows = _read(shard, err)
        if shard_rows is None:
            return UNREADABLE
        for row in shard_rows:
            key = row.key
            if key in owner:
                print(
                    f"{shard}: case {row.case_id!r} (variant {row.variant}, repeat {row.repeat}) "
                    f"is also in {owner[key]}; shards must not overlap",
                    file=err,
                )
                return UNREADABLE
            owner[key] = shard
        rows.extend(shard_rows)
        try:
            policies.append(policy_from_summary(load_summary_json(shard)))
        except PromptSuiteError as exc:
            print(str(exc), file=err)
            return UNREADABLE
    policy = _merge_policies(policies, err)
    baseline_rows = None
    if baseline is not None:
        baseline_rows = _read(baseline, err)
        if baseline_rows is None:
            return UNREADABLE
    summary = summarize(rows, policy, baseline=baseline_rows, baseline_source=str(baseline))
    write_report(out_dir, rows, summary)
    for line in summary_lines(summary):
        print(line, file=out)
    print(f"promptsuite report: {out_dir}", file=out)
    return 0 if summary.gate.passed else 1


def _merge_policies(policies: Sequence[ThresholdPolicy], err: TextIO) -> ThresholdPolicy:
    """One policy for all shards: the per-slice thresholds of all, the rest from the first."""
    if not policies:
        return ThresholdPolicy()
    first = policies[0]
    slices: dict[str, float] = {}
    for policy in policies:
        slices.update(policy.slices)
    if any(
        (p.option, p.config_default, p.max_regression())
        != (first.option, first.config_default, first.max_regression())
        for p in policies
    ):
        print("warning: the shards used different thresholds; using the first shard's", file=err)
    return ThresholdPolicy(
        slices=slices, option=first.option, config_default=first.config_default,
        builtin=first.builtin, max_regression_option=first.max_regression_option,
        max_regression_config=first.max_regression_config,
    )
