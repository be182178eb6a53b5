"""A NeMo Guardrails config folder as NeMo reads it, and what a bad one reports."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pluggy
import pytest

from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.dialects.nemo.guardrails_config import library_folder
from pytest_promptsuite.dialects.nemo.guardrails_config import read_nemo_config
from pytest_promptsuite.dialects.nemo.nemo_prompt import nemo_prompt
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.run.registration import register_builtins


_MANAGER = pluggy.PluginManager("pytest")
register_builtins(_MANAGER)  # the built-ins and NeMo's default plugin, as pytest and the CLI register them


def make_filter(name: str) -> Any:
    return _MANAGER.hook.pytest_promptsuite_make_jinja_filter(name=name)


def make_parser(name: str, params: dict[str, Any]) -> Any:
    return _MANAGER.hook.pytest_promptsuite_make_output_parser(name=name, params=params)


def _suite(tmp_path: Path, config: str, prompts: str, toml: str) -> Any:
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "config.yml").write_text(textwrap.dedent(config), encoding="utf-8")
    (folder / "prompts.yml").write_text(textwrap.dedent(prompts), encoding="utf-8")
    (tmp_path / "promptsuite.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    return load_config(tmp_path / "promptsuite.toml")


CONFIG = """\
models:
  - {type: main, engine: openai, model: gpt-4o}
  - {type: self_check_input, engine: nemollm, model: gpt-43b}
instructions:
  - {type: other, content: not this}
  - {type: general, content: "Be brief."}
sample_conversation: |
  user "Hi"
    express greeting
  bot express greeting
    "Hello!"
prompting_mode: compact
lowest_temperature: 0.1
"""


PROMPTS = """\
prompts:
  - task: general
    mode: compact
    content: |
      {{ general_instructions }}
      {{ history | user_assistant_sequence }}
  - task: general
    mode: compact
    models: [openai]
    messages:
      - type: system
        content: "{{ general_instructions }}"
      - "{{ sample_conversation | to_messages }}"
      - type: user
        content: "{{ user_input }}"
    stop: ["\\nUser:"]
  - task: self_check_input
    content: 'Q: {{ user_input }}'
    output_parser: is_content_safe
    models: [nemollm]
  - task: broken
    content: "{{ history | no_such_filter }}"
"""


class TestConfigErrors:
    @pytest.mark.parametrize(
        ("config", "message"),
        [
            ("models: x\n", "config.yml:1: 'models' must be a list"),
            ("sample_conversation: hi\nmodels:\n  - {type: main}\n", "config.yml:2: each entry of 'models' needs"),
            ("instructions: {a: 1}\n", "config.yml:1: 'instructions' must be a list"),
            ("\nlowest_temperature: cold\n", "config.yml:2: 'lowest_temperature' must be a number"),
            ("prompting_mode: [a]\n", "config.yml:1: 'prompting_mode' must be a string"),
        ],
    )
    def test_name_the_file_and_line(self, tmp_path: Path, config: str, message: str) -> None:
        _suite(tmp_path, config, "prompts: []\n", "")
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            read_nemo_config(tmp_path / "config")

    def test_nemo_config_is_nemo_semantics(self, tmp_path: Path) -> None:
        toml = '[template]\nnemo_config = "config"\ntask = "general"\nsemantics = "promptsuite"\n'
        suite = _suite(tmp_path, CONFIG, PROMPTS, toml)
        with pytest.raises(ConfigError, match="nemo_config renders with NeMo's semantics"):
            nemo_prompt(suite, suite.template, make_filter=make_filter, make_parser=make_parser)

    def test_a_link_loop_in_the_folder_ends(self, tmp_path: Path) -> None:
        _suite(tmp_path, "models: []\n", "prompts:\n  - {task: t, content: x}\n", "")
        (tmp_path / "config" / "loop").symlink_to(tmp_path / "config")
        assert [p["task"] for p, _ in read_nemo_config(tmp_path / "config", root=tmp_path).prompts] == ["t"]

    def test_a_task_only_the_library_has(self, tmp_path: Path) -> None:
        if library_folder() is not None:
            pytest.skip("nemoguardrails is installed: its library has the task")
        toml = '[template]\nnemo_config = "config"\ntask = "self_check_output"\n'
        suite = _suite(tmp_path, "models: []\n", PROMPTS, toml)
        with pytest.raises(ConfigError, match="none is installed, so only the config's prompts count"):
            nemo_prompt(suite, suite.template, make_filter=make_filter, make_parser=make_parser)
