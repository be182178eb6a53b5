"""The generated reference pages (docs/hooks.py) list every option, config key, check type, case field,
result field and command the code has; the site's nav holds every page."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from pytest_promptsuite.cases.prompt_case import LINE_FIELDS
from pytest_promptsuite.checks.builtin_checks import BUILTIN_TYPES
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.config.suite import SuiteTables
from pytest_promptsuite.config.tables import ModelConfig
from pytest_promptsuite.config.tables import Override
from pytest_promptsuite.config.tables import Prices
from pytest_promptsuite.errors import CheckError


ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def docs() -> ModuleType:
    """The docs' generator module, loaded from its file as mkdocs loads a hook."""
    spec = importlib.util.spec_from_file_location("promptsuite_docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _section(page: str, heading: str) -> str:
    """Return the part of ``page`` under ``## `heading` `` up to the next heading of that level."""
    start = page.index(f"## `{heading}`\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else None]


def test_every_option_pytest_help_shows_is_in_the_options_page(docs: ModuleType, pytester: pytest.Pytester) -> None:
    shown = set(re.findall(r"(--prompt-[a-z-]+)", pytester.runpytest("--help").stdout.str()))
    page = docs.options_page()
    listed = set(re.findall(r"\| `(--prompt-[a-z-]+)", page))
    assert len(shown) >= 25 and listed == shown


def _keys(table: Any) -> list[str]:
    return [f.metadata.get("alias", f.name) for f in dataclasses.fields(table)]


def test_every_config_key_is_in_the_config_page_with_its_default_and_bounds(docs: ModuleType) -> None:
    page = docs.config_page()
    hints = typing.get_type_hints(SuiteTables)
    tables: dict[str, Any] = {"model prices": Prices, "variants.NAME.model": Override.table(ModelConfig)}
    for table in dataclasses.fields(SuiteTables):
        hint = hints[table.name]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is Override:
            hint = Override.table(args[0])
        elif origin in (dict, list):
            hint = args[-1]
        tables[table.name] = hint
    headings = {**docs._HEADINGS, "model prices": "[model] prices", "variants.NAME.model": "[variants.NAME.model]"}
    for name, table in tables.items():
        section = _section(page, headings[name])
        for key in _keys(table):
            assert f"| `{key}` |" in section, f"{headings[name]} {key}"
    model = _section(page, "[model]")
    assert "| `timeout_s` | number | `60.0` | > 0, <= 86400 |" in model
    assert "| `concurrency` | integer or string | — | >= 1, <= 1024 |" in model
    assert "`python_modules`" in _section(page, "[checks]")


def test_every_check_type_is_in_the_checks_page_with_the_parameters_its_factory_reads(docs: ModuleType) -> None:
    page = docs.checks_page()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z0-9:-]+)` \|.*$", page, re.M)}
    assert set(BUILTIN_TYPES) | {"assert-set"} == set(rows)
    for found in docs.check_types():
        for key, _, _ in found.params:
            assert f"`{key}`" in rows[found.name]
    assert "`threshold` (required): a bound in milliseconds" in rows["latency"]
    assert "`fullmatch`: true or false" in rows["regex"]


@pytest.mark.parametrize("name", list(BUILTIN_TYPES))
def test_each_documented_parameter_is_one_the_check_takes(docs: ModuleType, name: str, tmp_path: Path) -> None:
    (found,) = [t for t in docs.check_types() if t.name == name]
    example = {k: v for k, v in docs.EXAMPLES[name].items() if k not in ("type", "path")}
    example.update({"value": docs._PROBE_VALUES[name]} if name in docs._PROBE_VALUES else {})
    assert {k for k, _, _ in found.params} >= set(example)
    assert make_builtin_check(name, example, base_dir=tmp_path) is not None
    with pytest.raises(CheckError):  # a parameter the page does not list is refused: the list is whole
        make_builtin_check(name, {**example, "not_a_parameter": 1}, base_dir=tmp_path)


def test_every_case_field_is_in_the_case_page(docs: ModuleType) -> None:
    page = docs.case_page()
    for spec in LINE_FIELDS:
        assert f"| `{spec.metadata.get('key', spec.name)}` |" in page
    assert "| `case_id` | yes |" in page and "| `tags` | no |" in page


@pytest.mark.slow  # runs the Quick start suite
def test_the_results_page_describes_every_row_and_summary_field(docs: ModuleType) -> None:
    page = docs.results_page()  # raises when a field has no description, or a description no field
    for key in docs.row_keys():
        assert f"| `{key}` |" in page
    assert '"outcome": "failed"' in page  # a real row of the Quick start run


def test_every_command_is_in_the_cli_page(docs: ModuleType) -> None:
    from pytest_promptsuite.cli.main import _parser

    page = docs.cli_page()
    (commands,) = [a for a in _parser()._actions if a.choices and isinstance(a.choices, dict)]
    for name in commands.choices:
        assert f"## `promptsuite {name}`" in page
    assert "### `promptsuite import promptfoo`" in page and "{config,case}" in page


def test_the_hooks_page_documents_the_hookspecs_module() -> None:
    page = (ROOT / "docs" / "reference" / "hooks.md").read_text(encoding="utf-8")
    assert "::: pytest_promptsuite.hookspecs" in page


def test_the_nav_holds_every_page(docs: ModuleType) -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python", "python"))

    def walk(node: Any) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [page for item in node for page in walk(item)]
        return [page for value in node.values() for page in walk(value)]

    nav = walk(config["nav"])
    written = [str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")]
    assert sorted(nav) == sorted(written + list(docs.PAGES))
