"""The config an importer writes: TOML through tomli-w, read back and compared, with the importer's header."""

from __future__ import annotations

import math
import tomllib

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.imported_suite import config_toml


def test_tables_nest_by_their_dotted_names_and_a_none_key_is_left_out() -> None:
    tables = {"suite": {"cases": ["cases.jsonl"], "train": None}, "variants.v1": {"template": {"x": "é\u0085\x7f"}}}
    text = config_toml(tables, header="Imported by a test.\nSecond line.")
    assert text.startswith("# Imported by a test.\n# Second line.\n\n")
    assert tomllib.loads(text) == {
        "suite": {"cases": ["cases.jsonl"]},
        "variants": {"v1": {"template": {"x": "é\u0085\x7f"}}},
    }


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (math.nan, "model.t = nan: not a finite number"),
        (math.inf, "model.t = inf: not a finite number"),
        ("\ud800", "cannot be written as TOML"),
        (object(), "cannot be written as TOML"),
        ({1: "x"}, "cannot be written as TOML"),
    ],
)
def test_a_value_with_no_toml_form_is_a_config_error(value: object, words: str) -> None:
    with pytest.raises(ConfigError, match="promptsuite.toml") as info:
        config_toml({"model": {"t": value}})
    assert words in str(info.value)
