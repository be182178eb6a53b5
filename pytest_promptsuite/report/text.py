"""Plain-text views: the slice table, the gate's result and a failing case's report."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.report.evidence import regression_cell
from pytest_promptsuite.report.evidence import regression_lines
from pytest_promptsuite.report.reasons import plural
from pytest_promptsuite.report.reasons import reason
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.records import Counts
from pytest_promptsuite.results.records import RegressionTest
from pytest_promptsuite.results.records import SliceStats
from pytest_promptsuite.results.records import VariantComparison
from pytest_promptsuite.results.records import VariantSlice
from pytest_promptsuite.results.summary import Summary
from pytest_promptsuite.results.usage import UsageReport
from pytest_promptsuite.results.usage import UsageStats
from pytest_promptsuite.safety.scrub import scrub_cut


#: Outputs longer than this are shown trimmed around the first place a failed check points at.
MAX_OUTPUT_CHARS = 600


def display_width(text: str) -> int:
    """Count the terminal columns ``text`` takes (CJK characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int, *, right: bool = False) -> str:
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> Iterator[str]:
    widths = [display_width(h) for h in header]
    for row in rows:
        widths = [max(w, display_width(cell)) for w, cell in zip(widths, row, strict=True)]
    yield "  ".join(_pad(h, w, right=i in right) for i, (h, w) in enumerate(zip(header, widths, strict=True)))
    for row in rows:
        yield "  ".join(
            _pad(cell, w, right=i in right) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()


def pct(value: float | None) -> str:
    """Write a pass rate as a percentage with one decimal (``-`` for none)."""
    return "-" if value is None else f"{value:.1%}"


def _signed_points(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _id_list(ids: Sequence[str], limit: int) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" ... and {len(ids) - limit} more" if len(ids) > limit else "")


def slice_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Return the slice table as text cells (header, rows); baseline columns only with a baseline."""
    baseline = summary.baseline is not None
    header = ["slice", "cases", "passed", "failed", "error", "review", "pass rate", "95% CI", "threshold"]
    if baseline:
        header += ["baseline", "delta (pts)", "flips -/+", "p", "p drop", "verdict", "detectable (pts)"]
    header.append("gate")
    rows = []
    for s in summary.slices:
        row = [s.slice, *_count_cells(s.counts), f"{s.threshold:.0%} ({s.threshold_source})"]
        if baseline:
            row += _baseline_cells(s)
        row.append(s.gate.upper())
        rows.append(row)
        rows += _variant_slice_rows(summary, s.slice, baseline)
    return header, rows


def _count_cells(c: Counts) -> list[str]:
    """Return a group's outcome counts, pass rate and 95 % interval as cells."""
    interval = c.interval
    ci = "-" if interval is None else f"{interval[0]:.0%}-{interval[1]:.0%}"
    return [*map(str, (c.cases, c.passed, c.failed, c.error, c.review)), pct(c.pass_rate), ci]


def _variant_slice_rows(summary: Summary, name: str, baseline: bool) -> list[list[str]]:
    """Return, in a run with prompt variants, a row per variant of slice ``name`` under its pooled row: each
    variant is gated on its own (threshold, and against the baseline's rows of that variant)."""
    compared = summary.compared_variants
    if compared is None:
        return []
    tests = {(t.slice, t.variant): t for t in summary.tests if t.against == "baseline"}
    rows = []
    for vs in (v for v in compared.slices if v.slice == name):
        row = [f"  {name} [{vs.variant}]", *_count_cells(vs.counts), f"{vs.threshold:.0%}"]
        if baseline:
            row += _test_cells(tests.get((name, vs.variant)))
        rows.append([*row, vs.gate.upper()])
    return rows


def _test_cells(test: RegressionTest | None) -> list[str]:
    """Return the baseline columns of one (slice, variant) from its regression test (no McNemar p of its own)."""
    if test is None:
        return ["-"] * 7
    shown_p = test.p_adjusted if test.p_adjusted is not None else test.p_regression
    detectable = "-" if test.detectable_drop is None else f"{test.detectable_drop * 100:.1f}"
    delta = None if test.drop is None else 0.0 - test.drop  # no "-0.0"
    flips = f"-{test.regressions}/+{test.fixes}"
    return [
        pct(test.baseline_pass_rate),
        _signed_points(delta),
        flips,
        "-",
        _p(shown_p),
        regression_cell(test),
        detectable,
    ]


def _baseline_cells(s: SliceStats) -> list[str]:
    test = s.test
    shown_p = None if test is None else (test.p_adjusted if test.p_adjusted is not None else test.p_regression)
    detectable = "-" if test is None or test.detectable_drop is None else f"{test.detectable_drop * 100:.1f}"
    return [
        pct(s.baseline_pass_rate),
        _signed_points(s.delta),
        f"-{s.regressions or 0}/+{s.fixes or 0}",
        _p(s.p_value),
        _p(shown_p),
        "judge changed" if s.verdict == "judge changed" else regression_cell(test),
        detectable,
    ]


def money(value: float | None) -> str:
    """Write USD with enough digits to tell small calls apart (``$0.000123``, ``$12.34``)."""
    if value is None:
        return "-"
    return f"${value:.2f}" if value >= 1 else f"${value:.6f}".rstrip("0").rstrip(".") if value else "$0"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def usage_cells(stats: UsageStats) -> list[str]:
    """Return a group's calls, cache hits, tokens, cost and latency p50 / p95 as table cells."""
    tokens = "-" if stats.tokens is None else f"{stats.tokens:,}"
    latency = [_ms(stats.latency_p50_ms), _ms(stats.latency_p95_ms)]
    return [str(stats.calls), str(stats.cache_hits), tokens, money(stats.cost_usd), *latency]


def _per_case(value: float | None, before: float | None, write: Callable[[float], str]) -> str:
    """Write a per-case figure, with the baseline's and the change beside it when known."""
    if value is None:
        return "-"
    if before is None:
        return write(value)
    change = f", {value / before - 1:+.0%}" if before else ""
    return f"{write(value)} (baseline {write(before)}{change})"


def per_case_cells(stats: UsageStats) -> list[str]:
    """Return a group's tokens and cost per case (with the baseline's) and its judge's tokens as cells."""
    judge = "-"
    if stats.judge_prompt_tokens is not None or stats.judge_completion_tokens is not None:
        judge = f"{stats.judge_prompt_tokens or 0:,} + {stats.judge_completion_tokens or 0:,}"
    return [
        _per_case(stats.tokens_per_case, stats.baseline_tokens_per_case, lambda v: f"{v:,.1f}"),
        _per_case(stats.cost_per_case, stats.baseline_cost_per_case, lambda v: f"${v:.6f}"),
        judge,
    ]


def per_case_line(usage: UsageReport) -> str | None:
    """Write the tested model's tokens and cost per case (against the baseline's) and the judge's tokens."""
    t = usage.total
    if t.tokens_per_case is None and t.judge_prompt_tokens is None and t.judge_completion_tokens is None:
        return None
    tokens, cost, judge = per_case_cells(t)
    parts = [f"per case: {tokens} tokens"]
    if t.cost_per_case is not None:
        parts.append(f"cost {cost}")
    if judge != "-":
        parts.append(f"judge tokens {judge} (prompt + completion, apart from the model's)")
    return ", ".join(parts)


def totals_line(usage: UsageReport) -> str:
    """Write the run's calls, cache hits, tokens, cost and p95 latency in one line."""
    t = usage.total
    tokens = "tokens not reported"
    if t.tokens is not None:
        tokens = f"{t.tokens:,} tokens ({t.prompt_tokens or 0:,} prompt + {t.completion_tokens or 0:,} completion)"
    cost = "cost unknown (no token counts)" if usage.priced else "cost unknown (no [model] prices)"
    if t.cost_usd is not None:
        cost = f"cost {money(t.cost_usd)}"
    latency = "p95 latency not measured" if t.latency_p95_ms is None else f"p95 latency {_ms(t.latency_p95_ms)}"
    return f"totals: {plural(t.calls, 'call')}, {plural(t.cache_hits, 'cache hit')}, {tokens}, {cost}, {latency}"


def cut_line(rows: Sequence[CaseResult], max_ids: int = 20) -> str | None:
    """Write how many answers the endpoint cut at ``max_tokens`` (``finish_reason`` "length"), naming them; None
    when none was."""
    repeated = any(row.repeat for row in rows)
    cut = [row.key.name(with_repeat=repeated) for row in rows if row.finish_reason == "length"]
    if not cut:
        return None
    return f'{plural(len(cut), "answer")} cut at max_tokens (finish_reason "length"): {_id_list(cut, max_ids)}'


def case_pass_line(summary: Summary, max_ids: int = 20) -> str | None:
    """Say, under ``[gate] case_pass``, what the rule is and which cases missed it (k of n repeats)."""
    rule = summary.settings.case_pass
    if rule is None:
        return None
    said = "at least one of its repeats passes" if rule == "any" else f"at least {float(rule):.0%} of its repeats pass"
    below = summary.below_case_pass
    cases = [f"{r.key.name(with_repeat=False)} {r.passed} of {r.runs}" for r in below]
    missed = f"; {plural(len(below), 'case')} did not: " + _id_list(cases, max_ids) if below else ""
    return f"case_pass {rule}: a case passes when {said} (pass rates count cases){missed}"


def sequential_line(summary: Summary) -> str | None:
    """Say what ``--prompt-sequential`` did: when each slice's verdict settled and how many calls that saved."""
    record = summary.sequential
    if record is None:
        return None
    early = [g for g in record.get("slices", ()) if g["settled_after"] is not None]
    fixed = (
        f"judged by the fixed test at alpha {record['final_alpha']:g} "
        f"(the sequential test spent {record['sequential_alpha']:g})"
    )
    if not early:
        return f"sequential: not settled before the last case; every case ran, {fixed}"
    groups = ", ".join(_settled_group(g) for g in early)
    settled = record["stopped"] or f"settled before their last case: {groups}"
    if record["stopped"] and len(record["slices"]) > 1:
        settled += f" ({groups})"
    line = f"sequential: {settled}; {plural(record['calls_saved'], 'call')} saved (those cases skipped)"
    if record.get("started_unused"):
        line += f", {record['started_unused']} more started ahead and not used (made, so not counted as saved)"
    return line if record["stopped"] else f"{line}; the rest ran every case, {fixed}"


def _settled_group(group: Mapping[str, Any]) -> str:
    """Say when one (slice, variant) stopped calling and how many of its calls that saved."""
    where = group["slice"] + ("" if group["variant"] is None else f" [{group['variant']}]")
    return f"{where} after {group['settled_after']} of {group['cases']}: {group['calls_saved']} saved"


#: With a baseline, the slice table's columns in the first table (its verdict and gate beside the counts)
#: and in the second (the comparison's detail), so that each fits 120 columns.
_MAIN_COLUMNS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 14, 16)
_DETAIL_COLUMNS = (0, 9, 10, 11, 12, 13, 15)


