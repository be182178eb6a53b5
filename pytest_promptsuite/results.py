"""Stage 5a: case results into per-slice pass rates, confidence intervals, baseline diffs and gates.

Pure functions over ``CaseResult`` rows: the same rows give the same summary whether they came from
a serial run, pytest-xdist workers or merged CI shards. pandas is imported inside the functions that
need it, so that loading the plugin stays cheap for runs that never aggregate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from .checks.base import CaseResult
from .checks.base import Outcome
from .errors import ConfigError


if TYPE_CHECKING:
    import pandas as pd


__all__ = [
    "BaselineDiff",
    "Flip",
    "GateResult",
    "GroupStats",
    "RepeatStats",
    "SliceStats",
    "Summary",
    "ThresholdPolicy",
    "load_results",
    "load_summary_json",
    "mcnemar_p",
    "prompt_display",
    "row_key",
    "summarize",
    "wilson_interval",
]

SUMMARY_FORMAT_VERSION = 2
#: Pass rates are compared with this slack so that 0.9 of 10 cases meets a 0.9 threshold.
_EPS = 1e-9
_OUTCOMES = ("passed", "failed", "error", "review", "skipped")
#: Above this many flips the binomial tail is summed in log space instead of with exact integers.
_EXACT_LIMIT = 2000


def wilson_interval(passed: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95 % Wilson score interval of ``passed / n`` (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: ``min(1, 2 * P(X <= min(b, c)))``, X ~ Bin(b + c, 1/2).

    ``b`` and ``c`` are the discordant pairs (regressions and fixes); with no flips p is 1.
    """
    n = b + c
    k = min(b, c)
    if n == 0:
        return 1.0
    if n <= _EXACT_LIMIT:
        tail = sum(math.comb(n, i) for i in range(k + 1))
        return min(1.0, 2 * tail / 2**n)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(k + 1)]
    top = max(logs)
    log_tail = top + math.log(sum(math.exp(v - top) for v in logs)) - n * math.log(2)
    return min(1.0, 2 * math.exp(log_tail))


@dataclass(frozen=True)
class ThresholdPolicy:
    """Where each slice's threshold and the allowed regression come from, most specific first.

    Thresholds: ``slices`` (the config's ``[thresholds.slices]``) beats an explicit
    ``--prompt-min-pass-rate`` (``option``), which beats the config's ``[thresholds] default``,
    which beats 1.0. The allowed regression: an explicit ``--prompt-max-regression`` beats the
    config's ``[thresholds] max_regression``, which beats 0.0.
    """

    slices: Mapping[str, float] = field(default_factory=dict)
    option: float | None = None
    config_default: float | None = None
    builtin: float = 1.0
    max_regression_option: float | None = None
    max_regression_config: float | None = None

    def threshold(self, slice_name: str) -> tuple[float, str]:
        """The threshold of ``slice_name`` and where it came from."""
        if slice_name in self.slices:
            return self.slices[slice_name], "config slice"
        if self.option is not None:
            return self.option, "option"
        if self.config_default is not None:
            return self.config_default, "config default"
        return self.builtin, "default"

    def max_regression(self) -> tuple[float, str]:
        """The largest allowed drop of a slice's pass rate and where it came from."""
        if self.max_regression_option is not None:
            return self.max_regression_option, "option"
        if self.max_regression_config is not None:
            return self.max_regression_config, "config"
        return 0.0, "default"

    def to_dict(self) -> dict[str, Any]:
        return {
            "slices": dict(self.slices),
            "option": self.option,
            "config_default": self.config_default,
            "builtin": self.builtin,
            "max_regression_option": self.max_regression_option,
            "max_regression_config": self.max_regression_config,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThresholdPolicy:
        return cls(
            slices=dict(data.get("slices") or {}),
            option=data.get("option"),
            config_default=data.get("config_default"),
            builtin=data.get("builtin", 1.0),
            max_regression_option=data.get("max_regression_option"),
            max_regression_config=data.get("max_regression_config"),
        )


def _flat(row: Any) -> dict[str, Any]:
    """A dataclass of plain values as a dict, in field order (no deep copy, unlike ``asdict``)."""
    return {f.name: getattr(row, f.name) for f in fields(row)}


@dataclass(frozen=True)
class SliceStats:
    """One row of the slice table."""

    slice: str
    cases: int
    passed: int
    failed: int
    error: int
    review: int
    skipped: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float
    threshold_source: str
    gate: str
    baseline_pass_rate: float | None = None
    delta: float | None = None
    regressions: int | None = None
    fixes: int | None = None
    p_value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "slice": self.slice,
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "error": self.error,
            "review": self.review,
            "skipped": self.skipped,
            "pass_rate": self.pass_rate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            "baseline_pass_rate": self.baseline_pass_rate,
            "delta": self.delta,
            "regressions": self.regressions,
            "fixes": self.fixes,
            "p_value": self.p_value,
            "gate": self.gate,
        }


