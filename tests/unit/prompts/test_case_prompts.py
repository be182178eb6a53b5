"""Stage tests for ``prompts.case_prompts``: the prompts of a suite's variants, built from its template tables."""

from __future__ import annotations

from pathlib import Path

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
