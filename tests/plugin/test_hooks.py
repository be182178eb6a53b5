"""The extension hooks: a conftest plugin and an installed package add check types, models and
output transforms without any change to pytest-promptsuite.

The installed package is ``tests/thirdparty`` (``pip install ./tests/thirdparty``, done by
``.ci/run``): it registers ``promptsuite_thirdparty`` in the ``promptsuite.plugins`` entry point
group, with the check type ``has-order-id`` and the model spec ``reverse``.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from pytest_promptsuite import hookspecs
from pytest_promptsuite.cli import main as cli
from tests.suite import Suite


CONFTEST_PLUGIN = """
import re
from pytest_promptsuite.checks import Check, Layer, Verdict
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.models import Response


class IsUpper(Check):
    layer = Layer.CONTENT

    def evaluate(self, value, ctx):
        return Verdict(value.isupper(), "all upper case", repr(value[:20]))


def pytest_promptsuite_make_check(name, params):
    if name == "is-upper":
        if params:
            raise CheckError(f"'is-upper' takes no fields, got {sorted(params)}")
        return IsUpper()


class Shouting:
    spec = "shout"

    def generate_sync(self, request):
        return Response(text=str(request.prompt).upper(), finish_reason="stop")

    async def generate(self, request):
        return self.generate_sync(request)


def pytest_promptsuite_make_model(config, spec, settings, root):
    if spec == "shout":
        return Shouting()


def pytest_promptsuite_transform_output(output):
    return re.sub(r"<think>.*?</think>\\s*", "", output, flags=re.DOTALL | re.IGNORECASE)
