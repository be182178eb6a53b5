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
from ..templates.prompt import prompt_display
from .document import summary_document


__all__ = ["dashboard_html", "write_dashboard"]

#: Prompt and output texts longer than this are cut in the dashboard (results.jsonl has them whole).
MAX_TEXT = 4000
_ATTENTION = frozenset({Outcome.FAILED, Outcome.ERROR, Outcome.REVIEW})


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _trim(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n[... {len(text) - MAX_TEXT} more chars; see results.jsonl]"


def _json_for_script(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``."""
    text = encode(data, compact=True)  # scrubbed; U+2028, U+2029 and lone surrogates escaped
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _payload(rows: Sequence[CaseResult], summary: Summary) -> dict[str, Any]:
    table: list[list[Any]] = []
    details: list[dict[str, Any]] = []
    for r in rows:
        detail = -1
        if r.outcome in _ATTENTION:
            detail = len(details)
            details.append(
                {
                    "location": "" if r.location is None else str(r.location),
                    "error": r.error,
                    "checks": [c.to_dict() for c in r.checks],
                    "prompt": _trim(prompt_display(r.prompt)),
                    "output": _trim(r.output),
                    "tags": list(r.tags),
                }
            )
        table.append([r.case_id, r.slice, r.variant, r.repeat, r.outcome.value, detail])
    flips = []
    if summary.baseline is not None:
        for flip in summary.baseline.flips:
            d = flip.to_dict()
            for key in ("old_output", "new_output", "old_prompt", "new_prompt", "prompt_diff"):
                d[key] = _trim(d[key])
            flips.append(d)
    return {"summary": summary_document(summary), "rows": table, "details": details, "flips": flips}


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def dashboard_html(rows: Sequence[CaseResult], summary: Summary, *, title: str = "promptsuite report") -> str:
    """The whole dashboard page."""
    script = _asset("dashboard.js")
    verdict = "PASSED" if summary.gate.passed else "FAILED"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_csp(script)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}: gate {verdict}</title>
<style>
{_asset("dashboard.css")}</style>
</head>
<body>
<noscript><p>This dashboard needs JavaScript; summary.md and summary.json hold the same
numbers.</p></noscript>
<div id="verdict"></div>
<h2>Pass rate by slice</h2>
<p class="legend">
<span><i style="background:#4ac26b"></i>pass rate (gate holds)</span>
<span><i style="background:#ff8182"></i>pass rate (gate fails)</span>
<span><i style="background:#1f2328;height:2px"></i>95% Wilson interval</span>
<span><i style="background:#8250df;width:3px"></i>threshold</span>
<span><i style="background:#0969da"></i>baseline</span>
</p>
<svg id="chart" role="img" aria-label="pass rate by slice"></svg>
<div id="slices"></div>
<div id="groups"></div>
<h2>Against the baseline</h2>
<div id="diff"></div>
<h2>Cases</h2>
<div class="filters">
<label>slice <select id="f-slice"></select></label>
<label>outcome <select id="f-outcome"></select></label>
<label>case id <input id="f-search" type="search" placeholder="filter by id"></label>
<button id="prev" type="button">&larr; previous</button>
<button id="next" type="button">next &rarr;</button>
<span id="page-info" class="muted"></span>
</div>
<table id="cases"><thead><tr><th>case</th><th>slice</th><th>variant</th><th>repeat</th><th>outcome</th>
<th></th></tr></thead><tbody id="case-rows"></tbody></table>
<script type="application/json" id="promptsuite-data">{_json_for_script(_payload(rows, summary))}</script>
<script>{script}</script>
</body>
</html>
"""


def write_dashboard(path: Path, rows: Sequence[CaseResult], summary: Summary) -> Path:
    """Write ``dashboard.html`` to ``path``."""
    path.write_text(dashboard_html(rows, summary), encoding="utf-8")
    return path
