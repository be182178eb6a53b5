"""``summary.md``: a GitHub job summary. Gate verdict first, the slice table, then what changed.

Plain GitHub-flavoured Markdown with no links and no images; every user text (slice names, case
ids, gate reasons) is escaped so it cannot turn into markup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from ..results import Summary
from .text import slice_rows


__all__ = ["summary_markdown"]

#: Ids listed per section before "... and N more": a job summary is capped at 1 MiB.
MAX_IDS = 50
#: Characters that are markup anywhere in a line (HTML is written as entities instead).
_SPECIAL = "\\`*_[]|~"
_LINE_START = re.compile(r"^(\d+)([.)])(?=\s|$)|^([-+#=])")


def md_escape(text: str) -> str:
    """``text`` as literal Markdown inline text on one line (no markup, no HTML, no links)."""
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


def summary_markdown(summary: Summary, review: Sequence[Mapping[str, Any]] = ()) -> str:
    """The whole ``summary.md`` text; ``review`` is the review queue (``files.review_queue``)."""
    gate = summary.gate
    t = summary.totals
    verdict = "PASSED" if gate.passed else "FAILED"
    mark = "\u2705" if gate.passed else "\u274c"
    md = [f"## {mark} promptsuite gate: {verdict}", ""]
    if gate.reasons:
        md += [f"- {md_escape(reason)}" for reason in gate.reasons]
        md.append("")
    md += [
        f"{t['cases']} cases: {t['passed']} passed, {t['failed']} failed, {t['error']} error, "
        f"{t['review']} review",
        "",
    ]
    header, rows = slice_rows(summary)
    md.append("| " + " | ".join(md_escape(h) for h in header) + " |")
    md.append("|" + "|".join("---" if i == 0 or i == len(header) - 1 else "---:"
                             for i in range(len(header))) + "|")
    for row in rows:
        cells = [md_escape(c) for c in row]
        cells[-1] = f"**{cells[-1]}**" if row[-1] == "FAIL" else cells[-1]
        md.append("| " + " | ".join(cells) + " |")
    md.append("")
    diff = summary.baseline
    if diff is not None:
        md += [
            f"Against the baseline {md_escape(diff.source)}: "
            f"{len(diff.regressions)} regressions, {len(diff.fixes)} fixes, {len(diff.new)} new, "
            f"{len(diff.removed)} removed; allowed drop {diff.max_regression * 100:.1f} points "
            f"({md_escape(diff.max_regression_source)}). p is the exact McNemar test on the flips.",
            "",
        ]
        md += _ids("Regressions (passed, now not)", list(diff.regressions))
        md += _ids("Fixes (failed, now passed)", list(diff.fixes))
        md += _ids("New cases", list(diff.new))
        md += _ids("Removed cases", list(diff.removed))
    if summary.variants:
        md += ["### By variant", "", "| variant | cases | passed | pass rate |", "|---|---:|---:|---:|"]
        for v in summary.variants:
            rate = "-" if v.pass_rate is None else f"{v.pass_rate:.1%}"
            md.append(f"| {md_escape(v.name)} | {v.cases} | {v.passed} | {rate} |")
        md.append("")
    compared = summary.compared_variants
    if compared is not None:
        names = list(compared.variants)
        pair = len(names) >= 2
        head = ["slice", *names] + ([f"flips {names[0]} → {names[1]} (−/+)", "p"] if pair else [])
        md += ["### Prompt variants side by side", "", "| " + " | ".join(md_escape(h) for h in head) + " |",
               "|---|" + "---:|" * (len(head) - 1)]
        cells: dict[str, dict[str, str]] = {}
        for vs in compared.slices:
            rate = "-" if vs.pass_rate is None else f"{vs.pass_rate:.1%}"
            cells.setdefault(vs.slice, {})[vs.variant] = rate + ("" if vs.gate == "pass" else " ❌")
        for name in sorted(cells):
            row = [md_escape(name), *(cells[name].get(v, "-") for v in names)]
            if pair:
                flips = compared.flips_by_slice.get(name, {})
                p = flips.get("p_value")
                row += [f"−{flips.get('regressions', 0)}/+{flips.get('fixes', 0)}", "-" if p is None else f"{p:.3g}"]
            md.append("| " + " | ".join(row) + " |")
        md.append("")
        if pair and compared.diff is not None:
            md += _ids(f"{names[1]} breaks (passed in {names[0]})", list(compared.diff.regressions))
            md += _ids(f"{names[1]} fixes (failed in {names[0]})", list(compared.diff.fixes))
    md += _ids(
        "Review queue (for a human; see review.jsonl)",
        [
            "{}{} [{}]: {}".format(
                item["case_id"], "" if item["variant"] is None else f"[{item['variant']}]", item["slice"],
                "; ".join(item["reasons"]) or "marked for review",
            )
            for item in review
        ],
    )
    md += _ids(
        "Flaky cases (passed in some repeats only)",
        [
            f"{r.case_id}{'' if r.variant is None else f'[{r.variant}]'}: {r.passed}/{r.runs}"
            for r in summary.flaky
        ],
    )
    return "\n".join(md).rstrip("\n") + "\n"
