"""Stage tests for ``prompts.files.renderers``: format, delimiters, jinja and none, and the renderer a spec
names."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.files.history_filters import builtin_filter
from pytest_promptsuite.prompts.files.renderers import BUILTIN_RENDERERS
from pytest_promptsuite.prompts.files.renderers import DelimiterRenderer
from pytest_promptsuite.prompts.files.renderers import FormatRenderer
from pytest_promptsuite.prompts.files.renderers import JinjaRenderer
from pytest_promptsuite.prompts.files.renderers import NoneRenderer
from pytest_promptsuite.prompts.files.renderers import Renderer
from pytest_promptsuite.prompts.files.renderers import builtin_renderer
from pytest_promptsuite.prompts.files.renderers import get_renderer
from pytest_promptsuite.prompts.files.substitute import substitute


ROW = {"input": "1+1=?", "composer": "John Williams", "answer": "2", "n": 5}


class TestFormat:
    @pytest.mark.parametrize(
        ("template", "expected"),
        [
            ("Q: {input}\nA: {answer}", "Q: 1+1=?\nA: 2"),
            ("{missing} {input}", "{missing} 1+1=?"),
            ("{{input}}", "{1+1=?}"),
            ("{input!r} {input:>5} { input } {0} {}", "{input!r} {input:>5} { input } {0} {}"),
            ("{n} movies", "5 movies"),
        ],
        ids=["fill", "missing-verbatim", "no-brace-escaping", "only-exact-form", "str-of-value"],
    )
    def test_spec_section_4(self, template: str, expected: str) -> None:
        assert get_renderer("format").render(template, ROW) == expected

    def test_is_the_default_and_delegates_to_substitute(self) -> None:
        renderer = get_renderer(None)
        assert isinstance(renderer, FormatRenderer)
        row = {"a": "{b}", "b": "X"}
        assert renderer.render("{a}|{b}", row) == substitute("{a}|{b}", row) == "{b}|X"


class TestDelimiters:
    def test_spring_ai_composer_example(self) -> None:
        renderer = get_renderer({"type": "delimiters", "start": "<", "end": ">"})
        template = "Tell me the names of 5 movies whose soundtrack was composed by <composer>.\n"
        assert renderer.render(template, ROW) == (
            "Tell me the names of 5 movies whose soundtrack was composed by John Williams.\n"
        )

    def test_json_heavy_template_needs_no_escaping(self) -> None:
        renderer = get_renderer({"type": "delimiters", "start": "[[", "end": "]]"})
        template = (
            'Reply with JSON only: {"question": "[[input]]", "steps": [], '
            '"meta": {"lang": "en", "n": [[n]]}}\nExample: {"answer": "4"}'
        )
        assert renderer.render(template, ROW) == (
            'Reply with JSON only: {"question": "1+1=?", "steps": [], '
            '"meta": {"lang": "en", "n": 5}}\nExample: {"answer": "4"}'
        )

    def test_angle_brackets_that_are_not_placeholders_stay(self) -> None:
        renderer = DelimiterRenderer("<", ">")
        text = renderer.render("if a < b > c then <input>; <<input>>", ROW)
        assert text == "if a < b > c then 1+1=?; <1+1=?>"

    def test_single_pass_values_are_not_rescanned(self) -> None:
        renderer = DelimiterRenderer("<", ">")
        assert renderer.render("<a>|<b>", {"a": "<b>", "b": "X"}) == "<b>|X"

    def test_keys_that_are_not_identifiers_work(self) -> None:
        renderer = DelimiterRenderer("[[", "]]")
        assert renderer.render("[[order-id]] [[订单]]", {"order-id": 7, "订单": "A1"}) == "7 A1"

    def test_unknown_placeholder_is_an_error_naming_it(self) -> None:
        renderer = DelimiterRenderer("<", ">")
        with pytest.raises(TemplateError) as info:
            renderer.render("composed by <composr>", ROW)
        assert str(info.value).startswith(
            "undefined variable 'composr' (placeholder '<composr>'); did you mean 'composer'?"
        )
        with pytest.raises(TemplateError) as info:
            renderer.render("<zzzz>", ROW)
        assert str(info.value) == (
            "undefined variable 'zzzz' (placeholder '<zzzz>'). The row has: answer, composer, input, n. "
            "Use renderer strict = false to keep unknown placeholders verbatim."
        )

    def test_not_strict_keeps_unknown_placeholders(self) -> None:
        renderer = get_renderer({"type": "delimiters", "start": "<", "end": ">", "strict": False})
        assert renderer.render("<think> <input>", ROW) == "<think> 1+1=?"

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ({"type": "delimiters", "start": "<"}, "needs 'start' and 'end'"),
            ({"type": "delimiters", "start": "", "end": ">"}, "non-empty strings 'start' and 'end'"),
            ({"type": "delimiters", "start": "<", "end": ">", "strict": "no"}, "'strict' must be true or false"),
            ({"type": "delimiters", "start": "<", "end": ">", "stat": 1}, "unknown key 'stat'"),
        ],
        ids=["missing-end", "empty-start", "strict-type", "unknown-key"],
    )
    def test_bad_config(self, spec: dict[str, Any], message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            get_renderer(spec)


class TestJinjaAndNone:
    def test_jinja_renders_with_builtin_and_task_filters(self) -> None:
        renderer = get_renderer("jinja")
        history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        assert (
            renderer.render("{{ input | upper }}\n{{ h | user_assistant_sequence }}", {"input": "ok", "h": history})
            == "OK\nUser: hi\nAssistant: hello"
        )

    def test_jinja_is_sandboxed(self) -> None:
        with pytest.raises(TemplateError, match="refused by the sandbox: access to attribute '__class__'"):
            get_renderer("jinja").render("{{ ''.__class__.__mro__ }}", ROW)
        with pytest.raises(TemplateError, match="refused by the sandbox: access to attribute 'upper'"):
            get_renderer("jinja").render("{{ input.upper() }}", ROW)

    def test_jinja_undefined_variable(self) -> None:
        with pytest.raises(TemplateError, match="^undefined variable 'question'$"):
            get_renderer("jinja").render("{{ question }}", ROW)

    def test_jinja_registered_filter(self) -> None:
        def make_filter(name: str) -> Any:
            return (lambda v: f"*{v}*") if name == "stars" else None

        renderer = get_renderer("jinja", make_filter=make_filter)
        assert isinstance(renderer, JinjaRenderer)
        assert renderer.render("{{ input | stars }}", ROW) == "*1+1=?*"

    def test_none_keeps_the_template(self) -> None:
        renderer = get_renderer({"type": "none"})
        assert isinstance(renderer, NoneRenderer)
        assert renderer.render("{input} <composer> {{ x }}", ROW) == "{input} <composer> {{ x }}"


class TestGetRenderer:
    def test_unknown_type_suggests(self) -> None:
        message = r"unknown renderer 'delimeters' \(did you mean 'delimiters'\?\)"
        with pytest.raises(ConfigError, match=message):
            get_renderer("delimeters")

    def test_unknown_key_of_a_parameterless_renderer(self) -> None:
        with pytest.raises(ConfigError, match="renderer 'jinja': unknown key 'strict' \\(it takes none\\)"):
            get_renderer({"type": "jinja", "strict": True})

    def test_bad_spec(self) -> None:
        with pytest.raises(ConfigError, match="must be a name or"):
            get_renderer({"start": "<"})

    def test_hook_wins_and_gets_the_params(self) -> None:
        seen: list[tuple[str, dict[str, Any]]] = []

        class Dollar:
            def render(self, template: str, row: Any) -> str:
                return template.replace("$input", str(row["input"]))

        def make(name: str, params: dict[str, Any]) -> Any:  # a conftest's hook, then the built-in one
            seen.append((name, params))
            return Dollar() if name in ("dollar", "format") else builtin_renderer(name, params)

        assert get_renderer({"type": "dollar", "x": 1}, make=make).render("$input", ROW) == "1+1=?"
        assert isinstance(get_renderer("format", make=make), Dollar)
        assert isinstance(get_renderer("none", make=make), NoneRenderer)
        assert seen == [("dollar", {"x": 1}), ("format", {}), ("none", {})]
        assert isinstance(Dollar(), Renderer)

    def test_hook_result_without_render(self) -> None:
        with pytest.raises(ConfigError, match="has no render\\(template, row\\) method"):
            get_renderer("odd", make=lambda name, params: object())


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
