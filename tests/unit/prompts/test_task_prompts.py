"""Stage tests for ``prompts.task_prompts`` (NeMo Guardrails' prompts.yml layout): loading, selection,
rendering in the sandbox, max_length truncation, and the support_bot example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.prompts.prompt_sources import RowSource
from pytest_promptsuite.prompts.task_prompts import TaskPrompts
from pytest_promptsuite.prompts.task_prompts import load_task_prompts
from tests.unit.prompts.support import HISTORY
from tests.unit.prompts.support import load
from tests.unit.prompts.support import prompt_source
from tests.unit.prompts.support import write


EXAMPLE = Path(__file__).parents[3] / "example_suites" / "support_bot"


SELECTION = """\
prompts:
  - task: answer
    content: default-1
  - task: answer
    content: default-2
  - task: answer
    models: [openai/gpt-4o]
    content: gpt4o-standard
  - task: answer
    models: [gpt-4o-mini]
    content: mini-by-name
  - task: answer
    models: [openai]
    content: any-openai
  - task: answer
    mode: compact
    content: compact-default
  - task: answer
    models: [other/model]
    mode: terse
    content: terse-other-model
  - task: summarize
    models: [openai/gpt-4o]
    content: summary-gpt4o-only
"""


class TestSelection:
    @pytest.mark.parametrize(
        ("model", "mode", "expected"),
        [
            pytest.param("openai:gpt-4o", None, "gpt4o-standard", id="exact-model-beats-default"),
            pytest.param("openai/gpt-4o", "standard", "gpt4o-standard", id="nemo-spelling-matches"),
            pytest.param("fake", None, "default-2", id="last-in-file-wins-among-equals"),
            pytest.param("openai:gpt-4o-mini", None, "mini-by-name", id="model-name-beats-provider"),
            pytest.param("openai:gpt-3.5", None, "any-openai", id="provider-beats-default"),
            pytest.param("fake", "compact", "compact-default", id="mode-prompt-used"),
            pytest.param("openai:gpt-4o", "compact", "compact-default", id="mode-beats-model-match"),
            pytest.param("fake", "verbose", "default-2", id="unknown-mode-falls-back-to-standard"),
            pytest.param("fake", "terse", "default-2", id="mode-for-other-model-falls-back"),
        ],
    )
    def test_rules(self, tmp_path: Path, model: str, mode: str | None, expected: str) -> None:
        prompts = load(tmp_path, SELECTION)
        assert prompts.select("answer", model, mode).render({}) == expected

    def test_last_in_file_wins_across_files_of_a_folder(self, tmp_path: Path) -> None:
        write(tmp_path, "prompts:\n  - task: t\n    content: from-a\n", "dir/a.yml")
        write(tmp_path, "prompts:\n  - task: t\n    content: from-b\n", "dir/sub/b.yaml")
        write(tmp_path, "models: []\n", "dir/config.yml")  # no prompts key: skipped in a folder
        prompts = TaskPrompts.load(tmp_path / "dir")
        assert [p.render({}) for p in prompts.prompts] == ["from-a", "from-b"]
        assert prompts.select("t").render({}) == "from-b"

    def test_unknown_task_names_the_task(self, tmp_path: Path) -> None:
        prompts = load(tmp_path, SELECTION)
        with pytest.raises(ConfigError) as info:
            prompts.select("anser", "fake")
        message = "no prompt for task 'anser' (did you mean 'answer'?); tasks: answer, summarize"
        assert message in str(info.value)

    def test_task_only_for_other_models(self, tmp_path: Path) -> None:
        prompts = load(tmp_path, SELECTION)
        with pytest.raises(
            ConfigError,
            match=r"no prompt for task 'summarize' on model 'fake': "
            r"every prompt for it lists other models",
        ):
            prompts.select("summarize", "fake")

    def test_where_points_at_the_prompt_line(self, tmp_path: Path) -> None:
        prompts = load(tmp_path, SELECTION)
        assert prompts.select("answer", "openai:gpt-4o").where == f"{tmp_path / 'prompts.yml'}:6"


class TestLoadingErrors:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("prompts:\n  - task: a\n    contnet: x\n", ":2: unknown key 'contnet' (did you mean 'content'?)"),
            ("prompts:\n  - task: a\n", ":2: a prompt needs exactly one of 'content'"),
            ("prompts:\n  - task: a\n    content: x\n    messages: []\n", "exactly one of 'content'"),
            ("prompts:\n  - content: x\n", ":2: a prompt needs a 'task'"),
            (
                "prompts:\n  - task: a\n    messages:\n      - type: human\n        content: x\n",
                "messages[0]: unknown type 'human'",
            ),
            ("prompts:\n  - task: a\n    content: '{{ x'\n", "line 1 of the template: unexpected end"),
            ("prompts:\n  - task: a\n    content: '{{ x | shout }}'\n", "No filter named 'shout'"),
            ("prompts:\n  - task: a\n    content: x\n    max_length: 0\n", "'max_length' must be a positive"),
            (
                "prompts:\n  - task: a\n    content: x\n    output_parser: jsn\n",
                "unknown output parser 'jsn' (did you mean 'json'?)",
            ),
            (
                "prompts:\n  - task: a\n    content: x\n    output_parser: strip_prefix\n",
                "'strip_prefix' needs a non-empty string 'prefix'",
            ),
            ("task: a\n", "has no 'prompts:' list"),
            ("prompts: [\n", "invalid YAML"),
        ],
        ids=[
            "unknown-key",
            "no-content",
            "both",
            "no-task",
            "bad-type",
            "syntax",
            "unknown-filter",
            "max-length",
            "unknown-parser",
            "parser-params",
            "no-prompts",
            "bad-yaml",
        ],
    )
    def test_bad_prompt_file(self, tmp_path: Path, text: str, message: str) -> None:
        # keys and shapes fail the load; a template or parser fails when its prompt is selected
        with pytest.raises(ConfigError) as info:
            load(tmp_path, text).select("a")
        assert message in str(info.value)
        assert str(tmp_path / "prompts.yml") in str(info.value)

    def test_a_prompt_no_case_selects_blocks_nothing(self, tmp_path: Path) -> None:
        prompts = load(
            tmp_path,
            """\
            prompts:
              - task: a
                content: 'fine {{ input }}'
              - task: b
                content: '{{ history | verbose_v1 }}'
                output_parser: is_content_safe
            """,
        )
        assert prompts.select("a").render({"input": "x"}) == "fine x"
        with pytest.raises(ConfigError) as info:
            prompts.select("b")
        assert f"{tmp_path / 'prompts.yml'}:4 (task 'b', mode 'standard')" in str(info.value)
        assert "No filter named 'verbose_v1'" in str(info.value)

    def test_symlink_out_of_the_suite_is_refused(self, tmp_path: Path) -> None:
        outside = write(tmp_path, "prompts:\n  - task: a\n    content: secret\n", "outside/p.yml")
        suite = tmp_path / "suite"
        (suite / "prompts").mkdir(parents=True)
        (suite / "prompts" / "p.yml").symlink_to(outside)
        (suite / "promptsuite.toml").write_text("[template]\ntask_prompts = 'prompts'\ntask = 'a'\n")
        config = load_config(suite / "promptsuite.toml")
        with pytest.raises(ConfigError, match="points outside the suite's folder"):
            load_task_prompts(config, "prompts")
        with pytest.raises(ConfigError, match="points outside the suite's folder"):
            load_task_prompts(config, "../outside/p.yml")


ROW = {
    "input": "where is my order?",
    "name": "Ada",
    "answer": None,
    "history": [
        {"role": "user", "content": "hi"},
        {"role": "bot", "content": "hello"},
        {"role": "user", "content": "where is my order?"},
    ],
}


class TestRendering:
    def test_content_prompt_is_a_string(self, tmp_path: Path) -> None:
        prompts = load(
            tmp_path,
            """\
            prompts:
              - task: a
                content: |-
                  Customer {{ name }} asks: {{ input }}
            """,
        )
        assert prompts.select("a").render(ROW) == "Customer Ada asks: where is my order?"

    def test_messages_prompt_has_openai_roles(self, tmp_path: Path) -> None:
        prompts = load(
            tmp_path,
            """\
            prompts:
              - task: a
                messages:
                  - type: system
                    content: You help {{ name }}.
                  - type: user
                    content: "Example question"
                  - type: bot
                    content: "Example answer"
                  - type: assistant
                    content: "{% if name == 'nobody' %}never{% endif %}"
                  - "{{ history | to_messages }}"
            """,
        )
        assert prompts.select("a").render(ROW) == [
            {"role": "system", "content": "You help Ada."},
            {"role": "user", "content": "Example question"},
            {"role": "assistant", "content": "Example answer"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "where is my order?"},
        ]

    def test_values_are_never_trimmed_or_rescanned(self, tmp_path: Path) -> None:
        prompts = load(tmp_path, "prompts:\n  - task: a\n    content: '[{{ input }}]'\n")
        row = {"input": "  {{ name }}  \n"}
        assert prompts.select("a").render(row) == "[  {{ name }}  \n]"

    def test_undefined_variable_names_variable_and_prompt(self, tmp_path: Path) -> None:
        prompts = load(tmp_path, "prompts:\n  - task: a\n    content: '{{ input }} {{ order_id }}'\n")
        with pytest.raises(TemplateError) as info:
            prompts.select("a").render(ROW)
        assert str(info.value) == (
            f"{tmp_path / 'prompts.yml'}:2 (task 'a', mode 'standard'): undefined variable 'order_id'"
        )

    def test_undefined_variable_in_a_message_names_the_message(self, tmp_path: Path) -> None:
        prompts = load(
            tmp_path,
            "prompts:\n  - task: a\n    messages:\n"
            "      - {type: system, content: ok}\n"
            "      - {type: user, content: '{{ missing }}'}\n",
        )
        message = r"mode 'standard'\) messages\[1\]: undefined variable 'missing'"
        with pytest.raises(TemplateError, match=message):
            prompts.select("a").render(ROW)

    @pytest.mark.parametrize(
        ("template", "attribute"),
        [
            ("{{ ''.__class__.__mro__ }}", "__class__"),
            ("{{ input.__class__ }}", "__class__"),
            ("{{ input.upper() }}", "upper"),
            ("{{ history.pop() }}", "pop"),
            ("{{ history[0].items() }}", "items"),
            ("{{ cycler.__init__.__globals__ }}", "__init__"),
        ],
        ids=["mro", "field-dunder", "field-method", "list-method", "dict-method", "globals"],
    )
    def test_sandbox_refuses_attribute_access(self, tmp_path: Path, template: str, attribute: str) -> None:
        prompts = load(tmp_path, f'prompts:\n  - task: a\n    content: "{template}"\n')
        with pytest.raises(TemplateError) as info:
            prompts.select("a").render(ROW)
        message = str(info.value)
        prefix = f"{tmp_path / 'prompts.yml'}:2 (task 'a', mode 'standard'): refused by the sandbox"
        assert message.startswith(prefix)
        assert f"access to attribute '{attribute}'" in message

    def test_items_and_loops_are_allowed(self, tmp_path: Path) -> None:
        prompts = load(
            tmp_path,
            """\
            prompts:
              - task: a
                content: "{% for t in history %}{{ loop.index }}.{{ t.role }}={{ t['content'] }};{% endfor %}"
            """,
        )
        assert prompts.select("a").render(ROW) == "1.user=hi;2.bot=hello;3.user=where is my order?;"

    def test_stop_and_max_tokens_become_params(self, tmp_path: Path) -> None:
        prompts = load(tmp_path, 'prompts:\n  - task: a\n    content: x\n    stop: ["\\nUser:"]\n    max_tokens: 50\n')
        assert prompts.select("a").params == {"stop": ["\nUser:"], "max_tokens": 50}


class TestTruncation:
    PROMPT = """\
        prompts:
          - task: chat
            messages:
              - type: system
                content: SYSTEM-PROMPT
              - "{{ history | to_messages }}"
          - task: text
            content: "S:{{ history | user_assistant_sequence }}"
        """
    # messages: 13 (system) + 2 per turn message = 23 characters for the whole history

    @pytest.mark.parametrize(
        ("budget", "kept"),
        [
            pytest.param(23, ["u1", "a1", "u2", "a2", "u3"], id="fits-0-dropped"),
            pytest.param(22, ["u2", "a2", "u3"], id="1-turn-dropped"),
            pytest.param(19, ["u2", "a2", "u3"], id="1-turn-dropped-exact-fit"),
            pytest.param(18, ["u3"], id="all-but-last-dropped"),
            pytest.param(15, ["u3"], id="all-but-last-exact-fit"),
        ],
    )
    def test_messages_drop_whole_oldest_turns(self, tmp_path: Path, budget: int, kept: list[str]) -> None:
        prompt = load(tmp_path, self.PROMPT).select("chat")
        messages = prompt.render({"history": HISTORY}, max_length=budget)
        assert messages[0] == {"role": "system", "content": "SYSTEM-PROMPT"}
        assert [m["content"] for m in messages[1:]] == kept

    def test_never_cuts_the_system_prompt_or_the_last_user_turn(self, tmp_path: Path) -> None:
        prompt = load(tmp_path, self.PROMPT).select("chat")
        with pytest.raises(TemplateError) as info:
            prompt.render({"history": HISTORY}, max_length=14)
        assert (
            "the prompt is 15 characters, over max_length 14 even with the 2 oldest turn(s) of history dropped"
        ) in str(info.value)
        assert "(task 'chat', mode 'standard')" in str(info.value)

    def test_content_prompt_counts_characters(self, tmp_path: Path) -> None:
        prompt = load(tmp_path, self.PROMPT).select("text")
        full = prompt.render({"history": HISTORY})
        assert full == "S:User: u1\nAssistant: a1\nUser: u2\nAssistant: a2\nUser: u3"
        assert prompt.render({"history": HISTORY}, max_length=len(full)) == full
        assert prompt.render({"history": HISTORY}, max_length=len(full) - 1) == "S:User: u2\nAssistant: a2\nUser: u3"
        assert prompt.render({"history": HISTORY}, max_length=10) == "S:User: u3"

    def test_max_length_of_the_prompt_file_applies(self, tmp_path: Path) -> None:
        prompts = load(
            tmp_path,
            """\
            prompts:
              - task: text
                max_length: 10
                content: "S:{{ history | user_assistant_sequence }}"
            """,
        )
        assert prompts.select("text").render({"history": HISTORY}) == "S:User: u3"
        assert len(prompts.select("text").render({"history": HISTORY}, max_length=1000)) > 10

    def test_system_turns_of_the_history_are_kept(self, tmp_path: Path) -> None:
        prompt = load(tmp_path, self.PROMPT).select("chat")
        history = [{"role": "system", "content": "ctx"}, *HISTORY]
        messages = prompt.render({"history": history}, max_length=20)
        assert [m["content"] for m in messages] == ["SYSTEM-PROMPT", "ctx", "u3"]

    def test_no_history_to_drop(self, tmp_path: Path) -> None:
        prompts = load(tmp_path, "prompts:\n  - task: a\n    content: '{{ input }}'\n    max_length: 3\n")
        with pytest.raises(TemplateError, match="over max_length 3 and it has no history turns to drop"):
            prompts.select("a").render({"input": "four"})


class TestSupportBotExample:
    """The example suite: v2 fixes the missing-information slice and breaks prompt injection."""

    def pass_rates(self, variant: str) -> dict[str, float]:
        config = load_config(EXAMPLE / "promptsuite.toml")
        source = prompt_source(config, config.template_for(variant), model=config.model.spec)
        assert source is not None and isinstance(source, RowSource)
        assert f"/prompts/{variant}.yml:" in source.template.where
        model = FakeModel.from_rules_file(EXAMPLE / "rules.json")
        totals: dict[str, list[bool]] = {}
        for line in (EXAMPLE / "cases.jsonl").read_text(encoding="utf-8").splitlines():
            case = PromptCase.from_dict(json.loads(line))
            output = source.parse_output(model.reply_to(ModelRequest(prompt=source.prompt(case))))
            passed = all(t in output for t in case.must_include)
            passed = passed and not any(t in output for t in case.must_not_include)
            totals.setdefault(case.slice, []).append(passed)
        return {s: sum(v) / len(v) for s, v in totals.items()}

    def test_v2_fixes_one_slice_and_breaks_another(self) -> None:
        v1, v2 = self.pass_rates("v1"), self.pass_rates("v2")
        assert v1 == {"退款": 1.0, "信息不足": 0.0, "提示词注入": 1.0}
        assert v2 == {"退款": 1.0, "信息不足": 1.0, "提示词注入": 0.0}

    def test_compact_mode_renders_a_string(self) -> None:
        config = load_config(EXAMPLE / "promptsuite.toml")
        prompts = load_task_prompts(config, "prompts/v1.yml")
        assert isinstance(
            prompts.select("answer_customer", "fake", "compact").render(
                {"input": "hi", "history": [], "shop": "ShopCo"}
            ),
            str,
        )
        assert isinstance(
            prompts.select("answer_customer", "fake", "standard").render(
                {"input": "hi", "history": [], "shop": "ShopCo"}
            ),
            list,
        )
