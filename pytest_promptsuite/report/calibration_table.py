"""A judge's calibration (``calibration.json``) as a terminal table and as Markdown for a CI job summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _clip(text: str, limit: int) -> str:
    """Return ``text`` on one line, cut to ``limit`` characters (an ellipsis where it was cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


#: The table's columns: heading, the figure's key.
COLUMNS = (
    ("n", "n"),
    ("labels pass", "base_rate"),
    ("judge pass", "judge_pass_rate"),
    ("accuracy", "accuracy"),
    ("TPR", "true_pass_rate"),
    ("TNR", "true_fail_rate"),
    ("kappa", "kappa"),
    ("95% interval", "interval"),
    ("flip rate", "flip_rate"),
    ("labellers' alpha", "labeller_alpha"),
)


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.2f}"


def _cells(name: str, figures: Mapping[str, Any]) -> list[str]:
    """Return a row of the table: the rubric, then each column's figure."""
    low, high = figures.get("kappa_low"), figures.get("kappa_high")
    interval = "-" if low is None or high is None else f"{low:.2f} to {high:.2f}"
    return [name, *(interval if key == "interval" else _number(figures.get(key)) for _, key in COLUMNS)]


def _rows(data: Mapping[str, Any]) -> list[list[str]]:
    rows = [_cells(_clip(str(r.get("rubric")), 48), r) for r in data.get("rubrics") or ()]
    return [*rows, _cells("overall", data.get("overall") or {})]


def _confusion(figures: Mapping[str, Any]) -> str:
    c = figures.get("confusion") or {}
    return (
        f"label pass: judge pass {c.get('label_pass_judge_pass', 0)}, judge fail {c.get('label_pass_judge_fail', 0)}; "
        f"label fail: judge pass {c.get('label_fail_judge_pass', 0)}, judge fail {c.get('label_fail_judge_fail', 0)}"
    )


def _disagreement(d: Mapping[str, Any]) -> str:
    case = f"case {d.get('case_id')} " if d.get("case_id") else ""
    return (
        f"{d.get('where')}: {case}[{_clip(str(d.get('rubric')), 40)}] label {d.get('label')}, "
        f"judge {d.get('judge')}: {_clip(str(d.get('reason') or ''), 80)}"
    )


def _aligned(rows: list[list[str]]) -> list[str]:
    """Return a table's rows as lines: the first column to the left, the figures to the right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join([row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))])
        for row in rows
    ]


def terminal_lines(data: Mapping[str, Any]) -> list[str]:
    """Return the calibration as terminal lines: the judge, the table, the confusion, each disagreement."""
    judge = data.get("judge") or {}
    overall = data.get("overall") or {}
    lines = [
        f"promptsuite calibrate: judge {judge.get('spec')} (fingerprint {data.get('judge_fingerprint')}), "
        f"{overall.get('n', 0)} labels on {overall.get('outputs', 0)} outputs; interval: {data.get('interval')}",
        *_aligned([["rubric", *(heading for heading, _ in COLUMNS)], *_rows(data)]),
        f"confusion (overall): {_confusion(overall)}",
    ]
    disagreements = data.get("disagreements") or []
    lines.append(f"disagreements ({len(disagreements)}):")
    lines += [f"  {_disagreement(d)}" for d in disagreements]
    lines += [f"not judged: {e.get('where')}: {e.get('error')}" for e in data.get("errors") or ()]
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(data: Mapping[str, Any]) -> str:
    """Return the calibration as Markdown: the table, the confusion, the disagreements."""
    judge = data.get("judge") or {}
    headings = ["rubric", *(heading for heading, _ in COLUMNS)]
    lines = [
        "## Judge calibration",
        "",
        f"Judge `{judge.get('spec')}`, fingerprint `{data.get('judge_fingerprint')}`. "
        f"Interval: {data.get('interval')}.",
        "",
        "| " + " | ".join(headings) + " |",
        "|" + "|".join(["---"] + ["---:"] * len(COLUMNS)) + "|",
        *("| " + " | ".join(_md(cell) for cell in row) + " |" for row in _rows(data)),
        "",
        f"Confusion (overall): {_confusion(data.get('overall') or {})}.",
    ]
    disagreements = data.get("disagreements") or []
    if disagreements:
        lines += ["", f"### Disagreements ({len(disagreements)})", ""]
        lines += [f"- {_md(_disagreement(d))}" for d in disagreements]
    return "\n".join(lines) + "\n"
