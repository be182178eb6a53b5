"""``config.settings``: every default, and precedence: option > variant > named model > config > default."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.cli.diff_merge import policy_from_summary
from pytest_promptsuite.config.options import BY_FLAG
from pytest_promptsuite.config.options import RunOptions
from pytest_promptsuite.config.settings import DEFAULT_CONCURRENCY
from pytest_promptsuite.config.settings import DEFAULT_MAX_REGRESSION
from pytest_promptsuite.config.settings import DEFAULT_THRESHOLD
from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.config.settings import Thresholds
from pytest_promptsuite.config.settings import gate_settings
from pytest_promptsuite.config.settings import judge_choice
from pytest_promptsuite.config.settings import model_choice
from pytest_promptsuite.config.settings import threshold_policy
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.report.document import summary_document
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import summarize


def _config(folder: Path, text: str, name: str = "promptsuite.toml") -> SuiteConfig:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return load_config(folder / name)


def test_threshold_sources_in_order_of_precedence() -> None:
    policy = ThresholdPolicy(Thresholds(default=0.9, slices={"inj": 1.0}), option=0.8)
    assert policy.threshold("inj") == (1.0, "config slice")
    assert policy.threshold("other") == (0.8, "option")
    assert ThresholdPolicy(Thresholds(default=0.9)).threshold("x") == (0.9, "config default")
    assert ThresholdPolicy().threshold("x") == (DEFAULT_THRESHOLD, "default") == (1.0, "default")
    assert ThresholdPolicy(Thresholds(max_regression=0.2), max_regression_option=0.1).max_regression() == (
        0.1,
        "option",
    )
    assert ThresholdPolicy(Thresholds(max_regression=0.2)).max_regression() == (0.2, "config")
    assert ThresholdPolicy().max_regression() == (DEFAULT_MAX_REGRESSION, "default") == (0.0, "default")


def test_policy_round_trips_through_its_dict() -> None:
    policy = ThresholdPolicy(
        Thresholds(default=0.9, max_regression=0.2, slices={"inj": 1.0}),
        option=0.8,
        max_regression_option=0.1,
        builtin=0.5,
    )
    assert policy.to_dict() == {
        "slices": {"inj": 1.0},
        "option": 0.8,
        "config_default": 0.9,
        "builtin": 0.5,
        "max_regression_option": 0.1,
        "max_regression_config": 0.2,
    }
    assert list(policy.to_dict()) == [
        "slices",
        "option",
        "config_default",
        "builtin",
        "max_regression_option",
        "max_regression_config",
    ]
    assert ThresholdPolicy.from_dict(policy.to_dict()) == policy
    assert ThresholdPolicy.from_dict({}) == ThresholdPolicy()


def test_gate_settings_defaults_and_what_a_summary_recorded() -> None:
    assert GateSettings() == GateSettings(alpha=0.05, correction="holm", regression="auto", compare_variants=False)
    assert GateSettings().to_dict() == {
        "alpha": 0.05,
        "correction": "holm",
        "regression": "auto",
        "compare_variants": False,
        "case_pass": None,
        "max_tokens_increase": None,
        "max_cost_increase": None,
    }
    settings = GateSettings(alpha=0.1, correction="none", regression="delta", compare_variants=True)
    assert GateSettings.from_dict(settings.to_dict()) == settings
    limits = GateSettings(case_pass=0.8, max_tokens_increase=0.2, max_cost_increase=0.5)
    assert GateSettings.from_dict(limits.to_dict()) == limits
    assert GateSettings.from_dict({"case_pass": "any"}).case_pass == "any"
    assert GateSettings.from_dict({}) == GateSettings()
    odd = {"alpha": 1.5, "correction": "bonferroni", "regression": "maybe", "compare_variants": 1}
    odd |= {"case_pass": 0, "max_tokens_increase": -1, "max_cost_increase": True}
    assert GateSettings.from_dict(odd) == GateSettings()  # a value no run could have used: the default


def test_the_options_say_the_defaults_settings_decide() -> None:
    """The options' help names the defaults (written there: the options load on every pytest run,
    the settings' tables only on a run with cases)."""
    assert f"(default {DEFAULT_CONCURRENCY}," in BY_FLAG["--prompt-concurrency"].kwargs["help"]
    assert f"(default {DEFAULT_THRESHOLD}," in BY_FLAG["--prompt-min-pass-rate"].kwargs["help"]
    assert f"(default {DEFAULT_MAX_REGRESSION}," in BY_FLAG["--prompt-max-regression"].kwargs["help"]
    assert f"(default {GateSettings().alpha}," in BY_FLAG["--prompt-alpha"].kwargs["help"]