@dataclass(frozen=True)
class GroupStats:
    """Counts and pass rate of a group that has no gate of its own: a tag or a prompt variant."""

    name: str
    cases: int
    passed: int
    failed: int
    error: int
    review: int
    skipped: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict[str, Any]:
        return _flat(self)


@dataclass(frozen=True)
class RepeatStats:
    """A repeated case (one variant): how many of its counted runs passed."""

    case_id: str
    variant: str | None
    slice: str
    runs: int
    passed: int
    pass_fraction: float | None

    @property
    def flaky(self) -> bool:
        """Passed in some repeats only."""
        return self.pass_fraction is not None and 0 < self.pass_fraction < 1

    def to_dict(self) -> dict[str, Any]:
        return _flat(self)


@dataclass(frozen=True)
class Flip:
    """A case whose verdict changed against the baseline, with what is needed to see why."""

    id: str
    slice: str
    kind: str  # "regression" | "fix"
    old_outcome: str
    new_outcome: str
    old_output: str | None
    new_output: str | None
    old_prompt: str | None
    new_prompt: str | None
    prompt_diff: str | None  # unified diff of the prompt text; None when the prompt is unchanged
    checks: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "slice": self.slice,
            "kind": self.kind,
            "old_outcome": self.old_outcome,
            "new_outcome": self.new_outcome,
            "old_output": self.old_output,
            "new_output": self.new_output,
            "old_prompt": self.old_prompt,
            "new_prompt": self.new_prompt,
            "prompt_diff": self.prompt_diff,
            "checks": list(self.checks),
        }


@dataclass(frozen=True)
class BaselineDiff:
    """The current run against a baseline: per-slice comparison and the ids that changed."""

    source: str
    max_regression: float
    max_regression_source: str
    regressions: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    flips: tuple[Flip, ...] = ()
    #: Baseline slices with no row in the current run: slice -> baseline pass rate.
    missing_slices: Mapping[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "max_regression": self.max_regression,
            "max_regression_source": self.max_regression_source,
            "missing_slices": dict(self.missing_slices),
        }


@dataclass(frozen=True)
class VariantSlice:
    """One slice under one prompt variant: its own pass rate, gated like a slice."""

    slice: str
    variant: str
    cases: int
    passed: int
    failed: int
    error: int
    review: int
    skipped: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float
    gate: str

    def to_dict(self) -> dict[str, Any]:
        return _flat(self)


@dataclass(frozen=True)
class VariantComparison:
    """Prompt versions compared in one run: every slice's pass rate per variant side by side,
    and the cases that flipped from the first variant to the second (paired by case and repeat),
    with McNemar p-values per slice."""

    variants: tuple[str, ...]
    slices: tuple[VariantSlice, ...]
    #: Per slice, between the first two variants: ``regressions``, ``fixes``, ``p_value``.
    flips_by_slice: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The second variant against the first (None with fewer than two variants).
    diff: BaselineDiff | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "variants": list(self.variants),
            "slices": [s.to_dict() for s in self.slices],
            "flips_by_slice": {k: dict(v) for k, v in self.flips_by_slice.items()},
            "regressions": list(self.diff.regressions) if self.diff else [],
            "fixes": list(self.diff.fixes) if self.diff else [],
        }


@dataclass(frozen=True)
class GateResult:
    passed: bool
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reasons": list(self.reasons)}