def slice_tables(summary: Summary) -> Iterator[str]:
    """Yield the slice table; with a baseline, the verdict and gate in it and the comparison's figures in a
    second table under ``against the baseline:``."""
    header, rows = slice_rows(summary)
    if summary.baseline is None:
        yield from _table(header, rows, right={1, 2, 3, 4, 5, 6})
        return
    yield from _table(*_columns(header, rows, _MAIN_COLUMNS), right={1, 2, 3, 4, 5, 6})
    yield "against the baseline:"
    yield from _table(*_columns(header, rows, _DETAIL_COLUMNS), right={1, 2, 4, 5, 6})


def _columns(
    header: Sequence[str], rows: Sequence[Sequence[str]], keep: Sequence[int]
) -> tuple[list[str], list[list[str]]]:
    """Return the ``keep`` columns of a table."""
    return [header[i] for i in keep], [[row[i] for i in keep] for row in rows]


def summary_lines(
    summary: Summary, *, max_ids: int = 20, gate: bool = True, usage: UsageReport | None = None
) -> Iterator[str]:
    """Yield the slice table, the totals, variants, flaky cases, the baseline diff by id, the regression
    tests and, with ``gate``, the gate's result last."""
    yield from slice_tables(summary)
    t = summary.totals
    yield f"total: {t.cases} cases, {t.passed} passed, {t.failed} failed, {t.error} error, {t.review} review"
    if usage is not None:
        yield totals_line(usage)
        if (line := per_case_line(usage)) is not None:
            yield line
    yield from _group_lines(summary, max_ids)
    yield from _baseline_lines(summary, max_ids)
    yield from regression_lines(summary)
    yield from summary.judges.lines()
    if gate:
        yield from _gate_lines(summary)


