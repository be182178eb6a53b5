"""``--prompt-rejudge``: the baseline's stored outputs checked again by this run's checks and judge, so that a
changed judge is not read as a changed prompt (the judge's calls cached as a run's)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path

from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.check_api import CheckScope
from pytest_promptsuite.checks.compile_checks import CompiledChecks
from pytest_promptsuite.checks.compile_checks import MakeCheck
from pytest_promptsuite.checks.compile_checks import compile_cases
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.checks.evaluator import outcome_of
from pytest_promptsuite.checks.fingerprint import fingerprint_of
from pytest_promptsuite.config.discovery import SuiteIndex
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import Baseline


#: A case with its compiled checks and the evaluator of its suite.
Checked = tuple[PromptCase, CompiledChecks, Evaluator]


def cases_to_rejudge(
    index: SuiteIndex, evaluator_of: Callable[[Path], Evaluator], make_check: MakeCheck
) -> dict[str, Checked]:
    """Read every collected case file with its suite's evaluator and compile its cases' checks, by case id."""
    found: dict[str, Checked] = {}
    for path in index.case_files():
        _, suite = index.suite_of(path)
        evaluator = evaluator_of(path)
        cases = load_cases(path, display=index.display(path))
        scope = CheckScope(index.folder_of(path), suite.python_modules)
        compiled = compile_cases(cases, make_check, suite=evaluator.suite, display=index.display(path), scope=scope)
        found.update({case.case_id: (case, compiled[case.case_id], evaluator) for case in cases})
    return found


def _rejudged(row: CaseResult, checked: Checked) -> CaseResult:
    """Return ``row`` with its output checked again: new checks, outcome and judge fingerprint."""
    case, compiled, evaluator = checked
    assert row.output is not None
    checks = evaluator.evaluate(case, row.output, compiled)
    outcome = outcome_of(case, checks, error=None)
    return dataclasses.replace(row, checks=checks, outcome=outcome, judge_fingerprint=fingerprint_of(checks))


def rejudge(baseline: Baseline, cases: Mapping[str, Checked]) -> tuple[Baseline, int]:
    """Return the baseline with each row a judge decided checked again (its case still in the suite, its output
    stored, no error), and how many rows that was."""
    full = baseline.full or (lambda row: row)
    done: dict[int, CaseResult] = {}
    rows = []
    for row in baseline.rows:
        checked = cases.get(row.case_id)
        if row.judge_fingerprint is None or checked is None or row.error is not None:
            rows.append(row)
            continue
        whole = full(row)
        if whole.output is None:
            rows.append(row)
            continue
        new = _rejudged(whole, checked)
        done[id(new)] = new
        rows.append(new)

    def read(row: CaseResult) -> CaseResult:
        return row if id(row) in done else full(row)

    return dataclasses.replace(baseline, rows=rows, full=read), len(done)
