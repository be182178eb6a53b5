"""The pull request's comment: a report's gate, slice table, newly failing cases, cost and baseline in Markdown,
always under GitHub's size limit, with a hidden marker a later run finds it by."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any

from pytest_promptsuite.report.markdown import md_escape
from pytest_promptsuite.report.reasons import model_change
from pytest_promptsuite.report.reasons import plural
from pytest_promptsuite.report.text import money
from pytest_promptsuite.report.text import pct
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.stats import paired_change_interval


#: GitHub refuses a comment body past 65,536 characters; the comment stays under this many UTF-16 units.
MAX_COMMENT = 65_000
#: Cases listed per section, slices per table, and characters of a name, before "and N more".
MAX_LISTED = 20
MAX_SLICES = 50
MAX_NAME = 120
#: The marker's start: an HTML comment GitHub does not show.
MARKER = "<!-- promptsuite-comment"
_VERDICT_MARKS = {"passed": "\u2705", "inconclusive": "\u26a0\ufe0f", "regressed": "\u274c", "failed": "\u274c"}


@dataclass(frozen=True)
class CaseNote:
    """A newly failing or passing case as the comment lists it: its slice and its first failure's message."""

    slice: str
    message: str


@dataclass(frozen=True)
class CommentSource:
    """What a comment is written from: the report's ``summary.json`` and, when known, the baseline's, where the
    baseline came from (``origin.json``: commit, time, run), the changed cases and each side's judges."""

    report: Mapping[str, Any]
    baseline: Mapping[str, Any] | None = None
    origin: Mapping[str, Any] | None = None
    notes: Mapping[str, CaseNote] = field(default_factory=dict)
    #: The judge names the baseline's rows and the report's rows recorded (None when not read).
    judges: tuple[frozenset[str], frozenset[str]] | None = None
    #: Tells this comment from another suite's in the same pull request.
    key: str = ""
    now: datetime | None = None

    @property
    def compared(self) -> bool:
        """Whether the report was compared with a baseline."""
        return isinstance(self.report.get("baseline"), Mapping)


def marker(key: str = "") -> str:
    """Return the hidden line a later run finds its own comment by (``key`` tells suites apart)."""
    return f"{MARKER}{':' + md_escape(key) if key else ''} -->"


def verdict(report: Mapping[str, Any]) -> str:
    """Return the gate's verdict in one word: ``regressed`` or ``failed`` when it failed (a slice regressed, or
    another gate), else ``inconclusive`` when a drop could not be told from noise, else ``passed``."""
    verdicts = {s.get("verdict") for s in _slices(report)}
    if not _gate(report).get("passed"):
        return "regressed" if "regressed" in verdicts else "failed"
    return "inconclusive" if "inconclusive" in verdicts else "passed"


def comment_markdown(source: CommentSource, limit: int = MAX_COMMENT) -> str:
    """Write the comment: marker and verdict first, then the slice table, the changed cases, cost and latency,
    the judge and model changes and the baseline, each part left out whole when the limit is reached."""
    head = [marker(source.key), *_verdict_lines(source.report)]
    parts = [
        _slice_table(source),
        _case_list("Newly failing", source.report.get("regressions"), source.notes),
        _case_list("Newly passing", source.report.get("fixes"), source.notes),
        _usage_table(source),
        _changes(source),
        _baseline_line(source),
    ]
    return _fit(head, [p for p in parts if p], limit)


def _gate(report: Mapping[str, Any]) -> Mapping[str, Any]:
    gate = report.get("gate")
    return gate if isinstance(gate, Mapping) else {}


