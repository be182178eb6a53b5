"""promptfoo ``tests`` into cases: ``defaultTest`` merged in, ``vars`` expanded, ``assert`` entries mapped
one to one where the names are shared, CSV test files, ``metadata`` as tags, and a slice from a metadata key."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.importers.output import inside
from pytest_promptsuite.importers.output import jsonl
from pytest_promptsuite.safety.limits import IMPORT_CASES
from pytest_promptsuite.safety.limits import IMPORT_CASES_BYTES


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
            written, _, fn = value[len("file://") :].partition(":")
            path = inside(written)  # copied beside the module under this name, so never outside --out
            if path is None:
                raise ConfigError(f"{where}: file://{written} lies outside the config's folder")
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

    def uncarried(self, what: str, where: str) -> str:
        """Add a function that fails the case for an assert (or test option) not carried over, so a
        case never passes on the checks that remain; return the ``python`` check value naming it."""
        name = f"not_carried_{len(self.functions) + 1}"
        self.functions.append(f"def {name}(output, case):\n    return not_carried({what!r}, {where!r})\n")
        return f"file://promptfoo_asserts.py:{name}"

    def text(self) -> str:
        """Return the module's source."""
        head = (
            '"""The javascript and python asserts of an imported promptfoo config, as python checks."""\n\n'
            "from pathlib import Path\n\n"
            "from pytest_promptsuite.importers.promptfoo.runtime import javascript\n"
            "from pytest_promptsuite.importers.promptfoo.runtime import not_carried\n"
            "from pytest_promptsuite.importers.promptfoo.runtime import python_assert\n\n\n"
            "_HERE = Path(__file__).resolve().parent\n\n\n"
        )
        return head + "\n\n".join(self.functions)


def _fill(value: Any, variables: Mapping[str, Any], where: str) -> Any:
    """Fill ``{{ name }}`` in an assert's value from the test's vars (as promptfoo renders it); its
    length is computed first, and past :data:`IMPORT_CASES_BYTES` it is refused, not built."""
    if isinstance(value, str):
        found = list(_VAR.finditer(value))
        texts = {name: str(variables[name]) for name in {m.group(1) for m in found} if name in variables}
        size = len(value) + sum(len(texts[m.group(1)]) - len(m.group(0)) for m in found if m.group(1) in texts)
        if size > IMPORT_CASES_BYTES.value:
            raise ConfigError(f"{where}: the value filled from the vars is longer than {IMPORT_CASES_BYTES}")
        return _VAR.sub(lambda m: texts.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_fill(v, variables, where) for v in value]
    return value


#: An assert's keys that are carried over (``metric`` only names it in promptfoo's report).
_ASSERT_KEYS = frozenset({"type", "value", "threshold", "weight", "metric", "assert"})
#: An assert's keys that change its verdict on any model: an assert with one is not carried over.
_VERDICT_KEYS = ("transform", "contextTransform")
#: A test's keys that are carried over.
_TEST_KEYS = frozenset({"description", "vars", "assert", "metadata", "threshold", "options"})
#: A test's options that change every assert's verdict: a case with one fails as not carried over.
_VERDICT_OPTIONS = ("transform", "transformVars", "postprocess")


def _not_carried(kind: str, why: str, code: AssertModule, where: str, unsupported: list[str]) -> dict[str, Any]:
    """List an assert in ``unsupported`` and return the check that fails its case in its place."""
    what = f"{kind} ({why})" if why else kind
    unsupported.append(f"{where}: {what}")
    return {"type": "python", "value": code.uncarried(what, where)}


def map_assert(
    raw: Any, variables: Mapping[str, Any], code: AssertModule, where: str, unsupported: list[str]
) -> dict[str, Any]:
    """Map one promptfoo assert to ours; one that is not carried over is listed in ``unsupported``
    and becomes a check that fails the case, never a case that passes without it."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise ConfigError(f"{where}: an assert is an object with a 'type'")
    kind: str = raw["type"]
    negated = kind.startswith("not-")
    base = kind[4:] if negated else kind
    changing = [k for k in _VERDICT_KEYS if k in raw]
    if changing:
        return _not_carried(kind, f"its {', '.join(changing)}", code, where, unsupported)
    extra = sorted(set(map(str, raw)) - _ASSERT_KEYS)
    if extra:
        unsupported.append(f"{where}: {kind} keys {', '.join(extra)}")
    value = _fill(raw.get("value"), variables, where)
    out: dict[str, Any] = {}
    if "weight" in raw:
        out["weight"] = raw["weight"]
    if base in ("javascript", "python"):
        if negated:
            return _not_carried(kind, "a negated code assert", code, where, unsupported)
        out.update(type="python", value=code.add(base, value, raw.get("threshold"), where))
        return out
    if base == "assert-set":
        inner = [
            map_assert(a, variables, code, f"{where}.assert[{i}]", unsupported)
            for i, a in enumerate(_list(raw.get("assert"), "assert", where))
        ]
        out.update(type="assert-set", **{"assert": inner})
        if "threshold" in raw:
            out["threshold"] = raw["threshold"]
        return out
    if base not in _SHARED:
        return _not_carried(kind, "", code, where, unsupported)
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
            try:
                test["threshold"] = float(text)
            except ValueError:
                raise ConfigError(f"{where}: __threshold {text!r} is not a number") from None
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


def _combinations(variables: Mapping[str, Any]) -> int:
    """Count the cases a test's array vars expand to, before any is built."""
    return math.prod(len(v) for v in variables.values() if isinstance(v, list))


