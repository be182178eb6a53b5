"""pytest nodes: ``PromptFile`` (a case file) and ``PromptItem`` (one case)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from typing import Any

import pytest

from .cases import PromptCase
from .checks.base import CaseResult
from .errors import PromptSuiteError
from .report import failure_text


if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo
    from _pytest._code.code import TerminalRepr

    from .plugin import PromptRun

__all__ = ["CaseFailed", "PromptFile", "PromptItem"]

#: The user property that carries a case's result to the run object (and across xdist).
RESULT_PROPERTY = "promptsuite"


class CaseFailed(Exception):
    """Raised by a case that failed or errored; its report is the result's text, no traceback."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.case_id)
        self.result = result


#: Where the run object lives (``config.stash``); plugin.py creates it, the nodes read it.
run_key = pytest.StashKey["PromptRun"]()


def _run(config: pytest.Config) -> PromptRun:
    return config.stash[run_key]


class PromptFile(pytest.File):
    """A JSONL case file; every line is a case."""

    def collect(self) -> Iterator[PromptItem]:
        run = _run(self.config)
        try:
            suite = run.suite_for(self.path)
            cases = run.load(self.path)
            compiled = run.compile_checks(self, cases, suite)
        except PromptSuiteError as exc:
            raise self.CollectError(str(exc)) from exc
        repeats = run.repeats
        variants = run.variants_for(suite)
        for case in cases:
            for variant in variants:  # prompt versions: ids case_id[v1], case_id[v2]
                for repeat in range(repeats):  # --prompt-repeat N: ids case_id[repeat-0..N-1]
                    name = case.case_id
                    if variant is not None:
                        name += f"[{variant}]"
                    if repeats > 1:
                        name += f"[repeat-{repeat}]"
                    yield PromptItem.from_parent(
                        self, name=name, case=case, suite_key=suite, repeat=repeat,
                        variant=variant, compiled=compiled[case.case_id],
                    )


class PromptItem(pytest.Item):
    """One case: rendered, sent to the model and checked when pytest runs it."""

    def __init__(
        self, *, case: PromptCase, suite_key: Any, repeat: int = 0, variant: str | None = None,
        compiled: Any = None, **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.suite_key = suite_key
        #: The prompt version this item runs (``[variants.NAME]``), None without variants.
        self.variant = variant
        #: The case's checks, compiled at collection (``checks.CompiledChecks``).
        self.compiled = compiled
        #: Which run of the case this is (``--prompt-repeat``), from 0.
        self.repeat = repeat
        for word in (case.slice, *case.tags):  # -k 'refund and not 提示词注入'
            self.keywords[word] = True
            self.extra_keyword_matches.add(word)

    def runtest(self) -> None:
        run = _run(self.config)
        result = run.run_case(self)
        self.user_properties.append((RESULT_PROPERTY, result.to_json()))
        self.ihook.pytest_promptsuite_case_finished(item=self, result=result)
        if result.outcome in ("failed", "error"):
            raise CaseFailed(result)

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, CaseFailed):
            return failure_text(excinfo.value.result)
        if isinstance(excinfo.value, PromptSuiteError):
            return f"{self.location_text}: {self.case.case_id}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    @property
    def location_text(self) -> str:
        return f"{self.path.name}:{self.case.location.line}"

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, self.case.location.line - 1, f"case {self.case.case_id} [{self.case.slice}]"
