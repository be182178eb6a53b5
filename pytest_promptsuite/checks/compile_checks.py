"""Compiling ``assert`` entries into ready-to-run checks when a case file is collected; a bad entry is
a ``CheckError`` naming ``path:line``, the case and the entry."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Union

from pytest_promptsuite.cases.conversation_fields import conversation_rules
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import BUILTIN_TYPES
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckScope
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.errors import nearest


if TYPE_CHECKING:
    from pytest_promptsuite.checks.jsonpath import JsonPath


#: ``make(name=..., params=..., case=..., base_dir=..., scope=...) -> Check | None`` (the hook's).
MakeCheck = Callable[..., Union[Check, None]]

#: Fields every entry may carry; the evaluator handles them, factories never see them.
COMMON_FIELDS = ("type", "weight", "path", "metric")
_SET_FIELDS = ("type", "assert", "threshold", "weight", "metric")


@dataclass(frozen=True)
class CompiledCheck:
    """One compiled entry: the check, its type as written (``not-contains``), its weight and JSON path."""

    name: str
    check: Check
    negate: bool = False
    weight: float = 1.0
    path: JsonPath | None = None
    where: str = "assert[0]"
    metric: str | None = None

    @property
    def layer(self) -> Layer:
        """The layer the check runs in."""
        return Layer(self.check.layer)


@dataclass(frozen=True)
class CheckSet:
    """An ``assert-set``: members that count together against the set's own ``threshold``."""

    members: tuple[CompiledCheck, ...]
    threshold: float | None = None
    weight: float = 1.0
    where: str = "assert[0]"
    metric: str | None = None


Entry = Union[CompiledCheck, CheckSet]


@dataclass(frozen=True)
class CompiledChecks:
    """Everything to check for one case: its ``assert`` entries (weighed by ``threshold``) and the
    suite-level entries that apply to its slice (each gating on its own)."""

    entries: tuple[Entry, ...] = ()
    threshold: float | None = None
    suite: tuple[Entry, ...] = ()
    #: A conversation's turns: each turn's ``assert`` entries, in turn order.
    turns: tuple[tuple[Entry, ...], ...] = ()


@dataclass(frozen=True)
class SuiteChecks:
    """The ``[[checks]]`` tables of a suite config: (slice pattern, entries) pairs."""

    rules: tuple[tuple[str, tuple[Entry, ...]], ...] = ()

    def for_slice(self, slice_name: str) -> tuple[Entry, ...]:
        """Return the entries for ``slice_name``: rules with ``slice = "*"``, the name, or a glob."""
        found: list[Entry] = []
        for pattern, entries in self.rules:
            if pattern in ("*", slice_name) or fnmatch.fnmatchcase(slice_name, pattern):
                found.extend(entries)
        return tuple(found)


def _known_types() -> str:
    return ", ".join([*BUILTIN_TYPES, "assert-set"])


def _number(entry: dict[str, Any], key: str, *, low: float, high: float | None, what: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < low
        or (high is not None and value > high)
    ):
        raise CheckError(f"{key!r} must be {what}, got {value!r}")
    return float(value)


def _metric(entry: dict[str, Any]) -> str | None:
    metric = entry.get("metric")
    if metric is not None and not isinstance(metric, str):
        raise CheckError(f"'metric' must be a string (a name for the score), got {metric!r}")
    return metric


def _path(text: Any) -> JsonPath | None:
    """Parse an entry's ``path`` (the JSONPath module loads only for a suite that uses one)."""
    if text is None:
        return None
    from pytest_promptsuite.checks.jsonpath import JsonPath

    return JsonPath.parse(text)


