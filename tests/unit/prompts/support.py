"""What the prompts tests share: task prompt files written and loaded, a chat history, a table's prompt source."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import TemplateConfig
from pytest_promptsuite.prompts.prompt_sources import BUILTIN_MAKERS
from pytest_promptsuite.prompts.prompt_sources import PromptSource
from pytest_promptsuite.prompts.prompt_sources import core_prompt_source
from pytest_promptsuite.prompts.task_prompts import TaskPrompts


def prompt_source(
    config: SuiteConfig, table: TemplateConfig | None = None, *, model: str = "fake", variant: str | None = None
) -> PromptSource | None:
    """Make the core's source of a template file or task prompt (None for another kind of table)."""
    table = table if table is not None else config.template
    return core_prompt_source(config, table, variant, ModelConfig(spec=model), BUILTIN_MAKERS)


def write(tmp_path: Path, text: str, name: str = "prompts.yml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str, **kwargs: Any) -> TaskPrompts:
    return TaskPrompts.load(write(tmp_path, text), **kwargs)


HISTORY = [
    {"role": "user", "content": "u1"},
    {"role": "assistant", "content": "a1"},
    {"role": "user", "content": "u2"},
    {"role": "bot", "content": "a2"},
    {"role": "user", "content": "u3"},
]