def test_the_first_config_that_sets_a_key_wins_and_an_option_beats_it(tmp_path: Path) -> None:
    first = _config(
        tmp_path / "a", '[thresholds]\nmax_regression = 0.1\nslices = { s = 0.5 }\n[gate]\ncorrection = "none"\n'
    )
    second = _config(
        tmp_path / "b",
        "[thresholds]\ndefault = 0.7\nmax_regression = 0.3\n"
        "slices = { s = 0.9, t = 0.8 }\n"
        '[gate]\nalpha = 0.2\ncorrection = "holm"\ncompare_variants = true\n',
    )
    policy = threshold_policy(RunOptions(), [first, second, SuiteConfig()])
    assert policy == ThresholdPolicy(Thresholds(default=0.7, max_regression=0.1, slices={"s": 0.5, "t": 0.8}))
    options = RunOptions(min_pass_rate=0.6, max_regression=0.0, alpha=0.01)
    assert threshold_policy(options, [first]) == ThresholdPolicy(
        Thresholds(max_regression=0.1, slices={"s": 0.5}), option=0.6, max_regression_option=0.0
    )
    assert gate_settings(RunOptions(), [first, second]) == GateSettings(
        alpha=0.2, correction="none", compare_variants=True
    )
    assert gate_settings(options, [first, second]).alpha == 0.01
    assert gate_settings(RunOptions(), []) == GateSettings()


def test_what_a_run_records_reads_back_the_same(tmp_path: Path) -> None:
    """``promptsuite diff`` and ``merge`` read the settings in force back from ``summary.json``."""
    suite = _config(tmp_path, "[thresholds]\ndefault = 0.7\nslices = { s = 0.9 }\n[gate]\nalpha = 0.2\n")
    options = RunOptions(max_regression=0.05)
    policy, settings = threshold_policy(options, [suite]), gate_settings(options, [suite])
    rows = [CaseResult(case_id="a", slice="s", outcome="passed")]  # type: ignore[arg-type]
    document = summary_document(summarize(rows, policy, settings=settings))
    assert policy_from_summary(document) == policy
    assert GateSettings.from_dict(document) == settings
    older = {
        "slices": [
            {"slice": "s", "threshold": 0.9, "threshold_source": "config slice"},
            {"slice": "u", "threshold": 0.7, "threshold_source": "config default"},
        ]
    }
    assert policy_from_summary(older).threshold("s") == policy.threshold("s")
    assert policy_from_summary(older).threshold("v") == policy.threshold("v")


MODELS = """[model]
spec = "fake:rules.json"
timeout_s = 30
concurrency = 4
[models.big]
spec = "echo"
batch = true
[models.judge]
spec = "fake:judge.json"
[variants.v1]
template = "{input}"
[variants.v2]
template = "{input}"
model = { timeout_s = 5 }
[variants.v3]
template = "{input}"
[variants.v3.model]
spec = "fake:v3.json"
"""


