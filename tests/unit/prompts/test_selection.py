"""Stage tests for ``prompts.selection``: which prompt of a ``prompts.yml`` a task uses by our own rule."""

from __future__ import annotations

from pathlib import Path

from pytest_promptsuite.config.suite import load_config
from tests.unit.dialects.nemo.support import prompt_source


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
