"""``summary.md``, a GitHub job summary in plain Markdown (every user text escaped): the gate's result
first, the slice table, then what changed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.report.evidence import regression_lines
from pytest_promptsuite.report.reasons import reason
from pytest_promptsuite.report.text import case_pass_line
from pytest_promptsuite.report.text import pct
from pytest_promptsuite.report.text import per_case_cells
from pytest_promptsuite.report.text import per_case_line
from pytest_promptsuite.report.text import sequential_line
from pytest_promptsuite.report.text import slice_rows
from pytest_promptsuite.report.text import totals_line
from pytest_promptsuite.report.text import usage_cells
from pytest_promptsuite.report.text import variant_rows
from pytest_promptsuite.report.trends import trend_rows
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.frames import history_frame
from pytest_promptsuite.results.history import History
from pytest_promptsuite.results.summary import Summary
from pytest_promptsuite.results.usage import UsageReport
from pytest_promptsuite.safety.scrub import scrub_cut


#: Ids listed per section before "... and N more": a job summary is capped at 1 MiB.
MAX_IDS = 50
#: Cases listed in a collapsed section, and characters of each one's first failed check message.
MAX_CASES = 100
MAX_MESSAGE = 200
#: Characters that are markup anywhere in a line (HTML is written as entities instead).
_SPECIAL = "\\`*_[]|~"
_LINE_START = re.compile(r"^(\d+)([.)])(?=\s|$)|^([-+#=])")


def md_escape(text: str) -> str:
    """Escape ``text`` into literal Markdown inline text on one line (no markup, no HTML, no links)."""
    text = " ".join(text.split())
    out = []
    for ch in text:
        if ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch == "&":
            out.append("&amp;")
        elif ch in _SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    # GitHub turns bare URLs into links; an escaped colon or dot keeps them plain text
    escaped = "".join(out).replace("://", "\\://").replace("www.", "www\\.")
    # what would open a list, heading or quote at the start of a cell or list item
    return _LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", escaped, count=1)


def _ids(title: str, ids: Sequence[str]) -> list[str]:
    if not ids:
        return []
    lines = [f"### {title} ({len(ids)})", ""]
    lines += [f"- {md_escape(i)}" for i in ids[:MAX_IDS]]
    if len(ids) > MAX_IDS:
        lines.append(f"- ... and {len(ids) - MAX_IDS} more (see results.jsonl)")
    return [*lines, ""]


def summary_markdown(
    summary: Summary,
    review: Sequence[Mapping[str, Any]] = (),
    *,
    rows: Sequence[CaseResult] = (),
    usage: UsageReport | None = None,
    history: History | None = None,
    cut: str | None = None,
) -> str:
    """Write ``summary.md``: the gate's result, the slice table and the totals on top, then collapsed
    sections (failing and regressed cases, cost and latency, the trend); ``review`` is the review queue, ``rows``
    the failed and errored rows, ``cut`` the line naming every answer cut at ``max_tokens`` (``text.cut_line``)."""
    md = _gate(summary) + _slice_table(summary)
    if usage is not None:
        md += [md_escape(totals_line(usage)), ""]
        if (line := per_case_line(usage)) is not None:
            md += [md_escape(line), ""]
    if cut is not None:
        md += [md_escape(cut), ""]
    md += _failing(rows) + _regressed(summary) + _usage(usage) + _trend(history)
    md += _baseline(summary) + _drops(summary) + _variants(summary) + _judges(summary)
    md += _ids("Review queue (for a human; see review.jsonl)", [_queued(item) for item in review])
    flaky = [f"{r.key.name(with_repeat=False)}: {r.passed}/{r.runs}" for r in summary.flaky]
    md += _ids("Flaky cases (passed in some repeats only)", flaky)
    if (line := sequential_line(summary)) is not None:
        md += [md_escape(line), ""]
    if (line := case_pass_line(summary)) is not None:
        below = [f"{r.key.name(with_repeat=False)}: {r.passed} of {r.runs}" for r in summary.below_case_pass]
        md += [md_escape(line.partition(";")[0]), ""]
        md += _ids("Cases below [gate] case_pass (repeats passed of run)", below)
    return "\n".join(md).rstrip("\n") + "\n"


def _queued(item: Mapping[str, Any]) -> str:
    name = CaseKey(item["case_id"], item["variant"]).name(with_repeat=False)
    return f"{name} [{item['slice']}]: {'; '.join(item['reasons']) or 'marked for review'}"


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _collapsed(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], total: int = 0) -> list[str]:
    """Return a ``<details>`` section (closed) holding a table whose cells are already escaped, of
    ``total`` rows when only the first are given."""
    md = [f"<details><summary>{md_escape(title)}</summary>", "", _row(map(md_escape, header))]
    md += ["|" + "---|" * len(header), *map(_row, rows)]
    if total > len(rows):
        md += ["", f"... and {total - len(rows)} more (see results.jsonl)"]
    return [*md, "", "</details>", ""]


def first_failure(checks: Sequence[Mapping[str, Any]], error: str | None) -> str:
    """Write a row's error, or its first failed check's name and message, scrubbed, cut and escaped."""
    if error is not None:
        text = f"error: {error}"
    else:
        failed = next((c for c in checks if not c.get("passed") and not c.get("skipped")), None)
        text = "-" if failed is None else f"{failed.get('name')}: {failed.get('message')}"
    kept, _, after = scrub_cut(" ".join(text.split()), MAX_MESSAGE)  # scrubbed, then cut
    return md_escape(kept[:-1] + "…" if after else kept)


def _failing(rows: Sequence[CaseResult]) -> list[str]:
    """List the failed and errored cases, each with its first failed check's message."""
    bad = [r for r in rows if r.outcome in (Outcome.FAILED, Outcome.ERROR)]
    if not bad:
        return []
    repeated = any(r.repeat for r in bad)
    table = []
    for r in bad[:MAX_CASES]:
        first = first_failure([c.to_dict() for c in r.checks], r.error)
        table.append([md_escape(r.key.name(with_repeat=repeated)), md_escape(r.slice), r.outcome.value, first])
    header = ["case", "slice", "outcome", "first failed check"]
    return _collapsed(f"Failing cases ({len(bad)})", header, table, len(bad))