def test_which_model_a_suite_and_each_variant_runs(tmp_path: Path) -> None:
    suite = _config(tmp_path, MODELS)
    here = tmp_path / "invoked"
    plain = model_choice(RunOptions(), suite, invocation_dir=here)
    assert (plain.settings, plain.root, plain.concurrency, plain.batch) == (suite.model, tmp_path, 4, False)
    assert plain.where == f"{tmp_path / 'promptsuite.toml'}:2: model.spec = 'fake:rules.json'"
    assert model_choice(RunOptions(), suite, "v1", invocation_dir=here) == plain
    v2 = model_choice(RunOptions(), suite, "v2", invocation_dir=here)
    assert (v2.settings.timeout_s, v2.settings.spec, v2.where) == (5.0, "fake:rules.json", plain.where)
    v3 = model_choice(RunOptions(), suite, "v3", invocation_dir=here)
    assert v3.settings.spec == "fake:v3.json" and v3.settings.timeout_s == 30.0
    assert v3.where == f"{tmp_path / 'promptsuite.toml'}:18: variants.v3.model.spec = 'fake:v3.json'"

    named = model_choice(RunOptions(model="big"), suite, invocation_dir=here)
    assert (named.settings, named.root, named.batch, named.concurrency) == (
        suite.models["big"],
        tmp_path,
        True,
        DEFAULT_CONCURRENCY,
    )
    assert named.where == f"{tmp_path / 'promptsuite.toml'}:6: models.big.spec = 'echo'"
    spec = model_choice(RunOptions(model="fake:mine.json"), suite, "v2", invocation_dir=here)
    assert (spec.settings.spec, spec.settings.timeout_s, spec.root) == ("fake:mine.json", 5.0, here)
    assert spec.where == "--prompt-model fake:mine.json"
    over = model_choice(RunOptions(model="fake:mine.json"), suite, "v3", invocation_dir=here)
    assert (over.settings.spec, over.root) == ("fake:v3.json", tmp_path)  # the variant's own rules: the config's

    options = RunOptions(base_url="http://localhost:1/v1", concurrency=2, batch=True)
    forced = model_choice(options, suite, "v3", invocation_dir=here)
    assert (forced.settings.base_url, forced.concurrency, forced.batch) == ("http://localhost:1/v1", 2, True)
    bare = model_choice(RunOptions(), SuiteConfig(), invocation_dir=here)
    assert (bare.settings.spec, bare.where, bare.concurrency) == ("fake", None, DEFAULT_CONCURRENCY)


def test_which_judge_a_suite_has(tmp_path: Path) -> None:
    suite = _config(tmp_path, MODELS)
    here = tmp_path / "invoked"
    judge = judge_choice(RunOptions(), suite, invocation_dir=here)
    assert judge is not None and (judge.settings, judge.root) == (suite.models["judge"], tmp_path)
    assert judge.where == f"{tmp_path / 'promptsuite.toml'}:9: models.judge.spec = 'fake:judge.json'"
    named = judge_choice(RunOptions(judge="big"), suite, invocation_dir=here)
    assert named is not None and named.settings is suite.models["big"]
    spec = judge_choice(RunOptions(judge="fake:j.json"), suite, invocation_dir=here)
    assert spec is not None and (spec.settings.spec, spec.root, spec.where) == (
        "fake:j.json",
        here,
        "--prompt-judge fake:j.json",
    )
    assert spec.settings.timeout_s == 60.0  # a spec alone: the defaults, not [model]'s
    assert judge_choice(RunOptions(), SuiteConfig(), invocation_dir=here) is None


@pytest.mark.parametrize("variant", [None, "v2"])
def test_a_run_without_config_runs_the_default_model(variant: str | None) -> None:
    choice = model_choice(RunOptions(), SuiteConfig(), variant, invocation_dir=Path.cwd())
    assert choice.settings == SuiteConfig().model and choice.root == Path.cwd()


def test_a_judge_has_the_concurrency_of_its_own_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge behind a hosted API meets its rate limit as a model does: ``auto`` for an ``https://`` endpoint
    (its ``max_concurrency`` the ceiling), its table's number when it gives one, 8 for a local endpoint."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    suite = _config(
        tmp_path,
        '[models.judge]\nspec = "openai:gpt-4o-mini"\nmax_concurrency = 20\n'
        '[models.local]\nspec = "openai:m"\nbase_url = "http://127.0.0.1:1/v1"\n'
        '[models.fixed]\nspec = "openai:gpt-4o-mini"\nconcurrency = 3\n',
    )
    here = tmp_path / "invoked"
    hosted = judge_choice(RunOptions(), suite, invocation_dir=here)
    assert hosted is not None and (hosted.concurrency, hosted.adaptive) == (20, True)
    local = judge_choice(RunOptions(judge="local"), suite, invocation_dir=here)
    assert local is not None and (local.concurrency, local.adaptive) == (DEFAULT_CONCURRENCY, False)
    fixed = judge_choice(RunOptions(judge="fixed", concurrency=40), suite, invocation_dir=here)
    assert fixed is not None and (fixed.concurrency, fixed.adaptive) == (3, False)  # --prompt-concurrency: the model's
