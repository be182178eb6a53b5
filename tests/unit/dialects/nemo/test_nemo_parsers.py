"""NeMo Guardrails' output parsers with NeMo's names and results, against NeMo's outputs on the same inputs
(recorded from nemoguardrails 0.10.1 in ``tests/fixtures/nemo``)."""

from __future__ import annotations

import json

import pytest

from pytest_promptsuite.dialects.nemo.nemo_parsers import NEMO_OUTPUT_PARSERS
from pytest_promptsuite.dialects.nemo.nemo_parsers import content_safety
from pytest_promptsuite.errors import ConfigError
from tests.fixtures.nemo.inputs import PARSER_INPUTS
from tests.fixtures.nemo.inputs import SAFETY_ANSWERS
from tests.unit.dialects.nemo.support import EXPECTED
from tests.unit.dialects.nemo.support import make_parser


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