def _regressed(summary: Summary) -> list[str]:
    """List the cases that passed in the baseline and do not now, with what fails now."""
    flips = [f for f in (summary.baseline.flips if summary.baseline else ()) if f.kind == "regression"]
    if not flips:
        return []
    table = []
    for f in flips[:MAX_CASES]:
        now = "an error (see the failing cases)" if f.new_outcome == "error" else first_failure(f.checks, None)
        table.append([md_escape(f.id), md_escape(f.slice), f"{f.old_outcome} → {f.new_outcome}", now])
    title = f"Regressed cases ({len(flips)}, passed in the baseline)"
    return _collapsed(title, ["case", "slice", "outcome", "first failed check now"], table, len(flips))


def _usage(usage: UsageReport | None) -> list[str]:
    """Tabulate calls, cache hits, tokens, cost and latency per slice and per variant."""
    if usage is None or not usage.total.rows:
        return []
    groups = [("slice", s) for s in usage.slices] + [("variant", v) for v in usage.variants]
    groups.append(("total", usage.total))
    table = [[kind, md_escape(g.name), *usage_cells(g), *per_case_cells(g)] for kind, g in groups]
    header = ["by", "name", "calls", "cache hits", "tokens", "cost", "p50 latency", "p95 latency"]
    header += ["tokens / case", "cost / case", "judge tokens"]
    return _collapsed("Calls, tokens, cost and latency by slice and variant", header, table)


def _trend(history: History | None) -> list[str]:
    """Tabulate each slice's pass rate (95 % interval) over the earlier runs and this one."""
    if history is None or len(history.runs) < 2:
        return []
    header, rows = trend_rows(history_frame(history))
    table = [[md_escape(c) for c in row] for row in rows]
    return _collapsed(f"Pass rate by slice over the last {min(len(history.runs), len(header) - 2)} runs", header, table)


