"""NeMo Guardrails' output parsers with NeMo's names and results, against NeMo's outputs on the same inputs
(recorded from nemoguardrails 0.10.1 in ``tests/fixtures/nemo``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pluggy
import pytest

from pytest_promptsuite.dialects.nemo.nemo_parsers import NEMO_OUTPUT_PARSERS
from pytest_promptsuite.dialects.nemo.nemo_parsers import content_safety
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.run.registration import register_builtins
from tests.fixtures.nemo.inputs import PARSER_INPUTS
from tests.fixtures.nemo.inputs import SAFETY_ANSWERS


EXPECTED = json.loads(
    (Path(__file__).parents[3] / "fixtures" / "nemo" / "expected-0.10.1.json").read_text(encoding="utf-8")
)
_MANAGER = pluggy.PluginManager("pytest")
register_builtins(_MANAGER)  # the built-ins and NeMo's default plugin, as pytest and the CLI register them


def make_parser(name: str, params: dict[str, Any]) -> Any:
    return _MANAGER.hook.pytest_promptsuite_make_output_parser(name=name, params=params)


class TestOutputParsersAsNeMo:
    @pytest.mark.parametrize("name", ["user_intent", "bot_intent", "bot_message", "verbose_v1"])
    def test_intents_and_messages(self, name: str) -> None:
        assert NEMO_OUTPUT_PARSERS[name](PARSER_INPUTS[name]) == EXPECTED["parsers"][name]

    @pytest.mark.parametrize("answer", SAFETY_ANSWERS)
    def test_is_content_safe(self, answer: str) -> None:
        safe, policies = EXPECTED["safe"][answer]
        assert content_safety(answer) == (safe, policies)
        assert json.loads(NEMO_OUTPUT_PARSERS["is_content_safe"](answer)) == {
            "safe": safe,
            "violated_policies": policies,
        }

    def test_hook_names(self) -> None:
        assert make_parser("nemo.user_intent", {}) is NEMO_OUTPUT_PARSERS["user_intent"]
        assert make_parser("user_intent", {})("User intent: x") == "x"  # ours, without NeMo semantics
        with pytest.raises(ConfigError, match="it takes none"):
            make_parser("nemo.is_content_safe", {"strict": True})
