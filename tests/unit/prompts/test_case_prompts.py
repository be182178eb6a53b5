"""Stage tests for ``prompts.case_prompts``: the prompts of a suite's variants, built from its template tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import TemplateKind
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.prompts.case_prompts import CasePrompts
from pytest_promptsuite.run.registration import plugin_manager


#: The prompt-source hook with the built-ins and the dialects, as a run has it.
MAKE_SOURCE = plugin_manager().hook.pytest_promptsuite_make_prompt_source


MIXTURE = (
    "[template] takes exactly one of: an infer_cfg (prompt_template), a task prompt (task_prompts + task), "
    "a template file (template_file or template) or a prompt_function"
)


def _suite(tmp_path: Path, toml: str) -> SuiteConfig:
    (tmp_path / "promptsuite.toml").write_text(toml, encoding="utf-8")
    return load_config(tmp_path / "promptsuite.toml")


def test_a_mixture_loads_and_fails_when_the_prompts_are_built(tmp_path: Path) -> None:
    config = _suite(tmp_path, '[template]\ntemplate = "x {input}"\nprompt_template = "{input}"\n')
    with pytest.raises(ConfigError) as info:
        CasePrompts.from_suite(config, MAKE_SOURCE)
    assert str(info.value) == f"{config.path}: {MIXTURE}"


def test_a_variants_mixture_fails_when_the_prompts_are_built(tmp_path: Path) -> None:
    config = _suite(tmp_path, '[template]\ntemplate = "x {input}"\n[variants.v2]\ntemplate = "y"\ntask = "a"\n')
    with pytest.raises(ConfigError, match="takes exactly one of"):
        CasePrompts.from_suite(config, MAKE_SOURCE)


def test_a_variant_of_another_kind_drops_the_base_keys_of_the_other_kinds(tmp_path: Path) -> None:
    (tmp_path / "prompts.yml").write_text("prompts:\n  - task: a\n    content: 'task {{ input }}'\n")
    config = _suite(
        tmp_path,
        '[template]\ntask_prompts = "prompts.yml"\ntask = "a"\nmode = "standard"\n'
        '[variants.task]\n[variants.cfg]\nretriever = { type = "ZeroRetriever" }\n'
        '[variants.file]\ntemplate = "file {input}"\n',
    )
    cfg = config.template_for("cfg")
    assert (cfg.task_prompts, cfg.task, cfg.mode) == (None, None, None)
    assert cfg.kind() is TemplateKind.INFER_CFG
    prompts = CasePrompts.from_suite(config, MAKE_SOURCE)
    case = PromptCase(case_id="c", input="hi", slice="s")
    assert prompts.prompt(case, variant="task") == "task hi"
    assert prompts.prompt(case, variant="file") == "file hi"
    assert prompts.prompt(case, variant="cfg") == "hi"  # no template, no meta template: the input


def test_a_missing_template_file_names_the_variant_line(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(
        '[template]\ntemplate_file = "a.txt"\n[variants.v1]\n[variants.v2]\ntemplate_file = "gone.txt"\n',
        encoding="utf-8",
    )
    (tmp_path / "a.txt").write_text("{input}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"promptsuite.toml:5: variants.v2.template_file = 'gone.txt': cannot read"):
        CasePrompts.from_suite(load_config(path), MAKE_SOURCE)


def case(**fields: Any) -> PromptCase:
    return PromptCase.from_dict({"case_id": "c", "slice": "s", "input": "hi", **fields})


def _train(tmp_path: Path) -> Path:
    path = tmp_path / "train.jsonl"
    rows = [
        {"input": "2+2=?", "answer": "4"},
        {"input": "3+3=?", "vars": {"hint": "h"}, "answer": "6"},
        {"question": "5+5=?", "answer": "10"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    return path


def _prompts(config: Path) -> CasePrompts:
    return CasePrompts.from_suite(load_config(config), plugin_manager().hook.pytest_promptsuite_make_prompt_source)


def test_variant_overrides_template_keys(tmp_path: Path) -> None:
    (tmp_path / "promptsuite.toml").write_text(
        '[template]\nprompt_template = "Q: {question}\\nA: {answer}"\n'
        '[variants.v1]\n[variants.v2]\nprompt_template = "{input}?"\n',
        encoding="utf-8",
    )
    prompts = _prompts(tmp_path / "promptsuite.toml")
    assert prompts.prompt(case(), variant="v2") == "hi?"
    assert prompts.prompt(case(), variant="v1") == "Q: hi\nA: "


def test_from_suite_reads_template_model_and_train(tmp_path: Path) -> None:
    _train(tmp_path)
    (tmp_path / "promptsuite.toml").write_text(
        """
[suite]
train = "train.jsonl"
[model]
endpoint = "completions"
meta_template = "gemma"
[template]
retriever = { type = "FixKRetriever", fix_id_list = [0] }
[template.prompt_template]
ice_token = "</E>"
[template.prompt_template.template]
begin = "</E>"
round = [{ role = "HUMAN", prompt = "{input}" }, { role = "BOT", prompt = "{answer}" }]
[template.ice_template]
template = { round = [{ role = "HUMAN", prompt = "{input}" }, { role = "BOT", prompt = "{answer}" }] }
""",
        encoding="utf-8",
    )
    prompts = _prompts(tmp_path / "promptsuite.toml")
    assert prompts.prompt(case(input="1+1=?", answer="2")) == (
        "<start_of_turn>user\n2+2=?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n"
        "<start_of_turn>user\n1+1=?<end_of_turn>\n<start_of_turn>model\n"
    )
