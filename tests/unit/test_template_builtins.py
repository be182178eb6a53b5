"""The built-in renderers, output parsers, Jinja filters and retrievers are the answers of one
lookup each (``builtin_*``, the hooks' ``trylast`` implementations); an unknown name is an error
only when the lookup in use returns None, never a second look in a table of ours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.dialects.opencompass.retrievers import FixKRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import Retriever
from pytest_promptsuite.dialects.opencompass.retrievers import ZeroRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import builtin_retriever
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.files.history_filters import BUILTIN_FILTERS
from pytest_promptsuite.prompts.files.history_filters import builtin_filter
from pytest_promptsuite.prompts.files.history_filters import indent
from pytest_promptsuite.prompts.files.renderers import BUILTIN_RENDERERS
from pytest_promptsuite.prompts.files.renderers import DelimiterRenderer
from pytest_promptsuite.prompts.files.renderers import FormatRenderer
from pytest_promptsuite.prompts.files.renderers import JinjaRenderer
from pytest_promptsuite.prompts.files.renderers import NoneRenderer
from pytest_promptsuite.prompts.files.renderers import builtin_renderer
from pytest_promptsuite.prompts.files.renderers import get_renderer
from pytest_promptsuite.prompts.output_parsers import BUILTIN_OUTPUT_PARSERS
from pytest_promptsuite.prompts.output_parsers import builtin_output_parser
from pytest_promptsuite.prompts.output_parsers import make_output_parser
from pytest_promptsuite.prompts.task_prompts import TaskPrompts


def _nothing(name: str, params: dict[str, Any]) -> None:
    return None


class TestBuiltinRenderer:
    def test_names(self) -> None:
        assert BUILTIN_RENDERERS == ("format", "delimiters", "jinja", "none")
        assert isinstance(builtin_renderer("format", {}), FormatRenderer)
        assert isinstance(builtin_renderer("none", {}), NoneRenderer)
        assert builtin_renderer("delimiters", {"start": "<", "end": ">"}) == DelimiterRenderer("<", ">")
        assert builtin_renderer("dollar", {}) is None

    def test_bad_params_are_config_errors(self) -> None:
        with pytest.raises(ConfigError, match=r"renderer 'format': unknown key 'x' \(it takes none\)"):
            builtin_renderer("format", {"x": 1})
        with pytest.raises(ConfigError, match="renderer 'delimiters' needs 'start' and 'end'"):
            builtin_renderer("delimiters", {"start": "<"})

    def test_jinja_takes_the_filter_lookup_it_is_given(self) -> None:
        def stars(name: str) -> Any:
            return (lambda v: f"*{v}*") if name == "stars" else None

        made = builtin_renderer("jinja", {})
        assert isinstance(made, JinjaRenderer) and made.make_filter is None
        renderer = made.with_filters(stars)
        assert isinstance(renderer, JinjaRenderer) and renderer.make_filter is stars
        assert renderer.render("{{ input | stars }}", {"input": "x"}) == "*x*"
        assert renderer.with_filters(builtin_filter) is renderer  # a bound renderer keeps its lookup

    def test_an_unbound_jinja_renderer_is_given_the_suites_filters(self) -> None:
        def lookup(name: str) -> Any:
            return (lambda v: "mine") if name == "shout" else builtin_filter(name)

        def make(name: str, params: dict[str, Any]) -> Any:  # the hook
            return builtin_renderer(name, params)

        renderer = get_renderer("jinja", make=make, make_filter=lookup)
        assert isinstance(renderer, JinjaRenderer) and renderer.make_filter is lookup
        assert renderer.render("{{ input | shout }} {{ input | indent(2) }}", {"input": "x"}) == "mine   x"

    def test_a_lookup_that_makes_nothing_is_an_unknown_renderer(self) -> None:
        message = r"unknown renderer 'format'; built-in: format, delimiters, jinja, none, or add one"
        with pytest.raises(ConfigError, match=message):
            get_renderer("format", make=_nothing)


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


class TestBuiltinFilter:
    def test_ours_and_only_ours(self) -> None:
        assert BUILTIN_FILTERS == ("first_turns", "last_turns", "user_assistant_sequence", "to_messages", "indent")
        assert builtin_filter("indent") is indent
        assert builtin_filter("upper") is None  # Jinja's own, left to Jinja
        assert builtin_filter("shout") is None

    def _render(self, tmp_path: Path, content: str, row: dict[str, Any], **kwargs: Any) -> Any:
        path = tmp_path / "prompts.yml"
        path.write_text(f"prompts:\n  - task: a\n    content: '{content}'\n", encoding="utf-8")
        return TaskPrompts.load(path, **kwargs).select("a").render(row)

    def test_jinja_builtins_stay_and_ours_replace_jinjas_of_the_same_name(self, tmp_path: Path) -> None:
        rendered = self._render(tmp_path, "{{ t | upper }}|{{ t | indent(2) }}", {"t": "a\nb"})
        assert rendered == "A\nB|  a\n  b"  # NeMo's indent indents the first line too; Jinja's does not

    def test_a_filter_named_by_map_is_looked_up_too(self, tmp_path: Path) -> None:
        assert self._render(tmp_path, '{{ ts | map("indent", 1) | join(",") }}', {"ts": ["a", "b"]}) == " a, b"

    def test_the_environment_has_none_of_ours_unless_the_lookup_makes_them(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="No filter named 'to_messages'"):
            self._render(tmp_path, "{{ h | to_messages }}", {"h": []}, make_filter=lambda name: None)
        assert self._render(tmp_path, "{{ t | indent(2) }}", {"t": "a\nb"}, make_filter=lambda name: None) == (
            "a\n  b"  # Jinja's indent: the first line is not indented
        )


class TestBuiltinRetriever:
    def test_names(self) -> None:
        assert isinstance(builtin_retriever("ZeroRetriever", {}), ZeroRetriever)
        fixk = builtin_retriever("FixKRetriever", {"fix_id_list": [1]})
        assert isinstance(fixk, FixKRetriever)
        assert builtin_retriever("LastKRetriever", {}) is None
        assert builtin_retriever(["not", "a", "name"], {}) is None

    def test_bad_params_are_template_errors(self) -> None:
        with pytest.raises(TemplateError, match="retriever: FixKRetriever needs 'fix_id_list'"):
            builtin_retriever("FixKRetriever", {})
        with pytest.raises(TemplateError, match="retriever: unknown key 'k' for ZeroRetriever"):
            builtin_retriever("ZeroRetriever", {"k": 1})

    def test_render_request_asks_the_lookup_it_is_given(self) -> None:
        class Last(Retriever):
            def retrieve(self, train: Any, tests: Any, *, output_column: str | None = None) -> list[list[int]]:
                return [[len(train) - 1] for _ in tests]

        asked: list[tuple[str, dict[str, Any]]] = []

        def make(*, name: str, params: dict[str, Any]) -> Retriever | None:
            asked.append((name, params))
            return Last() if name == "FixKRetriever" else None

        request = {
            "prompt_template": {"template": "</E>Q: {q}", "ice_token": "</E>"},
            "ice_template": {"template": "{q}={a} "},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0]},
            "ice_examples": [{"q": "1", "a": "one"}, {"q": "2", "a": "two"}],
            "example": {"q": "3"},
            "output_column": "a",
        }
        assert render_request(request, make_retriever=make)["retrieved"] == [1]
        assert asked == [("FixKRetriever", {"fix_id_list": [0]})]
        with pytest.raises(TemplateError, match=r"retriever.type: unknown retriever 'ZeroRetriever' \(known: "):
            render_request({**request, "retriever": None}, make_retriever=make)
