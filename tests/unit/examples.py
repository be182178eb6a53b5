"""The example suites' config and case files (``example_suites/``), which the editor schemas must accept, and
the errors a JSON Schema finds in a value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from pytest_promptsuite.config.suite import load_config


EXAMPLES = Path(__file__).parents[2] / "example_suites"
CONFIGS = sorted(EXAMPLES.rglob("*.toml"))
TRAIN = {
    config.resolve(config.suite.train, key="suite.train")
    for config in map(load_config, CONFIGS)
    if config.suite.train is not None
}
#: Every example ``*.jsonl`` but the train rows a config names.
CASE_FILES = sorted(path for path in EXAMPLES.rglob("*.jsonl") if path.resolve() not in TRAIN)


def schema_errors(schema: dict[str, Any], value: Any) -> list[str]:
    """Each error of ``value`` under ``schema`` (Draft 2020-12, formats checked) as ``path: message``."""
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)]
