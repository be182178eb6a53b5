"""``dashboard.html``: one self-contained file to open from a CI artifact (``file://``, offline).

The page carries its data as JSON inside ``<script type="application/json">`` (``<``, ``>`` and
``&`` written as ``\\u003c``-style escapes, so no text can close the element) and renders it with
``textContent`` only: model output such as ``<script>`` or ``<img onerror=...>`` stays text. A
Content-Security-Policy allows no network at all and only the page's own script (by its hash),
which guards against any markup slipping through. Tables are paged, so 100,000 rows stay usable.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..checks.base import CaseResult
from ..checks.base import Outcome
from ..formats.jsonio import encode
from ..results import Summary
from ..results.history import History
from ..results.usage import UsageReport
from ..reviews import REVIEW_CHECK
from ..reviews import output_sha256
from ..templates.prompt import prompt_display
from .document import summary_document


__all__ = ["dashboard_html", "write_dashboard"]

#: Prompt and output texts longer than this are cut in the dashboard (results.jsonl has them whole).
MAX_TEXT = 4000
#: Characters of input and output kept per passed row for the outputs grid and the search, shared
#: by all rows: a small suite keeps up to GRID_MAX of each output, a 100,000-row one GRID_MIN, so
#: its page stays quick to write and to open. A case needing attention keeps MAX_TEXT of its prompt
#: and output in its details, which the grid and the search read instead.
GRID_BUDGET = 2_400_000
GRID_MIN = 24
GRID_MAX = 400
_ATTENTION = frozenset({Outcome.FAILED, Outcome.ERROR, Outcome.REVIEW})


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _trim(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n[... {len(text) - MAX_TEXT} more chars; see results.jsonl]"


def grid_text(rows: int) -> int:
    """How many characters of each output the grid keeps for a page of ``rows`` rows (inputs: half)."""
    return max(GRID_MIN, min(GRID_MAX, GRID_BUDGET * 2 // 3 // max(1, rows)))


def _input_of(prompt: Any, size: int) -> str:
    """The user's part of a prompt, for the grid and the search: the last user message, or the
    end of a string prompt (a template puts the input last far more often than first)."""
    if isinstance(prompt, list):
        for message in reversed(prompt):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return content[:size] if isinstance(content, str) else ""
        return ""
    return prompt[-size:] if isinstance(prompt, str) else ""


def _json_for_script(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``."""
    text = encode(data, compact=True)  # scrubbed; U+2028, U+2029 and lone surrogates escaped
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _detail(r: CaseResult) -> dict[str, Any]:
    detail = {
        "location": "" if r.location is None else str(r.location),
        "error": r.error,
        "checks": [c.to_dict() for c in r.checks],
        "prompt": _trim(prompt_display(r.prompt)),
        "output": _trim(r.output),
        "tags": list(r.tags),
    }
    if r.outcome is Outcome.REVIEW and r.output is not None:
        detail["output_sha256"] = output_sha256(r.output)  # what a decision downloaded here names
    return detail


def _failed_names(r: CaseResult) -> str:
    return ", ".join(c.name for c in r.checks if not c.passed and not c.skipped and c.gating)


def _baseline_cells(rows: Sequence[CaseResult], baseline: Sequence[CaseResult], size: int) -> list[Any]:
    """Per row, the baseline's row of the same case and variant: 0 when it has none, its outcome
    alone when its output is the same as this run's, else [outcome, output preview]."""
    by_key = {(b.case_id, b.variant, b.repeat): b for b in baseline}
    cells: list[Any] = []
    for r in rows:
        b = by_key.get((r.case_id, r.variant, r.repeat))
        if b is None:
            cells.append(0)
        elif b.output == r.output:
            cells.append(b.outcome.value)
        else:
            cells.append([b.outcome.value, (b.output or "")[:size]])
    return cells


def _payload(
    rows: Sequence[CaseResult], summary: Summary, usage: UsageReport | None, history: History | None,
    baseline: Sequence[CaseResult] | None,
) -> dict[str, Any]:
    size = grid_text(len(rows))
    table: list[list[Any]] = []
    details: list[dict[str, Any]] = []
    for r in rows:
        detail = -1
        # a decided review (its decision is the last check) keeps its details: who decided and why
        if r.outcome in _ATTENTION or (r.checks and r.checks[-1].name == REVIEW_CHECK):
            detail = len(details)
            details.append(_detail(r))
        if detail >= 0:  # the grid and the search read the details
            table.append([r.case_id, r.slice, r.variant, r.repeat, r.outcome.value, detail, "", "",
                          _failed_names(r)])
        else:
            output = "" if r.output is None else r.output[:size]
            table.append([r.case_id, r.slice, r.variant, r.repeat, r.outcome.value, detail,
                          _input_of(r.prompt, size // 2), output, ""])
    flips = []
    if summary.baseline is not None:
        for flip in summary.baseline.flips:
            d = flip.to_dict()
            for key in ("old_output", "new_output", "old_prompt", "new_prompt", "prompt_diff"):
                d[key] = _trim(d[key])
            flips.append(d)
    return {
        "summary": summary_document(summary, usage=usage), "rows": table, "details": details, "flips": flips,
        "baseline_rows": _baseline_cells(rows, baseline, size) if baseline else None,
        "history": history.to_dict() if history is not None else None, "grid_text": size,
    }


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def dashboard_html(
    rows: Sequence[CaseResult], summary: Summary, *, title: str = "promptsuite report",
    usage: UsageReport | None = None, history: History | None = None, baseline: Sequence[CaseResult] | None = None,
) -> str:
    """The whole dashboard page; ``usage``, ``history`` (this run last) and the ``baseline``'s
    rows (its column in the outputs grid) are drawn when given."""
    script = _asset("dashboard.js")
    verdict = "PASSED" if summary.gate.passed else "FAILED"
    data = _json_for_script(_payload(rows, summary, usage, history, baseline))
    return _asset("dashboard.html").format(
        csp=_csp(script), title=html.escape(title), verdict=verdict, style=_asset("dashboard.css"), data=data,
        script=script,
    )


def write_dashboard(
    path: Path, rows: Sequence[CaseResult], summary: Summary, *, usage: UsageReport | None = None,
    history: History | None = None, baseline: Sequence[CaseResult] | None = None,
) -> Path:
    """Write ``dashboard.html`` to ``path``."""
    path.write_text(dashboard_html(rows, summary, usage=usage, history=history, baseline=baseline), encoding="utf-8")
    return path
