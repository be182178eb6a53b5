"""Stage tests for renderers (format, delimiters, jinja, none), template files read relative to the
suite config, and prompt versions (variants) over the ``[template]`` table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import TemplateConfig
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.files.renderers import DelimiterRenderer
from pytest_promptsuite.prompts.files.renderers import FormatRenderer
from pytest_promptsuite.prompts.files.renderers import JinjaRenderer
from pytest_promptsuite.prompts.files.renderers import NoneRenderer
from pytest_promptsuite.prompts.files.renderers import Renderer
from pytest_promptsuite.prompts.files.renderers import builtin_renderer
from pytest_promptsuite.prompts.files.renderers import get_renderer
from pytest_promptsuite.prompts.files.substitute import substitute
from pytest_promptsuite.prompts.output_parsers import OutputParserError
from pytest_promptsuite.prompts.prompt_sources import BUILTIN_MAKERS
from pytest_promptsuite.prompts.prompt_sources import PromptSource
from pytest_promptsuite.prompts.prompt_sources import core_prompt_source
from pytest_promptsuite.prompts.prompt_sources import load_template_file
from pytest_promptsuite.prompts.prompt_sources import string_template


def prompt_source(
    config: SuiteConfig, table: TemplateConfig | None = None, *, model: str = "fake", variant: str | None = None
) -> PromptSource | None:
    """Make the core's source of a template file or task prompt (None for another kind of table)."""
    table = table if table is not None else config.template
    return core_prompt_source(config, table, variant, ModelConfig(spec=model), BUILTIN_MAKERS)


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


def suite(tmp_path: Path, toml: str) -> SuiteConfig:
    folder = tmp_path / "suite"
    folder.mkdir(exist_ok=True)
    (folder / "promptsuite.toml").write_text(toml, encoding="utf-8")
    return load_config(folder / "promptsuite.toml")


class TestTemplateFiles:
    def test_read_byte_for_byte(self, tmp_path: Path) -> None:
        config = suite(tmp_path, "")
        data = "\ufeffLine one  \r\nLine two\t\r\n\r\n  {input}\n\n".encode()
        (tmp_path / "suite" / "prompts").mkdir()
        (tmp_path / "suite" / "prompts" / "v1.txt").write_bytes(data)
        assert load_template_file(config, "prompts/v1.txt").encode("utf-8") == data

    def test_parent_path_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "x.txt").write_text("outside")
        config = suite(tmp_path, "")
        with pytest.raises(ConfigError) as info:
            load_template_file(config, "../x.txt")
        assert str(info.value) == (
            f"{config.path}: template.template_file = '../x.txt' points outside the suite's folder "
            f"{config.root.resolve()}"
        )

    def test_symlink_pointing_outside_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "secret.txt").write_text("outside")
        config = suite(tmp_path, "")
        (tmp_path / "suite" / "link.txt").symlink_to(tmp_path / "secret.txt")
        with pytest.raises(ConfigError, match="template.template_file = 'link.txt' points outside"):
            load_template_file(config, "link.txt")

    def test_symlink_inside_is_fine(self, tmp_path: Path) -> None:
        config = suite(tmp_path, "")
        (tmp_path / "suite" / "real.txt").write_text("inside {input}")
        (tmp_path / "suite" / "link.txt").symlink_to(tmp_path / "suite" / "real.txt")
        assert load_template_file(config, "link.txt") == "inside {input}"

    def test_missing_and_binary_files(self, tmp_path: Path) -> None:
        config = suite(tmp_path, "")
        with pytest.raises(ConfigError, match="template.template_file = 'nope.txt': cannot read"):
            load_template_file(config, "nope.txt")
        (tmp_path / "suite" / "bin.txt").write_bytes(b"\xff\xfe\x00")
        with pytest.raises(ConfigError, match="bin.txt: the template file is not UTF-8 text"):
            load_template_file(config, "bin.txt")

    def test_string_template_from_file_with_renderer(self, tmp_path: Path) -> None:
        config = suite(
            tmp_path,
            '[template]\ntemplate_file = "prompts/v2.txt"\n'
            'renderer = { type = "delimiters", start = "<", end = ">" }\n',
        )
        (tmp_path / "suite" / "prompts").mkdir()
        (tmp_path / "suite" / "prompts" / "v2.txt").write_text('{"q": "<input>"} <oops>', encoding="utf-8")
        template = string_template(config)
        assert template is not None
        assert template.render({"input": "hi", "oops": "!"}) == '{"q": "hi"} !'
        with pytest.raises(TemplateError, match="^prompts/v2.txt: undefined variable 'oops'"):
            template.render({"input": "hi"})

    def test_string_template_inline_and_absent(self, tmp_path: Path) -> None:
        config = suite(tmp_path, '[template]\ntemplate = "Q: {input}"\n')
        template = string_template(config)
        assert template is not None and template.render(ROW) == "Q: 1+1=?"
        assert string_template(suite(tmp_path, "")) is None

    def test_string_template_bad_renderer_names_the_config(self, tmp_path: Path) -> None:
        config = suite(tmp_path, '[template]\ntemplate = "x"\nrenderer = "jinga"\n')
        message = r"promptsuite.toml:3: unknown renderer 'jinga' \(did you mean 'jinja'\?\)"
        with pytest.raises(ConfigError, match=message):
            string_template(config)


