"""pytest nodes: ``PromptFile`` (a case file) and ``PromptItem`` (one run of one case)."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.compile_checks import MakeCheck
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.report.text import failure_text
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.run.pipeline import PlannedCase
from pytest_promptsuite.safety.scrub import printable


if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo
    from _pytest._code.code import TerminalRepr

#: The user property that carries a case's result to the session (and across xdist).
RESULT_PROPERTY = "promptsuite"


class CaseSource(Protocol):
    """What the nodes need from the run (``config.stash[source_key]``)."""

    def collect_file(self, path: Path, make_check: MakeCheck) -> Sequence[PlannedCase]:
        """Plan the items of a case file (a PromptSuiteError fails its collection)."""
        ...

    def run(self, planned: PlannedCase) -> CaseResult:
        """Run one planned case."""
        ...

    def row_line(self, result: CaseResult) -> str:
        """Encode the row as the JSON line its item reports."""
        ...

    def stop_reason(self) -> str | None:
        """Return why no further case should run, or None."""
        ...


#: Where the run lives (``config.stash``); plugin.py puts it there, the nodes read it.
source_key = pytest.StashKey[CaseSource]()


class CaseFailed(Exception):
    """Raised by a case that failed or errored; its report is the result's text, no traceback."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.case_id)
        self.result = result


class PromptFile(pytest.File):
    """A JSONL case file; every line is a case."""

    def collect(self) -> Iterator[PromptItem]:
        """Yield one item per case, variant and repeat; a bad file is one collection error."""
        source = self.config.stash[source_key]
        # the hook as seen from this file (its conftests are known by now), looked up once for its items
        self.case_finished = self.ihook.pytest_promptsuite_case_finished
        try:
            planned = source.collect_file(self.path, self.ihook.pytest_promptsuite_make_check)
        except PromptSuiteError as exc:
            raise self.CollectError(str(exc)) from exc
        for one in planned:
            # the id given whole, so pytest reads a variant or repeat suffix as its params, as it
            # does the ids it stored (--lf, --ff and --nf look items up by that parsed form)
            yield PromptItem.from_parent(self, name=one.name, planned=one, nodeid=f"{self.nodeid}::{one.name}")

    def repr_failure(self, excinfo: ExceptionInfo[BaseException]) -> str | TerminalRepr:  # type: ignore[override]
        """Return pytest's report of a collection error, with every secret scrubbed."""
        return printable(str(super().repr_failure(excinfo)))


class PromptItem(pytest.Item):
    """One run of one case: rendered, sent to the model and checked when pytest runs it."""

    def __init__(self, *, planned: PlannedCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.planned = planned
        for word in (planned.slice, *planned.tags):  # -k 'refund and not 提示词注入'
            self.keywords[word] = True
            self.extra_keyword_matches.add(word)

    @property
    def case(self) -> PromptCase:
        """The case this item runs, read back from its file."""
        return self.planned.case

    def runtest(self) -> None:
        """Run the case; a failed or errored case raises :class:`CaseFailed`."""
        source = self.config.stash[source_key]
        result = source.run(self.planned)
        stop = source.stop_reason()
        if stop is not None and not self.session.shouldstop:
            self.session.shouldstop = stop
        self.user_properties.append((RESULT_PROPERTY, source.row_line(result)))
        finished = getattr(self.parent, "case_finished", None) or self.ihook.pytest_promptsuite_case_finished
        if finished.get_hookimpls():  # (a call nobody implements still costs, 50,000 times)
            finished(item=self, result=result)
        if result.outcome in (Outcome.FAILED, Outcome.ERROR):
            raise CaseFailed(result)
        if result.outcome is Outcome.SKIPPED:  # its call was not issued (budget, batch file)
            pytest.skip(printable(result.error or "skipped"))

    def teardown(self) -> None:
        """Drop the row once the call's report carries it: pytest keeps every item."""
        self.user_properties[:] = [p for p in self.user_properties if p[0] != RESULT_PROPERTY]

    def repr_failure(self, excinfo: ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        """Return the case's report for our failures (no traceback), pytest's for others; secrets scrubbed."""
        if isinstance(excinfo.value, CaseFailed):
            return printable(failure_text(excinfo.value.result))
        if isinstance(excinfo.value, PromptSuiteError):
            return printable(f"{self.location_text}: {self.name}: {excinfo.value}")
        return printable(str(super().repr_failure(excinfo, style)))

    @property
    def location_text(self) -> str:
        """``cases.jsonl:12``: the file's name and the case's line."""
        return f"{self.path.name}:{self.planned.ref.line}"

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Return the case's line (0-based) and ``case ID [slice]`` (``case flight-005[v2][repeat-1] [billing]``)."""
        return self.path, self.planned.ref.line - 1, f"case {self.name} [{self.planned.slice}]"