@dataclass(frozen=True)
class Summary:
    totals: dict[str, int]
    slices: tuple[SliceStats, ...]
    gate: GateResult
    regressions: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    tags: tuple[GroupStats, ...] = ()
    variants: tuple[GroupStats, ...] = ()
    repeats: tuple[RepeatStats, ...] = ()
    baseline: BaselineDiff | None = None
    policy: ThresholdPolicy = field(default_factory=ThresholdPolicy)
    compared_variants: VariantComparison | None = None

    @property
    def flaky(self) -> tuple[RepeatStats, ...]:
        return tuple(r for r in self.repeats if r.flaky)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": SUMMARY_FORMAT_VERSION,
            "totals": self.totals,
            "slices": [s.to_dict() for s in self.slices],
            "regressions": list(self.regressions),
            "fixes": list(self.fixes),
            "new": list(self.new),
            "removed": list(self.removed),
            "gate": self.gate.to_dict(),
            "tags": [t.to_dict() for t in self.tags],
            "variants": [v.to_dict() for v in self.variants],
            "flaky": [r.to_dict() for r in self.flaky],
            "baseline": self.baseline.to_dict() if self.baseline is not None else None,
            "policy": self.policy.to_dict(),
            "compared_variants": (
                self.compared_variants.to_dict() if self.compared_variants is not None else None
            ),
        }


# -- loading ------------------------------------------------------------------------------------


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


# -- aggregation --------------------------------------------------------------------------------


def row_key(case_id: str, variant: str | None, repeat: int, *, with_repeat: bool) -> str:
    """How a row is named in the diff: ``case_id[variant][repeat-i]`` (suffixes where they apply)."""
    key = case_id
    if variant is not None:
        key += f"[{variant}]"
    if with_repeat:
        key += f"[repeat-{repeat}]"
    return key


def _frame(rows: Sequence[CaseResult]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        {
            "case_id": [r.case_id for r in rows],
            "slice": [r.slice for r in rows],
            "variant": [r.variant for r in rows],
            "repeat": [r.repeat for r in rows],
            "outcome": [r.outcome.value for r in rows],
        }
    )


def _counts(df: pd.DataFrame, by: str) -> dict[str, dict[str, int]]:
    """Outcome counts per value of ``by``: ``{group: {"cases", "passed", ...}}``."""
    if df.empty:
        return {}
    table = df.groupby([by, "outcome"], sort=True).size().unstack(fill_value=0)
    out: dict[str, dict[str, int]] = {}
    for name, row in table.iterrows():
        c = {o: int(row.get(o, 0)) for o in _OUTCOMES}
        c["cases"] = int(row.sum())
        out[str(name)] = c
    return out


def _rate(c: Mapping[str, int]) -> tuple[float | None, float | None, float | None, int]:
    """Pass rate ``passed / (cases - review - skipped)``, its Wilson interval and the denominator."""
    n = c["cases"] - c["review"] - c["skipped"]
    if n <= 0:
        return None, None, None, 0
    low, high = wilson_interval(c["passed"], n)
    return c["passed"] / n, low, high, n


def _group(name: str, c: Mapping[str, int]) -> GroupStats:
    rate, low, high, _ = _rate(c)
    return GroupStats(
        name=name, cases=c["cases"], passed=c["passed"], failed=c["failed"], error=c["error"],
        review=c["review"], skipped=c["skipped"], pass_rate=rate, ci_low=low, ci_high=high,
    )


def _tag_stats(rows: Sequence[CaseResult]) -> tuple[GroupStats, ...]:
    import pandas as pd

    pairs = [(tag, r.outcome.value) for r in rows for tag in r.tags]
    if not pairs:
        return ()
    df = pd.DataFrame(pairs, columns=["tag", "outcome"])
    return tuple(_group(name, c) for name, c in _counts(df, "tag").items())


def _variant_stats(df: pd.DataFrame) -> tuple[GroupStats, ...]:
    if df["variant"].isna().all():
        return ()
    named = df.assign(variant=df["variant"].fillna("(none)"))
    return tuple(_group(name, c) for name, c in _counts(named, "variant").items())