@dataclass(frozen=True)
class _Compiler:
    """The compiler of one case's entries (or the suite config's), with one ``make``."""

    make: MakeCheck
    case: PromptCase | None
    base_dir: Path
    scope: CheckScope | None

    def entries(self, entries: Sequence[Any], prefix: str = "assert") -> tuple[tuple[Entry, ...], list[str]]:
        """Compile every entry, and return them with every problem found (a message per bad entry)."""
        compiled: list[Entry] = []
        problems: list[str] = []
        for i, entry in enumerate(entries):
            try:
                compiled.append(self.entry(entry, f"{prefix}[{i}]"))
            except CheckError as exc:
                problems.append(str(exc))
        return tuple(compiled), problems

    def entry(self, entry: Any, where: str, in_set: bool = False) -> Entry:
        """Compile one ``assert`` entry; a CheckError's message starts with ``where``."""
        try:
            if not isinstance(entry, dict):
                raise CheckError(f'a check must be an object like {{"type": "contains", "value": ...}}, got {entry!r}')
            kind = entry.get("type")
            if not isinstance(kind, str) or not kind:
                raise CheckError(f"missing 'type' (known types: {_known_types()})")
            weight = _number(entry, "weight", low=0, high=None, what="a number >= 0 (0 records without gating)")
            weight = 1.0 if weight is None else weight
            if kind == "assert-set":
                return self._set(entry, where, weight, in_set)
            return self._check(entry, kind, where, weight)
        except CheckError as exc:
            text = str(exc)
            raise CheckError(text if text.startswith(where) else f"{where}: {text}") from exc

    def _set(self, entry: dict[str, Any], where: str, weight: float, in_set: bool) -> CheckSet:
        if in_set:
            raise CheckError("an assert-set cannot hold another assert-set")
        for key in entry:
            if key not in _SET_FIELDS:
                raise CheckError(
                    f"unknown field {key!r} for 'assert-set'"
                    + did_you_mean(key, list(_SET_FIELDS))
                    + f"; its fields: {', '.join(repr(k) for k in _SET_FIELDS[1:])}"
                )
        members = entry.get("assert")
        if not isinstance(members, list) or not members:
            raise CheckError("'assert' of 'assert-set' must be a non-empty list of checks")
        compiled = tuple(self.entry(m, f"{where}.assert[{i}]", in_set=True) for i, m in enumerate(members))
        threshold = _number(entry, "threshold", low=0, high=1, what="a share from 0 to 1")
        return CheckSet(compiled, threshold, weight, where, _metric(entry))  # type: ignore[arg-type]

    def _check(self, entry: dict[str, Any], kind: str, where: str, weight: float) -> CompiledCheck:
        negate = kind.startswith("not-")
        name = kind[4:] if negate else kind
        path = _path(entry.get("path"))
        params = {k: v for k, v in entry.items() if k not in COMMON_FIELDS}
        check = self.make(name=name, params=params, case=self.case, base_dir=self.base_dir, scope=self.scope)
        if check is None:
            raise _unknown_type(kind, name, negate)
        if not isinstance(check, Check):
            raise CheckError(
                f"the pytest_promptsuite_make_check hook returned {type(check).__name__} for {name!r}, "
                "not a pytest_promptsuite.checks.Check"
            )
        if negate and not check.negatable:
            raise CheckError(f"{kind!r}: {name!r} has no not- form")
        if negate:
            check = check.negated()
        if path is not None and not check.reads_output:
            raise CheckError(f"'path' does not apply to {name!r}: it checks the model call, not the output")
        return CompiledCheck(kind, check, negate, weight, path, where, _metric(entry))


def _unknown_type(kind: str, name: str, negate: bool) -> CheckError:
    """Say that no check has the type ``kind``: the nearest built-in, every known type."""
    hint = nearest(name, list(BUILTIN_TYPES))
    return CheckError(
        f"unknown check type {kind!r}"
        + (f" (did you mean {('not-' if negate else '') + hint!r}?)" if hint else "")
        + f"; known types: {_known_types()} (each also as not-TYPE), or a type a plugin adds "
        "through pytest_promptsuite_make_check"
    )