def _slices(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [s for s in report.get("slices") or () if isinstance(s, Mapping)]


def _verdict_lines(report: Mapping[str, Any]) -> list[str]:
    """Write the verdict heading, the totals and each of the gate's reasons."""
    word = verdict(report)
    totals = report.get("totals") or {}
    counts = ", ".join(f"{totals.get(k, 0):,} {k}" for k in ("passed", "failed", "error", "review"))
    lines = [f"### {_VERDICT_MARKS[word]} promptsuite: {word}", "", f"{totals.get('cases', 0):,} cases: {counts}", ""]
    reasons = [str(r) for r in _gate(report).get("reasons") or ()]
    lines += [f"- {md_escape(_cut(r, 600))}" for r in reasons[:MAX_LISTED]]
    if len(reasons) > MAX_LISTED:
        lines.append(f"- and {len(reasons) - MAX_LISTED} more reasons (see the job summary)")
    return [*lines, ""] if reasons else lines


def _cut(text: str, limit: int = MAX_NAME) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _points(value: float) -> str:
    return f"{value * 100:+.1f}".replace("-", "\u2212")


def _slice_table(source: CommentSource) -> list[str]:
    """Tabulate the slices, those that failed their gate first."""
    slices = sorted(_slices(source.report), key=lambda s: s.get("gate") != "fail")
    tests = _baseline_tests(source.report)
    if source.compared:
        header = ["slice", "baseline", "this run", "change, paired cases (95% CI)", "verdict"]
        rows = [_compared_cells(s, tests.get(str(s.get("slice")), [])) for s in slices[:MAX_SLICES]]
    else:
        header = ["slice", "cases", "pass rate (95% CI)", "threshold", "gate"]
        rows = [_plain_cells(s) for s in slices[:MAX_SLICES]]
    table = [_row(header), "|---|" + "---:|" * (len(header) - 2) + "---|", *map(_row, rows)]
    if len(slices) > MAX_SLICES:
        table.append(f"\nand {len(slices) - MAX_SLICES:,} more slices (every slice is in the job summary)")
    return [*table, ""]


def _baseline_tests(report: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Return the regression tests against the baseline by slice."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for test in report.get("regression_tests") or ():
        if isinstance(test, Mapping) and test.get("against") == "baseline":
            found.setdefault(str(test.get("slice")), []).append(test)
    return found


def _rate(value: Any) -> str:
    return pct(value) if isinstance(value, (int, float)) else "-"


def _interval(s: Mapping[str, Any]) -> str:
    low, high = s.get("ci_low"), s.get("ci_high")
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return ""
    return f" ({low:.0%}\u2013{high:.0%})"


def _plain_cells(s: Mapping[str, Any]) -> list[str]:
    threshold = s.get("threshold")
    gate = "**FAIL**" if s.get("gate") == "fail" else "pass"
    shown = f"{threshold:.0%}" if isinstance(threshold, (int, float)) else "-"
    return [
        md_escape(_cut(str(s.get("slice")))),
        f"{s.get('cases', 0):,}",
        _rate(s.get("pass_rate")) + _interval(s),
        shown,
        gate,
    ]


def _compared_cells(s: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]) -> list[str]:
    now = _rate(s.get("pass_rate")) + _interval(s)
    return [
        md_escape(_cut(str(s.get("slice")))),
        _rate(s.get("baseline_pass_rate")),
        now,
        _change(tests),
        _slice_verdict(s, tests),
    ]


def _change(tests: Sequence[Mapping[str, Any]]) -> str:
    """Write the change of the pass rate over the paired cases, with its 95 % interval (one run per case)."""
    table = _paired_table(tests)
    if table is None:
        return "-"
    interval = paired_change_interval(*table)
    n = sum(table)
    change = (table[2] - table[1]) / n if n else 0.0
    shown = f"{_points(change)} pts"
    return shown if interval is None else f"{shown} ({_points(interval[0])} to {_points(interval[1])})"


def _paired_table(tests: Sequence[Mapping[str, Any]]) -> tuple[int, int, int, int] | None:
    """Return the paired 2x2 table (both passed, lost, gained, neither) of a slice's tests with one run per case."""
    if not tests or any(t.get("repeats") != 1 for t in tests):
        return None
    tables = [_table_of(t) for t in tests]
    both, lost, gained, neither = (sum(column) for column in zip(*tables, strict=True))
    return (both, lost, gained, neither) if min(both, neither) >= 0 and both + lost + gained + neither else None


def _table_of(test: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """Return one test's paired 2x2 table from its cases, baseline pass rate, regressions and fixes."""
    n, before = int(test.get("cases") or 0), test.get("baseline_pass_rate")
    passed_before = round(before * n) if isinstance(before, (int, float)) else 0
    lost, gained = int(test.get("regressions") or 0), int(test.get("fixes") or 0)
    both = passed_before - lost
    return both, lost, gained, n - both - lost - gained


def _slice_verdict(s: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]) -> str:
    """Write a slice's verdict: its regression test's, a threshold it missed, what would settle a doubt."""
    said = {"regressed": "**regressed**", "inconclusive": "inconclusive", "no evidence of a drop": "no drop"}
    word = said.get(str(s.get("verdict")), "-")
    if s.get("gate") == "fail" and s.get("verdict") != "regressed":
        word = "**below threshold**" if word in ("-", "no drop") else f"{word}, **below threshold**"
    more = [int(t["settle_cases"]) - int(t.get("cases") or 0) for t in tests if isinstance(t.get("settle_cases"), int)]
    if s.get("verdict") == "inconclusive":
        word += f"; about {max(more):,} more cases would settle it" if more else "; more data would settle it"
    return word


def _case_list(title: str, ids: Any, notes: Mapping[str, CaseNote]) -> list[str]:
    """List changed cases (id, slice and, of those that newly fail, the first failure's message), at most
    :data:`MAX_LISTED`, then how many more."""
    names = [str(i) for i in ids or ()]
    if not names:
        return []
    failing = title == "Newly failing"
    header = ["case", "slice", "first failed check"] if failing else ["case", "slice"]
    lines = [f"**{title} ({len(names):,})**", "", _row(header), "|---" * len(header) + "|"]
    lines += [_row(_case_cells(name, notes.get(name))[: len(header)]) for name in names[:MAX_LISTED]]
    if len(names) > MAX_LISTED:
        lines += ["", f"and {len(names) - MAX_LISTED:,} more (all in the report's summary.json)"]
    return [*lines, ""]


def _case_cells(name: str, note: CaseNote | None) -> list[str]:
    """Return a listed case's cells: its name, slice and first failure's message."""
    if note is None:
        return [md_escape(_cut(name)), "-", "-"]
    return [md_escape(_cut(name)), md_escape(_cut(note.slice)), note.message]


def _usage_total(summary: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    usage = summary.get("usage") if summary else None
    total = usage.get("total") if isinstance(usage, Mapping) else None
    return total if isinstance(total, Mapping) else None


def _figure(total: Mapping[str, Any] | None, key: str) -> str:
    value = total.get(key) if total else None
    if not isinstance(value, (int, float)):
        return "-"
    if key.startswith("cost"):
        return money(value)
    if key.startswith("latency"):
        return f"{value:,.0f} ms"
    return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"


def _rise(old: Mapping[str, Any], new: Mapping[str, Any], key: str) -> str:
    """Write the change of a figure against the baseline's as a share (none where both show the same)."""
    before, after = old.get(key), new.get(key)
    if not isinstance(before, (int, float)) or not isinstance(after, (int, float)) or not before:
        return "-"
    if _figure(old, key) == _figure(new, key):
        return "0%"
    return f"{after / before - 1:+.0%}".replace("-", "\u2212")


_USAGE = (
    ("calls", "calls"),
    ("tokens", "tokens"),
    ("tokens per case", "tokens_per_case"),
    ("cost", "cost_usd"),
    ("p95 latency", "latency_p95_ms"),
)


def _usage_table(source: CommentSource) -> list[str]:
    """Tabulate calls, tokens, cost and p95 latency, against the baseline's when known."""
    new, old = _usage_total(source.report), _usage_total(source.baseline)
    if new is None:
        return []
    if old is None:
        cells = [f"{label} {_figure(new, key)}" for label, key in _USAGE if _figure(new, key) != "-"]
        return [f"**Cost** (no baseline figures): {', '.join(cells)}", ""]
    shown = [(label, key) for label, key in _USAGE if (_figure(old, key), _figure(new, key)) != ("-", "-")]
    rows = [_row([label, _figure(old, key), _figure(new, key), _rise(old, new, key)]) for label, key in shown]
    return ["**Cost**", "", _row(["", "baseline", "this run", "change"]), "|---|---:|---:|---:|", *rows, ""]


def _fingerprint(summary: Mapping[str, Any] | None) -> str | None:
    """Return the judge's fingerprint a ``summary.json`` recorded (top level or in its ``run``), if any."""
    if not summary:
        return None
    run = summary.get("run")
    found = summary.get("judge_fingerprint") or (run.get("judge_fingerprint") if isinstance(run, Mapping) else None)
    return str(found) if found else None


def _run(summary: Mapping[str, Any] | None, key: str = "run") -> RunInfo | None:
    run = summary.get(key) if summary else None
    return RunInfo.from_dict(run) if isinstance(run, Mapping) else None


def _judge_changes(source: CommentSource) -> list[str]:
    """Say whether the judge changed: by the summaries' fingerprints, else by the judges the rows name."""
    old, new = _fingerprint(source.baseline) or _fingerprint(_baseline_run(source.report)), _fingerprint(source.report)
    named = _judge_names(source)
    if old is not None and new is not None and old != new:
        prints = f"fingerprint {_cut(old, 24)} \u2192 {_cut(new, 24)}"
        return [f"judge changed: {f'{named} ({prints})' if named else prints}: a verdict may move with the judge"]
    return [f"judge changed: {named}: a verdict may move with the judge"] if named else []


def _judge_names(source: CommentSource) -> str | None:
    """Return ``before \u2192 after`` when the rows of the two runs name different judges, else None."""
    if source.judges is None or not all(source.judges) or source.judges[0] == source.judges[1]:
        return None
    before, after = (", ".join(sorted(side)) for side in source.judges)
    return f"{_cut(before)} \u2192 {_cut(after)}"


def _baseline_run(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Return the report's record of the baseline's run as a summary holding it, when it has one."""
    run = report.get("baseline_run")
    return {"run": run} if isinstance(run, Mapping) else None


def _model_changes(source: CommentSource) -> list[str]:
    """Say, per variant, which model the baseline used where this run used another."""
    run = _run(source.report)
    old = _run(source.report, "baseline_run") or _run(source.baseline)
    if run is None or old is None:
        return []
    lines = []
    for variant in run.models:
        change = RunInfo.model_change(old.model(variant), run.model(variant))
        if change is not None:
            lines.append(f"the baseline{f' [{variant}]' if variant else ''} {model_change(change)}")
    return lines


def _changes(source: CommentSource) -> list[str]:
    lines = _judge_changes(source) + _model_changes(source)
    return [*(f"- {md_escape(_cut(line, 600))}" for line in lines), ""] if lines else []


def _age(origin: Mapping[str, Any], now: datetime | None) -> str | None:
    """Say how old the baseline is, from its ``created_at`` (ISO 8601), in days or hours."""
    stamp = origin.get("created_at")
    try:
        made = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    if made.tzinfo is None:
        made = made.replace(tzinfo=UTC)
    hours = max(0.0, ((now or datetime.now(UTC)) - made).total_seconds() / 3600)
    return plural(int(hours // 24), "day") + " old" if hours >= 48 else plural(int(hours), "hour") + " old"


def _baseline_line(source: CommentSource) -> list[str]:
    """Say what the run was compared with: the baseline's commit, branch, age and run, or that there was none."""
    if not source.compared:
        return ["No baseline: nothing to compare with, so the slices are gated on their thresholds alone.", ""]
    origin = source.origin or {}
    facts = []
    if origin.get("commit"):
        facts.append(f"commit `{md_escape(str(origin['commit'])[:12]).replace('`', '')}`")
    if origin.get("branch"):
        facts.append(f"on {md_escape(_cut(str(origin['branch'])))}")
    if (age := _age(origin, source.now)) is not None:
        facts.append(age)
    if str(origin.get("run_url", "")).startswith("https://"):
        facts.append(f"[run]({str(origin['run_url']).replace(')', '%29').replace(' ', '%20')})")
    said = ", ".join(facts) if facts else "commit and age unknown"
    return [f"Baseline: {said}.", ""]


def _units(text: str) -> int:
    """Count ``text`` as GitHub may: in UTF-16 code units (never fewer than characters)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _fit(head: Sequence[str], parts: Sequence[Sequence[str]], limit: int) -> str:
    """Join the head and each part that still fits under ``limit``, saying what was left out."""
    note = "_Parts of this comment were left out to stay under GitHub's size limit; the job summary has them._"
    text = "\n".join(head)
    used, left_out = _units(text) + _units(note) + 2, False
    for part in parts:
        block = "\n" + "\n".join(part)
        if used + _units(block) > limit:
            left_out = True
            continue
        text, used = text + block, used + _units(block)
    return (text.rstrip("\n") + ("\n\n" + note if left_out else "")) + "\n"
