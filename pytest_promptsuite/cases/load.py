"""Reading case files: every problem of a file reported as ``path:line: what is wrong``, and a file
with any problem yields no case at all (nothing runs on a half-read suite)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.case import CaseLocation
from pytest_promptsuite.cases.case import CaseRef
from pytest_promptsuite.cases.case import PromptCase
from pytest_promptsuite.cases.case import build_case
from pytest_promptsuite.cases.case import shape_problems
from pytest_promptsuite.errors import CaseFileError
from pytest_promptsuite.errors import describe_type
from pytest_promptsuite.formats.jsonio import lone_surrogate
from pytest_promptsuite.formats.jsonl import read_jsonl


__all__ = ["load_cases"]


def _objects(path: Path, name: str, problems: list[str]) -> Iterator[tuple[CaseRef, dict[str, Any]]]:
    """Each line of a case file that is a well-shaped case object, with where it is; every
    other line adds its ``name:line: problem`` messages to ``problems``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CaseFileError([f"{name}:1: cannot read the case file: {exc.strerror}"]) from exc
    for line in read_jsonl(data):
        where = f"{name}:{line.number}"
        if line.problem is not None:
            problems.append(f"{where}: {line.problem}")
            continue
        value = line.value
        if value is None:
            problems.append(f"{where}: the line is null, not a case object")
            continue
        if not isinstance(value, dict):
            problems.append(f"{where}: a case must be a JSON object, got {describe_type(value)}")
            continue
        lone = lone_surrogate(line.text, value)
        if lone is not None:
            problems.append(
                f"{where}: {lone[0]!r} holds {lone[1]}, half of a UTF-16 surrogate pair and no "
                "character (it cannot be sent or written as UTF-8); write the whole pair or drop it"
            )
            continue
        shape = list(shape_problems(value))
        if shape:
            problems.extend(f"{where}: {p}" for p in shape)
            continue
        crc = zlib.crc32(memoryview(data)[line.start:line.end])
        yield CaseRef(path, line.number, line.start, line.end - line.start, crc), value


def load_cases(
    path: Path | str,
    *,
    seen: MutableMapping[str, str] | None = None,
    display: str | None = None,
) -> list[PromptCase]:
    """Read every case of a JSONL file, or raise :class:`CaseFileError` listing every problem.

    Args:
        path: the case file.
        seen: case ids already taken by other files of the run, each with where it was defined
            (``"path:line"`` as displayed; updated in place), so a duplicate across files is
            reported with both locations.
        display: how to name the file in messages (default: ``path`` as given).
    """
    path = Path(path)
    name = display if display is not None else str(path)
    taken: MutableMapping[str, str] = {} if seen is None else seen
    problems: list[str] = []
    cases: list[PromptCase] = []
    added: list[str] = []
    for ref, data in _objects(path, name, problems):
        line = ref.line
        case = build_case(data, CaseLocation(path, line), ref)
        earlier = taken.get(case.case_id)
        if earlier is not None:
            problems.append(f"{name}:{line}: duplicate case_id {case.case_id!r} (first defined at {earlier})")
            continue
        taken[case.case_id] = f"{name}:{line}"
        added.append(case.case_id)
        cases.append(case)
    if not cases and not problems:
        problems.append(f"{name}:1: the file has no cases (a case file needs one JSON object a line)")
    if problems:
        for case_id in added:  # a failed file takes no ids: its cases never run
            del taken[case_id]
        raise CaseFileError(problems)
    return cases
