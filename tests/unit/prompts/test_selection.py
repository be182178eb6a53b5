"""Stage tests for ``prompts.selection``: which prompt of a ``prompts.yml`` a task uses by our own rule."""

from __future__ import annotations

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


def test_prompt_model_selects_under_our_own_rules_too(tmp_path: Path) -> None:
    (tmp_path / "prompts.yml").write_text(
        "prompts:\n  - {task: t, content: generic}\n  - {task: t, content: for-gpt-4o, models: [openai/gpt-4o]}\n",
        encoding="utf-8",
    )
    (tmp_path / "promptsuite.toml").write_text(
        '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\nprompt_model = "openai/gpt-4o"\n', encoding="utf-8"
    )
    suite = load_config(tmp_path / "promptsuite.toml")
    source = prompt_source(suite, model="fake")
    assert source.template.render({}) == "for-gpt-4o"
