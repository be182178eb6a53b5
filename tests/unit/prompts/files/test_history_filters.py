"""Stage tests for ``prompts.files.history_filters``: our filters of a chat history (and of Colang text, as NeMo)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.files.history_filters import BUILTIN_FILTERS
from pytest_promptsuite.prompts.files.history_filters import builtin_filter
from pytest_promptsuite.prompts.files.history_filters import indent
from pytest_promptsuite.prompts.task_prompts import TaskPrompts
from tests.unit.prompts.support import HISTORY
from tests.unit.prompts.support import load


COLANG = 'user "hi"\n  express greeting\nbot express greeting\n  "Hello!"\nuser "bye"\n  express goodbye'
COLANG_2 = 'user action: user said "hi"\nbot intent: bot express greeting\n\nuser action: user said "bye"\n'


class TestFilters:
    def render(self, tmp_path: Path, expression: str, row: dict[str, Any]) -> str:
        prompts = load(tmp_path, f'prompts:\n  - task: a\n    content: "{expression}"\n')
        return str(prompts.select("a").render(row))

    @pytest.mark.parametrize(
        ("expression", "expected"),
        [
            ("{{ history | first_turns(1) | user_assistant_sequence }}", "User: u1\nAssistant: a1"),
            ("{{ history | first_turns(2) | length }}", "4"),
            ("{{ history | first_turns(0) | length }}", "0"),
            ("{{ history | last_turns(1) | user_assistant_sequence }}", "User: u3"),
            ("{{ history | last_turns(2) | user_assistant_sequence }}", "User: u2\nAssistant: a2\nUser: u3"),
            ("{{ history | last_turns(9) | length }}", "5"),
            ("{{ history | user_assistant_sequence }}", "User: u1\nAssistant: a1\nUser: u2\nAssistant: a2\nUser: u3"),
            ("{{ history | to_messages | map(attribute='role') | join(',') }}", "user,assistant,user,assistant,user"),
            (
                "{{ history | user_assistant_sequence | indent(2) }}",
                "  User: u1\n  Assistant: a1\n  User: u2\n  Assistant: a2\n  User: u3",
            ),
            ("{{ history | last_turns(1) | user_assistant_sequence | indent }}", "    User: u3"),
        ],
        ids=[
            "first-1",
            "first-2",
            "first-0",
            "last-1",
            "last-2",
            "last-more-than-all",
            "sequence",
            "to-messages",
            "indent-2",
            "indent-default",
        ],
    )
    def test_on_a_history(self, tmp_path: Path, expression: str, expected: str) -> None:
        assert self.render(tmp_path, expression, {"history": HISTORY}) == expected

    @pytest.mark.parametrize(
        ("expression", "expected"),
        [
            ("{{ c | first_turns(1) }}", 'user "hi"\n  express greeting\nbot express greeting\n  "Hello!"'),
            ("{{ c | last_turns(1) }}", 'user "bye"\n  express goodbye'),
        ],
        ids=["first", "last"],
    )
    def test_on_colang_text_like_nemo(self, tmp_path: Path, expression: str, expected: str) -> None:
        assert self.render(tmp_path, expression, {"c": COLANG}) == expected

    @pytest.mark.parametrize(
        ("expression", "expected"),
        [
            ("{{ c | first_turns(0) }}", ""),
            ("{{ c | first_turns(1) }}", 'user action: user said "hi"\nbot intent: bot express greeting\n'),
            ("{{ c | last_turns(1) }}", 'user action: user said "bye"\n'),
            ("{{ m | first_turns(1) }}", 'user "a"\n  x'),
            ("{{ m | last_turns(2) }}", 'user action: user said "b"\nbot y\nuser "c"\n  z'),
        ],
        ids=["first-0", "first", "last", "mixed-first", "mixed-last"],
    )
    def test_a_colang_2_user_action_starts_a_turn_as_in_nemo(
        self, tmp_path: Path, expression: str, expected: str
    ) -> None:
        """NeMo's ``first_turns`` / ``last_turns`` (nemoguardrails 0.10.1) count ``user action: `` lines."""
        row = {"c": COLANG_2, "m": 'user "a"\n  x\nuser action: user said "b"\nbot y\nuser "c"\n  z'}
        assert self.render(tmp_path, expression, row) == expected

    def test_indent_keeps_blank_lines_unindented(self, tmp_path: Path) -> None:
        assert self.render(tmp_path, "{{ t | indent(3) }}", {"t": "a\n\nb"}) == "   a\n\n   b"

    def test_history_filter_on_a_string_field_is_a_clear_error(self, tmp_path: Path) -> None:
        with pytest.raises(TemplateError, match="filter 'to_messages' expects a history: a list of"):
            self.render(tmp_path, "{{ input | to_messages }}", {"input": "hi"})

    def test_registered_filter_wins_over_builtin(self, tmp_path: Path) -> None:
        asked: list[str] = []

        def make_filter(name: str) -> Any:
            asked.append(name)
            if name == "shout":
                return lambda value: str(value).upper() + "!"
            if name == "indent":
                return lambda value, n=4: f"<{n}>{value}"
            return None

        text = "prompts:\n  - task: a\n    content: '{{ input | shout }} {{ input | indent(2) }}'\n"
        prompts = load(tmp_path, text, make_filter=make_filter)
        assert prompts.select("a").render({"input": "hi"}) == "HI! <2>hi"
        assert sorted(asked) == ["indent", "shout"]


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
