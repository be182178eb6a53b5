"""Reading case files: every problem reported as ``path:line: what is wrong``, and no case of a file
with any problem."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import CaseLocation
from pytest_promptsuite.cases.prompt_case import CaseRef
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.cases.prompt_case import build_case
from pytest_promptsuite.cases.prompt_case import shape_problems
from pytest_promptsuite.errors import CaseFileError
from pytest_promptsuite.errors import describe_type
from pytest_promptsuite.formats.jsonio import lone_surrogate
from pytest_promptsuite.formats.jsonl import read_jsonl


def _line_problems(problem: str | None, text: str, value: Any) -> list[str]:
    """Return what is wrong with a line: not JSON, not a case object, a lone surrogate, or the case's shape."""
    if problem is not None:
        return [problem]
    if value is None:
        return ["the line is null, not a case object"]
    if not isinstance(value, dict):
        return [f"a case must be a JSON object, got {describe_type(value)}"]
    lone = lone_surrogate(text, value)
    if lone is not None:
        return [
            f"{lone[0]!r} holds {lone[1]}, half of a UTF-16 surrogate pair and no character (it cannot be "
            "sent or written as UTF-8); write the whole pair or drop it"
        ]
    return list(shape_problems(value))


def _objects(path: Path, name: str, problems: list[str]) -> Iterator[tuple[CaseRef, dict[str, Any]]]:
    """Yield each well-shaped case object of a file with its place; add every other line's problems."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CaseFileError([f"{name}:1: cannot read the case file: {exc.strerror}"]) from exc
    for line in read_jsonl(data):
        value = line.value
        found = _line_problems(line.problem, line.text, value)
        if found:
            problems.extend(f"{name}:{line.number}: {problem}" for problem in found)
            continue
        crc = zlib.crc32(memoryview(data)[line.start : line.end])
        yield CaseRef(path, line.number, line.start, line.end - line.start, crc), value


def load_cases(
    path: Path | str,
    *,
    seen: MutableMapping[str, str] | None = None,
    display: str | None = None,
    problems_to: list[str] | None = None,
) -> list[PromptCase]:
    """Read every case of a JSONL file, or raise :class:`CaseFileError` listing every problem.

    Args:
        seen: case ids other files of the run took, each with its ``"path:line"`` (updated in place).
        display: how to name the file in messages (default: ``path`` as given).
        problems_to: add the problems here and return the good cases instead (``promptsuite validate`` goes on).
    """
    path = Path(path)
    name = display if display is not None else str(path)
    taken: MutableMapping[str, str] = {} if seen is None else seen
    problems: list[str] = []
    cases: list[PromptCase] = []
    for ref, data in _objects(path, name, problems):
        line = ref.line
        case = build_case(data, CaseLocation(path, line), ref)
        earlier = taken.get(case.case_id)
        if earlier is not None:
            problems.append(f"{name}:{line}: duplicate case_id {case.case_id!r} (first defined at {earlier})")
            continue
        taken[case.case_id] = f"{name}:{line}"
        cases.append(case)
    if not cases and not problems:
        problems.append(f"{name}:1: the file has no cases (a case file needs one JSON object a line)")
    if problems and problems_to is not None:
        problems_to.extend(problems)
    elif problems:
        for case in cases:  # a failed file takes no ids: its cases never run
            del taken[case.case_id]
        raise CaseFileError(problems)
    return cases
