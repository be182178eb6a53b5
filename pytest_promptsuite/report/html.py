"""``dashboard.html``: one self-contained, offline page of a run's report, its data written as a
stream into the page's JSON."""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import tempfile
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from typing import TextIO

from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.prompts.core import prompt_display
from pytest_promptsuite.report.document import summary_document
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.history import History
from pytest_promptsuite.results.pairing import Reader
from pytest_promptsuite.results.review_book import REVIEW_CHECK
from pytest_promptsuite.results.review_book import output_sha256
from pytest_promptsuite.results.summary import Summary
from pytest_promptsuite.results.usage import UsageReport
from pytest_promptsuite.safety.scrub import Cut
from pytest_promptsuite.safety.scrub import cut
from pytest_promptsuite.safety.scrub import scrub_cut


#: Prompt and output texts longer than this are cut in the dashboard (results.jsonl has them whole).
MAX_TEXT = 4000
#: Characters of output (and half as many of input) the grid keeps of all passed rows together, each
#: row between GRID_MIN and GRID_MAX; a row needing attention keeps MAX_TEXT in its details instead.
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
    kept, _, after = scrub_cut(text, MAX_TEXT)
    return kept + f"\n[... {after} more chars; see results.jsonl]" if after else kept


def grid_text(rows: int) -> int:
    """Return how many characters of each output the grid keeps for a page of ``rows`` rows (inputs: half)."""
    return max(GRID_MIN, min(GRID_MAX, GRID_BUDGET * 2 // 3 // max(1, rows)))


def _input_of(prompt: Any, size: int, shorten: Callable[..., Cut] = scrub_cut) -> str:
    """Return the user's part of a prompt for the grid and the search: the last user message, or the
    end of a string prompt (a template puts the input last far more often than first)."""
    if isinstance(prompt, list):
        for message in reversed(prompt):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return shorten(content, size).text if isinstance(content, str) else ""
        return ""
    return shorten(prompt, size, start=-size).text if isinstance(prompt, str) else ""


def _json_for_script(data: Any, *, scrubbed: bool = False) -> str:
    """Encode JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``; scrubbed unless
    ``scrubbed`` says every text in ``data`` is already."""
    text = encode(data, compact=True, scrub=not scrubbed)  # U+2028, U+2029 and lone surrogates escaped
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
    steps = r.trajectory or (Step(r.output or "", r.tool_calls),)
    calls = [f"step {i}: {call.display()}" for i, step in enumerate(steps, start=1) for call in step.calls]
    if calls:  # shown as lookup_order({"order_id": "A1234"}), one a line
        detail["tool_calls"] = _trim("\n".join(calls))
    if r.tool_stop:
        detail["tool_stop"] = r.tool_stop
    if r.turns:  # a conversation: shown as a chat transcript, the failing turns marked
        detail["transcript"] = [_turn_detail(turn) for turn in r.turns]
    if r.finish_reason == "length":
        detail["finish_reason"] = r.finish_reason
    return detail


def _turn_detail(turn: dict[str, Any]) -> dict[str, Any]:
    """Return a conversation turn as the dashboard shows it: its number, user message, reply and verdict."""
    return {
        "turn": turn.get("turn"),
        "user": _trim(str(turn.get("user", ""))),
        "reply": _trim(str(turn.get("reply", ""))),
        "passed": turn.get("passed") is not False,
    }


def _failed_names(r: CaseResult) -> str:
    return ", ".join(c.name for c in r.checks if not c.passed and not c.skipped and c.gating)


#: What the grid keeps of a baseline row: its outcome, its output's hash and its output's preview.
_BaselineCell = tuple[str, int, str]


def _baseline_cells(baseline: Sequence[CaseResult], size: int) -> dict[tuple[str, str | None, int], _BaselineCell]:
    """Key each baseline row by (case, variant, repeat), keeping its outcome, output hash and preview
    (the baseline's texts are read once, never all held)."""
    return {
        (b.case_id, b.variant, b.repeat): (b.outcome.value, hash(b.output), scrub_cut(b.output or "", size).text)
        for b in baseline
    }


def _baseline_cell(output_hash: int, b: _BaselineCell | None) -> Any:
    """Return the baseline's cell of a row: 0 when it has none, its outcome alone when its output is
    this run's (``output_hash``), else [outcome, output preview]."""
    if b is None:
        return 0
    outcome, baseline_hash, preview = b
    return outcome if baseline_hash == output_hash else [outcome, preview]


def _needs_detail(outcome: Outcome, last_check: str | None) -> bool:
    """Tell whether a row's details go into the page: it needs attention, or it is a decided review
    (its decision is the last check), which keeps who decided and why."""
    return outcome in _ATTENTION or last_check == REVIEW_CHECK


def _grid_row(r: CaseResult, detail: int, size: int) -> list[Any]:
    """Return a row of the outputs grid; a row with details (``detail`` >= 0) leaves its texts there."""
    if detail >= 0:
        return [r.case_id, r.slice, r.variant, r.repeat, r.outcome.value, detail, "", "", _failed_names(r), *_cut(r)]
    return _plain_row(r, r.output, r.prompt, size)


def _cut(r: CaseResult) -> list[int]:
    """Return the grid row's last cell, ``[1]``, when the endpoint cut the answer at ``max_tokens``, else none."""
    return [1] if r.finish_reason == "length" else []


def _plain_row(
    r: CaseResult, output: str | None, prompt: Any, size: int, shorten: Callable[..., Cut] = scrub_cut
) -> list[Any]:
    """Return a grid row without details: the start of its output and the end of its input (``shorten``:
    :func:`.cut` for texts scrubbed already)."""
    start = "" if output is None else shorten(output, size).text
    inputs = _input_of(prompt, size // 2, shorten)
    return [r.case_id, r.slice, r.variant, r.repeat, r.outcome.value, -1, inputs, start, "", *_cut(r)]


class GridCells:
    """The grid's JSON of each row without details, made as a run spools its rows for a page of
    ``rows`` rows, so that writing the page reads back only the rows it shows in detail."""

    def __init__(self, rows: int) -> None:
        self.size = grid_text(rows)
        self._cells: dict[tuple[str, str | None, int], tuple[str, int]] = {}

    def add(self, row: CaseResult, line: Mapping[str, Any]) -> None:
        """Keep ``row``'s cell and its output's hash; ``line`` is its ``results.jsonl`` line (the texts
        ``row`` left on disk)."""
        checks = line.get("checks") or ()
        if _needs_detail(row.outcome, checks[-1].get("name") if checks else None):
            return
        output = line.get("output")  # the line's texts are scrubbed: cut, not scrubbed again
        # ``row`` holds what its line does: every text of the cell is the scrubbed line's
        cell = _json_for_script(_plain_row(row, output, line.get("prompt"), self.size, cut), scrubbed=True)
        self._cells[(row.case_id, row.variant, row.repeat)] = (cell, hash(output))

    def get(self, row: CaseResult) -> tuple[str, int] | None:
        """Return ``row``'s cell and its output's hash, if kept."""
        return self._cells.get((row.case_id, row.variant, row.repeat))


def _flips(summary: Summary) -> list[dict[str, Any]]:
    flips = []
    if summary.baseline is not None:
        for flip in summary.baseline.flips:
            d = flip.to_dict()
            for key in ("old_output", "new_output", "old_prompt", "new_prompt", "prompt_diff"):
                d[key] = _trim(d[key])
            flips.append(d)
    return flips


class _Spill:
    """JSON values joined by commas in a temporary file that stays in memory while it is small."""

    def __init__(self) -> None:
        self._fp = tempfile.SpooledTemporaryFile(max_size=_SPILL_BYTES, mode="w+", encoding="utf-8")
        self.count = 0

    def __enter__(self) -> _Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fp.close()

    def add(self, text: str) -> int:
        """Append one value and return its index."""
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


def _made_row(r: CaseResult, details: _Spill, size: int) -> tuple[str, int]:
    """Return a row's grid entry and its output's hash, its detail added to ``details`` when it has one."""
    detail = -1
    if _needs_detail(r.outcome, r.checks[-1].name if r.checks else None):
        detail = details.add(_json_for_script(_detail(r)))
    return _json_for_script(_grid_row(r, detail, size)), hash(r.output)


def _write_page(
    out: TextIO,
    rows: Sequence[CaseResult],
    summary: Summary,
    usage: UsageReport | None,
    history: History | None,
    baseline: Sequence[CaseResult] | None,
    full: Reader | None = None,
    cells: GridCells | None = None,
) -> None:
    """Write the page, its data as a stream: a grid row at a time (copied from ``cells``, or read
    back whole by ``full``), the details and baseline cells through spill files; the JSON is what
    one ``encode`` of the whole payload gives."""
    script = _asset("dashboard.js")
    gate = "PASSED" if summary.gate.passed else "FAILED"
    fields = {"csp": _csp(script), "title": "promptsuite report", "gate": gate, "style": _asset("dashboard.css")}
    head, tail = _asset("dashboard.html").split("{data}")
    out.write(head.format(**fields, script=script))
    size = grid_text(len(rows))
    by_key = _baseline_cells(baseline, size) if baseline else None
    known = cells if cells is not None and cells.size == size else None
    out.write('{"summary":' + _json_for_script(summary_document(summary, usage=usage)) + ',"rows":[')
    with _Spill() as details, _Spill() as baseline_cells:
        for i, r in enumerate(rows):
            kept = None if known is None else known.get(r)
            if kept is None:
                kept = _made_row(r if full is None else full(r), details, size)
            out.write(("," if i else "") + kept[0])
            if by_key is not None:
                cell = _baseline_cell(kept[1], by_key.get((r.case_id, r.variant, r.repeat)))
                baseline_cells.add(_json_for_script(cell))
        out.write('],"details":[')
        details.copy_to(out)
        out.write('],"flips":' + _json_for_script(_flips(summary)) + ',"baseline_rows":')
        _write_baseline_rows(out, baseline_cells if by_key is not None else None)
    history_data = history.to_dict() if history is not None else None
    out.write(',"history":' + _json_for_script(history_data) + ',"grid_text":' + _json_for_script(size) + "}")
    out.write(tail.format(**fields, script=script))


def _write_baseline_rows(out: TextIO, cells: _Spill | None) -> None:
    """Write the baseline's grid cells as an array (null without a baseline)."""
    if cells is None:
        out.write("null")
        return
    out.write("[")
    cells.copy_to(out)
    out.write("]")


def dashboard_html(
    rows: Sequence[CaseResult],
    summary: Summary,
    *,
    usage: UsageReport | None = None,
    history: History | None = None,
    baseline: Sequence[CaseResult] | None = None,
) -> str:
    """Return the whole dashboard page; ``usage``, ``history`` (this run last) and the ``baseline``'s
    rows (its column in the outputs grid) are drawn when given."""
    out = io.StringIO()
    _write_page(out, rows, summary, usage, history, baseline)
    return out.getvalue()


def write_dashboard(
    path: Path,
    rows: Sequence[CaseResult],
    summary: Summary,
    *,
    usage: UsageReport | None = None,
    history: History | None = None,
    baseline: Sequence[CaseResult] | None = None,
    full: Reader | None = None,
    cells: GridCells | None = None,
) -> Path:
    """Write ``dashboard.html`` to ``path`` as a stream; ``full`` reads a row back whole when ``rows``
    left their texts on disk, ``cells`` has the grid's text of the rows that need no reading back."""
    with path.open("w", encoding="utf-8") as out:
        _write_page(out, rows, summary, usage, history, baseline, full, cells)
    return path
