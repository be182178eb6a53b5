"""``[template] semantics = "promptfoo"``: a template file renders as promptfoo's Nunjucks renders it."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.prompts.files.promptfoo import PromptfooRenderer
from pytest_promptsuite.prompts.files.promptfoo import resolve_vars


@pytest.mark.parametrize(
    ("template", "row", "rendered"),
    [
        ("[{{ nothing }}][{{ nothing.deeper }}]", {}, "[][]"),  # undefined renders empty
        (
            "{{ a }} {{ b }} {{ c }} {{ d }} {{ e }}",
            {"a": True, "b": 1.0, "c": [1, "x"], "d": None, "e": {}},
            "true 1 1,x  [object Object]",
        ),
        ("{{ items | dump }}", {"items": [{"name": "a", "n": 1}]}, '[{"name":"a","n":1}]'),
        ("{{ (raw | load).k[1] }}", {"raw": '{"k": [1, 2]}'}, "2"),
        ("{{ ask }}", {"ask": "tweet about {{topic}}", "topic": "cats"}, "tweet about cats"),
        ("{{ topic | upper }}", {"topic": "dogs"}, "DOGS"),
    ],
)
def test_nunjucks_rules(template: str, row: dict[str, Any], rendered: str) -> None:
    assert PromptfooRenderer().render(template, row) == rendered


def test_every_field_may_be_missing() -> None:
    reads = PromptfooRenderer().fields("{{ a }} {% if b %}{{ c }}{% endif %}")
    assert {r.name for r in reads} == {"a", "b", "c"} and all(r.guarded for r in reads)


def test_vars_compose_as_promptfoos_resolve_variables() -> None:
    # each pass fills the first {{ name }} of each var; a name not defined stays as written
    row = {"a": "{{b}} and {{c}}", "b": "B{{c}}", "c": "C", "d": "{{ missing }}"}
    assert resolve_vars(row) == {"a": "BC and C", "b": "BC", "c": "C", "d": "{{ missing }}"}
