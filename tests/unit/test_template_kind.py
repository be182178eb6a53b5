"""Which kind of prompt a ``[template]`` table makes is decided in one place, the suite config:
an infer_cfg, a task prompt or a template file, never a mixture (reported when the suite's prompts
are built, not when the config loads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.config_schema import validate
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import TemplateConfig
from pytest_promptsuite.config.suite import TemplateKind
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.dialects.opencompass.infer_cfg import InferCfgSource
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.case_prompts import CasePrompts
from pytest_promptsuite.run.registration import plugin_manager


#: The prompt-source hook with the built-ins and the dialects, as a run has it.
MAKE_SOURCE = plugin_manager().hook.pytest_promptsuite_make_prompt_source


MIXTURE = (
    "[template] takes exactly one of: an infer_cfg (prompt_template), a task prompt (task_prompts + task), "
    "a template file (template_file or template) or a prompt_function"
)


@pytest.mark.parametrize(
    ("keys", "kind"),
    [
        ({}, TemplateKind.INFER_CFG),
        ({"retriever": {"type": "ZeroRetriever"}, "output_column": "a"}, TemplateKind.INFER_CFG),
        ({"prompt_template": "{input}"}, TemplateKind.INFER_CFG),
        ({"ice_template": "{input}"}, TemplateKind.INFER_CFG),
        ({"multiturn_template": {"template": {"round": []}}}, TemplateKind.INFER_CFG),
        ({"task_prompts": "p.yml", "task": "a", "mode": "m"}, TemplateKind.TASK_PROMPTS),
        ({"task": "a"}, TemplateKind.TASK_PROMPTS),
        ({"template_file": "t.txt", "renderer": "jinja"}, TemplateKind.FILE),
        ({"template": "x"}, TemplateKind.FILE),
        ({"mode": "compact"}, TemplateKind.INFER_CFG),  # only choosing keys choose
        ({"renderer": "jinja"}, TemplateKind.INFER_CFG),
        ({"prompt_function": "p.js", "semantics": "promptfoo"}, TemplateKind.FUNCTION),
        ({"prompt_context": {"config": {}}}, TemplateKind.INFER_CFG),
    ],
)
def test_kind(keys: dict[str, object], kind: TemplateKind) -> None:
    assert validate(TemplateConfig, keys).kind() is kind


@pytest.mark.parametrize(
    "keys",
    [
        {"task_prompts": "p.yml", "template": "x"},
        {"task": "a", "prompt_template": "{input}"},
        {"template_file": "t.txt", "multiturn_template": {"template": {"round": []}}},
        {"template": "x", "prompt_function": "p.js"},
    ],
)
def test_a_mixture_is_a_config_error_naming_the_config(keys: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as info:
        validate(TemplateConfig, keys).kind(path=Path("suite/promptsuite.toml"))
    assert str(info.value) == f"{Path('suite/promptsuite.toml')}: {MIXTURE}"


def test_keys_of_each_kind() -> None:
    assert TemplateKind.TASK_PROMPTS.choosing_keys == ("task_prompts", "task")
    assert TemplateKind.TASK_PROMPTS.keys == (
        "task_prompts",
        "task",
        "mode",
        "nemo_config",
        "semantics",
        "prompt_model",
    )
    assert TemplateKind.FILE.keys == ("template_file", "template", "renderer")
    assert TemplateKind.FUNCTION.keys == ("prompt_function", "prompt_context")
    assert TemplateKind.INFER_CFG.keys == (
        "prompt_template",
        "ice_template",
        "multiturn_template",
        "retriever",
        "infer_mode",
        "inferencer",
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


def test_the_infer_cfg_engine_refuses_keys_of_other_kinds() -> None:
    case = PromptCase(case_id="c", input="hi", slice="s")
    for key, value in (("task", "a"), ("mode", "compact"), ("template", "x"), ("renderer", "jinja")):
        with pytest.raises(TemplateError, match=f"^\\[template\\] {key} is not handled by the infer_cfg templates"):
            InferCfgSource({key: value}).prompt(case)


def test_a_prompt_function_variant_drops_the_template_file_and_keeps_promptfoos_semantics(tmp_path: Path) -> None:
    config = _suite(
        tmp_path,
        '[template]\ntemplate_file = "t.txt"\nsemantics = "promptfoo"\n'
        '[variants.fn]\nprompt_function = "p.js:make"\nprompt_context = { config = {} }\n',
    )
    fn = config.template_for("fn")
    assert (fn.template_file, fn.prompt_function, fn.semantics) == (None, "p.js:make", "promptfoo")
    assert fn.kind() is TemplateKind.FUNCTION
