"""Every default of a run, and the one place precedence is decided: which model a suite (and each
variant) runs, each slice's threshold, and how a drop against a baseline is judged."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any
from typing import Literal

from pytest_promptsuite.config.tables import ConfigTable
from pytest_promptsuite.config.tables import ModelConfig
from pytest_promptsuite.config.tables import key


if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

    from pytest_promptsuite.config.options import RunOptions
    from pytest_promptsuite.config.suite import SuiteConfig


#: Model calls in flight at once when neither ``--prompt-concurrency`` nor ``[model] concurrency`` says (and the
#: endpoint is no ``https://`` one: a local server has a fixed number of slots and queues, it does not refuse).
DEFAULT_CONCURRENCY = 8
#: The base URL an ``openai:`` model without one (nor ``OPENAI_BASE_URL``) calls.
OPENAI_BASE_URL = "https://api.openai.com/v1"
#: The pass rate a slice must reach when neither an option nor a config says.
DEFAULT_THRESHOLD = 1.0
#: The drop of a slice's pass rate against the baseline allowed when neither an option nor a config says.
DEFAULT_MAX_REGRESSION = 0.0
#: Seconds a batch job may take before it is cancelled when ``--prompt-batch-timeout`` does not say: the
#: Batch API's 24 h completion window and an hour to finalize.
DEFAULT_BATCH_TIMEOUT_S = 25 * 3600.0


class Share:
    """A number from 0 to 1 where a field's own bounds cannot reach it (the values of a dict)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        return core_schema.float_schema(ge=0, le=1)


class CaseShare:
    """``[gate] case_pass``: the share of a case's repeats that must pass, in (0, 1], or ``"any"``."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        share = core_schema.float_schema(gt=0, le=1)
        return core_schema.union_schema([share, core_schema.literal_schema(["any"])], mode="left_to_right")


class Increase:
    """``[gate] max_tokens_increase`` / ``max_cost_increase``: a share of the baseline, at least 0."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        return core_schema.float_schema(ge=0, le=100)


#: Labels a judge's calibration needs before its verdicts gate, when ``[judge] min_labels`` does not say.
DEFAULT_MIN_LABELS = 30


@dataclass(frozen=True)
class JudgeSettings(ConfigTable):
    """``[judge]``: what the llm-rubric judge is sent, how often it is asked, and whether its verdicts gate
    (against the calibration ``promptsuite calibrate`` wrote)."""

    template: str | None = key(
        None, "The judge's prompt, with {rubric} and {output} filled in (default: the built-in one)."
    )
    template_file: str | None = key(None, "A UTF-8 file holding the judge's prompt, as template (one of the two).")
    labels: list[str] = key(list, "Labels files (JSON Lines) promptsuite calibrate reads.")
    calibration: str = key(
        "calibration.json", "The calibration promptsuite calibrate writes and a run reads (beside the config)."
    )
    min_agreement: float | None = key(
        None,
        "Gate on an llm-rubric check only when the lower end of its judge's kappa interval reaches this; else "
        "its outcome is review (default: none, every verdict gates).",
        ge=-1,
        le=1,
    )
    min_labels: int = key(
        DEFAULT_MIN_LABELS, "The fewest labels a calibration needs before the judge's verdicts gate.", ge=1
    )
    repeat: int = key(1, "Ask the judge this many times and take the majority (--prompt-judge-repeat).", ge=1, le=25)