def _expand(variables: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Expand the array vars: promptfoo runs a test once per combination of their values."""
    keys = [k for k, v in variables.items() if isinstance(v, list)]
    for combo in itertools.product(*(variables[k] for k in keys)):
        yield {**variables, **dict(zip(keys, combo, strict=True))}


def _mapping(value: Any, key: str, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {key} is a mapping of names to values")
    return value


def _list(value: Any, key: str, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key} is a list")
    return value


def _checked(test: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Check the types of a test's (or ``defaultTest``'s) keys, with ``path:line`` messages."""
    checked = dict(test)
    for key in ("vars", "metadata", "options"):
        checked[key] = _mapping(test.get(key), key, where)
    checked["assert"] = _list(test.get("assert"), "assert", where)
    return checked


def cases_of(
    tests: list[TestSource],
    default: Mapping[str, Any],
    *,
    read_var: Callable[[str, str], str],
    slice_key: str | None,
    code: AssertModule,
    unsupported: list[str],
    default_where: str = "defaultTest",
) -> str:
    """Convert every test to a case (``defaultTest`` merged in), numbered in order: the text of
    ``cases.jsonl``. The number of cases is computed before any is built, and it and the text's size
    are refused past :data:`IMPORT_CASES` and :data:`IMPORT_CASES_BYTES`."""
    default = _checked(default, default_where)
    checked = [(_checked(source.test, source.where), source.where) for source in tests]
    total = 0
    for test, where in checked:
        total += _combinations({**default["vars"], **test["vars"]})
        if total > IMPORT_CASES.value:
            raise ConfigError(
                f"{where}: the tests expand to more than {IMPORT_CASES} "
                "(a test runs once per combination of its array vars' values)"
            )
    lines: list[str] = []
    size, number = 0, 0
    files: dict[str, str] = {}
    for test, where in checked:
        unknown = sorted(set(test) - _TEST_KEYS)
        if unknown:
            unsupported.append(f"{where}: test keys {', '.join(unknown)}")
        options = {**default["options"], **test["options"]}  # merged as promptfoo merges them
        listed = sorted(set(map(str, options)) - set(_VERDICT_OPTIONS))
        if listed:
            unsupported.append(f"{where}: options ({', '.join(listed)})")
        for variables in _expand({**default["vars"], **test["vars"]}):
            for key, value in list(variables.items()):
                if isinstance(value, str) and value.startswith("file://"):
                    relative = value[len("file://") :]
                    if relative not in files:
                        files[relative] = read_var(relative, where)
                    variables[key] = files[relative]
                elif isinstance(value, str):
                    variables[key] = value[:-1] if value.endswith("\n") else value  # as promptfoo does
            number += 1
            line = jsonl([_case(number, test, default, variables, where, slice_key, code, unsupported)])
            size += len(line)
            if size > IMPORT_CASES_BYTES.value:
                raise ConfigError(f"{where}: the cases are larger than {IMPORT_CASES_BYTES}")
            lines.append(line)
    return "".join(lines)


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
    asserts = [*default["assert"], *test["assert"]]
    mapped = [map_assert(a, variables, code, f"{where}: assert[{i}]", unsupported) for i, a in enumerate(asserts)]
    options = {**default["options"], **test["options"]}
    changing = [k for k in _VERDICT_OPTIONS if k in options]
    if changing:  # the output every assert sees is not the one promptfoo's would see
        mapped.append(_not_carried("test options", ", ".join(changing), code, f"{where}: options", unsupported))
    metadata = {**default["metadata"], **test["metadata"]}
    description = test.get("description")
    case: dict[str, Any] = {
        "case_id": f"test-{number}",
        "input": str(variables.get("input") or description or f"test {number}"),
        "slice": str(metadata.get(slice_key, "unsliced")) if slice_key else "promptfoo",
        "vars": variables,
        "assert": mapped,
        "tags": [f"{k}={v}" for k, v in metadata.items()],
        "metadata": {**({"description": description} if description else {}), **metadata, "promptfoo": where},
    }
    threshold = test.get("threshold", default.get("threshold"))
    if threshold is not None:
        case["threshold"] = threshold
    return case
