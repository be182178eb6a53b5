"""The row of ``results.jsonl``, ``CaseResult``: what one executed case recorded (also what
crosses the pytest-xdist wire, so it round-trips through its JSON exactly)."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Union

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.cases.prompt_case import CaseLocation
from pytest_promptsuite.checks.outcome import OUTCOMES
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.models.tool_calls import ToolCall
from pytest_promptsuite.models.tool_calls import calls_from_dicts


#: Written into every row; bumped when a field changes meaning (a row without it is version 1).
RESULT_FORMAT_VERSION = 1


@dataclass(frozen=True)
class CaseResult:
    """Everything recorded for one executed case (one variant, one repeat); ``outcome`` and
    ``location`` may be given as a row writes them (a string, ``"path:line"``)."""

    case_id: str
    slice: str
    outcome: Outcome
    location: Union[CaseLocation, None] = None
    variant: str | None = None
    repeat: int = 0
    output: str | None = None
    checks: tuple[CheckResult, ...] = ()
    error: str | None = None
    prompt: Any = None
    prompt_hash: str | None = None
    latency_ms: float | None = None
    usage: dict[str, Any] | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Multi-turn cases: every reply, in request order (the last one is ``output``).
    replies: tuple[str, ...] = ()
    #: The answer came from the response cache (no call was made).
    cached: bool = False
    #: The tools the final answer called (name, arguments, id), beside ``output``.
    tool_calls: tuple[ToolCall, ...] = ()
    #: Every model step of a run with tools: its text, calls and the results sent back.
    trajectory: tuple[Step, ...] = ()
    #: Why a run with tool_results stopped before the model answered without calls (None: it did not).
    tool_stop: str | None = None
    #: Why the model stopped (``stop``, ``length`` for an answer cut at ``max_tokens``, ``tool_calls``), as it said.
    finish_reason: str | None = None
    #: The fingerprint of the judge that decided the row's ``llm-rubric`` checks (None: no judge did).
    judge_fingerprint: str | None = None
    #: A conversation's transcript: a turn each (user message, reply, tool steps, checks, tokens, latency).
    turns: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        outcome: object = self.outcome
        if type(outcome) is not Outcome:
            object.__setattr__(self, "outcome", Outcome(outcome))
        location: object = self.location
        if isinstance(location, str):
            object.__setattr__(self, "location", CaseLocation.parse(location))

    @property
    def key(self) -> CaseKey:
        """Which case, variant and repeat this row is."""
        return CaseKey(self.case_id, self.variant, self.repeat)

    @property
    def failed_checks(self) -> list[CheckResult]:
        """The checks that ran and did not pass."""
        return [c for c in self.checks if not c.passed and not c.skipped]

    def to_dict(self) -> dict[str, Any]:
        """Return the ``results.jsonl`` row (the contract's fields first, the format version last)."""
        return {
            "case_id": self.case_id,
            "slice": self.slice,
            "variant": self.variant,
            "repeat": self.repeat,
            "outcome": self.outcome.value,
            "output": self.output,
            "checks": [c.to_dict() for c in self.checks],
            "error": self.error,
            "prompt": self.prompt,
            "prompt_hash": self.prompt_hash,
            "latency_ms": self.latency_ms,
            "usage": self.usage,
            **({"finish_reason": self.finish_reason} if self.output is not None else {}),
            "location": "" if self.location is None else str(self.location),
            "tags": list(self.tags),
            "metadata": self.metadata,
            **({"replies": list(self.replies)} if self.replies else {}),
            **({"cached": True} if self.cached else {}),
            **({"tool_calls": [c.to_dict() for c in self.tool_calls]} if self.tool_calls else {}),
            **({"trajectory": [step.to_dict() for step in self.trajectory]} if self.trajectory else {}),
            **({"tool_stop": self.tool_stop} if self.tool_stop is not None else {}),
            **({"judge_fingerprint": self.judge_fingerprint} if self.judge_fingerprint is not None else {}),
            **({"turns": list(self.turns)} if self.turns else {}),
            "format_version": RESULT_FORMAT_VERSION,
        }

    def to_json(self) -> str:
        """Return the row as one line of JSON (``results.jsonl``, junit's properties, the xdist wire), scrubbed."""
        return encode(self.to_dict(), compact=True)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> CaseResult:
        """Read a row back; ValueError for a row of a newer format or an unknown outcome."""
        get = row.get  # every row of a baseline: positional, no empty generators
        version = get("format_version", 1)
        if not isinstance(version, int) or version > RESULT_FORMAT_VERSION:
            raise ValueError(
                f"format_version {version!r} is newer than this pytest-promptsuite reads "
                f"({RESULT_FORMAT_VERSION}); upgrade it"
            )
        case_id, slice_, outcome = row["case_id"], row["slice"], row["outcome"]  # a missing one: in this order
        checks, tags, replies = get("checks", ()), get("tags", ()), get("replies", ())
        return cls(
            case_id,
            slice_,
            OUTCOMES[outcome] if isinstance(outcome, str) and outcome in OUTCOMES else Outcome(outcome),
            CaseLocation.parse(get("location") or ""),
            get("variant"),
            get("repeat", 0),
            get("output"),
            () if checks == () else tuple(CheckResult(**c) for c in checks),
            get("error"),
            get("prompt"),
            get("prompt_hash"),
            get("latency_ms"),
            get("usage"),
            () if tags == () else tuple(tags),
            get("metadata") or {},
            () if replies == () else tuple(replies),
            get("cached") is True,
            *(_tools_of(row) if "tool_calls" in row or "trajectory" in row or "tool_stop" in row else _NO_TOOLS),
            _text_or_none(get("finish_reason")),
            _text_or_none(get("judge_fingerprint")),
            _turns_of(get("turns")),
        )

    @classmethod
    def from_json(cls, text: str) -> CaseResult:
        """Read a row from one line of JSON (ValueError when it is not JSON)."""
        return cls.from_dict(decode(text, strict=False))


#: The tool fields of a row that has none.
_NO_TOOLS: tuple[tuple[ToolCall, ...], tuple[Step, ...], str | None] = ((), (), None)


def _tools_of(row: dict[str, Any]) -> tuple[tuple[ToolCall, ...], tuple[Step, ...], str | None]:
    """Read a row's ``tool_calls``, ``trajectory`` and ``tool_stop`` (ValueError for a malformed one)."""
    try:
        calls = calls_from_dicts(row.get("tool_calls", []))
        steps = row.get("trajectory", [])
        if not isinstance(steps, list):
            raise TypeError("'trajectory' must be a list")
        trajectory = tuple(Step.from_dict(step) for step in steps)
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    stop = row.get("tool_stop")
    return calls, trajectory, stop if isinstance(stop, str) else None


def _turns_of(value: Any) -> tuple[dict[str, Any], ...]:
    """Read a row's ``turns`` (a list of objects; anything else, as from a row edited by hand: none)."""
    if type(value) is not list:
        return ()
    return tuple(turn for turn in value if isinstance(turn, dict))


def _text_or_none(value: Any) -> str | None:
    """Return ``value`` when it is a string, else None (a row edited by hand)."""
    return value if isinstance(value, str) else None