def _repeat_stats(df: pd.DataFrame) -> tuple[RepeatStats, ...]:
    """Per repeated case and variant: counted runs (not review/skipped) and how many passed."""
    keyed = df.assign(variant=df["variant"].fillna(""))
    sizes = keyed.groupby(["case_id", "variant"], sort=True).size()
    repeated = sizes[sizes > 1]
    if repeated.empty:
        return ()
    sub = keyed.set_index(["case_id", "variant"]).loc[repeated.index].reset_index()
    sub = sub.assign(
        counted=~sub["outcome"].isin(["review", "skipped"]), ok=sub["outcome"].eq("passed")
    )
    agg = sub.groupby(["case_id", "variant"], sort=True).agg(
        slice=("slice", "first"), runs=("counted", "sum"), passed=("ok", "sum")
    )
    out = []
    for (case_id, variant), row in agg.iterrows():
        runs = int(row["runs"])
        out.append(
            RepeatStats(
                case_id=str(case_id), variant=str(variant) or None, slice=str(row["slice"]),
                runs=runs, passed=int(row["passed"]),
                pass_fraction=int(row["passed"]) / runs if runs else None,
            )
        )
    return tuple(out)


def prompt_display(prompt: Any) -> str | None:
    """What was sent, as readable text: the string, or ``[role] content`` lines for messages."""
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(
            f"[{m.get('role', '?')}] {m.get('content', '')}" if isinstance(m, dict) else str(m)
            for m in prompt
        )
    return json.dumps(prompt, ensure_ascii=False)


def _flip(key: str, kind: str, old: CaseResult, new: CaseResult) -> Flip:
    import difflib

    old_prompt, new_prompt = prompt_display(old.prompt), prompt_display(new.prompt)
    diff = None
    if old_prompt is not None and new_prompt is not None and old_prompt != new_prompt:
        diff = "\n".join(
            difflib.unified_diff(
                old_prompt.splitlines(), new_prompt.splitlines(), "baseline", "current", lineterm=""
            )
        )
    return Flip(
        id=key, slice=new.slice, kind=kind, old_outcome=old.outcome, new_outcome=new.outcome,
        old_output=old.output, new_output=new.output, old_prompt=old_prompt, new_prompt=new_prompt,
        prompt_diff=diff, checks=tuple(c.to_dict() for c in new.checks),
    )


@dataclass
class _Compared:
    per_slice: dict[str, dict[str, Any]]
    diff: BaselineDiff


def _compare(
    rows: Sequence[CaseResult], df: pd.DataFrame, baseline: Sequence[CaseResult], source: str,
    policy: ThresholdPolicy,
) -> _Compared:
    """Pair current and baseline rows by (case_id, variant, repeat); count flips per slice."""

    base = _frame(baseline)
    base_counts = _counts(base, "slice")
    with_repeat = bool((df["repeat"] != 0).any() or (base["repeat"] != 0).any())

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.assign(idx=range(len(frame)))
        if with_repeat:
            keys = [
                row_key(c, v, r, with_repeat=True)
                for c, v, r in zip(frame["case_id"], frame["variant"], frame["repeat"], strict=True)
            ]
        else:
            keys = [
                c if v is None else f"{c}[{v}]"
                for c, v in zip(frame["case_id"], frame["variant"], strict=True)
            ]
        return frame.assign(key=keys).drop_duplicates("key", keep="last")

    cur, old = keyed(df), keyed(base)
    both = cur.merge(old, on="key", how="outer", suffixes=("", "_old"), indicator=True, sort=True)
    new_ids = tuple(both.loc[both["_merge"] == "left_only", "key"])
    removed_ids = tuple(both.loc[both["_merge"] == "right_only", "key"])
    paired = both[both["_merge"] == "both"]
    counted = ~paired["outcome"].isin(["review", "skipped"]) & ~paired["outcome_old"].isin(
        ["review", "skipped"]
    )
    now_ok, was_ok = paired["outcome"].eq("passed"), paired["outcome_old"].eq("passed")
    reg = paired[counted & was_ok & ~now_ok]
    fix = paired[counted & ~was_ok & now_ok]
    reg_by_slice = reg.groupby("slice").size().to_dict()
    fix_by_slice = fix.groupby("slice").size().to_dict()

    per_slice: dict[str, dict[str, Any]] = {}
    for name in sorted(set(df["slice"])):
        b, c = int(reg_by_slice.get(name, 0)), int(fix_by_slice.get(name, 0))
        old_rate = _rate(base_counts[name])[0] if name in base_counts else None
        per_slice[name] = {
            "baseline_pass_rate": old_rate, "regressions": b, "fixes": c, "p_value": mcnemar_p(b, c),
        }
    flips = [
        _flip(k, "regression", baseline[int(j)], rows[int(i)])
        for k, i, j in zip(reg["key"], reg["idx"], reg["idx_old"], strict=True)
    ] + [
        _flip(k, "fix", baseline[int(j)], rows[int(i)])
        for k, i, j in zip(fix["key"], fix["idx"], fix["idx_old"], strict=True)
    ]
    current_slices = set(df["slice"])
    missing = {n: _rate(c)[0] for n, c in base_counts.items() if n not in current_slices}
    limit, limit_source = policy.max_regression()
    diff = BaselineDiff(
        source=source, max_regression=limit, max_regression_source=limit_source,
        regressions=tuple(reg["key"]), fixes=tuple(fix["key"]), new=new_ids, removed=removed_ids,
        flips=tuple(flips), missing_slices=missing,
    )
    return _Compared(per_slice=per_slice, diff=diff)


