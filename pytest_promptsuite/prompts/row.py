"""What a template can read: the row of a case, and the rows of the train file.

Every template of a suite (infer_cfg templates, task prompts, template files) fills from the same
row: ``input`` (also ``question``), each key of ``vars`` at the top level, ``answer`` (empty when
the case has none) and ``history``, the case's turns as chat messages. A train row (an
in-context example) has the same shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.case import PromptCase
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.formats.jsonl import read_jsonl


__all__ = ["case_row", "history_of", "load_train_rows", "task_row"]


def case_row(case: PromptCase) -> dict[str, Any]:
    """The row a case fills templates with: ``input``, ``question``, the ``vars``, ``answer``
    (empty when the case has none) and ``history`` (:func:`history_of`): the fields every row
    provides, whatever the case (:data:`.fields.ALWAYS`)."""
    row: dict[str, Any] = {"input": case.input, "question": case.input}
    row.update(case.vars)
    row["answer"] = case.answer if case.answer is not None else ""
    row["history"] = history_of(case)
    return row


def history_of(case: PromptCase) -> list[dict[str, Any]]:
    """A case's turns as ``{"role", "content"}``: each user turn, followed by the answer of the
    same index when ``answer`` is a list (the ground truth of the earlier turns); the last user
    turn is the last message. A single-turn case's history is its one user message."""
    turns = case.input if isinstance(case.input, list) else [case.input]
    answers = case.answer if isinstance(case.answer, list) and isinstance(case.input, list) else []
    history: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        history.append({"role": "user", "content": turn})
        if i < len(turns) - 1 and i < len(answers):
            history.append({"role": "assistant", "content": answers[i]})
    return history


def task_row(case: PromptCase) -> dict[str, Any]:
    """The row task prompts and string templates fill from: :func:`case_row`, so every template
    sees the same fields."""
    return case_row(case)


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
    """The train rows of a JSONL file (blank lines skipped); ``vars`` are lifted to the top level."""
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
