"""The JSON Schemas ``promptsuite schema config|case`` prints accept every example suite and refuse a misspelled key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_promptsuite.cases.case_schema import json_schema as case_schema
from pytest_promptsuite.cli.main import main
from pytest_promptsuite.config.suite import json_schema as config_schema
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.formats.tomlio import load_toml


EXAMPLES = Path(__file__).parents[2] / "example_suites"
CONFIGS = sorted(EXAMPLES.rglob("*.toml"))
TRAIN = {
    config.resolve(config.suite.train, key="suite.train")
    for config in map(load_config, CONFIGS)
    if config.suite.train is not None
}
CASE_FILES = sorted(path for path in EXAMPLES.rglob("*.jsonl") if path.resolve() not in TRAIN)


def _errors(schema: dict[str, Any], value: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)]


def test_the_schemas_are_valid_draft_2020_12() -> None:
    for schema in (config_schema(), case_schema()):
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_examples_are_there() -> None:
    assert len(CONFIGS) >= 7 and len(CASE_FILES) >= 7
    assert TRAIN  # the few-shot suite's train rows are no case lines


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_config_validates(path: Path) -> None:
    document, _ = load_toml(path)
    assert _errors(config_schema(), document) == []


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_case_line_validates(path: Path) -> None:
    lines = [line for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
    assert lines
    for number, line in enumerate(lines, 1):
        assert _errors(case_schema(), json.loads(line)) == [], f"{path.name}:{number}"


@pytest.mark.parametrize(
    ("document", "key"),
    [
        ({"model": {"spec": "fake", "timout_s": 5}}, "timout_s"),
        ({"sutie": {"cases": ["cases.jsonl"]}}, "sutie"),
        ({"variants": {"v2": {"template": "T", "model": {"spce": "fake"}}}}, "spce"),
        ({"checks": {"python_modules": ["m"], "rule": []}}, "rule"),
        ({"checks": [{"slice": "*", "assert": [], "slise": "x"}]}, "slise"),
    ],
)
def test_a_misspelled_config_key_fails(document: dict[str, Any], key: str) -> None:
    errors = _errors(config_schema(), document)
    assert errors and any(key in error for error in errors), errors


def test_a_misspelled_case_key_fails() -> None:
    line = {"case_id": "a", "input": "hi", "slice": "s", "must_inlcude": ["x"]}
    (error,) = _errors(case_schema(), line)
    assert "must_inlcude" in error
    assert _errors(case_schema(), {"case_id": "a", "input": "hi"}) == [": 'slice' is a required property"]


def test_the_checks_table_with_python_modules_validates() -> None:
    document = {"checks": {"python_modules": ["myapp.checks"], "rules": [{"slice": "*", "assert": []}]}}
    assert _errors(config_schema(), document) == []
    assert _errors(config_schema(), {"checks": {"python_modules": ["not a module"]}})


@pytest.mark.parametrize(("what", "made"), [("config", config_schema), ("case", case_schema)])
def test_the_command_prints_the_schema(what: str, made: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", what]) == 0
    assert json.loads(capsys.readouterr().out) == made()
