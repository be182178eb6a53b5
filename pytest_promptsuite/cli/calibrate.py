"""``promptsuite calibrate``: the suite's judge on every labelled output, its agreement with people's labels
written to ``calibration.json`` and shown as a table (and Markdown for a CI summary)."""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.compile_checks import CheckSet
from pytest_promptsuite.checks.compile_checks import CompiledCheck
from pytest_promptsuite.checks.compile_checks import CompiledChecks
from pytest_promptsuite.checks.metric import LlmRubric
from pytest_promptsuite.checks.metric import ModelJudge
from pytest_promptsuite.checks.metric import rubric_prompt
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.results.agreement import INTERVAL
from pytest_promptsuite.results.agreement import Agreement
from pytest_promptsuite.results.agreement import flip_rate
from pytest_promptsuite.results.agreement import krippendorff_alpha
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.labels import Label
from pytest_promptsuite.results.labels import load_decisions
from pytest_promptsuite.results.labels import load_labels
from pytest_promptsuite.results.review_book import output_sha256
from pytest_promptsuite.run.pipeline import PlannedCase
from pytest_promptsuite.run.session import PromptSession


#: Bumped when a field of ``calibration.json`` changes meaning.
CALIBRATION_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Item:
    """One label to judge: the output, the check it is labelled for (and whether the check negates), the case."""

    label: Label
    output: str
    check: LlmRubric
    negate: bool = False
    case: PromptCase | None = None
    member: CompiledCheck | None = None


@dataclass
class Judged:
    """The judge's verdicts on one item (empty with ``error``), its reason, and the check's outcome."""

    item: Item
    verdicts: list[bool] = field(default_factory=list)
    passed: bool = False
    reason: str = ""
    error: str | None = None


def _judged_members(checks: CompiledChecks) -> list[CompiledCheck]:
    """Return a case's ``llm-rubric`` checks (its own, its assert-sets' and the suite's)."""
    members = [
        member
        for entry in (*checks.entries, *checks.suite)
        for member in (entry.members if isinstance(entry, CheckSet) else (entry,))
    ]
    return [m for m in members if isinstance(m.check, LlmRubric)]


class Resolver:
    """Finds each label's output and checks: the suite's planned cases and a report's rows."""

    def __init__(self, planned: Sequence[PlannedCase], rows: Sequence[CaseResult]) -> None:
        self.planned: dict[str, PlannedCase] = {}
        for one in planned:
            self.planned.setdefault(one.key.case_id, one)
        self.rows = [row for row in rows if row.output is not None]
        self.problems: list[str] = []

    def items(self, labels: Iterable[Label]) -> list[Item]:
        """Return every label's items; ConfigError listing each label that cannot be resolved (``path:line``)."""
        items: list[Item] = []
        for label in labels:
            try:
                items += self._items(label)
            except ValueError as exc:
                self.problems.append(f"{label.where}: {exc}")
        if self.problems:
            raise ConfigError("\n".join(self.problems))
        return items

    def _items(self, label: Label) -> list[Item]:
        output = self._output(label)
        if label.case_id is None:
            assert label.rubric is not None
            return [Item(label, output, LlmRubric(label.rubric, None))]
        planned = self._case(label.case_id)
        case = planned.case
        return [
            Item(label, output, m.check, m.negate, case, m)  # type: ignore[arg-type]
            for m in self._members(label, planned)
        ] or [Item(label, output, LlmRubric(label.rubric or "", None), case=case)]

    def _case(self, case_id: str) -> PlannedCase:
        found = self.planned.get(case_id)
        if found is None:
            raise ValueError(f"no case {case_id!r} in the suite" + did_you_mean(case_id, list(self.planned)))
        return found

    def _members(self, label: Label, planned: PlannedCase) -> list[CompiledCheck]:
        """Return the case's checks a label is for: its ``rubric``, its ``check``, else every llm-rubric."""
        members = _judged_members(planned.checks)
        if label.rubric is not None:
            return [m for m in members if isinstance(m.check, LlmRubric) and m.check.rubric == label.rubric]
        if label.check is not None:
            chosen = [m for m in members if m.where == label.check]
            if not chosen:
                raise ValueError(f"case {label.case_id!r} has no llm-rubric check at {label.check!r}" + _at(members))
            return chosen
        if not members:
            raise ValueError(f"case {label.case_id!r} has no llm-rubric check: give the 'rubric' it is labelled for")
        return members

    def _output(self, label: Label) -> str:
        """Return the labelled output: inline, else the report's row of the case (with the output's hash)."""
        if label.output is not None:
            return label.output
        for row in self.rows:
            if row.case_id == label.case_id and _same_output(row, label):
                assert row.output is not None
                return row.output
        raise ValueError(f"no output for case {label.case_id!r}: give 'output', or --results REPORT holding its row")


def _same_output(row: CaseResult, label: Label) -> bool:
    if label.variant is not None and row.variant != label.variant:
        return False
    return label.output_sha256 is None or output_sha256(row.output or "") == label.output_sha256


def _at(members: Sequence[CompiledCheck]) -> str:
    return f"; its llm-rubric checks: {', '.join(m.where for m in members)}" if members else ""


def judge_item(item: Item, judge: ModelJudge, judge_name: str | None) -> Judged:
    """Run the item's check with the judge on the labelled output (its JSON path read first)."""
    case = item.case or PromptCase(case_id="label", input=item.output, slice="labels")
    ctx = CheckContext(case=case, output=item.output, judge=judge, judge_name=judge_name)
    value: Any = item.output
    path = item.member.path if item.member is not None else None
    try:
        if path is not None:
            value = path.find(ctx.output_json())
    except Exception as exc:  # a path the output lacks: this label is not judged, and says why
        return Judged(item, error=f"cannot read {path}: {exc}")
    verdict = item.check.evaluate(value, ctx)
    details = verdict.details or {}
    if "verdict" not in details:
        return Judged(item, error=verdict.found)
    verdicts = list(details.get("verdicts") or [details["verdict"]])
    return Judged(item, verdicts, verdict.passed != item.negate, str(details.get("reason", "")))