VARIANTS = """
[template]
task_prompts = "prompts/v1.yml"
task = "answer"
mode = "standard"
[variants.v1]
task_prompts = "prompts/v1.yml"
[variants.v2]
task_prompts = "prompts/v2.yml"
[variants.compact]
mode = "compact"
[variants.file]
template_file = "prompts/plain.txt"
renderer = "none"
"""


class TestVariants:
    def test_variant_overrides_template_keys(self, tmp_path: Path) -> None:
        config = suite(tmp_path, VARIANTS)
        v2 = config.template_for("v2")
        assert (v2.task_prompts, v2.task, v2.mode) == ("prompts/v2.yml", "answer", "standard")
        compact = config.template_for("compact")
        assert (compact.task_prompts, compact.task, compact.mode) == ("prompts/v1.yml", "answer", "compact")
        assert config.template_for(None) == config.template

    def test_variant_of_another_kind_drops_the_default_prompt(self, tmp_path: Path) -> None:
        file = suite(tmp_path, VARIANTS).template_for("file")
        assert (file.task_prompts, file.task, file.mode) == (None, None, None)
        assert (file.template_file, file.renderer) == ("prompts/plain.txt", "none")

    def test_unknown_variant(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="no variant 'v3'.*; variants: v1, v2, compact, file"):
            suite(tmp_path, VARIANTS).template_for("v3")


PROMPTS_YML = """\
prompts:
  - task: answer
    messages:
      - {type: system, content: "Answer {{ input }} as JSON."}
    output_parser: json
    stop: ["###"]
  - task: answer
    models: [openai/gpt-4o-mini]
    content: "mini: {{ input }}"
"""


class TestPromptSource:
    CASE = PromptCase(case_id="c1", input="1+1=?", slice="s")

    def test_task_prompts_table(self, tmp_path: Path) -> None:
        config = suite(tmp_path, '[template]\ntask_prompts = "prompts.yml"\ntask = "answer"\n')
        (tmp_path / "suite" / "prompts.yml").write_text(PROMPTS_YML, encoding="utf-8")
        source = prompt_source(config, model="fake")
        assert source is not None
        assert source.prompt(self.CASE) == [{"role": "system", "content": "Answer 1+1=? as JSON."}]
        assert source.params == {"stop": ["###"]}
        assert source.parse_output('Here: {"a": 2}') == '{"a": 2}'
        with pytest.raises(OutputParserError):
            source.parse_output("two")
        mini = prompt_source(config, model="openai:gpt-4o-mini")
        assert mini is not None and mini.prompt(self.CASE) == "mini: 1+1=?"
        assert mini.params == {} and mini.parse_output("two") == "two"

    def test_template_file_table(self, tmp_path: Path) -> None:
        config = suite(tmp_path, '[template]\ntemplate_file = "t.txt"\nrenderer = "jinja"\n')
        (tmp_path / "suite" / "t.txt").write_text("{{ history | to_messages | length }} {{ input }}")
        source = prompt_source(config)
        assert source is not None and source.prompt(self.CASE) == "1 1+1=?"
        assert source.params == {} and source.parse_output(" x ") == " x "

    def test_neither_is_none(self, tmp_path: Path) -> None:
        assert prompt_source(suite(tmp_path, '[template]\nprompt_template = "Q: {input}"\n')) is None
        assert prompt_source(suite(tmp_path, "")) is None

    @pytest.mark.parametrize(
        ("toml", "message"),
        [
            ('task_prompts = "p.yml"\ntask = "a"\ntemplate_file = "t.txt"\n', "takes exactly one of"),
            ('task_prompts = "p.yml"\nprompt_template = "{input}"\n', "takes exactly one of"),
            ('task_prompts = "p.yml"\n', "uses task prompts but has no 'task'"),
            ('task = "a"\n', "uses task prompts but has no 'task_prompts'"),
            ('template = "x"\nmode = "compact"\n', "template.mode applies to task prompts"),
            ('task_prompts = "missing.yml"\ntask = "a"\n', "task_prompts = 'missing.yml': no such file"),
        ],
        ids=["task-and-file", "task-and-infer-cfg", "no-task", "no-file", "mode-alone", "missing"],
    )
    def test_bad_tables(self, tmp_path: Path, toml: str, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            prompt_source(suite(tmp_path, "[template]\n" + toml))

    def test_variant_of_another_kind(self, tmp_path: Path) -> None:
        config = suite(
            tmp_path,
            '[template]\ntask_prompts = "prompts.yml"\ntask = "answer"\n[variants.plain]\ntemplate = "plain {input}"\n',
        )
        (tmp_path / "suite" / "prompts.yml").write_text(PROMPTS_YML, encoding="utf-8")
        source = prompt_source(config, config.template_for("plain"))
        assert source is not None and source.prompt(self.CASE) == "plain 1+1=?"