def _group_lines(summary: Summary, max_ids: int) -> Iterator[str]:
    """Yield the lines by variant, flaky case, case rule and sequential test."""
    if summary.compared_variants is not None:
        yield "the slice table: each slice's first row pools its prompt variants; the gate judges each variant's row"
    if summary.variants:
        yield "by variant: " + ", ".join(
            f"{v.name} {pct(v.counts.pass_rate)} ({v.counts.passed}/{v.counts.counted})" for v in summary.variants
        )
    if summary.compared_variants is not None:
        yield from variant_lines(summary, max_ids=max_ids)
    flaky = summary.flaky
    if flaky:
        yield "flaky (passed in some repeats only): " + _id_list(
            [f"{r.key.name(with_repeat=False)} {r.passed}/{r.runs}" for r in flaky], max_ids
        )
    if (line := case_pass_line(summary, max_ids)) is not None:
        yield line
    if (line := sequential_line(summary)) is not None:
        yield line


def _baseline_lines(summary: Summary, max_ids: int) -> Iterator[str]:
    """Yield the baseline diff by id, with a baseline."""
    diff = summary.baseline
    if diff is None:
        return
    yield (
        f"against {diff.source}: {len(diff.regressions)} regressions, {len(diff.fixes)} fixes, "
        f"{len(diff.new)} new, {len(diff.removed)} removed; allowed drop "
        f"{diff.max_regression * 100:.1f} points ({diff.max_regression_source})"
    )
    if diff.regressions:
        yield "regressions: " + _id_list(list(diff.regressions), max_ids)
    if diff.fixes:
        yield "fixes: " + _id_list(list(diff.fixes), max_ids)
    for name, rate in sorted(diff.missing_slices.items()):
        yield f"slice {name!r} of the baseline ({pct(rate)}) has no case in this run"


