"""Which prompt of a ``prompts.yml`` a task uses by NeMo Guardrails' rule."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from pytest_promptsuite.dialects.nemo.nemo_selection import select_nemo_prompt
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.prompts.prompts_yml import prompt_entries


def _entries(text: str) -> Any:
    data = __import__("yaml").safe_load(textwrap.dedent(text))
    return prompt_entries([(p, f"prompts.yml:{i + 2}") for i, p in enumerate(data["prompts"])])


SELECTION = """\
prompts:
  - {task: t, content: general}
  - {task: t, content: for-openai, models: [openai]}
  - {task: t, content: for-gpt-4, models: [gpt-4]}
  - {task: t, content: for-nemollm, models: [nemollm]}
  - {task: t, content: compact-general, mode: compact}
  - {task: u, content: only-llama, models: [llama3]}
"""


class TestSelection:
    @pytest.mark.parametrize(
        ("model", "mode", "expected"),
        [
            pytest.param("openai/gpt-4o", "standard", "for-openai", id="engine-0.5-beats-substring-0.4"),
            pytest.param("azure/gpt-4-turbo", "standard", "for-gpt-4", id="substring-0.4-beats-general"),
            pytest.param("nemollm/gpt-43b", "standard", "for-nemollm", id="engine"),
            pytest.param("cohere/command", "standard", "general", id="general-0.2"),
            pytest.param("cohere/command", "compact", "compact-general", id="mode-0.2-beats-standard-0.1"),
            pytest.param("openai/gpt-4o", "compact", "for-openai", id="standard-engine-0.25-beats-compact"),
        ],
    )
    def test_scores(self, model: str, mode: str, expected: str) -> None:
        entries = _entries(SELECTION)
        assert select_nemo_prompt(entries, "t", model, mode, "x").raw["content"] == expected

    def test_falls_back_to_a_prompt_for_another_model(self) -> None:
        entries = _entries(SELECTION)
        assert select_nemo_prompt(entries, "u", "openai/gpt-4o", "standard", "x").raw["content"] == "only-llama"

    def test_unknown_task(self) -> None:
        with pytest.raises(ConfigError, match=r"x: no prompt for task 'v'; tasks: t, u"):
            select_nemo_prompt(_entries(SELECTION), "v", "unknown", "standard", "x")
