"""promptfoo ``tests`` into cases: ``defaultTest`` merged in, ``vars`` expanded, ``assert`` entries mapped
one to one where the names are shared, CSV test files, ``metadata`` as tags, and a slice from a metadata key."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pytest_promptsuite.errors import ConfigError


#: promptfoo's assert types that are ours under the same name.
_SHARED = frozenset(
    "equals contains icontains contains-any contains-all icontains-any icontains-all starts-with regex is-json "
    "contains-json is-xml levenshtein latency cost llm-rubric is-refusal word-count".split()
)
#: ``__expected`` prefixes of a CSV test file, in the order they are tried: ``TYPE:`` is that type's.
_CSV_PREFIXES = (
    "not-contains: contains: icontains: contains-any: contains-all: icontains-any: icontains-all: starts-with: regex: "
    "not-regex: equals: levenshtein: javascript: fn: eval: python: grade: llm-rubric: contains-json is-json is-xml"
).split()
_CSV_ALIASES = {"fn:": "javascript", "eval:": "javascript", "grade:": "llm-rubric"}
_VAR = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@dataclass
class AssertModule:
    """The generated ``promptfoo_asserts.py``: one function per javascript or python assert."""

    functions: list[str] = field(default_factory=list)
    #: The ``file://`` files the asserts name (relative to the config), copied beside the module.
    files: list[str] = field(default_factory=list)

    def add(self, kind: str, value: Any, threshold: float | None, where: str) -> str:
        """Add a function running one code assert; return the ``python`` check value naming it."""
        name = f"{kind.replace('-', '_')}_{len(self.functions) + 1}"
        runner = "javascript" if kind == "javascript" else "python_assert"
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: a {kind} assert needs its code or a file:// function as 'value'")
        if value.startswith("file://"):
            path, _, fn = value[len("file://") :].partition(":")
            if path not in self.files:
                self.files.append(path)
            call = f"None, output, case, file=str(_HERE / {path!r}), fn={fn or None!r}"
        else:
            call = f"{value!r}, output, case"
        self.functions.append(
            f"def {name}(output, case):\n"
            f"    return {runner}({call}, threshold={threshold!r}, name={f'{kind} assert ({where})'!r})\n"
        )
        return f"file://promptfoo_asserts.py:{name}"

    def text(self) -> str:
        """Return the module's source."""
        head = (
            '"""The javascript and python asserts of an imported promptfoo config, as python checks."""\n\n'
            "from pathlib import Path\n\n"
            "from pytest_promptsuite.importers.promptfoo.runtime import javascript\n"
            "from pytest_promptsuite.importers.promptfoo.runtime import python_assert\n\n\n"
            "_HERE = Path(__file__).resolve().parent\n\n\n"
        )
        return head + "\n\n".join(self.functions)


def _fill(value: Any, variables: Mapping[str, Any]) -> Any:
    """Fill ``{{ name }}`` in an assert's value from the test's vars (as promptfoo renders it)."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0), value)
    if isinstance(value, list):
        return [_fill(v, variables) for v in value]
    return value


def map_assert(
    raw: Any, variables: Mapping[str, Any], code: AssertModule, where: str, unsupported: list[str]
) -> dict[str, Any] | None:
    """Map one promptfoo assert to ours (None: listed in ``unsupported``)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise ConfigError(f"{where}: an assert is an object with a 'type'")
    kind: str = raw["type"]
    negated = kind.startswith("not-")
    base = kind[4:] if negated else kind
    value = _fill(raw.get("value"), variables)
    out: dict[str, Any] = {}
    if "weight" in raw:
        out["weight"] = raw["weight"]
    if base in ("javascript", "python"):
        if negated:
            unsupported.append(f"{where}: {kind} (a negated code assert)")
            return None
        out.update(type="python", value=code.add(base, value, raw.get("threshold"), where))
        return out
    if base == "assert-set":
        inner = [
            map_assert(a, variables, code, f"{where}.assert[{i}]", unsupported)
            for i, a in enumerate(raw.get("assert") or [])
        ]
        out.update(type="assert-set", **{"assert": [a for a in inner if a is not None]})
        if "threshold" in raw:
            out["threshold"] = raw["threshold"]
        return out
    if base not in _SHARED:
        unsupported.append(f"{where}: {kind}")
        return None
    if base in ("equals", "contains", "icontains", "starts-with") and isinstance(value, (int, float)):
        value = str(value)  # promptfoo compares String(value)
    out["type"] = kind
    if value is not None:
        out["value"] = value
    if "threshold" in raw:
        out["threshold"] = raw["threshold"]
    elif base == "levenshtein":
        out["threshold"] = 5  # promptfoo's default
    return out