def _gate_lines(summary: Summary) -> Iterator[str]:
    """Yield the gate's result and, when it failed, each reason."""
    if summary.gate.passed:
        failed = summary.totals.failed
        tolerated = f" ({plural(failed, 'failed case')} within tolerance)" if failed else ""
        yield f"promptsuite gate: PASSED{tolerated}"
    else:
        yield "promptsuite gate: FAILED"
        for decision in summary.gate.decisions:
            yield f"  - {reason(decision)}"


def variant_lines(summary: Summary, *, max_ids: int = 20) -> Iterator[str]:
    """Yield the prompt variants side by side: each slice's pass rate per variant, and the flips from
    the first variant to the second."""
    compared = summary.compared_variants
    if compared is None:
        return
    names = list(compared.variants)
    pair = len(names) >= 2
    header = ["slice", *names]
    if pair:
        header += [f"flips {names[0]}->{names[1]} -/+", "p"]

    def cell(vs: VariantSlice) -> str:
        c = vs.counts
        return f"{pct(c.pass_rate)} ({c.passed}/{c.counted})" + ("" if vs.gate == "pass" else " FAIL")

    rows = variant_rows(compared, cell, minus="-")
    yield "prompt variants, pass rate by slice:"
    yield from _table(header, rows, right=set(range(1, len(header))))
    if pair and compared.diff is not None:
        if compared.diff.regressions:
            yield f"{names[1]} breaks (passed in {names[0]}): " + _id_list(list(compared.diff.regressions), max_ids)
        if compared.diff.fixes:
            yield f"{names[1]} fixes (failed in {names[0]}): " + _id_list(list(compared.diff.fixes), max_ids)


