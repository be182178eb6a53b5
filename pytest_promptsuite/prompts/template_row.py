"""The row a template fills from: a case's fields, or a train row's (an in-context example)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.formats.jsonl import read_jsonl


def case_row(case: PromptCase) -> dict[str, Any]:
    """Return the row every template of a case fills from: ``input`` (also ``question``), the
    ``vars``, ``answer`` (empty when the case has none) and ``history`` (:func:`history_of`)."""
    row: dict[str, Any] = {"input": case.input, "question": case.input}
    row.update(case.vars)
    row["answer"] = case.answer if case.answer is not None else ""
    row["history"] = history_of(case)
    return row


def history_of(case: PromptCase) -> list[dict[str, Any]]:
    """Return a case's turns as ``{"role", "content"}`` messages: each user turn, followed by the
    answer of the same index when ``answer`` is a list; the last user turn comes last."""
    turns = case.input if isinstance(case.input, list) else [case.input]
    answers = case.answer if isinstance(case.answer, list) and isinstance(case.input, list) else []
    history: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        history.append({"role": "user", "content": turn})
        if i < len(turns) - 1 and i < len(answers):
            history.append({"role": "assistant", "content": answers[i]})
    return history


def _train_row(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise TemplateError(f"{where}: a train row must be a JSON object")
    row = dict(obj)
    extra = row.pop("vars", None)
    if isinstance(extra, dict):
        row.update(extra)
    if "input" in row and "question" not in row:
        row["question"] = row["input"]
    return row


def load_train_rows(path: Path) -> list[dict[str, Any]]:
    """Read the train rows of a JSONL file (``[suite] train``), their ``vars`` lifted to the top."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read the train file ([suite] train): {exc.strerror}") from exc
    rows = []
    for line in read_jsonl(data):
        if line.problem is not None:
            raise TemplateError(f"{path}:{line.number}: {line.problem}")
        rows.append(_train_row(line.value, f"{path}:{line.number}"))
    return rows
