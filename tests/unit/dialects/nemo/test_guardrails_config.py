"""A NeMo Guardrails config folder as NeMo reads it, and what a bad one reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.dialects.nemo.guardrails_config import library_folder
from pytest_promptsuite.dialects.nemo.guardrails_config import read_nemo_config
from pytest_promptsuite.dialects.nemo.nemo_prompt import nemo_prompt
from pytest_promptsuite.errors import ConfigError
from tests.unit.dialects.nemo.support import CONFIG
from tests.unit.dialects.nemo.support import PROMPTS
from tests.unit.dialects.nemo.support import config_folder
from tests.unit.dialects.nemo.support import make_filter
from tests.unit.dialects.nemo.support import make_parser


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
        config_folder(tmp_path, config, "prompts: []\n", "")
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            read_nemo_config(tmp_path / "config")

    def test_nemo_config_is_nemo_semantics(self, tmp_path: Path) -> None:
        toml = '[template]\nnemo_config = "config"\ntask = "general"\nsemantics = "promptsuite"\n'
        suite = config_folder(tmp_path, CONFIG, PROMPTS, toml)
        with pytest.raises(ConfigError, match="nemo_config renders with NeMo's semantics"):
            nemo_prompt(suite, suite.template, make_filter=make_filter, make_parser=make_parser)

    def test_a_link_loop_in_the_folder_ends(self, tmp_path: Path) -> None:
        config_folder(tmp_path, "models: []\n", "prompts:\n  - {task: t, content: x}\n", "")
        (tmp_path / "config" / "loop").symlink_to(tmp_path / "config")
        assert [p["task"] for p, _ in read_nemo_config(tmp_path / "config", root=tmp_path).prompts] == ["t"]

    def test_a_task_only_the_library_has(self, tmp_path: Path) -> None:
        if library_folder() is not None:
            pytest.skip("nemoguardrails is installed: its library has the task")
        toml = '[template]\nnemo_config = "config"\ntask = "self_check_output"\n'
        suite = config_folder(tmp_path, "models: []\n", PROMPTS, toml)
        with pytest.raises(ConfigError, match="none is installed, so only the config's prompts count"):
            nemo_prompt(suite, suite.template, make_filter=make_filter, make_parser=make_parser)