def csv_test(row: Mapping[str, str], where: str) -> dict[str, Any]:
    """Convert a row of a CSV test file to a promptfoo test: columns are vars, ``__expected*`` asserts."""
    test: dict[str, Any] = {"vars": {}, "assert": [], "metadata": {}}
    for column, text in row.items():
        if column.startswith("__expected"):
            if text.strip():
                test["assert"].append(_expected(text, f"{where}: {column}"))
        elif column == "__description":
            test["description"] = text
        elif column.startswith("__metadata:"):
            test["metadata"][column[len("__metadata:") :]] = text
        elif column == "__threshold" and text.strip():
            test["threshold"] = float(text)
        elif column.startswith("__"):
            raise ConfigError(f"{where}: the column {column!r} is not supported")
        else:
            test["vars"][column] = text
    return test


def _expected(text: str, where: str) -> dict[str, Any]:
    for prefix in _CSV_PREFIXES:
        if text.startswith(prefix):
            kind = _CSV_ALIASES.get(prefix, prefix.rstrip(":"))
            rest = text[len(prefix) :].strip() if prefix.endswith(":") else None
            if kind.endswith(("-any", "-all")) and rest is not None:
                return {"type": kind, "value": [part.strip() for part in rest.split(",")]}
            return {"type": kind, "value": rest} if rest is not None else {"type": kind}
    return {"type": "equals", "value": text}


@dataclass
class TestSource:
    """One test as read, with where it is (``path:line``) for messages."""

    test: dict[str, Any]
    where: str


def _expand(variables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Expand the array vars: promptfoo runs a test once per combination of their values."""
    keys = [k for k, v in variables.items() if isinstance(v, list)]
    if not keys:
        return [dict(variables)]
    combos = itertools.product(*(variables[k] for k in keys))
    return [{**variables, **dict(zip(keys, combo, strict=True))} for combo in combos]


def cases_of(
    tests: list[TestSource],
    default: Mapping[str, Any],
    *,
    read_var: Callable[[str, str], str],
    slice_key: str | None,
    code: AssertModule,
    unsupported: list[str],
) -> list[dict[str, Any]]:
    """Convert every test to a case (``defaultTest`` merged in), numbered in order."""
    cases: list[dict[str, Any]] = []
    for source in tests:
        test, where = source.test, source.where
        unknown = sorted(set(test) - {"description", "vars", "assert", "metadata", "threshold", "options"})
        if unknown:
            unsupported.append(f"{where}: test keys {', '.join(unknown)}")
        if test.get("options"):
            unsupported.append(f"{where}: options ({', '.join(sorted(test['options']))})")
        base_vars = {**(default.get("vars") or {}), **(test.get("vars") or {})}
        for variables in _expand(base_vars):
            for key, value in list(variables.items()):
                if isinstance(value, str) and value.startswith("file://"):
                    variables[key] = read_var(value[len("file://") :], where)
                elif isinstance(value, str):
                    variables[key] = value[:-1] if value.endswith("\n") else value  # as promptfoo does
            cases.append(_case(len(cases) + 1, test, default, variables, where, slice_key, code, unsupported))
    return cases


def _case(
    number: int,
    test: Mapping[str, Any],
    default: Mapping[str, Any],
    variables: dict[str, Any],
    where: str,
    slice_key: str | None,
    code: AssertModule,
    unsupported: list[str],
) -> dict[str, Any]:
    asserts = [*(default.get("assert") or []), *(test.get("assert") or [])]
    mapped = [map_assert(a, variables, code, f"{where}: assert[{i}]", unsupported) for i, a in enumerate(asserts)]
    metadata = {**(default.get("metadata") or {}), **(test.get("metadata") or {})}
    description = test.get("description")
    case: dict[str, Any] = {
        "case_id": f"test-{number}",
        "input": str(variables.get("input") or description or f"test {number}"),
        "slice": str(metadata.get(slice_key, "unsliced")) if slice_key else "promptfoo",
        "vars": variables,
        "assert": [a for a in mapped if a is not None],
        "tags": [f"{k}={v}" for k, v in metadata.items()],
        "metadata": {**({"description": description} if description else {}), **metadata, "promptfoo": where},
    }
    threshold = test.get("threshold", default.get("threshold"))
    if threshold is not None:
        case["threshold"] = threshold
    return case