def compile_case(
    case: PromptCase,
    make: MakeCheck = make_builtin_check,
    *,
    base_dir: Path | None = None,
    suite: SuiteChecks | None = None,
    display: str | None = None,
    scope: CheckScope | None = None,
) -> CompiledChecks:
    """Compile the checks of ``case`` (its ``assert`` and the suite's for its slice); a CheckError
    has one ``path:line: case 'ID': assert[i]: problem`` line per bad entry.

    Args:
        make: makes a check from ``name``, ``params``, ``case``, ``base_dir`` and ``scope`` (None if unknown).
        base_dir: where relative files resolve (default: the case file's folder).
        display: how messages name the case file (default: the path it was read from).
        scope: where the entries' files and code may come from (None: anywhere, for trusted callers).
    """
    location = case.location
    base = base_dir if base_dir is not None else location.path.parent
    compiler = _Compiler(make, case, base, scope)
    entries, problems = compiler.entries(case.assert_)
    turns: list[tuple[Entry, ...]] = []
    if case.is_conversation:
        problems += conversation_rules(case.turns, case.user, case.input)
        turns = _turn_entries(compiler, case, problems)
    if problems:
        where = f"{display if display is not None else location.path}:{location.line}"
        raise CheckError("\n".join(f"{where}: case {case.case_id!r}: {p}" for p in problems))
    return CompiledChecks(entries, case.threshold, suite.for_slice(case.slice) if suite else (), tuple(turns))


def _turn_entries(compiler: _Compiler, case: PromptCase, problems: list[str]) -> list[tuple[Entry, ...]]:
    """Compile each turn's ``assert`` entries, adding their problems (``turns[i].assert[j]: ...``) to ``problems``."""
    turns = []
    for i, turn in enumerate(case.turns):
        entries, found = compiler.entries(turn.get("assert", []), f"turns[{i}].assert")
        problems.extend(found)
        turns.append(entries)
    return turns


def compile_cases(
    cases: Sequence[PromptCase],
    make: MakeCheck,
    *,
    suite: SuiteChecks | None = None,
    display: str | None = None,
    scope: CheckScope | None = None,
) -> dict[str, CompiledChecks]:
    """Compile every case's checks, by case id; one CheckError lists every bad entry of every case."""
    compiled: dict[str, CompiledChecks] = {}
    problems: list[str] = []
    shared: dict[tuple[str, float | None], CompiledChecks] = {}  # cases without entries of their own
    for case in cases:
        try:
            if case.assert_ or case.is_conversation:
                compiled[case.case_id] = compile_case(case, make, suite=suite, display=display, scope=scope)
                continue
            plain = (case.slice, case.threshold)
            if plain not in shared:
                shared[plain] = compile_case(case, make, suite=suite, display=display, scope=scope)
            compiled[case.case_id] = shared[plain]
        except CheckError as exc:
            problems.append(str(exc))
    if problems:
        raise CheckError("\n".join(problems))
    return compiled


def compile_suite_checks(
    tables: Sequence[Any], make: MakeCheck, *, base_dir: Path, source: str, scope: CheckScope | None = None
) -> SuiteChecks:
    """Compile the config's ``[[checks]]``; a CheckError names the config file and ``[[checks]][i].assert[j]``."""
    rules: list[tuple[str, tuple[Entry, ...]]] = []
    problems: list[str] = []
    for i, table in enumerate(tables):
        slice_pattern = getattr(table, "slice", "*")
        entries = getattr(table, "assert_", None)
        if entries is None and isinstance(table, dict):
            slice_pattern, entries = table.get("slice", "*"), table.get("assert", [])
        compiled, found = _Compiler(make, None, base_dir, scope).entries(entries or [], f"[[checks]][{i}].assert")
        problems.extend(f"{source}: {p}" for p in found)
        rules.append((slice_pattern, compiled))
    if problems:
        raise CheckError("\n".join(problems))
    return SuiteChecks(tuple(rules))
