"""promptfoo's prompt functions and ``{prompt: label}`` prompt maps, imported: a function's file is copied into the
suite and named by ``[template] prompt_function``; it runs as each case renders (JavaScript in the run's Node.js
process, Python in this one), and what it returns is sent as promptfoo sends it. The verdict counts against
promptfoo itself are the corpus's (``prompt-functions``, ``prompt-maps``, ``config-custom-prompt-function``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from pytest_promptsuite.dialects.promptfoo.import_promptfoo import promptfoo_suite
from pytest_promptsuite.errors import ConfigError
from tests.importers.promptfoo_run import import_config
from tests.importers.promptfoo_run import run_imported
from tests.importers.promptfoo_run import write_config
from tests.suite import Suite


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")

CHAT_JS = (
    "module.exports = ({ vars }) => [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: vars.q }];\n"
)
PY_PROMPTS = (
    "import json, sys\n\n"
    "def ask(context):\n"
    "    return f\"Ask {context['vars']['q']} of {context['provider']['id']} with {context['config']}\"\n\n"
    "if __name__ == '__main__':\n"
    "    context = json.loads(sys.argv[1])\n"
    "    print('Script:', context['vars']['q'], sorted(context))\n"
)


def test_a_prompt_function_is_copied_and_named_with_what_promptfoo_gives_it(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "prompts:\n  - file://code/chat.js\n  - {id: 'file://code/prompts.py:ask', label: ask, "
        "config: {seed: 3, max_tokens: 9, apiKey: sk-not-in-the-suite-1234}}\n"
        "providers: [echo, {id: echo, label: other}]\ntests: [{vars: {q: why}}]\n",
        {"code/chat.js": CHAT_JS, "code/prompts.py": PY_PROMPTS},
    )
    imported = promptfoo_suite(config)
    assert imported.files["code/chat.js"] == CHAT_JS and imported.files["code/prompts.py"] == PY_PROMPTS
    assert imported.config["variants.p1-echo"] == {
        "prompt_function": "code/chat.js",
        "semantics": "promptfoo",
        "prompt_context": {"provider": {"id": "echo", "label": ""}, "config": {}},
        "model": {"spec": "echo"},
    }
    assert imported.config["variants.ask-other"]["prompt_function"] == "code/prompts.py:ask"
    assert imported.config["variants.ask-other"]["prompt_context"] == {
        "provider": {"id": "echo", "label": "other"},
        "config": {"seed": 3, "max_tokens": 9},
    }
    assert "prompt ask: config not given to the function: apiKey" in imported.notes
    assert "sk-not-in-the-suite" not in repr(imported.config) + repr(imported.files)


@needs_node
def test_a_functions_messages_are_sent_as_messages_and_its_text_as_text(tmp_path: Path, suite: Suite) -> None:
    config = write_config(
        tmp_path,
        "prompts: [file://chat.js, 'file://prompts.py:ask', file://prompts.py]\n"
        "providers: [echo]\ntests: [{vars: {q: why}}]\n",
        {"chat.js": CHAT_JS, "prompts.py": PY_PROMPTS},
    )
    status, imported = import_config(tmp_path, config)
    assert status == 0
    rows = {row["variant"]: row for row in run_imported(suite, imported)}
    assert rows["p1"]["prompt"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "why"}]
    assert rows["p1"]["output"].startswith('[\n  {\n    "role": "system"')  # echo: JSON.stringify(messages, null, 2)
    assert rows["p2"]["prompt"] == "Ask why of echo with {}"
    assert rows["p3"]["prompt"] == "Script: why ['config', 'provider', 'vars']"  # run as a script: what it prints
    assert {row["outcome"] for row in rows.values()} == {"passed"}


@needs_node
def test_a_failing_prompt_function_is_its_cases_error_naming_the_file_and_the_case(
    tmp_path: Path, suite: Suite
) -> None:
    code = (
        "module.exports.raises = () => { throw new Error('no prompt today'); };\n"
        "module.exports.number = () => 42;\nmodule.exports.fine = ({ vars }) => `Say ${vars.q}`;\n"
    )
    python = "def raises(context):\n    raise ValueError('not from Python')\n"
    config = write_config(
        tmp_path,
        "prompts: ['file://code.js:raises', 'file://code.js:number', 'file://code.js:missing', "
        "'file://code.py:raises', 'file://code.py:missing', 'file://code.js:fine']\n"
        "providers: [echo]\ntests: [{vars: {q: hi}}, {vars: {q: ho}}]\n",
        {"code.js": code, "code.py": python},
    )
    status, imported = import_config(tmp_path, config)
    assert status == 0
    rows = {(row["variant"], row["case_id"]): row for row in run_imported(suite, imported)}
    assert len(rows) == 12
    errors = {variant: row["error"] for (variant, case), row in rows.items() if case == "test-2"}
    assert (
        errors["p1"]
        == "render: prompt_function code.js:raises (case test-2): the JavaScript raised: Error: no prompt today"
    )
    assert errors["p2"] == (
        "render: prompt_function code.js:number (case test-2): returned a number; a prompt function returns a "
        "string, chat messages or {prompt, config}"
    )
    assert errors["p3"].startswith("render: prompt_function code.js:missing (case test-2): the JavaScript raised: ")
    assert "exports no function missing" in errors["p3"]
    assert (
        errors["p4"]
        == "render: prompt_function code.py:raises (case test-2): the function raised ValueError: not from Python"
    )
    assert errors["p5"].endswith("code.py has no function missing")
    assert [rows["p6", case]["outcome"] for case in ("test-1", "test-2")] == ["passed", "passed"]  # the run goes on
    assert all("Traceback" not in str(error) for error in errors.values())


def test_a_javascript_prompt_function_without_node_names_the_file_and_the_case(
    tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(
        tmp_path,
        "prompts: [file://chat.js, 'file://prompts.py:ask']\nproviders: [echo]\ntests: [{vars: {q: why}}]\n",
        {"chat.js": CHAT_JS, "prompts.py": PY_PROMPTS},
    )
    status, imported = import_config(tmp_path, config)
    assert status == 0
    shutil.copytree(imported, pytester.path / "suite")
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    result = pytester.runpytest("--prompt-suite", "suite", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)  # the Python function runs without Node.js
    assert (
        "prompt_function chat.js (case test-1): needs Node.js, and 'node' is not on PATH (install Node.js to run it)"
        in result.stdout.str()
    )


@pytest.mark.parametrize(
    ("prompt", "files", "message"),
    [
        ("file://../outside.js", {}, ":1: file://../outside.js lies outside the config's folder"),
        ("file://gone.py:fn", {}, ":1: file://gone.py: no such file"),
        ("file://prompt.ts", {"prompt.ts": "export default () => 'x';\n"}, ":1: file://prompt.ts: TypeScript prompt"),
        ("'file://chat.mts:fn'", {}, ":1: file://chat.mts:fn: TypeScript prompt functions are not imported"),
        ("file://promptfoo_asserts.py:fn", {}, "a prompt function's file may not be named promptfoo_asserts.py"),
    ],
)
def test_a_prompt_function_that_cannot_be_carried_is_an_import_error(
    tmp_path: Path, prompt: str, files: dict[str, str], message: str
) -> None:
    config = write_config(tmp_path, f"prompts: [{prompt}]\nproviders: [echo]\ntests: [{{vars: {{}}}}]\n", files)
    with pytest.raises(ConfigError, match="^" + str(config).replace("\\", "\\\\") + ".*" + _escaped(message)):
        promptfoo_suite(config)


def _escaped(text: str) -> str:
    return "".join("\\" + ch if ch in ".*+?()[]{}|^$\\" else ch for ch in text)


def test_a_prompt_map_labels_each_prompt_and_its_labels_filter_the_providers(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "prompts:\n  file://a.txt: Label A\n  'Say {{x}}': B\n  file://fn.js: Fn\n  'Unused {{x}}': D\n"
        "providers: [{id: echo, prompts: [B, 'Label A*', Fn]}]\ntests: [{vars: {x: hi}}]\n",
        {"a.txt": "A1 {{x}}\n---\nA2 {{x}}\n", "fn.js": "module.exports = () => 'from fn';\n"},
    )
    imported = promptfoo_suite(config)
    variants = sorted(k for k in imported.config if k.startswith("variants."))
    # each named by its label (the file's two prompts share theirs); D is filtered out
    assert variants == ["variants.B", "variants.Fn", "variants.Label-A", "variants.Label-A-2"]
    assert [imported.files[f"prompts/prompt-{i}.txt"] for i in (1, 2, 3)] == ["A1 {{x}}", "A2 {{x}}", "Say {{x}}"]
    assert imported.config["variants.Fn"]["prompt_function"] == "fn.js"


def test_a_hand_written_prompt_function_needs_promptfoo_semantics(suite: Suite) -> None:
    suite.write("prompt.py", "def ask(context):\n    return 'hi'\n")
    suite.config('[template]\nprompt_function = "prompt.py:ask"\n')
    suite.cases([{"case_id": "c-1", "input": "x", "slice": "s"}])
    result = suite.run()
    assert 'template.prompt_function is promptfoo\'s: add semantics = "promptfoo"' in result.stdout.str()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('"prompt.txt"', "a prompt function is FILE.js, FILE.cjs, FILE.mjs or FILE.py (optionally :NAME)"),
        ('"../prompt.py:ask"', "points outside the suite's folder"),
        ('"nowhere.py:ask"', "no such file"),
    ],
)
def test_a_prompt_function_setting_that_names_no_function_file_is_a_config_error(
    suite: Suite, setting: str, message: str
) -> None:
    suite.write("prompt.txt", "hi\n")
    suite.config(f'[template]\nsemantics = "promptfoo"\nprompt_function = {setting}\n')
    suite.cases([{"case_id": "c-1", "input": "x", "slice": "s"}])
    output = suite.run().stdout.str()
    assert "promptsuite.toml:3: template.prompt_function" in output and message in output
    assert "Traceback" not in output


def test_a_hand_written_python_prompt_function_gets_its_context(suite: Suite) -> None:
    suite.write("prompt.py", "def ask(context):\n    return f\"{context['vars']['q']} {context['provider']['id']}\"\n")
    suite.config(
        '[template]\nsemantics = "promptfoo"\nprompt_function = "prompt.py:ask"\n'
        'prompt_context = { provider = { id = "mine" } }\n[model]\nspec = "echo"\n'
    )
    suite.cases(
        [
            {
                "case_id": "c-1",
                "input": "x",
                "slice": "s",
                "vars": {"q": "why"},
                "assert": [{"type": "equals", "value": "why mine"}],
            }
        ]
    )
    suite.run("--prompt-report", "report").assert_outcomes(passed=1)
    assert suite.rows()[0]["prompt"] == "why mine"


@needs_node
def test_a_prompt_function_gets_the_vars_transform_vars_made(tmp_path: Path, suite: Suite) -> None:
    config = write_config(
        tmp_path,
        "prompts: [file://fn.js, 'file://fn.py:make']\nproviders: [echo]\n"
        "defaultTest:\n  options:\n    transformVars: '({ ...vars, name: vars.name.toUpperCase() })'\n"
        "tests:\n  - vars: {name: ada}\n  - vars: {name: grace, extra: '{{name}}!'}\n",
        {
            "fn.js": 'module.exports = ({ vars }) => `Hello ${vars.name} ${vars.extra || ""} {{ extra }}`;\n',
            "fn.py": "def make(context):\n    v = context['vars']\n"
            "    return 'Hi ' + v['name'] + ' ' + str(v.get('extra')) + ' {{ extra }}'\n",
        },
    )
    status, imported = import_config(tmp_path, config)
    assert status == 0
    outputs = {(row["variant"], row["case_id"]): row["output"] for row in run_imported(suite, imported)}
    assert outputs == {  # what promptfoo 0.123.1 answers on echo
        ("p1", "test-1"): "Hello ADA  ",
        ("p1", "test-2"): "Hello GRACE GRACE! GRACE!",
        ("p2", "test-1"): "Hi ADA None ",
        ("p2", "test-2"): "Hi GRACE GRACE! GRACE!",
    }
