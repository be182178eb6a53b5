"""Stage tests for ``prompts.output_parsers``: the built-in parsers of a task prompt's output and those a hook adds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.prompts.output_parsers import BUILTIN_OUTPUT_PARSERS
from pytest_promptsuite.prompts.output_parsers import OutputParserError
from pytest_promptsuite.prompts.output_parsers import builtin_output_parser
from pytest_promptsuite.prompts.output_parsers import make_output_parser
from tests.unit.prompts.support import load


class TestOutputParsers:
    @pytest.mark.parametrize(
        ("spec", "text", "expected"),
        [
            ({"type": "strip_prefix", "prefix": "Answer:"}, "  Answer:  42 \n", "42"),
            ({"type": "strip_prefix", "prefix": "Answer:"}, "No prefix here ", "No prefix here "),
            ("bot_message", "Bot message: Hello there", "Hello there"),
            ("user_intent", "User intent: ask refund", "ask refund"),
            ("bot_intent", "Bot intent: greet", "greet"),
            ("json", '{"a": 1}', '{"a": 1}'),
            ("json", 'Here is your JSON:\n{"a": [1, 2]} hope it helps', '{"a": [1, 2]}'),
            ("json", 'Sure!\n```json\n{"ok": true}\n```\n', '{"ok": true}'),
            ("json", "The list: [1, 2, 3].", "[1, 2, 3]"),
        ],
        ids=[
            "strip",
            "strip-absent",
            "bot-message",
            "user-intent",
            "bot-intent",
            "json-plain",
            "json-after-prose",
            "json-fenced",
            "json-array",
        ],
    )
    def test_builtin(self, spec: Any, text: str, expected: str) -> None:
        assert make_output_parser(spec)(text) == expected

    def test_json_without_json_fails_clearly(self) -> None:
        message = "output parser 'json': no JSON value in the output 'no json {here'"
        with pytest.raises(OutputParserError, match=message):
            make_output_parser("json")("no json {here")

    def test_registered_parser_wins(self) -> None:
        def make(name: str, params: dict[str, Any]) -> Any:  # a conftest's hook, then the built-in one
            if name == "first_line":
                return lambda text: text.splitlines()[0]
            if name == "json":
                return lambda text: "mine"
            return builtin_output_parser(name, params)

        assert make_output_parser("first_line", make=make)("a\nb") == "a"
        assert make_output_parser("json", make=make)("{}") == "mine"
        assert make_output_parser("bot_message", make=make)("Bot message: x") == "x"

    def test_unknown_key_of_a_parser(self) -> None:
        message = r"output parser 'json': unknown key 'strict' \(it takes none\)"
        with pytest.raises(ConfigError, match=message):
            make_output_parser({"type": "json", "strict": True})

    def test_prompt_carries_its_parser(self, tmp_path: Path) -> None:
        prompts = load(
            tmp_path,
            """\
            prompts:
              - task: a
                content: x
                output_parser: {type: strip_prefix, prefix: "Bot:"}
              - task: b
                content: x
            """,
        )
        assert prompts.select("a").parse_output("Bot: hi") == "hi"
        assert prompts.select("b").parse_output("Bot: hi") == "Bot: hi"


def _nothing(name: str, params: dict[str, Any]) -> None:
    return None


class TestBuiltinOutputParser:
    def test_names(self) -> None:
        assert BUILTIN_OUTPUT_PARSERS == ("strip_prefix", "json", "user_intent", "bot_intent", "bot_message")
        parser = builtin_output_parser("strip_prefix", {"prefix": "A:"})
        assert parser is not None and parser(" A: b ") == "b"
        assert builtin_output_parser("first_line", {}) is None

    def test_bad_params_are_config_errors(self) -> None:
        with pytest.raises(ConfigError, match="output parser 'strip_prefix' needs a non-empty string 'prefix'"):
            builtin_output_parser("strip_prefix", {})
        with pytest.raises(ConfigError, match=r"output parser 'json': unknown key 'x' \(it takes none\)"):
            builtin_output_parser("json", {"x": 1})

    def test_a_lookup_that_makes_nothing_is_an_unknown_parser(self) -> None:
        message = (
            r"unknown output parser 'json'; built-in: strip_prefix, json, user_intent, bot_intent, "
            r"bot_message, or add one with the pytest_promptsuite_make_output_parser hook"
        )
        with pytest.raises(ConfigError, match=message):
            make_output_parser("json", make=_nothing)

    def test_unknown_name_suggests(self) -> None:
        with pytest.raises(ConfigError, match=r"unknown output parser 'jsn' \(did you mean 'json'\?\)"):
            make_output_parser("jsn")
