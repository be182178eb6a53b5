"""``[template] semantics = "promptfoo"``: a template file renders as promptfoo's Nunjucks renders it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.dialects.promptfoo.node import NodeFilters
from pytest_promptsuite.dialects.promptfoo.nunjucks import PromptfooRenderer
from pytest_promptsuite.dialects.promptfoo.nunjucks import resolve_vars
from pytest_promptsuite.errors import TemplateError


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


def _filters(tmp_path: Path) -> NodeFilters:
    (tmp_path / "allcaps.js").write_text("module.exports = (s) => String(s).toUpperCase();\n", encoding="utf-8")
    (tmp_path / "wrap.js").write_text("module.exports = { default: (s, a, b) => a + s + b };\n", encoding="utf-8")
    (tmp_path / "boom.js").write_text("module.exports = () => { throw new Error('no way'); };\n", encoding="utf-8")
    (tmp_path / "chatty.js").write_text("module.exports = (s) => { console.log('seen', s); return s + '!'; };\n")
    return NodeFilters({name: tmp_path / f"{name}.js" for name in ("allcaps", "wrap", "boom", "chatty")})


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_nunjucks_filters_run_in_one_node_process(tmp_path: Path) -> None:
    filters = _filters(tmp_path)
    renderer = PromptfooRenderer(None, filters)
    try:
        template = "{{ x | allcaps }} {{ x | wrap('[', ']') }} {{ x | upper }}"
        assert [renderer.render(template, {"x": x}) for x in ("hi", "yo")] == ["HI [hi] HI", "YO [yo] YO"]
        first = filters.pid
        assert first is not None
        assert renderer.render("{{ n | allcaps }}", {"n": 2}) == "2" and filters.pid == first  # one process
        assert renderer.render("{{ x | chatty }}", {"x": "hi"}) == "hi!"  # what it logs is not its answer
        with pytest.raises(TemplateError, match=r"nunjucksFilters 'boom' \(boom.js\) raised: no way"):
            renderer.render("{{ x | boom }}", {"x": "a"})
    finally:
        filters.close()


def test_a_nunjucks_filter_without_node_names_the_filter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TemplateError, match=r"nunjucksFilters 'allcaps' \(allcaps.js\) is JavaScript and needs Node"):
        PromptfooRenderer(None, _filters(tmp_path)).fields("{{ x | allcaps }}")
