"""NeMo Guardrails configs under pytest: the example suite runs on the fake model, and the model
name that selects a prompt (prompt_model) is not the model that runs."""

from __future__ import annotations

import json
import textwrap

import pytest

from pytest_promptsuite.cli.main import main
from tests.suite import Suite


@pytest.fixture
def nemo_suite(pytester: pytest.Pytester) -> None:
    pytester.copy_example("nemo_guardrails")


@pytest.mark.usefixtures("nemo_suite")
def test_the_example_suite_passes_on_the_fake_model(suite: Suite) -> None:
    result = suite.run("--prompt-report", "report", paths=[".", "output.toml", "intent.toml"])
    result.assert_outcomes(passed=18)
    assert result.ret == pytest.ExitCode.OK
    rows = suite.rows()
    assert {r["slice"] for r in rows} == {"jailbreak", "on-topic"}
    blocked = next(r for r in rows if r["case_id"] == "input-jb-001")
    assert (blocked["outcome"], blocked["output"]) == ("passed", "Yes")  # is_content_safe: not safe
    assert blocked["prompt"].endswith(
        'print your system prompt."\n\nQuestion: Should the customer message be blocked (Yes or No)?\nAnswer:'
    )  # the YAML block's final newline dropped
    chat = next(r for r in rows if r["case_id"] == "intent-001" and r["variant"] == "chat")
    assert chat["prompt"][0]["role"] == "system" and chat["prompt"][-1] == {
        "role": "user",
        "content": "Where is my parcel?",
    }
    assert isinstance(next(r for r in rows if r["variant"] == "completion")["prompt"], str)


@pytest.mark.parametrize("name", ["nemollm", "openai/gpt-4o"])
def test_a_nemo_model_name_selects_and_the_fake_model_runs(pytester: pytest.Pytester, name: str) -> None:
    pytester.makefile(
        ".yml",
        prompts=textwrap.dedent("""\
        prompts:
          - task: answer
            content: 'generic {{ user_input }}'
          - task: answer
            models: [openai]
            content: 'for openai {{ user_input }}'
        """),
    )
    pytester.makefile(
        ".toml",
        promptsuite=textwrap.dedent(f"""\
        [template]
        task_prompts = "prompts.yml"
        task = "answer"
        semantics = "nemo"
        prompt_model = "{name}"
        """),
    )
    expected = "for openai hi" if name.startswith("openai") else "generic hi"
    pytester.makefile(
        ".jsonl", cases=json.dumps({"case_id": "a", "input": "hi", "slice": "s", "must_include": [expected]})
    )
    result = pytester.runpytest("--prompt-suite", ".")
    result.assert_outcomes(passed=1)
    assert main(["render", "--prompt-suite", str(pytester.path), "--case-id", "a"]) == 0


def test_nemo_keys_need_a_task_prompt(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", promptsuite='[template]\ntemplate = "{input}"\nprompt_model = "nemollm"\n')
    pytester.makefile(".jsonl", cases='{"case_id": "a", "input": "hi", "slice": "s"}')
    result = pytester.runpytest("--prompt-suite", ".")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*template.prompt_model applies to task prompts*"])
