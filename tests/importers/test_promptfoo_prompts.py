"""promptfoo's prompt sources, as the importer reads them: CSV prompt files and JSON prompt files that
are templates (JSON only once rendered)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.dialects.promptfoo.import_promptfoo import promptfoo_suite
from pytest_promptsuite.errors import ConfigError
from tests.importers.promptfoo_run import import_config
from tests.importers.promptfoo_run import run_imported
from tests.importers.promptfoo_run import write_config
from tests.suite import Suite


def test_a_csv_prompt_file_is_one_prompt_a_row_with_its_label(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "prompts: [file://prompts.csv]\n"
        "providers:\n  - echo\n  - {id: echo, label: eli5-only, prompts: [ELI5]}\n"
        "tests: [{vars: {topic: cats}}]\n",
        {
            "prompts.csv": 'prompt,label\n"Tell me about {{topic}}",Basic\n'
            '"Explain {{topic}}, simply",ELI5\n'
            '"[{""role"":""user"",""content"":""About {{topic}}""}]",\n'
        },
    )
    imported = promptfoo_suite(config)
    variants = sorted(k for k in imported.config if k.startswith("variants."))
    assert variants == ["variants.Basic-echo", "variants.ELI5-echo", "variants.ELI5-eli5-only", "variants.p3-echo"]
    assert imported.files["prompts/prompt-1.txt"] == "Tell me about {{topic}}"
    assert imported.files["prompts/prompt-2.txt"] == "Explain {{topic}}, simply"
    assert "About {{topic}}" in imported.files["prompts.yml"]  # a JSON chat row is chat messages


def test_a_csv_prompt_file_without_commas_is_one_prompt_a_line(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "prompts: [file://prompts.csv]\nproviders: [echo]\ntests: [{vars: {topic: cats}}]\n",
        {"prompts.csv": "prompt\nTell me about {{topic}}\n\nA poem on {{topic}}\n"},
    )
    imported = promptfoo_suite(config)
    assert [imported.files[f"prompts/prompt-{i}.txt"] for i in (1, 2)] == [
        "Tell me about {{topic}}",
        "A poem on {{topic}}",
    ]
    assert "prompts/prompt-3.txt" not in imported.files


def test_a_json_prompt_file_that_is_a_template_is_a_text_prompt_and_noted(tmp_path: Path) -> None:
    template = '[\n  {"role": "system", "content": "{{ system }}"},\n'
    template += '  {% for m in past %}{"role": "user"},{% endfor %}\n'
    template += '  {"role": "user", "content": "{{ question }}"}\n]\n'
    config = write_config(
        tmp_path,
        "prompts: [file://prompt.json]\nproviders: [echo]\ntests: [{vars: {question: hi}}]\n",
        {"prompt.json": template},
    )
    imported = promptfoo_suite(config)
    assert imported.files["prompts/prompt-1.txt"] == template  # promptfoo renders it, then echo returns it
    assert any("prompt.json is JSON only once rendered: imported as a text prompt" in n for n in imported.notes)


def test_a_json_prompt_file_of_content_parts_is_a_text_prompt_and_noted(tmp_path: Path) -> None:
    text = '[{"role": "user", "content": [{"modality": "text", "value": "{{content}}"}]}]\n'
    config = write_config(
        tmp_path,
        "prompts: [file://prompt.json]\nproviders: [echo]\ntests: [{vars: {content: hey}}]\n",
        {"prompt.json": text},
    )
    imported = promptfoo_suite(config)
    assert "{{content}}" in imported.files["prompts/prompt-1.txt"]
    assert any("prompt.json is not a list of {role, content} strings: imported as a text" in n for n in imported.notes)


def test_a_prompt_that_is_json_renders_each_string_and_is_written_back_as_promptfoo_writes_it(
    tmp_path: Path, suite: Suite
) -> None:
    # promptfoo 0.123.1's echo answers, recorded: its renderPrompt parses a prompt that is JSON, renders
    # each string (not the keys), and writes it back with JSON.stringify(value, null, 2); with a prefix
    # the text is no longer JSON and renders as text (a JSON file's text being its compact JSON).
    config = write_config(
        tmp_path,
        'prompts: [file://prompt.json, \'{"ask": "{{content}}", "n": 2}\']\nproviders: [echo]\ntests:\n'
        '  - vars: {content: "say \\"hi\\"\\nthen go", k: key}\n'
        '  - {vars: {content: plain}, options: {prefix: "P: "}}\n',
        {
            "prompt.json": '[{"role": "user", "content": [{"modality": "text", "value": "{{content}}"}]}, '
            '{"n": 1.0, "{{k}}": "plain"}]\n'
        },
    )
    status, imported = import_config(tmp_path, config)
    assert status == 0
    outputs = {(row["case_id"], row["variant"]): row["output"] for row in run_imported(suite, imported)}
    assert outputs == {
        ("test-1", "p1"): '[\n  {\n    "role": "user",\n    "content": [\n      {\n        "modality": "text",\n'
        '        "value": "say \\"hi\\"\\nthen go"\n      }\n    ]\n  },\n'
        '  {\n    "n": 1,\n    "{{k}}": "plain"\n  }\n]',
        ("test-1", "p2"): '{\n  "ask": "say \\"hi\\"\\nthen go",\n  "n": 2\n}',
        ("test-2", "p1"): 'P: [{"role":"user","content":[{"modality":"text","value":"plain"}]},{"n":1,"":"plain"}]',
        ("test-2", "p2"): 'P: {"ask": "plain", "n": 2}',
    }


def test_the_configs_prompt_labels_name_the_variants(tmp_path: Path, suite: Suite) -> None:
    config = write_config(
        tmp_path,
        "prompts:\n  - {raw: 'Short: {{ x }}', label: concise}\n  - {raw: 'Long: {{ x }}', label: 'v2.1 (détaillé)'}\n"
        "  - 'Plain: {{ x }}'\n  - {raw: 'Again: {{ x }}', label: concise}\n"
        "providers: [echo]\ntests: [{vars: {x: hi}, assert: [{type: contains, value: hi}]}]\n",
        {},
    )
    status, imported = import_config(tmp_path, config)
    assert status == 0
    rows = run_imported(suite, imported)  # promptfoo 0.123.1 labels its columns concise, v2.1 (détaillé), ...
    assert {r["variant"]: (r["output"], r["outcome"]) for r in rows} == {
        "concise": ("Short: hi", "passed"),
        "v2-1--d-taill": ("Long: hi", "passed"),
        "p3": ("Plain: hi", "passed"),
        "concise-2": ("Again: hi", "passed"),
    }


def test_a_provider_label_with_a_dot_or_accent_is_a_bare_variant_name(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "prompts: ['Tweet about {{topic}}']\n"
        "providers:\n  - {id: echo, label: Claude Opus 4.5 (profile)}\n  - {id: echo, label: Modèle 3.7}\n"
        "tests: [{vars: {topic: cats}}]\n",
        {},
    )
    variants = sorted(k for k in promptfoo_suite(config).config if k.startswith("variants."))
    assert variants == ["variants.p1-Claude-Opus-4-5--profile", "variants.p1-Mod-le-3-7"]  # a dot nests a TOML table


def test_a_prompt_glob_makes_a_prompt_per_file_in_sorted_order(tmp_path: Path, suite: Suite) -> None:
    (tmp_path / "prompts").mkdir()
    for name in ("b", "a"):
        (tmp_path / "prompts" / f"{name}.txt").write_text(f"{name.upper()} {{{{ x }}}}\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        "prompts: ['file://prompts/*.txt']\nproviders: [echo]\n"
        "tests:\n  - vars: {x: hi}\n    assert: [{type: contains, value: hi}]\n",
        {},
    )
    status, imported = import_config(tmp_path, config)
    assert status == 0
    rows = run_imported(suite, imported)  # promptfoo 0.123.1: 'A hi' and 'B hi', both pass (in the file system's order)
    assert [(r["variant"], r["output"], r["outcome"]) for r in rows] == [
        ("p1", "A hi", "passed"),
        ("p2", "B hi", "passed"),
    ]


def test_providers_in_a_file_are_read_as_promptfoo_reads_them(tmp_path: Path, suite: Suite) -> None:
    config = write_config(
        tmp_path,
        "prompts: ['Hello {{ x }}']\nproviders: [file://providers.yaml, echo]\n"
        "tests: [{vars: {x: hi}, assert: [{type: contains, value: hi}]}]\n",
        {"providers.yaml": "- {id: echo, label: a}\n- {id: echo, label: b}\n"},
    )
    status, imported = import_config(tmp_path, config)
    assert status == 0
    rows = run_imported(suite, imported)  # promptfoo 0.123.1: three rows (a, b, echo), each passed
    assert [(r["variant"], r["outcome"]) for r in rows] == [
        ("p1-a", "passed"),
        ("p1-b", "passed"),
        ("p1-echo", "passed"),
    ]
    (tmp_path / "prompts.yaml").write_text("- file://a.txt\n- {id: custom, raw: 'Hi {{ x }}'}\n", encoding="utf-8")
    (tmp_path / "modular.yaml").write_text(
        "prompts: file://prompts.yaml\nproviders: [echo]\ntests: [{vars: {x: hi}}]\n", encoding="utf-8"
    )
    made = promptfoo_suite(tmp_path / "modular.yaml")  # promptfoo 0.123.1 reads it as one YAML prompt too
    assert '"id": "custom"' in made.files["prompts/prompt-1.txt"]  # its JSON, each string rendered
    assert any("prompts.yaml is not a list of {role, content} messages: imported as a text" in n for n in made.notes)
    (tmp_path / "providers.yaml").write_text("- {label: no id}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"providers.yaml: each provider in providers.yaml is a mapping with an 'id'"):
        promptfoo_suite(config)


def test_labels_alike_once_bare_stay_two_variants(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "prompts: ['Tweet about {{topic}}']\n"
        "providers:\n  - {id: echo, label: 'a:b'}\n  - {id: echo, label: 'a/b'}\n  - echo\n  - echo\n"
        "  - {id: echo, label: 'a/b'}\n  - {id: echo}\n"
        "tests: [{vars: {topic: cats}}]\n",
        {},
    )  # promptfoo 0.123.1 runs 4: a provider written twice alike runs once ('echo' and {id: echo} are two)
    variants = sorted(k for k in promptfoo_suite(config).config if k.startswith("variants."))
    assert variants == ["variants.p1-a-b", "variants.p1-a-b-2", "variants.p1-echo", "variants.p1-echo-2"]


def test_a_prompts_own_config_goes_over_its_providers_settings(tmp_path: Path) -> None:
    """promptfoo merges a prompt's ``config`` over the provider's: the variant of that prompt sends its settings
    (``response_format`` as written, not checked); the other prompt keeps the provider's; a setting we cannot
    carry is listed."""
    config = write_config(
        tmp_path,
        "prompts:\n"
        "  - {raw: 'Describe {{x}} as JSON', label: json, config: {temperature: 0.2, "
        "response_format: {type: json_object}, frequency_penalty: 1}}\n"
        "  - 'Describe {{x}}'\n"
        "providers: [{id: 'openai:gpt-4o-mini', config: {temperature: 0, max_tokens: 64}}]\n"
        "tests: [{vars: {x: cats}}]\n",
        {},
    )
    imported = promptfoo_suite(config)
    assert imported.config["model"]["params"] == {"temperature": 0, "max_tokens": 64}
    assert imported.config["variants.json"]["model"]["params"] == {
        "temperature": 0.2,
        "max_tokens": 64,
        "response_format": {"type": "json_object"},
    }
    assert "model" not in imported.config["variants.p2"]
    assert "prompt json: config not carried over: frequency_penalty" in imported.notes
    assert not any("prompt keys not carried over" in note for note in imported.notes)


def test_one_prompt_with_its_config_and_one_provider_is_the_suites_model(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "prompts: [{raw: 'Say {{x}}', config: {seed: 7}}]\n"
        "providers: [{id: 'openai:gpt-4o-mini'}]\ntests: [{vars: {x: hi}}]\n",
        {},
    )
    assert promptfoo_suite(config).config["model"]["params"] == {"seed": 7}


def test_a_csv_prompt_files_config_goes_to_each_of_its_rows(tmp_path: Path) -> None:
    """promptfoo spreads a prompt's keys over each CSV row's prompt: every row's variant sends its ``config``."""
    config = write_config(
        tmp_path,
        "prompts: [{id: 'file://prompts.csv', config: {temperature: 0.3}}]\n"
        "providers: [{id: 'openai:gpt-4o-mini'}]\ntests: [{vars: {topic: cats}}]\n",
        {"prompts.csv": 'prompt\n"Tell me about {{topic}}"\n"Explain {{topic}}"\n'},
    )
    imported = promptfoo_suite(config)
    assert [imported.config[f"variants.p{i}"]["model"]["params"] for i in (1, 2)] == [{"temperature": 0.3}] * 2


def test_a_prompt_that_reads_conversation_is_listed(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "prompts:\n  - '{% for turn in _conversation %}{{ turn.output }} {% endfor %}{{ q }}'\n  - 'Plain {{ q }}'\n"
        "providers: [echo]\ntests: [{vars: {q: hi}}]\n",
        {},
    )
    notes = [n for n in promptfoo_suite(config).notes if "_conversation" in n]
    assert len(notes) == 1 and "(promptfoo's earlier turns of the thread): it renders empty" in notes[0]