def _compare_variants(
    rows: Sequence[CaseResult], df: pd.DataFrame, order: Sequence[str], policy: ThresholdPolicy
) -> VariantComparison:
    """Each (slice, variant) gated like a slice, and the second variant diffed against the first
    with the baseline machinery (the variant stripped, so rows pair by case and repeat)."""
    named = df[df["variant"].notna()]
    table: list[VariantSlice] = []
    sep = "\x1f"  # slice and variant in one group key (_counts keys are strings)
    keyed = named.assign(key=[f"{a}{sep}{b}" for a, b in zip(named["slice"], named["variant"], strict=True)])
    groups = [(*key.split(sep, 1), c) for key, c in _counts(keyed, "key").items()]
    groups.sort(key=lambda g: (g[0], order.index(g[1]) if g[1] in order else len(order)))
    for slice_name, variant, c in groups:
        rate, low, high, _ = _rate(c)
        threshold, _source = policy.threshold(slice_name)
        ok = rate is None or rate + _EPS >= threshold
        table.append(
            VariantSlice(
                slice=slice_name, variant=variant, cases=c["cases"], passed=c["passed"],
                failed=c["failed"], error=c["error"], review=c["review"], skipped=c["skipped"],
                pass_rate=rate, ci_low=low, ci_high=high, threshold=threshold,
                gate="pass" if ok else "fail",
            )
        )
    flips: dict[str, dict[str, Any]] = {}
    diff = None
    if len(order) >= 2:
        first = [replace(r, variant=None) for r in rows if r.variant == order[0]]
        second = [replace(r, variant=None) for r in rows if r.variant == order[1]]
        if first and second:
            compared = _compare(second, _frame(second), first, f"variant {order[0]}", policy)
            diff = compared.diff
            flips = {
                name: {k: v for k, v in per.items() if k in ("regressions", "fixes", "p_value")}
                for name, per in compared.per_slice.items()
            }
    return VariantComparison(variants=tuple(order), slices=tuple(table), flips_by_slice=flips, diff=diff)


