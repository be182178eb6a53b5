"""People's verdicts on outputs, what a judge is calibrated against: a labels file (JSON Lines) and the review
decisions made in the dashboard, each label with the ``path:line`` it came from."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import ClassVar
from typing import Literal

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonl import read_jsonl


_TEXT = {"min_length": 1}


@dataclass(frozen=True)
class LabelLine:
    """One line of a labels file: an output (``case_id``, whose output a report holds, or ``output`` inline),
    the rubric or check it is labelled for, and a person's ``label``."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid", "strict": True, "allow_inf_nan": False}
    label: Literal["pass", "fail"]
    case_id: str | None = field(default=None, metadata=_TEXT)
    output: str | None = None
    rubric: str | None = field(default=None, metadata=_TEXT)
    check: str | None = field(default=None, metadata=_TEXT)
    variant: str | None = None
    score: float | None = field(default=None, metadata={"ge": 0, "le": 1})
    labeller: str = ""


@dataclass(frozen=True)
class Label:
    """A person's pass or fail on one output, for one rubric (None: the case's rubric checks), from ``where``."""

    passed: bool
    where: str
    case_id: str | None = None
    output: str | None = None
    rubric: str | None = None
    check: str | None = None
    variant: str | None = None
    score: float | None = None
    labeller: str = ""
    #: A review decision names its output by hash; the output is found in a report.
    output_sha256: str | None = None


def _label(line: LabelLine, where: str) -> Label:
    if line.case_id is None and line.output is None:
        raise ValueError("give 'case_id' (its output is read from --results) or 'output'")
    if line.case_id is None and line.rubric is None:
        raise ValueError("an inline 'output' without 'case_id' needs the 'rubric' it is labelled for")
    return Label(
        line.label == "pass",
        where,
        line.case_id,
        line.output,
        line.rubric,
        line.check,
        line.variant,
        line.score,
        line.labeller,
    )


def _read(path: Path, shown: str, parse: Callable[[Any, str], Label]) -> list[Label]:
    """Read every line of ``path`` with ``parse``; ConfigError listing each bad line as ``path:line: ...``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read it ({exc.strerror or exc})") from exc
    labels, problems = [], []
    for line in read_jsonl(data):
        where = f"{shown}:{line.number}"
        try:
            if line.problem is not None:
                raise ValueError(line.problem)
            labels.append(parse(line.value, where))
        except ConfigError as exc:
            problems.append(str(exc))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        raise ConfigError("\n".join(problems))
    return labels


def _parse_line(value: Any, where: str) -> Label:
    """Return the label a line holds; ConfigError ``where: key: ...`` (pydantic's words) for a bad one."""
    if not isinstance(value, Mapping):
        raise ValueError("a label is a JSON object")
    from pytest_promptsuite.config.config_schema import read_tables  # pydantic: loaded with the first labels file

    line = read_tables(LabelLine, value, path=Path(where), prefix="", lines={})
    return _label(line, where)


def load_labels(path: Path, *, display: str | None = None) -> list[Label]:
    """Read a labels file (JSON Lines, one label a line); ConfigError listing every bad line as ``path:line``."""
    return _read(path, display or str(path), _parse_line)


def _parse_decision(value: Any, where: str) -> Label:
    """Return a review decision as a label of its case's rubric checks (its output found by its hash)."""
    from pytest_promptsuite.results.review_book import decision_of

    decision = decision_of(value, where)
    return Label(
        decision.decision == "pass",
        where,
        decision.case_id,
        variant=decision.variant,
        labeller=decision.reviewer,
        output_sha256=decision.output_sha256,
    )


def load_decisions(path: Path, *, display: str | None = None) -> list[Label]:
    """Read a review decisions file (``review-decisions.jsonl``) as labels; ConfigError with ``path:line``."""
    return _read(path, display or str(path), _parse_decision)
