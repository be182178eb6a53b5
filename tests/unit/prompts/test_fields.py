"""Stage tests for ``prompts.fields``: the static prompt check (which fields each template reads, and the cases
that lack one)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.prompts.case_prompts import CasePrompts
from pytest_promptsuite.prompts.fields import FieldRead
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.fields import check_fields
from pytest_promptsuite.prompts.fields import jinja_reads
from pytest_promptsuite.prompts.fields import placeholder_reads
from pytest_promptsuite.prompts.files.jinja import sandbox_environment
from pytest_promptsuite.prompts.files.renderers import DelimiterRenderer
from pytest_promptsuite.prompts.files.renderers import FormatRenderer
from pytest_promptsuite.prompts.files.renderers import JinjaRenderer
from pytest_promptsuite.prompts.files.renderers import NoneRenderer
from pytest_promptsuite.prompts.prompt_sources import RowSource
from pytest_promptsuite.run.registration import plugin_manager


#: The prompt-source hook with the built-ins and the dialects, as a run has it.
MAKE_SOURCE = plugin_manager().hook.pytest_promptsuite_make_prompt_source


def case(case_id: str = "c", **fields: Any) -> PromptCase:
    return PromptCase.from_dict({"case_id": case_id, "slice": "s", "input": "hi", **fields})


# -- what each kind of prompt reads -----------------------------------------------------------------


def test_each_renderer_says_what_it_reads() -> None:
    text = 'Hi {name}\n{"json": 1} <tier> {{ city }}\n'
    assert [(r.name, r.line) for r in FormatRenderer().fields(text)] == [("name", 1)]
    assert DelimiterRenderer("<", ">").fields(text) == [FieldRead("tier", 2)]
    assert DelimiterRenderer("<", ">", strict=False).fields(text) == [FieldRead("tier", 2, guarded=True)]
    assert [r.name for r in JinjaRenderer().fields(text)] == ["city"]
    assert NoneRenderer().fields(text) == []


def test_jinja_reads_skip_what_the_template_sets_and_guard_what_it_tests() -> None:
    source = (
        "{% set greeting = 'hi' %}{{ greeting }} {{ input | upper }}\n"
        "{% for turn in history %}{{ turn['content'] }}{{ loop.index }}{% endfor %}\n"
        "{% if city is defined %}{{ city }}{% endif %}{{ mood | default('calm') }}{{ range(2) | list }}"
    )
    reads = jinja_reads(sandbox_environment(), source)
    assert [(r.name, r.line, r.guarded) for r in reads] == [
        ("input", 1, False),
        ("history", 2, False),
        ("city", 3, True),
        ("mood", 3, True),
    ]


def test_placeholder_reads_skip_json_and_numbers() -> None:
    assert [r.name for r in placeholder_reads('{"a": 1} {0} {x!r} {ok} {_under}')] == ["ok", "_under"]


# -- the check --------------------------------------------------------------------------------------


def _reads(*names: str, cases: str = "all") -> TemplateReads:
    return TemplateReads("template.template_file", tuple(FieldRead(n, 2) for n in names), Path("p.txt"), 1, cases=cases)


def test_a_field_some_cases_lack_names_the_first_five_and_a_count() -> None:
    cases = [case(f"c{i}", vars={"city": "x"} if i % 2 else {}) for i in range(14)]
    report = check_fields(cases, {None: ([_reads("city")], frozenset())}, file_shown="cases.jsonl")
    assert report.problems == [
        "p.txt:2: template.template_file reads the field 'city', which 7 of 14 cases of cases.jsonl lack: "
        'c0, c2, c4, c6, c8 and 2 more. Give it in their "vars", or list it in [template] optional to render '
        "it empty"
    ]


def test_the_row_always_provides_input_answer_and_history_and_optional_and_source_names() -> None:
    cases = [case("a"), case("b", input=["one", "two"])]
    reads = replace(
        _reads("input", "question", "answer", "history", "city", "nemo_var"), provides=frozenset({"nemo_var"})
    )
    report = check_fields(cases, {"v1": ([reads], frozenset({"city"}))}, file_shown="cases.jsonl")
    assert report.problems == []


def test_a_template_of_single_turn_cases_is_not_checked_against_multi_turn_ones() -> None:
    cases = [case("a", vars={"x": 1}), case("b", input=["one", "two"])]
    templates = [_reads("x", cases="single"), _reads("question", cases="multi")]
    assert check_fields(cases, {None: (templates, frozenset())}, file_shown="f").problems == []


def test_an_unread_vars_field_is_a_warning_unless_a_template_cannot_say() -> None:
    cases = [case("a", vars={"extra": 1})]
    said = check_fields(cases, {None: ([_reads("input")], frozenset())}, file_shown="f")
    assert said.problems == [] and said.warnings == [
        "f:0: vars field 'extra' (in 1 case, first a) is read by no template of the suite"
    ]
    unknown = TemplateReads("plugin renderer", None)
    assert check_fields(cases, {None: ([unknown], frozenset())}, file_shown="f").warnings == []


# -- optional fields render empty ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("renderer", "template"),
    [
        ('"format"', "[{input}|{city}]"),
        ('"jinja"', "[{{ input }}|{{ city }}]"),
        ('{ type = "delimiters", start = "<", end = ">" }', "[<input>|<city>]"),
    ],
    ids=["format", "jinja", "delimiters"],
)
def test_an_optional_field_a_case_leaves_out_renders_empty(tmp_path: Path, renderer: str, template: str) -> None:
    (tmp_path / "promptsuite.toml").write_text(
        f'[template]\ntemplate_file = "p.txt"\nrenderer = {renderer}\noptional = ["city"]\n', encoding="utf-8"
    )
    (tmp_path / "p.txt").write_text(template, encoding="utf-8")
    prompts = CasePrompts.from_suite(load_config(tmp_path / "promptsuite.toml"), MAKE_SOURCE)
    assert prompts.prompt(case()) == "[hi|]"
    assert prompts.prompt(case(vars={"city": "Oslo"})) == "[hi|Oslo]"


def test_an_optional_field_renders_empty_in_an_infer_cfg_template(tmp_path: Path) -> None:
    (tmp_path / "promptsuite.toml").write_text(
        '[model]\nendpoint = "completions"\n[template]\nprompt_template = { template = "{input}/{city}" }\n'
        'optional = ["city"]\n',
        encoding="utf-8",
    )
    prompts = CasePrompts.from_suite(load_config(tmp_path / "promptsuite.toml"), MAKE_SOURCE)
    assert prompts.prompt(case()) == "hi/"


def test_a_prompt_source_takes_extra_provided_names() -> None:
    """How NeMo's context variables plug in: a source's ``provides`` count as provided."""
    from pytest_promptsuite.prompts.prompt_sources import StringTemplate

    source = RowSource(
        StringTemplate("{input} {relevant_chunks}", FormatRenderer(), "t"), provides=frozenset({"relevant_chunks"})
    )
    [reads] = source.fields()
    assert check_fields([case()], {None: ([reads], frozenset())}, file_shown="f").problems == []


def test_an_ice_template_is_checked_against_the_train_rows(tmp_path: Path) -> None:
    (tmp_path / "promptsuite.toml").write_text(
        '[suite]\ntrain = "train.jsonl"\n[model]\nendpoint = "completions"\n[template]\n'
        'retriever = { type = "FixKRetriever", fix_id_list = [0, 1] }\n'
        'prompt_template = { template = "</E>{input} =", ice_token = "</E>" }\n'
        'ice_template = { template = "{input} = {anwser}\\n" }\n',
        encoding="utf-8",
    )
    (tmp_path / "train.jsonl").write_text(
        '{"input": "1+1", "answer": "2"}\n{"input": "2+2", "answer": "4"}\n', encoding="utf-8"
    )
    config = load_config(tmp_path / "promptsuite.toml")
    prompts = CasePrompts.from_suite(config, MAKE_SOURCE)
    report = check_fields([case()], {None: prompts.fields(None)}, file_shown="cases.jsonl", train=prompts.train_rows())
    assert report.problems == [
        f"{config.path}:8: template.ice_template reads the field 'anwser', which 2 of 2 train rows ([suite] train) "
        "lack (did you mean 'answer'?): rows 1, 2"
    ]