def _ids(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _points(fraction: float) -> str:
    """A difference of pass rates in percentage points."""
    return f"{fraction * 100:.1f} points"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summarize(
    rows: Iterable[CaseResult],
    policy: ThresholdPolicy | None = None,
    *,
    baseline: Sequence[CaseResult] | None = None,
    baseline_source: str = "baseline",
    variant_order: Sequence[str] | None = None,
) -> Summary:
    """Per-slice counts, pass rates (``passed / (cases - review)``), Wilson intervals and gates.

    With ``baseline`` (the rows of an earlier run) every slice also gets the baseline pass rate,
    the delta, its regressions and fixes and an exact McNemar p-value, and the regression gate
    (``policy.max_regression()``) applies. Slices are sorted by name, so the table does not depend
    on the order results arrived in.

    With prompt variants each (slice, variant) is gated on its own, so the verdict says which
    version failed; ``variant_order`` (the config's order, else sorted) picks the first two to
    compare case by case.
    """
    policy = policy or ThresholdPolicy()
    rows = list(rows)
    df = _frame(rows)
    counts = _counts(df, "slice")
    present = sorted({r.variant for r in rows if r.variant is not None})
    order = [v for v in (variant_order or ()) if v in present] + [
        v for v in present if v not in (variant_order or ())
    ]
    versions = _compare_variants(rows, df, order, policy) if order else None
    failed_versions: dict[str, list[VariantSlice]] = {}
    for vs in versions.slices if versions is not None else ():
        if vs.gate == "fail":
            failed_versions.setdefault(vs.slice, []).append(vs)
    compared = (
        _compare(rows, df, list(baseline), baseline_source, policy) if baseline is not None else None
    )
    limit, limit_source = policy.max_regression()
    slices: list[SliceStats] = []
    reasons: list[str] = []
    totals = dict.fromkeys(("cases", *_OUTCOMES), 0)
    for name, c in counts.items():
        for key in totals:
            totals[key] += c[key]
        rate, low, high, n = _rate(c)
        threshold, source = policy.threshold(name)
        if versions is not None:  # each prompt version must meet the slice's threshold
            ok = name not in failed_versions
            for vs in failed_versions.get(name, ()):
                counted = vs.cases - vs.review - vs.skipped
                reasons.append(
                    f"slice {name!r} [variant {vs.variant}]: pass rate {vs.pass_rate:.1%} "
                    f"({vs.passed}/{counted}) is below its threshold {threshold:.1%} ({source})"
                )
        else:
            ok = rate is None or rate + _EPS >= threshold
            if not ok:
                reasons.append(
                    f"slice {name!r}: pass rate {rate:.1%} ({c['passed']}/{n}) "
                    f"is below its threshold {threshold:.1%} ({source})"
                )
        extra: dict[str, Any] = {}
        if compared is not None:
            extra = dict(compared.per_slice[name])
            old_rate = extra["baseline_pass_rate"]
            delta = rate - old_rate if rate is not None and old_rate is not None else None
            extra["delta"] = delta
            if delta is not None and -delta > limit + _EPS:
                ok = False
                flipped = [f.id for f in compared.diff.flips if f.slice == name and f.kind == "regression"]
                why = f"; regressions: {_ids(flipped)}" if flipped else ""
                reasons.append(
                    f"slice {name!r}: pass rate dropped {_points(-delta)} against the baseline "
                    f"({old_rate:.1%} -> {rate:.1%}), more than the allowed {_points(limit)} "
                    f"({limit_source}); McNemar p = {extra['p_value']:.3g}{why}"
                )
        slices.append(
            SliceStats(
                slice=name, cases=c["cases"], passed=c["passed"], failed=c["failed"],
                error=c["error"], review=c["review"], skipped=c["skipped"], pass_rate=rate,
                ci_low=low, ci_high=high, threshold=threshold, threshold_source=source,
                gate="pass" if ok else "fail", **extra,
            )
        )
    if totals["error"]:
        erred = [r.case_id for r in rows if r.outcome == "error"]
        reasons.append(
            f"{_plural(totals['error'], 'case')} ended in an error (the model call or the "
            f"rendering failed): {_ids(erred)}; errors always fail the run"
        )
    diff = compared.diff if compared is not None else None
    return Summary(
        totals=totals,
        slices=tuple(slices),
        gate=GateResult(passed=not reasons, reasons=tuple(reasons)),
        regressions=diff.regressions if diff else (),
        fixes=diff.fixes if diff else (),
        new=diff.new if diff else (),
        removed=diff.removed if diff else (),
        tags=_tag_stats(rows),
        variants=_variant_stats(df) if rows else (),
        repeats=_repeat_stats(df) if rows else (),
        baseline=diff,
        policy=policy,
        compared_variants=versions,
    )


def outcome_counts(rows: Iterable[CaseResult]) -> dict[str, int]:
    """How many rows ended in each outcome."""
    out = {o.value: 0 for o in Outcome}
    for row in rows:
        out[row.outcome] += 1
    return out
