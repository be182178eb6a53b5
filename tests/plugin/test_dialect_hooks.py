"""The hooks the dialects answer, answered by a conftest or a plugin as a third party would: prompt sources,
importers and render requests (the dialects register through them like anyone else)."""

from __future__ import annotations

import argparse
import json
import types
from pathlib import Path

import pluggy
import pytest

from pytest_promptsuite import hookspecs
from pytest_promptsuite.cli import main as cli
from pytest_promptsuite.run.registration import plugin_manager
from tests.suite import Suite


#: The ``make_prompt_source`` example of hookspecs.py, as a conftest (and a second table it claims).
UPPER_CONFTEST = """
from pytest_promptsuite.prompts.prompt_sources import PromptSource


class Upper(PromptSource):
    def __init__(self, text):
        self.text = text

    def fields(self):
        return []

    def prompt(self, case):
        return self.text.upper()


def pytest_promptsuite_make_prompt_source(suite, table):
    if (table.template_file or "").endswith(".upper"):
        path = suite.resolve(table.template_file, key="template.template_file")
        return Upper(path.read_text(encoding="utf-8"))
    if table.prompt_template == "claimed":  # an infer_cfg table: OpenCompass's, unless a conftest claims it
        return Upper("claimed by the conftest")
"""


@pytest.mark.parametrize("name", ["make_prompt_source", "add_importer", "render_request"])
def test_the_dialect_hooks_are_specs_with_their_version(name: str) -> None:
    spec = getattr(hookspecs, f"pytest_promptsuite_{name}")
    assert spec.__doc__ and ".. versionadded:: 0.2" in spec.__doc__


def test_a_conftest_prompt_source_as_the_hookspec_example_writes_it(suite: Suite) -> None:
    suite.pytester.makeconftest(UPPER_CONFTEST)
    suite.write("shout.upper", "say hello")
    suite.config('[template]\ntemplate_file = "shout.upper"\n')
    suite.cases([{"case_id": "a", "input": "x", "slice": "s", "must_include": ["SAY HELLO"]}])
    result = suite.run("--prompt-report", "out")
    result.assert_outcomes(passed=1)
    assert suite.rows("out")[0]["prompt"] == "SAY HELLO"


def test_a_conftest_claims_a_table_before_the_dialect_that_would(suite: Suite) -> None:
    suite.pytester.makeconftest(UPPER_CONFTEST)
    suite.config(
        '[template]\nprompt_template = "claimed"\n[variants.oc]\n[variants.own]\nprompt_template = "{input}!"\n'
    )
    suite.cases([{"case_id": "a", "input": "x", "slice": "s"}])
    suite.run("--prompt-report", "out").assert_outcomes(passed=2)
    assert {row["variant"]: row["prompt"] for row in suite.rows("out")} == {
        "oc": "CLAIMED BY THE CONFTEST",
        "own": "x!",  # OpenCompass's infer_cfg engine
    }


class _Importer:
    """A plugin adding ``promptsuite import mytool``."""

    @staticmethod
    def run(args: argparse.Namespace) -> int:
        Path(args.out).write_text(f"imported {args.config}", encoding="utf-8")
        return 0

    @pluggy.HookimplMarker("pytest")
    def pytest_promptsuite_add_importer(self, importers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        command = importers.add_parser("mytool", help="a mytool config")
        command.add_argument("config")
        command.add_argument("--out", required=True)
        command.set_defaults(run=self.run)


def test_a_plugin_adds_an_import_command_beside_the_dialects(tmp_path: Path) -> None:
    manager = plugin_manager()
    manager.register(_Importer())
    parser = cli._parser(manager.hook)
    args = parser.parse_args(["import", "mytool", "c.yaml", "--out", str(tmp_path / "out.txt")])
    assert args.func(args) == 0
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "imported c.yaml"
    (kinds,) = [a for a in parser._actions if a.choices and "import" in a.choices]  # type: ignore[operator]
    (importers,) = [a for a in kinds.choices["import"]._actions if a.choices]  # type: ignore[index]
    assert set(importers.choices) == {"opencompass", "promptfoo", "mytool"}  # type: ignore[arg-type]


def test_render_request_goes_to_the_plugin_that_answers(tmp_path: Path) -> None:
    request = tmp_path / "r.json"
    request.write_text(json.dumps({"prompt_template": {"template": "Q: {q}"}, "example": {"q": "hi"}}))
    assert cli.render_request_file(str(request), plugin_manager().hook) == (
        0,
        {"prompt": "Q: hi", "intermediate": "Q: hi", "retrieved": []},
    )
    mine = types.SimpleNamespace(pytest_promptsuite_render_request=lambda request: {"mine": request["example"]})
    manager = plugin_manager()
    manager.register(mine)
    assert cli.render_request_file(str(request), manager.hook) == (0, {"mine": {"q": "hi"}})


def test_render_request_with_no_plugin_that_answers_is_an_error(tmp_path: Path) -> None:
    request = tmp_path / "r.json"
    request.write_text("{}")
    manager = plugin_manager()
    manager.unregister(name="promptsuite-opencompass")
    status, answer = cli.render_request_file(str(request), manager.hook)
    assert status == 1 and answer["error"]["type"] == "TemplateError"
    assert "no plugin renders requests" in answer["error"]["message"]
