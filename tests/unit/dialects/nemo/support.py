"""What the NeMo Guardrails dialect's tests share: our hooks with the built-ins and NeMo's default plugin
registered, as a run has them, a config folder as NeMo reads it, and NeMo's outputs recorded in
``tests/fixtures/nemo``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pluggy

from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import TemplateConfig
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.prompts.prompt_sources import PromptMakers
from pytest_promptsuite.prompts.prompt_sources import RowSource
from pytest_promptsuite.run.registration import register_builtins


EXPECTED = json.loads(
    (Path(__file__).parents[3] / "fixtures" / "nemo" / "expected-0.10.1.json").read_text(encoding="utf-8")
)
_MANAGER = pluggy.PluginManager("pytest")
register_builtins(_MANAGER)  # the built-ins and NeMo's default plugin, as pytest and the CLI register them


def make_filter(name: str) -> Any:
    return _MANAGER.hook.pytest_promptsuite_make_jinja_filter(name=name)


def make_parser(name: str, params: dict[str, Any]) -> Any:
    return _MANAGER.hook.pytest_promptsuite_make_output_parser(name=name, params=params)


def prompt_source(
    suite: SuiteConfig, table: TemplateConfig | None = None, *, model: str = "fake", variant: str | None = None
) -> RowSource:
    """Make the source of a table through the hook, as a run makes it (NeMo's, or the core's)."""
    source = _MANAGER.hook.pytest_promptsuite_make_prompt_source(
        suite=suite,
        table=table if table is not None else suite.template,
        variant=variant,
        model=ModelConfig(spec=model),
        makers=PromptMakers(filter=make_filter, parser=make_parser),
    )
    assert isinstance(source, RowSource)
    return source


def config_folder(tmp_path: Path, config: str, prompts: str, toml: str) -> Any:
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