def _gate(summary: Summary) -> list[str]:
    """Write the gate's heading, each failure's sentence and the totals."""
    gate = summary.gate
    t = summary.totals
    result = "PASSED" if gate.passed else "FAILED"
    mark = "\u2705" if gate.passed else "\u274c"
    md = [f"## {mark} promptsuite gate: {result}", ""]
    if gate.decisions:
        md += [f"- {md_escape(reason(decision))}" for decision in gate.decisions]
        md.append("")
    return [*md, f"{t.cases} cases: {t.passed} passed, {t.failed} failed, {t.error} error, {t.review} review", ""]


def _slice_table(summary: Summary) -> list[str]:
    """Tabulate the slices, the gate column in bold where it fails."""
    header, rows = slice_rows(summary)
    md = [_row(map(md_escape, header))]
    md.append("|" + "|".join("---" if i == 0 or i == len(header) - 1 else "---:" for i in range(len(header))) + "|")
    for row in rows:
        cells = [md_escape(c) for c in row]
        cells[-1] = f"**{cells[-1]}**" if row[-1] == "FAIL" else cells[-1]
        md.append(_row(cells))
    return [*md, ""]


def _baseline(summary: Summary) -> list[str]:
    """Sum up the baseline comparison in one sentence and list the ids that changed."""
    diff = summary.baseline
    if diff is None:
        return []
    md = [
        f"Against the baseline {md_escape(diff.source)}: "
        f"{len(diff.regressions)} regressions, {len(diff.fixes)} fixes, {len(diff.new)} new, "
        f"{len(diff.removed)} removed; allowed drop {diff.max_regression * 100:.1f} points "
        f"({md_escape(diff.max_regression_source)}). p is the exact two-sided McNemar test on the "
        "flips; p drop is the one-sided exact test of a drop the gate uses.",
        "",
    ]

    md += _ids("Regressions (passed, now not)", list(diff.regressions))
    md += _ids("Fixes (failed, now passed)", list(diff.fixes))
    md += _ids("New cases", list(diff.new))
    return md + _ids("Removed cases", list(diff.removed))


def _judges(summary: Summary) -> list[str]:
    """Return the judge's section: the rubric checks it did not gate and why, the slices whose judge changed."""
    lines = summary.judges.lines()
    return ["### The judge", "", *[f"- {md_escape(line)}" for line in lines], ""] if lines else []


def _drops(summary: Summary) -> list[str]:
    """List the regression rule and each regression test worth a look."""
    lines = list(regression_lines(summary))
    if not lines:
        return []
    return ["### Is this drop real?", "", *[f"- {md_escape(line)}" for line in lines], ""]


def _by_variant(summary: Summary) -> list[str]:
    """Tabulate each variant's cases, passes and pass rate."""
    md = ["### By variant", "", "| variant | cases | passed | pass rate |", "|---|---:|---:|---:|"]
    for v in summary.variants:
        c = v.counts
        md.append(f"| {md_escape(v.name)} | {c.cases} | {c.passed} | {pct(c.pass_rate)} |")
    md.append("")
    return md


def _variants(summary: Summary) -> list[str]:
    """Tabulate the pass rate per variant, and the prompt variants side by side with their flips."""
    md = _by_variant(summary) if summary.variants else []
    compared = summary.compared_variants
    if compared is None:
        return md
    names = list(compared.variants)
    pair = len(names) >= 2
    head = ["slice", *names] + ([f"flips {names[0]} → {names[1]} (−/+)", "p"] if pair else [])
    md += ["### Prompt variants side by side", "", _row(map(md_escape, head)), "|---|" + "---:|" * (len(head) - 1)]
    rows = variant_rows(compared, lambda vs: pct(vs.counts.pass_rate) + ("" if vs.gate == "pass" else " ❌"), minus="−")
    md += [_row([md_escape(name), *cells]) for name, *cells in rows]
    md.append("")
    if pair and compared.diff is not None:
        md += _ids(f"{names[1]} breaks (passed in {names[0]})", list(compared.diff.regressions))
        md += _ids(f"{names[1]} fixes (failed in {names[0]})", list(compared.diff.fixes))
    return md
