"""Stage tests for ``prompts.prompt_sources``: template files read inside the suite; the source its tables make."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.output_parsers import OutputParserError
from pytest_promptsuite.prompts.prompt_sources import load_template_file
from pytest_promptsuite.prompts.prompt_sources import string_template
from tests.unit.prompts.support import prompt_source


ROW = {"input": "1+1=?", "composer": "John Williams", "answer": "2", "n": 5}


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


class TestSystemMessage:
    """``[template] system`` / ``system_file``: a system message before the template's text, or the input."""

    CASE = PromptCase(case_id="r1", input="I want a refund", slice="s")

    def test_a_multi_line_system_message_then_the_input_with_no_escape(self, tmp_path: Path) -> None:
        config = suite(
            tmp_path, '[template]\nsystem = """\nYou are Acme\'s support assistant.\nBe brief: {no field}.\n"""\n'
        )
        source = prompt_source(config)
        assert source is not None
        assert source.prompt(self.CASE) == [
            {"role": "system", "content": "You are Acme's support assistant.\nBe brief: {no field}.\n"},
            {"role": "user", "content": "I want a refund"},
        ]
        [reads] = source.fields()
        assert (reads.name, [r.name for r in reads.reads or ()], reads.line) == ("template.system", ["input"], 2)

    def test_a_system_file_then_the_rendered_template(self, tmp_path: Path) -> None:
        config = suite(tmp_path, '[template]\nsystem_file = "system.txt"\ntemplate = "Customer: {input}"\n')
        (tmp_path / "suite" / "system.txt").write_text("Be brief.\nNever promise a refund.\n", encoding="utf-8")
        source = prompt_source(config)
        assert source is not None
        assert source.prompt(self.CASE) == [
            {"role": "system", "content": "Be brief.\nNever promise a refund.\n"},
            {"role": "user", "content": "Customer: I want a refund"},
        ]

    def test_a_multi_turn_input_follows_the_system_message_turn_by_turn(self, tmp_path: Path) -> None:
        source = prompt_source(suite(tmp_path, '[template]\nsystem = "S"\n'))
        assert source is not None
        case = PromptCase(case_id="m", input=["hi", "refund?"], answer=["hello"], slice="s")
        assert source.prompt(case) == [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "refund?"},
        ]

    def test_a_renderer_with_nothing_to_render_is_refused(self, tmp_path: Path) -> None:
        config = suite(tmp_path, '[template]\nsystem = "S"\nrenderer = "jinja"\n')
        with pytest.raises(ConfigError, match=r"promptsuite.toml:3: template.renderer needs a 'template_file' or"):
            prompt_source(config)

    def test_a_missing_system_file_names_its_line(self, tmp_path: Path) -> None:
        config = suite(tmp_path, '[template]\n\nsystem_file = "nope.txt"\n')
        with pytest.raises(ConfigError, match=r"promptsuite.toml:3: template.system_file = 'nope.txt': cannot read"):
            prompt_source(config)
