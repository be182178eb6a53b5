"""The structure layer: is the output shaped right (JSON, a schema, XML, a length, a finish reason)?"""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError

from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.check_api import json_problem
from pytest_promptsuite.checks.check_api import resolve_file
from pytest_promptsuite.checks.check_api import shorten
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import find_json
from pytest_promptsuite.prompts.tool_set import schema_problem
from pytest_promptsuite.safety.deadline import BudgetExceeded
from pytest_promptsuite.safety.deadline import time_budget
from pytest_promptsuite.safety.limits import JSON_SEARCH_SECONDS
from pytest_promptsuite.safety.limits import REGEX_SECONDS
from pytest_promptsuite.safety.user_regex import RegexBudget


#: Validators by the schema's canonical JSON: a suite repeats a schema, and checking one costs ~1 ms.
_VALIDATORS: dict[str, Any] = {}
#: Parsed schema files by resolved path.
_SCHEMA_FILES: dict[Path, Any] = {}


def _read_schema(path: Path, name: str) -> Any:
    try:
        return decode(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise CheckError(f"'value' of {name!r}: cannot read the schema file {str(path)!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise CheckError(f"'value' of {name!r}: the schema file {str(path)!r} is not UTF-8: {exc.reason}") from exc
    except JsonError as exc:
        raise CheckError(f"'value' of {name!r}: the schema file {str(path)!r} is not JSON: {exc.describe()}") from exc


def _remote_ref(schema: Any) -> str | None:
    """Return the first ``$ref`` that names another document (nothing is fetched: it cannot resolve)."""
    todo = [schema]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return ref
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return None


def _load_schema(p: Params) -> Any | None:
    """Return ``value`` as a JSON Schema validator: an inline object, or a file (inside the suite's
    folder when there is a scope)."""
    value = p.raw("value", what="a JSON Schema object or a schema file")
    if value is None:
        return None
    if isinstance(value, str):
        if p.scope is not None:
            path = p.scope.file(value, p.base_dir, field="value", name=p.name)
        else:
            path = resolve_file(value, p.base_dir).resolve()
        schema = _SCHEMA_FILES.get(path)
        if schema is None:
            schema = _SCHEMA_FILES[path] = _read_schema(path, p.name)
    else:
        schema = value
    if not isinstance(schema, dict):
        raise CheckError(
            f"'value' of {p.name!r} must be a JSON Schema object or a schema file, got {type(schema).__name__}"
        )
    remote = _remote_ref(schema)
    if remote is not None:
        raise CheckError(
            f"'value' of {p.name!r}: $ref {remote!r} names another document, and schemas are never "
            "fetched; put that schema inline or refer inside this one ('#/$defs/...')"
        )
    return schema_validator(schema, p.name)


def schema_validator(schema: Any, name: str) -> Any:
    """Return a validator of the JSON Schema ``schema`` (one per schema); CheckError naming the check
    ``name`` when it is not a valid one."""
    key = json.dumps(schema, sort_keys=True)
    validator = _VALIDATORS.get(key)
    if validator is None:
        import jsonschema  # here: it costs ~0.1 s at every pytest start

        problem = schema_problem(schema)
        if problem is not None:
            what = ":" if not isinstance(schema, dict) else " is not a valid JSON Schema:"
            raise CheckError(f"'value' of {name!r}{what} {problem}")
        validator = _VALIDATORS[key] = _bounded(jsonschema.validators.validator_for(schema))(schema)
    return validator


#: The time budget of the validation under way in this thread, for the ``pattern`` keywords below.
_BUDGET: ContextVar[RegexBudget | None] = ContextVar("schema_regex_budget", default=None)


def _search(pattern: str, text: str) -> bool:
    budget = _BUDGET.get() or RegexBudget(REGEX_SECONDS, "the schema's validation")
    return budget.search(pattern, text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``pattern`` keyword, searched as a user regex (bounded in any thread)."""
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, properties: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``patternProperties`` keyword, its patterns searched as user regexes."""
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@functools.cache
def _bounded(validator_class: Any) -> Any:
    """Return ``validator_class`` with the two keywords that search a regex in the data replaced by the above."""
    import jsonschema

    keywords = {"pattern": _pattern, "patternProperties": _pattern_properties}
    return jsonschema.validators.extend(validator_class, keywords)  # type: ignore[no-untyped-call]


def schema_mismatch(validator: Any, data: Any) -> str | None:
    """Return None if ``data`` fits the schema, else the most relevant error, where, and how many.

    A schema's ``pattern`` is the suite's regex, so validation runs with the regex time budget: its pattern
    keywords through ``regex``'s timeout, and ``SIGALRM`` on the main thread for jsonschema's own ``re``
    (``additionalProperties`` and ``unevaluatedProperties`` beside ``patternProperties``).
    """
    import jsonschema

    token = _BUDGET.set(RegexBudget(REGEX_SECONDS, "the schema's validation"))
    try:
        with time_budget(REGEX_SECONDS, "the schema's validation"):
            errors = list(validator.iter_errors(data))
    except BudgetExceeded as exc:
        return f"$: {exc}"
    except Exception as exc:  # an unresolvable reference, a bad format checker: say so
        return f"$: the schema could not be applied ({type(exc).__name__}: {exc})"
    finally:
        _BUDGET.reset(token)
    if not errors:
        return None
    best = jsonschema.exceptions.best_match(errors)
    more = f" (and {len(errors) - 1} more schema errors)" if len(errors) > 1 else ""
    return f"{best.json_path}: {best.message}{more}"


class IsJson(Check):
    """``is-json``: the whole output is JSON, optionally valid against a JSON Schema."""

    layer = Layer.STRUCTURE

    def __init__(self, schema: Any | None) -> None:
        self.schema = schema

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = "valid JSON" + (" matching the schema" if self.schema is not None else "")
        if isinstance(value, str):
            try:
                data = decode(value, strict=False)
            except JsonError as exc:
                return Verdict(False, expected, f"not JSON: {json_problem(exc)}")
        else:
            data = value
        if self.schema is not None:
            problem = schema_mismatch(self.schema, data)
            if problem:
                return Verdict(False, expected, f"JSON that breaks the schema at {problem}")
        return Verdict(True, expected, expected)


def _json_values(text: str) -> list[Any]:
    """Return the JSON objects and arrays in ``text``, in order, not nested in each other."""
    with time_budget(JSON_SEARCH_SECONDS, "looking for JSON in the output"):
        return [value for value, _, _ in find_json(text)]


class ContainsJson(Check):
    """``contains-json``: a JSON object or array somewhere in the output (optionally fits a schema)."""

    layer = Layer.STRUCTURE

    def __init__(self, schema: Any | None) -> None:
        self.schema = schema

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        text = value if isinstance(value, str) else json.dumps(value)
        expected = "a JSON object in the output" + (" matching the schema" if self.schema is not None else "")
        values = _json_values(text)
        if not values:
            return Verdict(False, expected, f"no JSON object or array in {len(text)} chars")
        if self.schema is None:
            return Verdict(True, expected, f"{len(values)} JSON value(s), first {shorten(values[0])}")
        problems = []
        for data in values:
            problem = schema_mismatch(self.schema, data)
            if problem is None:
                return Verdict(True, expected, f"{shorten(data)}")
            problems.append(problem)
        return Verdict(False, expected, f"{len(values)} JSON value(s), none matches; first: {problems[0]}")


class PydanticModel(Check):
    """``pydantic``: the output (JSON) validates as a pydantic model class."""

    layer = Layer.STRUCTURE

    def __init__(self, model: type[BaseModel], spec: str) -> None:
        self.model = model
        self.spec = spec

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = f"valid {self.model.__name__} ({self.spec})"
        try:
            if isinstance(value, str):
                self.model.model_validate_json(value)
            else:
                self.model.model_validate(value)
        except ValidationError as exc:
            errors = exc.errors()
            first = errors[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(root)"
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            return Verdict(False, expected, f"{loc}: {first['msg']}{more}")
        return Verdict(True, expected, f"a valid {self.model.__name__}")


class IsXml(Check):
    """``is-xml``: the whole output is well-formed XML, optionally with required elements."""

    layer = Layer.STRUCTURE

    def __init__(self, required: list[str]) -> None:
        self.required = required

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = "well-formed XML" + (f" with {', '.join(self.required)}" if self.required else "")
        text = value if isinstance(value, str) else str(value)
        try:
            root = ET.fromstring(text.strip())
        except ET.ParseError as exc:
            return Verdict(False, expected, f"not XML: {exc}")
        missing = [path for path in self.required if not _has_element(root, path)]
        if missing:
            return Verdict(False, expected, f"XML without {', '.join(missing)} (root <{root.tag}>)")
        return Verdict(True, expected, f"XML with root <{root.tag}>")


def _has_element(root: ET.Element, dotted: str) -> bool:
    first, *rest = dotted.split(".")
    if root.tag != first:
        return False
    return not rest or root.find("/".join(rest)) is not None


class _Count(Check):
    layer = Layer.STRUCTURE
    unit = ""

    def __init__(self, exact: int | None, low: int | None, high: int | None) -> None:
        self.exact, self.low, self.high = exact, low, high

    def count(self, text: str) -> int:
        raise NotImplementedError

    def expectation(self) -> str:
        if self.exact is not None:
            return f"exactly {self.exact} {self.unit}"
        if self.low is not None and self.high is not None:
            return f"{self.low} to {self.high} {self.unit}"
        if self.low is not None:
            return f"at least {self.low} {self.unit}"
        return f"at most {self.high} {self.unit}"

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        n = self.count(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        if self.exact is not None:
            ok = n == self.exact
        else:
            ok = (self.low is None or n >= self.low) and (self.high is None or n <= self.high)
        return Verdict(ok, self.expectation(), f"{n} {self.unit}")

    @classmethod
    def make(cls, p: Params) -> _Count:
        """Make the check from ``value``: a count, or ``{min, max}``."""
        value = p.raw("value", required=True, what="a number or {min, max}")
        if isinstance(value, bool) or not isinstance(value, (int, dict)):
            raise CheckError(f"'value' of {p.name!r} must be a whole number or {{min, max}}, got {value!r}")
        if isinstance(value, int):
            if value < 0:
                raise CheckError(f"'value' of {p.name!r} must be >= 0, got {value}")
            return cls(value, None, None)
        unknown = set(value) - {"min", "max"}
        if unknown or not value:
            raise CheckError(f"'value' of {p.name!r} takes 'min' and/or 'max', got keys {sorted(value)}")
        low, high = (_count_bound(value.get(key), key, p.name) for key in ("min", "max"))
        if low is not None and high is not None and low > high:
            raise CheckError(f"'value' of {p.name!r}: min {low} is above max {high}")
        return cls(None, low, high)


def _count_bound(bound: Any, key: str, name: str) -> int | None:
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):
        raise CheckError(f"'value.{key}' of {name!r} must be a whole number >= 0, got {bound!r}")
    return bound


class WordCount(_Count):
    """``word-count``: words (whitespace-separated) exactly ``value`` or within ``{min, max}``."""

    unit = "words"

    def count(self, text: str) -> int:
        """Count the words of ``text`` (split on whitespace)."""
        return len(text.split())


class CharCount(_Count):
    """``char-count``: characters (code points) exactly ``value`` or within ``{min, max}``."""

    unit = "chars"

    def count(self, text: str) -> int:
        """Count the characters of ``text``."""
        return len(text)


class FinishReason(Check):
    """``finish-reason``: the model stopped for the expected reason (``stop``, ``length``...)."""

    layer = Layer.STRUCTURE
    reads_output = False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = f"finish reason {self.reason!r}"
        if ctx.response is None:
            return Verdict.skipped("no model response to read a finish reason from")
        actual = ctx.response.finish_reason
        if actual is None:
            return Verdict(False, expected, "no finish reason reported by the model")
        return Verdict(actual.lower() == self.reason.lower(), expected, f"{actual!r}")


def make_is_json(p: Params) -> Check:
    """Make ``is-json``: the output is JSON, valid against the schema ``value`` when given."""
    return IsJson(_load_schema(p))


def make_contains_json(p: Params) -> Check:
    """Make ``contains-json``: JSON in the output, valid against the schema ``value`` when given."""
    return ContainsJson(_load_schema(p))


def make_pydantic(p: Params) -> Check:
    """Make ``pydantic``: the output validates as the pydantic model class ``value`` names."""
    spec = p.string("value", required=True, what="a dotted path to a pydantic model class")
    assert spec is not None
    model = p.import_object(spec)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise CheckError(f"'value' of {p.name!r}: {spec!r} is not a pydantic model class")
    return PydanticModel(model, spec)


def make_is_xml(p: Params) -> Check:
    """Make ``is-xml``: the output is XML, with the element paths of ``value`` when given."""
    value = p.raw("value", what="{requiredElements = [...]} or a list of element paths")
    if value is None:
        return IsXml([])
    if isinstance(value, dict):
        if set(value) != {"requiredElements"}:
            raise CheckError(f"'value' of {p.name!r} takes only 'requiredElements', got keys {sorted(value)}")
        value = value["requiredElements"]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise CheckError(f"'value' of {p.name!r}: requiredElements must be a non-empty list of paths like 'root.child'")
    return IsXml(value)


def make_finish_reason(p: Params) -> Check:
    """Make ``finish-reason``: the model stopped for the reason ``value``."""
    reason = p.string("value", required=True, what="a finish reason such as 'stop' or 'length'")
    assert reason is not None
    return FinishReason(reason)