@dataclass(frozen=True)
class GateSettings(ConfigTable):
    """How a drop against a baseline (or the first variant) is judged: ``[gate]``, ``--prompt-alpha``."""

    alpha: float = key(0.05, "Level of the paired regression test against the baseline.", gt=0, lt=1)
    correction: Literal["holm", "none"] = key(
        "holm", "Correction over every compared (slice, variant) of the run: holm, or none."
    )
    regression: Literal["auto", "paired", "delta"] = key(
        "auto",
        "The rule: paired (a significant drop), delta (the drop alone), auto (delta when both runs "
        "are deterministic, else paired).",
    )
    compare_variants: bool = key(False, "Gate each later prompt variant against the first.")
    case_pass: Annotated[float | str, CaseShare] | None = key(
        None,
        'A case passes when at least this share of its repeats pass (1.0: all of them, "any": one); '
        "the slice's rate then counts cases. Default: each repeat counts on its own.",
    )
    max_tokens_increase: Annotated[float, Increase] | None = key(
        None, "Fail when the tokens per case rose more than this share against the baseline (0.2: 20 %)."
    )
    max_cost_increase: Annotated[float, Increase] | None = key(
        None, "Fail when the cost per case rose more than this share against the baseline (0.2: 20 %)."
    )

    def rule_for(self, deterministic: bool) -> Literal["paired", "delta"]:
        """Return the rule a comparison is judged by, ``auto`` resolved by whether both runs are ``deterministic``."""
        if self.regression == "auto":
            return "delta" if deterministic else "paired"
        return self.regression

    def to_dict(self) -> dict[str, Any]:
        """Return the settings in force, as ``summary.json`` records them for ``diff`` and ``merge``."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateSettings:
        """Read the settings a ``summary.json`` recorded (a default for a missing or impossible value)."""
        default = cls()
        alpha = data.get("alpha")
        regression = data.get("regression")
        return cls(
            alpha=float(alpha) if isinstance(alpha, (int, float)) and 0 < alpha < 1 else default.alpha,
            correction="none" if data.get("correction") == "none" else default.correction,
            regression=regression if regression in ("paired", "delta") else default.regression,
            compare_variants=data.get("compare_variants") is True,
            case_pass=_case_pass(data.get("case_pass")),
            max_tokens_increase=_increase(data.get("max_tokens_increase")),
            max_cost_increase=_increase(data.get("max_cost_increase")),
        )

    def case_passes(self, passed: int, counted: int) -> bool:
        """Tell whether a case whose ``passed`` of ``counted`` repeats passed meets ``case_pass``."""
        if self.case_pass == "any":
            return passed > 0
        share = 1.0 if self.case_pass is None else float(self.case_pass)
        return counted > 0 and passed >= share * counted - 1e-9


def _case_pass(value: Any) -> float | str | None:
    if value == "any":
        return "any"
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1
    return float(value) if ok else None


def _increase(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else None


@dataclass(frozen=True)
class Thresholds(ConfigTable):
    """``[thresholds]``: the pass rate each slice must reach, and the regression a baseline allows."""

    default: float | None = key(
        None,
        f"The pass rate a slice must reach (default {DEFAULT_THRESHOLD}; --prompt-min-pass-rate beats it).",
        ge=0,
        le=1,
    )
    max_regression: float | None = key(
        None,
        f"The largest allowed drop of a slice's pass rate against the baseline (default {DEFAULT_MAX_REGRESSION}).",
        ge=0,
        le=1,
    )
    slices: dict[str, Annotated[float, Share]] = key(dict, "The pass rate of named slices, over every other threshold.")


@dataclass(frozen=True)
class ThresholdPolicy:
    """Where each slice's threshold and the allowed regression come from.

    A config's slice beats ``--prompt-min-pass-rate`` (``option``), which beats the config's default, which
    beats ``builtin``; ``--prompt-max-regression`` beats the config's, which beats the default.
    """

    config: Thresholds = field(default_factory=Thresholds)
    option: float | None = None
    max_regression_option: float | None = None
    builtin: float = DEFAULT_THRESHOLD

    def threshold(self, slice_name: str) -> tuple[float, str]:
        """Return the threshold of ``slice_name`` and where it came from."""
        if slice_name in self.config.slices:
            return self.config.slices[slice_name], "config slice"
        if self.option is not None:
            return self.option, "option"
        if self.config.default is not None:
            return self.config.default, "config default"
        return self.builtin, "default"

    def max_regression(self) -> tuple[float, str]:
        """Return the largest allowed drop of a slice's pass rate and where it came from."""
        if self.max_regression_option is not None:
            return self.max_regression_option, "option"
        if self.config.max_regression is not None:
            return self.config.max_regression, "config"
        return DEFAULT_MAX_REGRESSION, "default"

    def to_dict(self) -> dict[str, Any]:
        """Return the policy as ``summary.json`` records it, so ``diff`` and ``merge`` can reuse it."""
        return {
            "slices": dict(self.config.slices),
            "option": self.option,
            "config_default": self.config.default,
            "builtin": self.builtin,
            "max_regression_option": self.max_regression_option,
            "max_regression_config": self.config.max_regression,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThresholdPolicy:
        """Read the policy a ``summary.json`` recorded (missing keys take their defaults)."""
        config = Thresholds(
            default=data.get("config_default"),
            max_regression=data.get("max_regression_config"),
            slices=dict(data.get("slices") or {}),
        )
        return cls(
            config,
            option=data.get("option"),
            max_regression_option=data.get("max_regression_option"),
            builtin=data.get("builtin", DEFAULT_THRESHOLD),
        )


def threshold_policy(options: RunOptions, suites: Iterable[SuiteConfig]) -> ThresholdPolicy:
    """Return the run's thresholds: the options over its configs' ``[thresholds]`` (the first config
    that sets a key, or a slice, wins) over the defaults."""
    slices: dict[str, float] = {}
    default = max_regression = None
    for suite in suites:
        for name, value in suite.thresholds.slices.items():
            slices.setdefault(name, value)
        default = suite.thresholds.default if default is None else default
        max_regression = suite.thresholds.max_regression if max_regression is None else max_regression
    return ThresholdPolicy(
        Thresholds(default=default, max_regression=max_regression, slices=slices),
        option=options.min_pass_rate,
        max_regression_option=options.max_regression,
    )


def gate_settings(options: RunOptions, suites: Iterable[SuiteConfig]) -> GateSettings:
    """Return how the run judges drops: ``--prompt-alpha``, else the first config's ``[gate]`` that sets a
    key, else the defaults."""
    keys: dict[str, Any] = {}
    for suite in suites:
        for name, value in suite.gate.items():
            keys.setdefault(name, value)
    if options.alpha is not None:
        keys["alpha"] = options.alpha
    return GateSettings(**keys)


@dataclass(frozen=True)
class ModelChoice:
    """A model a suite runs: its settings, the folder its paths resolve in, where it was named, its bound
    on calls in flight over the run, and whether its calls go in a batch."""

    settings: ModelConfig
    root: Path
    where: str | None
    concurrency: int
    batch: bool
    #: Whether ``concurrency`` is the ceiling of an adaptive bound (``auto``) rather than a fixed one.
    adaptive: bool = False


def model_choice(
    options: RunOptions, suite: SuiteConfig, variant: str | None = None, *, invocation_dir: Path
) -> ModelChoice:
    """Choose the model ``suite`` (prompt ``variant``) runs.

    ``--prompt-model`` names a ``[models.NAME]`` or replaces the spec of ``[model]`` (its relative rules file
    then resolves against ``invocation_dir``); the variant's own ``model`` table goes over that;
    ``--prompt-base-url`` replaces the base URL; ``--prompt-concurrency`` and ``--prompt-batch`` beat the table's.
    """
    option = options.model
    base, key, root = _base_model(option, suite, invocation_dir)
    settings = suite.model_for(variant, base)
    if settings.spec != base.spec:
        root = suite.root  # the variant's own rules file is the config's
    override = suite.variants[variant].model if variant is not None and variant in suite.variants else None
    if override is not None and "spec" in override:
        key = f"variants.{variant}.model.spec"
    if key is None:
        where: str | None = f"--prompt-model {option}"
    else:
        where = f"{suite.where(key)}: {key} = {settings.spec!r}" if suite.path is not None else None
    if options.base_url:
        settings = dataclasses.replace(settings, base_url=options.base_url)
    concurrency, adaptive = concurrency_of(options.concurrency or settings.concurrency, settings)
    return ModelChoice(
        settings, root, where, concurrency, batch=options.batch_mode or settings.batch, adaptive=adaptive
    )


def _base_model(option: str | None, suite: SuiteConfig, invocation_dir: Path) -> tuple[ModelConfig, str | None, Path]:
    """Return the model ``--prompt-model`` chooses before any variant: ``[model]``, a ``[models.NAME]``, or
    ``[model]`` with the option as its spec; the key of its spec (None: the option's); where its rules resolve."""
    if option is None:
        return suite.model, "model.spec", suite.root
    if option in suite.models:
        return suite.models[option], f"models.{option}.spec", suite.root
    return dataclasses.replace(suite.model, spec=option), None, invocation_dir


def concurrency_of(
    chosen: int | Literal["auto"] | None, settings: ModelConfig, environ: Mapping[str, str] | None = None
) -> tuple[int, bool]:
    """Return a model's bound on calls in flight and whether it is adaptive (its ``max_concurrency`` then).

    ``chosen`` (``--prompt-concurrency``, else ``[model] concurrency``) decides; without it an ``openai:`` model
    whose endpoint (its base URL, else ``OPENAI_BASE_URL``, else OpenAI's) is ``https://`` is adaptive, any other
    model has :data:`DEFAULT_CONCURRENCY`.
    """
    if isinstance(chosen, int):
        return chosen, False
    if chosen is None:
        env = os.environ if environ is None else environ
        url = settings.base_url or env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        if not (settings.spec.startswith("openai:") and url.lower().startswith("https://")):
            return DEFAULT_CONCURRENCY, False
    return settings.max_concurrency, True


def judge_choice(options: RunOptions, suite: SuiteConfig, *, invocation_dir: Path) -> ModelChoice | None:
    """Choose the judge of ``llm-rubric`` checks: ``--prompt-judge``, else ``[models.judge]``, else none.

    ``--prompt-judge`` names a ``[models.NAME]``, else is a spec whose rules file resolves against
    ``invocation_dir``. The judge's calls start when a check needs them, never in a batch; its bound on calls in
    flight is its own table's ``concurrency`` (``auto`` by default for an ``https://`` endpoint, as a model's).
    """
    option = options.judge
    name = option if option is not None and option in suite.models else None
    if option is None and "judge" in suite.models:
        name = "judge"
    if name is not None:
        settings, root = suite.models[name], suite.root
        where = f"{suite.where(f'models.{name}.spec')}: models.{name}.spec = {settings.spec!r}"
    elif option is not None:
        settings, root, where = ModelConfig(spec=option), invocation_dir, f"--prompt-judge {option}"
    else:
        return None
    concurrency, adaptive = concurrency_of(settings.concurrency, settings)  # its own table's, as a model's
    return ModelChoice(settings, root, where, concurrency, batch=False, adaptive=adaptive)  # called as checks need it
