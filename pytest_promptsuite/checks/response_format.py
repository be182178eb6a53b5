"""``[model] response_format``: the JSON Schema a model is asked to answer in (inline, a file, or a pydantic
model), sent as OpenAI's ``response_format`` and checked on every answer, from the one copy."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from pytest_promptsuite.checks.check_api import CheckScope
from pytest_promptsuite.checks.check_api import json_problem
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.checks.structure import schema_mismatch
from pytest_promptsuite.checks.structure import schema_validator
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode


#: The name of the check each answer gets.
CHECK_NAME = "response_format"


@dataclass(frozen=True)
class ResponseFormat:
    """A schema the answers must follow: its ``name``, the ``schema`` and its validator."""

    name: str
    schema: dict[str, Any]
    validator: Any

    def body(self) -> dict[str, Any]:
        """Return the request's ``response_format``: ``{"type": "json_schema", "json_schema": {name, schema}}``."""
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": self.schema}}

    def check(self, output: str) -> CheckResult:
        """Check an answer against the schema (a structure check named ``response_format``)."""
        expected = f"expected JSON matching the response_format schema {self.name!r}"
        try:
            data = decode(output, strict=False)
        except JsonError as exc:
            return CheckResult(
                Layer.STRUCTURE.value, CHECK_NAME, False, f"{expected}; found not JSON: {json_problem(exc)}"
            )
        problem = schema_mismatch(self.validator, data)
        found = "valid JSON matching it" if problem is None else problem
        return CheckResult(Layer.STRUCTURE.value, CHECK_NAME, problem is None, f"{expected}; found {found}")


def _schema_file(value: str, suite: SuiteConfig, where: str, key: str) -> tuple[str, Any]:
    """Read a schema file inside the suite's folder: its name (the file's stem) and its JSON."""
    path = suite.resolve(value, key=key)
    try:
        schema = decode(path.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        raise ConfigError(f"{where}: {key} = {value!r}: cannot read the schema file: {exc.strerror}") from exc
    except (UnicodeDecodeError, JsonError) as exc:
        raise ConfigError(f"{where}: {key} = {value!r}: the schema file is not JSON: {exc}") from exc
    return path.stem, schema


def response_format(value: Any, suite: SuiteConfig, key: str) -> ResponseFormat:
    """Read ``[model] response_format`` (``key`` names where it is set): a table is the schema, a string
    ending ``.json`` a schema file inside the suite's folder, ``module:Class`` a pydantic model of a module
    in ``[checks] python_modules``; ConfigError naming the config line otherwise."""
    where = suite.where(key)
    if isinstance(value, dict):
        name, schema = "response", value
    elif isinstance(value, str) and value.endswith(".json"):
        name, schema = _schema_file(value, suite, where, key)
    elif isinstance(value, str) and ":" in value:
        name, schema = _pydantic_schema(value, suite, where, key)
    else:
        raise ConfigError(
            f"{where}: {key} must be a JSON Schema table, a schema file (x.json) or a pydantic model (module:Class)"
        )
    if not isinstance(schema, dict):
        raise ConfigError(f"{where}: {key}: a JSON Schema is an object, got {type(schema).__name__}")
    try:
        validator = schema_validator(schema, key)
    except CheckError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    return ResponseFormat(name, schema, validator)


def _pydantic_schema(spec: str, suite: SuiteConfig, where: str, key: str) -> tuple[str, dict[str, Any]]:
    """Import the pydantic model ``module:Class`` as the ``pydantic`` check does: only from a listed module."""
    module_name, _, attr = spec.partition(":")
    try:
        CheckScope(suite.root, suite.python_modules).check_module(module_name, field=key, name="response_format")
        module = importlib.import_module(module_name)
    except CheckError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    except (Exception, SystemExit) as exc:
        raise ConfigError(f"{where}: {key}: importing {module_name!r} failed: {exc!r}") from exc
    model = getattr(module, attr, None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ConfigError(f"{where}: {key}: {spec!r} is not a pydantic model class")
    return model.__name__, model.model_json_schema()
