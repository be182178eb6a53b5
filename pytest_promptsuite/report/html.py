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
import io
import shutil
import tempfile
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from typing import TextIO

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
#: The details and baseline cells of a page stay in memory up to this size, then go to a file.
_SPILL_BYTES = 4 << 20


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


#: What the grid keeps of a baseline row: its outcome, its output's hash and its output's preview.
_BaselineCell = tuple[str, int, str]


def _baseline_cells(baseline: Sequence[CaseResult], size: int) -> dict[tuple[str, str | None, int], _BaselineCell]:
    """Each baseline row by (case, variant, repeat), without its output (only its hash and
    preview): the baseline's texts are read once, never all held."""
    return {(b.case_id, b.variant, b.repeat): (b.outcome.value, hash(b.output), (b.output or "")[:size])
            for b in baseline}


def _baseline_cell(r: CaseResult, b: _BaselineCell | None) -> Any:
    """The baseline's row of the same case and variant: 0 when it has none, its outcome alone
    when its output is the same as this run's, else [outcome, output preview]."""
    if b is None:
        return 0
    outcome, output_hash, preview = b
    return outcome if output_hash == hash(r.output) else [outcome, preview]


def _grid_row(r: CaseResult, detail: int, size: int) -> list[Any]:
    """One row of the outputs grid; a row with details (``detail`` >= 0) leaves its texts there."""
    if detail >= 0:  # the grid and the search read the details
        return [r.case_id, r.slice, r.variant, r.repeat, r.outcome.value, detail, "", "", _failed_names(r)]
    output = "" if r.output is None else r.output[:size]
    shown = _input_of(r.prompt, size // 2)
    return [r.case_id, r.slice, r.variant, r.repeat, r.outcome.value, detail, shown, output, ""]


def _flips(summary: Summary) -> list[dict[str, Any]]:
    flips = []
    if summary.baseline is not None:
        for flip in summary.baseline.flips:
            d = flip.to_dict()
            for key in ("old_output", "new_output", "old_prompt", "new_prompt", "prompt_diff"):
                d[key] = _trim(d[key])
            flips.append(d)
    return flips


def _write_payload(
    out: TextIO, rows: Sequence[CaseResult], summary: Summary, usage: UsageReport | None, history: History | None,
    baseline: Sequence[CaseResult] | None,
) -> None:
    """The page's data, written as a stream: one row of the grid at a time (each row read back
    from the spool as it is reached), the details and baseline cells through spill files, so a
    100,000-row dashboard never holds every row in memory. The JSON is what one ``encode`` of
    the whole payload gives."""
    size = grid_text(len(rows))
    by_key = _baseline_cells(baseline, size) if baseline else None
    out.write('{"summary":' + _json_for_script(summary_document(summary, usage=usage)) + ',"rows":[')
    with _Spill() as details, _Spill() as cells:
        for i, r in enumerate(rows):
            detail = -1
            # a decided review (its decision is the last check) keeps its details: who decided and why
            if r.outcome in _ATTENTION or (r.checks and r.checks[-1].name == REVIEW_CHECK):
                detail = details.add(_json_for_script(_detail(r)))
            out.write(("," if i else "") + _json_for_script(_grid_row(r, detail, size)))
            if by_key is not None:
                cells.add(_json_for_script(_baseline_cell(r, by_key.get((r.case_id, r.variant, r.repeat)))))
        out.write('],"details":[')
        details.copy_to(out)
        out.write('],"flips":' + _json_for_script(_flips(summary)) + ',"baseline_rows":')
        if by_key is not None:
            out.write("[")
            cells.copy_to(out)
            out.write("]")
        else:
            out.write("null")
    history_data = history.to_dict() if history is not None else None
    out.write(',"history":' + _json_for_script(history_data) + ',"grid_text":' + _json_for_script(size) + "}")


class _Spill:
    """JSON values joined by commas in a temporary file that stays in memory while it is small."""

    def __init__(self) -> None:
        self._fp = tempfile.SpooledTemporaryFile(max_size=_SPILL_BYTES, mode="w+", encoding="utf-8")  # noqa: SIM115
        self.count = 0

    def __enter__(self) -> _Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fp.close()

    def add(self, text: str) -> int:
        """Append one value; its index."""
        self._fp.write(("," if self.count else "") + text)
        self.count += 1
        return self.count - 1

    def copy_to(self, out: TextIO) -> None:
        """Write every value, in order, to ``out``."""
        self._fp.seek(0)
        shutil.copyfileobj(self._fp, out)


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _write_page(
    out: TextIO, rows: Sequence[CaseResult], summary: Summary, *, title: str, usage: UsageReport | None,
    history: History | None, baseline: Sequence[CaseResult] | None,
) -> None:
    script = _asset("dashboard.js")
    verdict = "PASSED" if summary.gate.passed else "FAILED"
    head, tail = _asset("dashboard.html").split("{data}")
    fields = {"csp": _csp(script), "title": html.escape(title), "verdict": verdict, "style": _asset("dashboard.css"),
              "script": script}
    out.write(head.format(**fields))
    _write_payload(out, rows, summary, usage, history, baseline)
    out.write(tail.format(**fields))


def dashboard_html(
    rows: Sequence[CaseResult], summary: Summary, *, title: str = "promptsuite report",
    usage: UsageReport | None = None, history: History | None = None, baseline: Sequence[CaseResult] | None = None,
) -> str:
    """The whole dashboard page; ``usage``, ``history`` (this run last) and the ``baseline``'s
    rows (its column in the outputs grid) are drawn when given."""
    out = io.StringIO()
    _write_page(out, rows, summary, title=title, usage=usage, history=history, baseline=baseline)
    return out.getvalue()


def write_dashboard(
    path: Path, rows: Sequence[CaseResult], summary: Summary, *, usage: UsageReport | None = None,
    history: History | None = None, baseline: Sequence[CaseResult] | None = None,
) -> Path:
    """Write ``dashboard.html`` to ``path``, as a stream (see :func:`_write_payload`)."""
    with path.open("w", encoding="utf-8") as out:
        _write_page(out, rows, summary, title="promptsuite report", usage=usage, history=history, baseline=baseline)
    return path
