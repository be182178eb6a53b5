"""pytest nodes: ``PromptFile`` (a case file) and ``PromptItem`` (one run of one case).

The nodes know the run only through the narrow :class:`CaseSource` protocol that ``plugin.py``
puts into ``config.stash[source_key]``: plan a file's items, run one, say whether to stop.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

import pytest

from pytest_promptsuite.cases.case import PromptCase
from pytest_promptsuite.checks.compile import MakeCheck
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.report.text import failure_text
from pytest_promptsuite.results.row import CaseResult
from pytest_promptsuite.run.pipeline import PlannedCase
from pytest_promptsuite.safety.scrub import printable


if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo
    from _pytest._code.code import TerminalRepr

__all__ = ["CaseFailed", "CaseSource", "PromptFile", "PromptItem", "RESULT_PROPERTY", "source_key"]

#: The user property that carries a case's result to the session (and across xdist).
RESULT_PROPERTY = "promptsuite"


class CaseSource(Protocol):
    """What the nodes need from the run."""

    def collect_file(self, path: Path, make_check: MakeCheck) -> Sequence[PlannedCase]:
        """The items of a case file (a PromptSuiteError fails its collection)."""
        ...

    def run(self, planned: PlannedCase) -> CaseResult:
        """Run one planned case."""
        ...

    def row_line(self, result: CaseResult) -> str:
        """The row's JSON line, as the item reports it."""
        ...

    def stop_reason(self) -> str | None:
        """Why no further case should run, if one should not."""
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
        """One item per case, variant and repeat; a bad file is one collection error."""
        source = self.config.stash[source_key]
        #: The hook each item calls when its case is done, as seen from this file (its conftests
        #: are known by now): looked up once, not for each of its items.
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
        """pytest's report of a collection error, with every secret scrubbed."""
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
        """The case this item runs, read back from its file (the item keeps only where it is)."""
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
        """Drop the row once the call's report carries it: pytest keeps every item, and the
        teardown's report (junit's properties) never had it."""
        self.user_properties[:] = [p for p in self.user_properties if p[0] != RESULT_PROPERTY]

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """The case's report for our failures (no traceback), pytest's for anything else; every
        secret scrubbed either way (a traceback shows the arguments of its frames)."""
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
        """The case's line (0-based, as pytest counts) and ``case ID [slice]``, the ID with its
        variant and repeat (``flight-005[v2][repeat-1]``) where those apply."""
        return self.path, self.planned.ref.line - 1, f"case {self.name} [{self.planned.slice}]"