def _figures(judged: Sequence[Judged]) -> dict[str, Any]:
    """Return the agreement figures of some judged labels: the confusion and kappa, the flip rate, the
    labellers' alpha (each over the distinct outputs)."""
    figures = Agreement.of([j.item.label.passed for j in judged], [j.passed for j in judged]).to_dict()
    units: dict[tuple[str, str], list[bool]] = {}
    repeats: dict[tuple[str, str], list[bool]] = {}
    for j in judged:
        unit = (j.item.output, j.item.check.rubric)
        units.setdefault(unit, []).append(j.item.label.passed)
        repeats.setdefault(unit, j.verdicts)
    figures["outputs"] = len(units)
    figures["flip_rate"] = flip_rate(list(repeats.values()))
    figures["labeller_alpha"] = krippendorff_alpha(list(units.values()))
    return figures


def _disagreement(j: Judged) -> dict[str, Any]:
    label = j.item.label
    return {
        "where": label.where,
        "case_id": label.case_id,
        "rubric": j.item.check.rubric,
        "label": "pass" if label.passed else "fail",
        "judge": "pass" if j.passed else "fail",
        "reason": j.reason,
    }


def calibration(judged: Sequence[Judged], judge: ModelJudge, judge_name: str | None) -> dict[str, Any]:
    """Return ``calibration.json``: the judge (its fingerprint), the figures per rubric and overall, the
    disagreements and the labels the judge could not grade."""
    graded = [j for j in judged if j.error is None]
    return {
        "format_version": CALIBRATION_FORMAT_VERSION,
        "judge_fingerprint": judge.fingerprint,
        "judge": {"spec": judge_name, "identity": judge.identity, "params": judge.params, "repeat": judge.repeat},
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "interval": INTERVAL,
        "overall": _figures(graded),
        "rubrics": _by_rubric(graded),
        "disagreements": [_disagreement(j) for j in graded if j.passed != j.item.label.passed],
        "errors": [_error(j) for j in judged if j.error],
    }


def _by_rubric(graded: Sequence[Judged]) -> list[dict[str, Any]]:
    """Return each rubric's figures, in the order the labels first name it."""
    groups: dict[str, list[Judged]] = {}
    for j in graded:
        groups.setdefault(j.item.check.rubric, []).append(j)
    return [{"rubric": rubric, **_figures(group)} for rubric, group in groups.items()]


def _error(j: Judged) -> dict[str, Any]:
    return {"where": j.item.label.where, "rubric": j.item.check.rubric, "error": j.error}


def gather_labels(suite: SuiteConfig, args: argparse.Namespace, display: Callable[[Path], str]) -> list[Label]:
    """Read the labels: ``[judge] labels`` of the config, ``--labels`` and ``--reviews`` files."""
    files = [suite.resolve(name, key="judge.labels") for name in suite.judge.labels]
    labels = [label for path in files for label in load_labels(path, display=display(path))]
    labels += [label for name in args.labels for label in load_labels(Path(name))]
    labels += [label for name in args.reviews for label in load_decisions(Path(name))]
    if not labels:
        raise ConfigError(
            "promptsuite calibrate: no labels: give --labels FILE (or --reviews FILE), or [judge] labels in the config"
        )
    return labels


def _one_suite(session: PromptSession, planned: Sequence[PlannedCase]) -> tuple[SuiteConfig, PlannedCase]:
    """Return the one suite config of the collected cases (calibrate judges one suite's judge)."""
    suites = {one.suite for one in planned}
    if len(suites) != 1:
        raise ConfigError(f"promptsuite calibrate: {len(suites)} suites collected; calibrate one suite at a time")
    first = planned[0]
    return session.index.suite_of(first.ref.path)[1], first


def run_calibration(session: PromptSession, planned: Sequence[PlannedCase], args: argparse.Namespace) -> int:
    """Judge every labelled output with the suite's judge; print the table, write ``calibration.json`` (and
    Markdown with ``--markdown``). Return 0, or 1 when a label could not be judged."""
    from pytest_promptsuite.report.calibration_table import markdown
    from pytest_promptsuite.report.calibration_table import terminal_lines
    from pytest_promptsuite.results.io import load_results

    suite, first = _one_suite(session, planned)
    evaluator = session.pipeline_for(first).evaluator
    judge = evaluator.judge
    if not isinstance(judge, ModelJudge):
        raise ConfigError(
            "promptsuite calibrate: the suite has no judge model: configure [models.judge] or --prompt-judge"
        )
    labels = gather_labels(suite, args, session.index.display)
    rows = load_results(Path(args.results)) if args.results else []
    items = Resolver(planned, rows).items(labels)
    for item in items:  # every label's call in flight at once, within the judge's concurrency
        if item.member is None or item.member.path is None:
            judge.prefetch(rubric_prompt(judge.template, item.check.rubric, item.output))
    data = calibration([judge_item(item, judge, evaluator.judge_name) for item in items], judge, evaluator.judge_name)
    out = Path(args.out) if args.out else suite.resolve(suite.judge.calibration, key="judge.calibration")
    out.write_text(encode(data, indent=2) + "\n", encoding="utf-8")
    for line in terminal_lines(data):
        print(line)
    print(f"wrote {session.index.display(out)}")
    if args.markdown:
        Path(args.markdown).write_text(markdown(data), encoding="utf-8")
    return 1 if data["errors"] else 0
