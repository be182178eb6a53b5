"""What the import runs to make a config's tests and vars (test generators, var scripts, globs, file values):
its errors name the file and the config's line, and nothing is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_promptsuite.dialects.promptfoo.import_promptfoo import promptfoo_suite
from pytest_promptsuite.errors import ConfigError
from tests.importers.promptfoo_run import write_config


BASE = "prompts: ['{{x}}']\nproviders: [echo]\n"


def _cases(config: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in promptfoo_suite(config).files["cases.jsonl"].splitlines()]


@pytest.mark.parametrize(
    ("tests", "files", "message"),
    [
        (
            "file://gen.py",
            {"gen.py": "def generate_tests():\n    return {'vars': {}}\n"},
            "returned dict; a test generator",
        ),
        (
            "file://gen.py",
            {"gen.py": "def generate_tests():\n    raise ValueError('no db')\n"},
            "raised ValueError: no db",
        ),
        ("file://gen.py:other", {"gen.py": "def generate_tests():\n    return []\n"}, "gen.py has no function other"),
        ("'file://../gen.py:fn'", {}, "file://../gen.py:fn lies outside the config's folder"),
        ("'file://gen.rb:fn'", {"gen.rb": ""}, "a test generator is a .py or .js file"),
        ("file://gen.js", {"gen.js": "module.exports = () => { throw new Error('boom'); };\n"}, "Error: boom"),
    ],
)
def test_a_test_generator_that_fails_stops_the_import_naming_it(
    tmp_path: Path, tests: str, files: dict[str, str], message: str
) -> None:
    if tests.endswith(".js") and shutil.which("node") is None:
        pytest.skip("needs Node.js")
    config = write_config(tmp_path, f"{BASE}tests: {tests}\n", files)
    with pytest.raises(ConfigError, match=f"^{config}:3: .*") as caught:
        promptfoo_suite(config)
    assert message in str(caught.value)


def test_a_generator_given_config_makes_the_tests_it_returns(tmp_path: Path) -> None:
    code = "def make(config):\n    return [{'vars': {'x': v}} for v in config['xs']]\n"
    config = write_config(
        tmp_path, f"{BASE}tests:\n  - path: file://gen.py:make\n    config: {{xs: [a, b]}}\n", {"gen.py": code}
    )
    assert [case["vars"] for case in _cases(config)] == [{"x": "a"}, {"x": "b"}]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("def get_var(name, prompt, others):\n    return {'error': 'no context'}\n", "returned the error no context"),
        ("def get_var(name, prompt, others):\n    return {'output': ''}\n", "returned no output"),
        ("def get_var(name, prompt, others):\n    return 'text'\n", "returned str; a var script returns {output}"),
        ("def get_var(name, prompt, others):\n    return {'output': 3}\n", "output is int, not a string"),
        ("def get_var(name, prompt, others):\n    raise KeyError('q')\n", "get_var raised KeyError"),
    ],
)
def test_a_var_script_that_gives_no_output_stops_the_import(tmp_path: Path, script: str, message: str) -> None:
    config = write_config(tmp_path, f"{BASE}tests:\n  - vars: {{x: file://ctx.py}}\n", {"ctx.py": script})
    with pytest.raises(ConfigError, match=f"^{config}:4: var x \\(file://ctx.py\\)") as caught:
        promptfoo_suite(config)
    assert message in str(caught.value)


def test_a_var_script_gets_the_prompt_and_the_vars_and_is_listed(tmp_path: Path) -> None:
    script = "def get_var(name, prompt, others):\n    return {'output': f'{name}|{prompt}|{others[\"y\"]}\\n'}\n"
    config = write_config(tmp_path, f"{BASE}tests:\n  - vars: {{y: why, x: file://ctx.py}}\n", {"ctx.py": script})
    suite = promptfoo_suite(config)
    assert json.loads(suite.files["cases.jsonl"])["vars"]["x"] == "x|{{x}}|why"
    assert "var file://ctx.py: get_var ran at import; import again after changing it" in suite.notes


@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("file://none/*.txt", r"file://none/\*\.txt: no file matches"),
        ("'file://../*.txt'", "lies outside the config's folder"),
    ],
)
def test_a_var_glob_that_matches_nothing_stops_the_import(tmp_path: Path, glob: str, message: str) -> None:
    config = write_config(tmp_path, f"{BASE}tests:\n  - vars: {{x: {glob}}}\n", {})
    with pytest.raises(ConfigError, match=f"^{config}:4: .*{message}"):
        promptfoo_suite(config)


def test_a_var_glob_makes_a_case_per_file_and_a_text_file_is_read_once(tmp_path: Path) -> None:
    files = {"a/1.txt": "one\n", "a/2.txt": "two\n"}
    config = write_config(
        tmp_path, f"{BASE}tests:\n  - vars: {{x: 'file://a/*.txt'}}\n  - vars: {{x: file://a/1.txt}}\n", files
    )
    assert [case["vars"]["x"] for case in _cases(config)] == ["one", "two", "one"]


@pytest.mark.parametrize(
    ("value", "files", "message"),
    [
        ("file://expected.csv", {"expected.csv": "a"}, "promptfoo reads an assert's .json, .yaml, .yml or .txt file"),
        ("file://gone.json", {}, "file://gone.json: no such file"),
    ],
)
def test_an_assert_file_value_promptfoo_cannot_read_stops_the_import(
    tmp_path: Path, value: str, files: dict[str, str], message: str
) -> None:
    config = write_config(tmp_path, f"{BASE}tests:\n  - assert: [{{type: equals, value: '{value}'}}]\n", files)
    with pytest.raises(ConfigError, match=f"^{config}:4: .*{message}"):
        promptfoo_suite(config)


def test_assert_file_values_are_read_into_the_cases(tmp_path: Path) -> None:
    files = {"e.yaml": "a: [1, 2]\n", "t.txt": " text \n"}
    asserts = "[{type: equals, value: file://e.yaml}, {type: contains-any, value: [file://t.txt, b]}]"
    text = f"{BASE}tests:\n  - assert: {asserts}\n"
    checks = _cases(write_config(tmp_path, text, files))[0]["assert"]
    assert checks == [{"type": "equals", "value": {"a": [1, 2]}}, {"type": "contains-any", "value": ["text", "b"]}]


def test_a_var_named_answer_reaches_the_prompt_and_other_forms_are_listed(tmp_path: Path) -> None:
    text = f"{BASE}tests:\n  - vars: {{answer: yes}}\n  - vars: {{answer: [1, 2], history: h}}\n"
    suite = promptfoo_suite(write_config(tmp_path, text, {}))
    first = json.loads(suite.files["cases.jsonl"].splitlines()[0])
    assert first["answer"] == "yes"
    assert any("the var answer (list" in note for note in suite.notes)
    assert any("the var history" in note for note in suite.notes)
