"""Run a suite through ``PromptSession`` as the pytest plugin drives it, without pytest: collect each case
file's planned cases, run each case, hand its row over as an item reports it, finish (stage tests of ``run``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.config.options import OPTIONS
from pytest_promptsuite.config.options import RunOptions
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import Summary
from pytest_promptsuite.run.pipeline import PlannedCase
from pytest_promptsuite.run.registration import plugin_manager
from pytest_promptsuite.run.session import PromptSession


def run_options(*args: str) -> RunOptions:
    """Read ``--prompt-*`` arguments as pytest reads them (each checked by its option's type)."""
    parser = argparse.ArgumentParser()
    for option in OPTIONS:
        parser.add_argument(option.flag, **option.kwargs)
    values = vars(parser.parse_args(args))
    return RunOptions.from_values(values.__getitem__)


@dataclass
class Collected:
    """A session over ``folder`` and the cases it planned, in file order."""

    folder: Path
    session: PromptSession
    planned: list[PlannedCase]

    def run(self, planned: Iterable[PlannedCase] | None = None) -> list[CaseResult]:
        """Run the planned cases (all, in order, by default), each row added as its item would report it."""
        rows = []
        for one in self.planned if planned is None else planned:
            row = self.session.run(one)
            self.session.add_row(self.session.row_line(row))
            rows.append(row)
        return rows

    def finish(self) -> Summary | None:
        """Aggregate the rows, write the report files (``--prompt-report``) and return the summary, as the
        plugin's ``pytest_sessionfinish`` does."""
        summary = self.session.finish()
        if summary is not None:
            self.session.write_report()
        return summary

    def __enter__(self) -> Collected:
        return self

    def __exit__(self, *exc: object) -> None:
        self.session.close()

    def report_rows(self, report: str = "report") -> dict[str, dict[str, Any]]:
        """The rows of a report's ``results.jsonl`` by case id."""
        lines = (self.folder / report / "results.jsonl").read_text(encoding="utf-8").splitlines()
        return {row["case_id"]: row for row in map(json.loads, lines)}


def collect(folder: Path, *args: str) -> Collected:
    """Start a session in ``folder`` with ``args`` (``--prompt-suite PATH`` among them) and plan every case of
    its case files; use it in a ``with`` block, which closes the session (its event loop, its cassettes)."""
    hook = plugin_manager().hook
    session = PromptSession(run_options(*args), hook=hook, invocation_dir=folder, rootpath=folder)
    for raw in session.options.suite:
        session.index.add_target(raw)
    make_check = hook.pytest_promptsuite_make_check
    planned = [
        one
        for path in session.index.case_files()
        if session.index.wants(path)
        for one in session.collect_file(path, make_check)
    ]
    return Collected(folder, session, planned)
