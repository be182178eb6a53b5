"""Stage tests for ``config.suite``: the suite config's tables and kinds, unknown keys and their lines, paths
outside the folder, discovery, variants, and the JSON Schema editors read (every example config validates)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_promptsuite.cases.case_schema import json_schema as case_schema
from pytest_promptsuite.config.config_schema import validate
from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import TemplateConfig
from pytest_promptsuite.config.suite import TemplateKind
from pytest_promptsuite.config.suite import find_config
from pytest_promptsuite.config.suite import json_schema as config_schema
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.config.suite import suite_targets
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.tomlio import load_toml
from tests.unit.examples import CASE_FILES
from tests.unit.examples import CONFIGS
from tests.unit.examples import EXAMPLES
from tests.unit.examples import TRAIN
from tests.unit.examples import schema_errors


def test_contract_example_parses(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(
        """
[suite]
cases = ["cases.jsonl"]
[model]
spec = "fake:rules.json"
params = { temperature = 0, max_tokens = 256 }
[models.judge]
spec = "fake"
[thresholds]
default = 0.9
max_regression = 0.02
[thresholds.slices]
"提示词注入" = 1.0
[[checks]]
slice = "*"
assert = [{ type = "not-contains", value = "sk-" }]
""",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.model.spec == "fake:rules.json"
    assert config.models["judge"].spec == "fake"
    assert config.thresholds.slices == {"提示词注入": 1.0}
    assert config.checks[0].assert_ == [{"type": "not-contains", "value": "sk-"}]
    assert config.case_paths() == [tmp_path.resolve() / "cases.jsonl"]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[sute]\ncases = []\n", "unknown key 'sute' (did you mean 'suite'?)"),
        ("[model]\nspek = 'fake'\n", "unknown key 'model.spek' (did you mean 'spec'?)"),
        ("[thresholds]\ndefault = 2\n", "thresholds.default: Input should be less than or equal to 1"),
        ("[suite]\ncases = ['../outside.jsonl']\n", "suite.cases = '../outside.jsonl' points outside"),
        ("[suite\n", "invalid TOML"),
    ],
)
def test_bad_config_names_file_and_key(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value).startswith(str(path))
    assert message in str(excinfo.value)


def test_pyproject_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.promptsuite.thresholds]\ndefault = 0.5\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    case_file = tmp_path / "sub" / "cases.jsonl"
    case_file.write_text("", encoding="utf-8")
    found = find_config(case_file, tmp_path)
    assert found == tmp_path / "pyproject.toml"
    assert load_config(found).thresholds.default == 0.5


def test_config_beside_the_case_file_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.promptsuite]\n", encoding="utf-8")
    (tmp_path / "promptsuite.toml").write_text("", encoding="utf-8")
    assert find_config(tmp_path / "cases.jsonl", tmp_path) == tmp_path / "promptsuite.toml"


def test_suite_targets(tmp_path: Path) -> None:
    (tmp_path / "promptsuite.toml").write_text("[suite]\ncases = ['a.jsonl']\n", encoding="utf-8")
    config, targets = suite_targets(tmp_path)
    assert config is not None and targets == [tmp_path.resolve() / "a.jsonl"]
    plain = tmp_path / "b.jsonl"
    assert suite_targets(plain) == (None, [plain])


#: Each bounded key of ``[model]``, a value past its bound, and the message (pydantic's words).
MODEL_BOUNDS = [
    ("concurrency", "0", "Input should be greater than or equal to 1 or 'auto'"),
    ("concurrency", "1025", "Input should be less than or equal to 1024 or 'auto'"),
    ("concurrency", "100000", "Input should be less than or equal to 1024 or 'auto'"),
    ("concurrency", "2.0", "Input should be a valid integer or 'auto'"),
    ("timeout_s", "0", "Input should be greater than 0"),
    ("timeout_s", "86400.5", "Input should be less than or equal to 86400"),
    ("timeout_s", "1e9", "Input should be less than or equal to 86400"),
    ("timeout_s", "true", "Input should be a valid number"),
    ("max_retries", "-1", "Input should be greater than or equal to 0"),
    ("max_retries", "101", "Input should be less than or equal to 100"),
    ("max_retries", "1000000", "Input should be less than or equal to 100"),
    ("max_retries", "1.5", "Input should be a valid integer"),
    ("endpoint", "'chatt'", "Input should be 'chat' or 'completions'"),
    ("spec", "5", "Input should be a valid string"),
    ("meta_template", "5", "Input should be a valid string or a valid dictionary"),
    ("params", "'x'", "Input should be a valid dictionary"),
    ("prices", "{ prompt = -1, completion = 1 }", "Input should be greater than or equal to 0"),
    ("prices", "{ prompt = 1 }", "Field required"),
]


@pytest.mark.parametrize("table", ["model", "models.big", "variants.v2.model"])
@pytest.mark.parametrize(("key", "value", "message"), MODEL_BOUNDS)
def test_an_override_is_bounded_exactly_as_the_model_is(
    tmp_path: Path, table: str, key: str, value: str, message: str
) -> None:
    """``[variants.NAME.model]`` and ``[models.NAME]`` take ``[model]``'s keys with ``[model]``'s
    bounds (a variant's once took any number: ``max_retries = 1000000`` ran)."""
    path = tmp_path / "promptsuite.toml"
    path.write_text(f"[{table}]\n{key} = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    where = f"{table}.{key}" + {"prices": ".prompt" if "-1" in value else ".completion"}.get(key, "")
    assert str(info.value) == f"{path}:2: {where}: {message}"


def test_a_variant_model_past_every_bound_names_each_key(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text("[variants.v2.model]\nmax_retries = 1000000\ntimeout_s = 1e9\nconcurrency = 100000\n", "utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).splitlines() == [
        f"{path}:2: variants.v2.model.max_retries: Input should be less than or equal to 100",
        f"{path}:3: variants.v2.model.timeout_s: Input should be less than or equal to 86400",
        f"{path}:4: variants.v2.model.concurrency: Input should be less than or equal to 1024 or 'auto'",
    ]
    path.write_text('[variants.v2]\ntemplate = "{input}"\nmodel = { max_retries = 101 }\n', "utf-8")
    with pytest.raises(
        ConfigError,
        match=r"^.*:3: variants\.v2\.model\.max_retries: Input should be less than or "
        r"equal to 100$",
    ):
        load_config(path)
    (tmp_path / "pyproject.toml").write_text("[tool.promptsuite.variants.v2.model]\ntimeout_s = 0\n", "utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "pyproject.toml")
    assert str(info.value) == (
        f"{tmp_path / 'pyproject.toml'}:2: tool.promptsuite.variants.v2.model.timeout_s: Input should be greater than 0"
    )


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[variants.v2.model]\ntimout_s = 5\n", "unknown key 'variants.v2.model.timout_s' (did you mean 'timeout_s'?)"),
        ("[variants.v2.model]\nbatch = true\n", "unknown key 'variants.v2.model.batch'"),  # the run's, not a variant's
        ("[variants.v2.model]\nbudget_usd = 1\n", "unknown key 'variants.v2.model.budget_usd'"),
        ("[variants.v2]\nmodel = 5\n", "variants.v2.model: Input should be a valid dictionary"),
        ("[variants.v2]\ninferencer = 'ppl2'\n", "variants.v2.inferencer: Input should be 'gen' or 'ppl'"),
        (
            "[variants.v2]\nsemantics = 1\n",
            "variants.v2.semantics: Input should be 'promptsuite', 'nemo', 'promptfoo' or 'opencompass'",
        ),
        (
            "[variants.v2]\nprompt_template = 5\n",
            "variants.v2.prompt_template: Input should be a valid dictionary or a valid string",
        ),
        ("[gate]\nalpha = 1\n", "gate.alpha: Input should be less than 1"),
        ("[gate]\ncorrection = 'bonferroni'\n", "gate.correction: Input should be 'holm' or 'none'"),
        ("[gate]\ncompare_variants = 1\n", "gate.compare_variants: Input should be a valid boolean"),
        ("[thresholds.slices]\ns = 1.5\n", "thresholds.slices.s: Input should be less than or equal to 1"),
        ("[thresholds.slices]\ns = true\n", "thresholds.slices.s: Input should be a valid number"),
        (
            "[thresholds]\nmax_regression = -0.5\n",
            "thresholds.max_regression: Input should be greater than or equal to 0",
        ),
    ],
)
def test_every_override_kind_says_what_is_wrong(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}:2: {message}"


def test_an_override_keeps_the_keys_it_does_not_set(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(
        '[model]\nspec = "echo"\ntimeout_s = 30\nmax_retries = 5\n[variants.v2.model]\nmax_retries = 100\n'
        "[gate]\nalpha = 0.1\n",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.model_for("v2") == ModelConfig(spec="echo", timeout_s=30.0, max_retries=100)
    assert dict(config.gate) == {"alpha": 0.1}


def test_a_template_file_variant_of_a_task_prompt_suite_drops_the_task_prompt(tmp_path: Path) -> None:
    """A variant that chooses a template file (with ``semantics = "promptfoo"``, a key that only modifies) over a
    ``[template]`` that is a task prompt is a template file: the task prompt's keys go (an imported promptfoo
    config of a chat prompt and a text prompt)."""
    (tmp_path / "promptsuite.toml").write_text(
        '[template]\ntask_prompts = "prompts.yml"\ntask = "prompt-1"\nsemantics = "promptsuite"\n'
        '[variants.p2]\ntemplate_file = "p2.txt"\nsemantics = "promptfoo"\n',
        encoding="utf-8",
    )
    table = load_config(tmp_path / "promptsuite.toml").template_for("p2")
    assert (table.template_file, table.semantics) == ("p2.txt", "promptfoo")
    assert (table.task_prompts, table.task) == (None, None)


def test_model_prices_are_config_keys_a_variant_may_override(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(
        '[model]\nspec = "fake"\nprices = { prompt = 0.15, completion = 0.6 }\n'
        '[variants.big]\ntemplate = "{input}"\nmodel = { spec = "fake", prices = { prompt = 2.5, completion = 10 } }\n'
        '[variants.small]\ntemplate = "{input}"\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.model.cost(1_000_000, 0) == pytest.approx(0.15)
    assert config.model_for("big").cost(1000, 1000) == pytest.approx((2500 + 10000) / 1e6)
    assert config.model_for("small").prices == config.model.prices
    assert config.model.cost(None, 10) is None
    path.write_text("[model]\nprices = { prompt = -1, completion = 0.6 }\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="prices"):
        load_config(path)


MIXTURE = (
    "[template] takes exactly one of: an infer_cfg (prompt_template), a task prompt (task_prompts + task), "
    "a template file (template_file or template) or a prompt_function"
)


def _suite(tmp_path: Path, toml: str) -> SuiteConfig:
    (tmp_path / "promptsuite.toml").write_text(toml, encoding="utf-8")
    return load_config(tmp_path / "promptsuite.toml")


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
    assert TemplateKind.FILE.keys == ("template_file", "template", "system", "system_file", "renderer")
    assert TemplateKind.FUNCTION.keys == ("prompt_function", "prompt_context")
    assert TemplateKind.INFER_CFG.keys == (
        "prompt_template",
        "ice_template",
        "multiturn_template",
        "retriever",
        "infer_mode",
        "inferencer",
    )


def test_a_prompt_function_variant_drops_the_template_file_and_keeps_promptfoos_semantics(tmp_path: Path) -> None:
    config = _suite(
        tmp_path,
        '[template]\ntemplate_file = "t.txt"\nsemantics = "promptfoo"\n'
        '[variants.fn]\nprompt_function = "p.js:make"\nprompt_context = { config = {} }\n',
    )
    fn = config.template_for("fn")
    assert (fn.template_file, fn.prompt_function, fn.semantics) == (None, "p.js:make", "promptfoo")
    assert fn.kind() is TemplateKind.FUNCTION


def test_the_schemas_are_valid_draft_2020_12() -> None:
    for schema in (config_schema(), case_schema()):
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_examples_are_there() -> None:
    assert len(CONFIGS) >= 7 and len(CASE_FILES) >= 7
    assert TRAIN  # the few-shot suite's train rows are no case lines


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_config_validates(path: Path) -> None:
    document, _ = load_toml(path)
    assert schema_errors(config_schema(), document) == []


@pytest.mark.parametrize(
    ("document", "key"),
    [
        ({"model": {"spec": "fake", "timout_s": 5}}, "timout_s"),
        ({"sutie": {"cases": ["cases.jsonl"]}}, "sutie"),
        ({"variants": {"v2": {"template": "T", "model": {"spce": "fake"}}}}, "spce"),
        ({"checks": {"python_modules": ["m"], "rule": []}}, "rule"),
        ({"checks": [{"slice": "*", "assert": [], "slise": "x"}]}, "slise"),
    ],
)
def test_a_misspelled_config_key_fails(document: dict[str, Any], key: str) -> None:
    errors = schema_errors(config_schema(), document)
    assert errors and any(key in error for error in errors), errors


def test_the_checks_table_with_python_modules_validates() -> None:
    document = {"checks": {"python_modules": ["myapp.checks"], "rules": [{"slice": "*", "assert": []}]}}
    assert schema_errors(config_schema(), document) == []
    assert schema_errors(config_schema(), {"checks": {"python_modules": ["not a module"]}})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[suite]\ncases = []\n\n[thresholds]\ndefualt = 0.8\n",
            ":5: unknown key 'thresholds.defualt' (did you mean 'default'?)",
        ),
        ('[model]\nspec = "fake"\ntimeout_s = "slow"\n', ":3: model.timeout_s: Input should be a valid number"),
        ('[suite]\n\ncases = ["../x.jsonl"]\n', ":3: suite.cases = '../x.jsonl' points outside"),
        ('[model]\nspec = "fake:../rules.json"\n', ":2: model.spec = 'fake:../rules.json' points outside"),
        ('[model]\nspec = "fake"\n[gate]\nalpha = 2\n', ":4: gate.alpha: Input should be less than 1"),
    ],
    ids=["unknown-key", "wrong-type", "path-outside", "rules-outside", "range"],
)
def test_config_errors_name_their_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(str(path) + message)


def test_pyproject_table_errors_name_the_line_in_pyproject(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n\n[tool.promptsuite.thresholds]\ndefualt = 0.5\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pyproject.toml:5: unknown key 'tool.promptsuite.thresholds.defualt'"):
        load_config(path)


def suite(tmp_path: Path, toml: str) -> SuiteConfig:
    folder = tmp_path / "suite"
    folder.mkdir(exist_ok=True)
    (folder / "promptsuite.toml").write_text(toml, encoding="utf-8")
    return load_config(folder / "promptsuite.toml")


VARIANTS = """
[template]
task_prompts = "prompts/v1.yml"
task = "answer"
mode = "standard"
[variants.v1]
task_prompts = "prompts/v1.yml"
[variants.v2]
task_prompts = "prompts/v2.yml"
[variants.compact]
mode = "compact"
[variants.file]
template_file = "prompts/plain.txt"
renderer = "none"
"""


class TestVariants:
    def test_variant_overrides_template_keys(self, tmp_path: Path) -> None:
        config = suite(tmp_path, VARIANTS)
        v2 = config.template_for("v2")
        assert (v2.task_prompts, v2.task, v2.mode) == ("prompts/v2.yml", "answer", "standard")
        compact = config.template_for("compact")
        assert (compact.task_prompts, compact.task, compact.mode) == ("prompts/v1.yml", "answer", "compact")
        assert config.template_for(None) == config.template

    def test_variant_of_another_kind_drops_the_default_prompt(self, tmp_path: Path) -> None:
        file = suite(tmp_path, VARIANTS).template_for("file")
        assert (file.task_prompts, file.task, file.mode) == (None, None, None)
        assert (file.template_file, file.renderer) == ("prompts/plain.txt", "none")

    def test_unknown_variant(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="no variant 'v3'.*; variants: v1, v2, compact, file"):
            suite(tmp_path, VARIANTS).template_for("v3")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[template]\nsystem = "S"\nsystem_file = "s.txt"\n',
            ":2: [template] has both 'system' and 'system_file'; keep one",
        ),
        (
            '[template]\nprompt_template = "{input}"\nsystem = "S"\n',
            ":3: template.system goes with a template, a template_file or no template (the input as the user "
            "message), not with 'prompt_template', whose prompt writes its own messages (an infer_cfg's system "
            "message is a round entry with role = 'SYSTEM', or its meta template's begin)",
        ),
        (
            '[template]\ntask_prompts = "p.yml"\ntask = "general"\n\n[variants.v2]\nsystem_file = "s.txt"\n'
            'task = "general"\n',
            ":6: template.system_file goes with a template, a template_file or no template (the input as the user "
            "message), not with 'task_prompts', whose prompt writes its own messages (a task prompt's messages "
            "are in its prompts.yml)",
        ),
        (
            '[template]\ntemplate = "{input}"\nsemantics = "promptfoo"\nsystem = "S"\n',
            ":4: template.system goes with a template, a template_file or no template (the input as the user "
            "message), not with 'semantics', whose prompt writes its own messages",
        ),
    ],
)
def test_a_system_message_where_it_makes_no_sense_is_refused_with_its_line(
    tmp_path: Path, toml: str, message: str
) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}{message}"


def test_a_model_param_that_is_a_near_miss_of_a_known_one_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text('[model]\nspec = "fake"\nparams = { max_token = 48 }\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        f"{path}:3: model.params.max_token is no request parameter a server knows (did you mean 'max_tokens'?): "
        "a server ignores or refuses an unknown one"
    )
    path.write_text("[variants.v2.model]\nparams = { temprature = 0 }\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r":2: variants.v2.model.params.temprature .*did you mean 'temperature'"):
        load_config(path)


def test_model_params_stay_free_form_past_near_misses(tmp_path: Path) -> None:
    """A server's own parameters (vLLM's, llama.cpp's, Ollama's) and names far from any known one are sent."""
    path = tmp_path / "promptsuite.toml"
    path.write_text(
        "[model]\nparams = { max_tokens = 8, top_k = 40, min_p = 0.05, repeat_penalty = 1.1, my_server_flag = 1 }\n",
        encoding="utf-8",
    )
    assert load_config(path).model.params["my_server_flag"] == 1