def variant_rows(compared: VariantComparison, cell: Callable[[VariantSlice], str], *, minus: str) -> list[list[str]]:
    """Return a row per slice: its name, each variant's ``cell`` (``-`` for none) and, with two variants
    or more, the flips from the first to the second (``minus`` before the regressions) and their p-value."""
    by_slice: dict[str, dict[str, str]] = {}
    for vs in compared.slices:
        by_slice.setdefault(vs.slice, {})[vs.variant] = cell(vs)
    rows = []
    for name in sorted(by_slice):
        row = [name, *(by_slice[name].get(v, "-") for v in compared.variants)]
        if len(compared.variants) >= 2:
            flips = compared.flips_by_slice.get(name)
            regressions, fixes, p = (0, 0, None) if flips is None else (flips.regressions, flips.fixes, flips.p_value)
            row += [f"{minus}{regressions}/+{fixes}", _p(p)]
        rows.append(row)
    return rows


def trim_output(output: str, focus: int | None = None, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Return ``output`` whole if short, else a window of ``limit`` characters around ``focus`` (an
    offset into ``output``), scrubbed before it is cut."""
    if len(output) <= limit:
        return output
    window, before, after = scrub_cut(output, limit, start=max(0, (focus or 0) - limit // 3))
    head = f"[... {before} chars] " if before else ""
    tail = f" [... {after} chars]" if after else ""
    return head + window + tail


def _focus(result: CaseResult) -> int | None:
    """Return the offset a failed check points at (forbidden text found), the place to look."""
    for check in result.failed_checks:
        marker = " at offset "
        if marker in check.message:
            try:
                return int(check.message.rsplit(marker, 1)[1])
            except ValueError:
                continue
    return None


def _which(result: CaseResult) -> str:
    """Name a row: its case id, and its variant and repeat when it has them."""
    which = result.case_id
    if result.variant is not None:
        which += f" [variant {result.variant}]"
    if result.repeat:
        which += f" [repeat {result.repeat}]"
    return which


def _check_lines(checks: list[CheckResult]) -> list[str]:
    """Write a line per check: its layer, its name (the names aligned) and its message."""
    name_width = max((len(c.name) for c in checks), default=0)
    return [f"  {check.layer:<9} {check.name:<{name_width}}  {check.message}" for check in checks]


def failure_text(result: CaseResult) -> str:
    """Write a failing case's pytest report: where, which checks, and the output."""
    failed = result.failed_checks
    what = f"error: {result.error}" if result.error is not None else f"failed {plural(len(failed), 'check')}"
    lines = [f"{result.location or ''}: {_which(result)} [slice {result.slice}] {what}"]
    lines += _check_lines(failed + [c for c in result.checks if c.skipped])  # skipped ones say why
    if result.output is not None:
        shown = trim_output(result.output, _focus(result))
        lines.append(f"output ({len(result.output)} chars):")
        lines.extend("  " + line for line in (shown.splitlines() or [""]))
    return "\n".join(lines)