"""


def _lines(*cases: dict[str, object]) -> str:
    return "\n".join(json.dumps(c) for c in cases)


def test_hookspecs_are_registered(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    for name in (
        "pytest_promptsuite_make_model",
        "pytest_promptsuite_make_check",
        "pytest_promptsuite_make_retriever",
        "pytest_promptsuite_make_renderer",
        "pytest_promptsuite_transform_output",
        "pytest_promptsuite_case_finished",
    ):
        assert hasattr(config.hook, name), name
        assert getattr(hookspecs, name).__doc__ and ".. versionadded:: 0.1" in getattr(hookspecs, name).__doc__


def test_conftest_check_model_and_transform(suite: Suite) -> None:
    suite.pytester.makeconftest(CONFTEST_PLUGIN)
    suite.cases(
        [
            {"case_id": "up", "input": "quiet please", "slice": "s", "assert": [{"type": "is-upper"}]},
            {"case_id": "not-up", "input": "x", "slice": "s", "assert": [{"type": "not-is-upper"}]},
            {
                "case_id": "think",
                "input": "<think>sk-secret</think> ok",
                "slice": "s",
                "assert": [{"type": "not-contains", "value": "SK-"}, {"type": "equals", "value": "OK"}],
            },
        ]
    )
    result = suite.run("--prompt-model", "shout", "--prompt-report", "out")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*not-up*failed 1 check", "  content   not-is-upper  expected not all upper case; found 'X'"]
    )
    rows = suite.rows("out")
    assert rows[2]["output"] == "<THINK>SK-SECRET</THINK> OK"  # the raw output is recorded


def test_conftest_check_errors_are_collection_errors(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST_PLUGIN)
    pytester.makefile(
        ".jsonl",
        cases=_lines({"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "is-upper", "value": 1}]}),
    )
    result = pytester.runpytest("--prompt-suite", "cases.jsonl")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["cases.jsonl:1: case 'a': assert[[]0[]]: 'is-upper' takes no fields, got [[]'value'[]]"]
    )


def test_a_conftest_check_applies_below_its_folder_only(pytester: pytest.Pytester) -> None:
    sub = pytester.mkpydir("team")
    (sub / "conftest.py").write_text(CONFTEST_PLUGIN, encoding="utf-8")
    case = _lines({"case_id": "{id}", "input": "x", "slice": "s", "assert": [{"type": "not-is-upper"}]})
    (sub / "cases.jsonl").write_text(case.replace("{id}", "inside"), encoding="utf-8")
    (pytester.path / "other.jsonl").write_text(case.replace("{id}", "outside"), encoding="utf-8")
    result = pytester.runpytest("--prompt-suite", "team/cases.jsonl", "--prompt-suite", "other.jsonl")
    result.assert_outcomes(errors=1)  # a collection error stops the run: nothing runs
    result.stdout.fnmatch_lines(
        [
            "collected 1 item / 1 error",  # team/cases.jsonl compiled with team/conftest.py
            "other.jsonl:1: case 'outside': assert[[]0[]]: unknown check type 'not-is-upper'*",
        ]
    )


def test_a_hook_returning_something_else_than_a_check(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("def pytest_promptsuite_make_check(name, params):\n    return 'oops'\n")
    pytester.makefile(".jsonl", cases=_lines({"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "x"}]}))
    result = pytester.runpytest("--prompt-suite", "cases.jsonl")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*the pytest_promptsuite_make_check hook returned str for 'x', not a pytest_promptsuite.checks.Check"]
    )


def test_a_conftest_wins_over_the_builtin(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "from pytest_promptsuite.checks import Check, Verdict\n"
        "class Always(Check):\n"
        "    def evaluate(self, value, ctx):\n"
        "        return Verdict(True, 'anything', 'overridden')\n"
        "def pytest_promptsuite_make_check(name, params):\n"
        "    if name == 'contains':\n"
        "        return Always()\n"
    )
    pytester.makefile(
        ".jsonl",
        cases=_lines({"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "contains", "value": "zzz"}]}),
    )
    pytester.runpytest("--prompt-suite", "cases.jsonl").assert_outcomes(passed=1)


def _installed() -> None:
    names = [ep.name for ep in importlib.metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP)]
    assert "thirdparty_example" in names, (
        "the test plugin package is not installed: pip install ./tests/thirdparty (see .ci/run)"
    )


THIRDPARTY_CASES = _lines(
    {"case_id": "order", "input": "654321-DRO", "slice": "s", "assert": [{"type": "has-order-id"}]},
    {
        "case_id": "none",
        "input": "abc",
        "slice": "s",
        "assert": [{"type": "not-has-order-id"}, {"type": "equals", "value": "cba"}],
    },
    {"case_id": "bad", "input": "abc", "slice": "s", "assert": [{"type": "has-order-id", "value": "X"}]},
)


def test_an_installed_plugin_adds_a_check_and_a_model(pytester: pytest.Pytester) -> None:
    _installed()
    pytester.makefile(".jsonl", cases=THIRDPARTY_CASES)
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-model", "reverse")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*bad*failed 1 check", "  content   has-order-id  expected an order id X-NNNNNN; found no order id"]
    )


def test_an_installed_plugin_can_be_blocked(pytester: pytest.Pytester) -> None:
    _installed()
    pytester.makefile(".jsonl", cases=THIRDPARTY_CASES)
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "-p", "no:thirdparty_example")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["cases.jsonl:1: case 'order': assert[[]0[]]: unknown check type 'has-order-id'*"])


def test_the_promptsuite_command_sees_installed_and_conftest_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed()
    (tmp_path / "cases.jsonl").write_text(THIRDPARTY_CASES + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["validate", "cases.jsonl"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out == "ok: 3 cases in 1 slices (s), 3 items (1 variant x 1 repeat)\n"
    (tmp_path / "more.jsonl").write_text(
        _lines({"case_id": "u", "input": "x", "slice": "s", "assert": [{"type": "is-upper", "value": 2}]}) + "\n",
        encoding="utf-8",
    )
    assert cli.main(["validate", "more.jsonl"]) == 1
    assert "unknown check type 'is-upper'" in capsys.readouterr().err
    (tmp_path / "conftest.py").write_text(CONFTEST_PLUGIN, encoding="utf-8")
    assert cli.main(["validate", "more.jsonl"]) == 1
    assert "more.jsonl:1: case 'u': assert[0]: 'is-upper' takes no fields, got ['value']" in capsys.readouterr().err


def test_retriever_hook_builtin_and_override(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "def pytest_promptsuite_make_retriever(name, params):\n"
        "    if name == 'LastK':\n"
        "        return ('last', params['k'])\n"
    )
    config = pytester.parseconfigure()
    hook = config.hook
    assert type(hook.pytest_promptsuite_make_retriever(name="FixKRetriever", params={"fix_id_list": [0]})).__name__ == (
        "FixKRetriever"
    )
    assert hook.pytest_promptsuite_make_retriever(name="LastK", params={"k": 2}) == ("last", 2)
    assert hook.pytest_promptsuite_make_retriever(name="Nope", params={}) is None
    assert hook.pytest_promptsuite_make_renderer(name="nope", params={}) is None


def test_the_builtin_hookimpls_answer_our_names_and_none_for_others(pytester: pytest.Pytester) -> None:
    from pytest_promptsuite.prompts.files.history_filters import indent
    from pytest_promptsuite.prompts.files.renderers import JinjaRenderer

    hook = pytester.parseconfigure().hook
    assert isinstance(hook.pytest_promptsuite_make_renderer(name="jinja", params={}), JinjaRenderer)
    parser = hook.pytest_promptsuite_make_output_parser(name="json", params={})
    assert parser('Sure: {"a": 1}') == '{"a": 1}'
    assert hook.pytest_promptsuite_make_output_parser(name="nope", params={}) is None
    assert hook.pytest_promptsuite_make_jinja_filter(name="indent") is indent
    assert hook.pytest_promptsuite_make_jinja_filter(name="upper") is None  # Jinja's own stays


FILTER_CONFTEST = """
def pytest_promptsuite_make_jinja_filter(name):
    if name == "indent":
        return lambda value, n=4: f"<{n}>{value}"
    if name == "shout":
        return lambda value: str(value).upper() + "!"
"""


def test_a_conftest_filter_wins_over_ours_and_jinjas_filters_stay(suite: Suite) -> None:
    """In task prompts and in ``jinja`` template files alike: the conftest's ``indent`` replaces
    ours, its ``shout`` is added, Jinja's ``upper`` and ``title`` still work, and so do ours."""
    suite.pytester.makeconftest(FILTER_CONFTEST)
    template = (
        "{{ input | shout }} {{ input | indent(2) }} {{ input | upper }} {{ input | title }} "
        "{{ history | user_assistant_sequence }}"
    )
    suite.write("prompts.yml", f"prompts:\n  - task: a\n    content: '{template}'\n")
    suite.write("t.txt", template)
    suite.config(
        {
            "template": {"task_prompts": "prompts.yml", "task": "a"},
            "variants.task": {},
            "variants.file": {"template_file": "t.txt", "renderer": "jinja"},
        }
    )
    suite.cases([{"case_id": "c", "input": "hi", "slice": "s"}])
    result = suite.run("--prompt-report", "report")
    result.assert_outcomes(passed=2)
    assert {r["variant"]: r["prompt"] for r in suite.rows()} == {
        "task": "HI! <2>hi HI Hi User: hi",
        "file": "HI! <2>hi HI Hi User: hi",
    }
