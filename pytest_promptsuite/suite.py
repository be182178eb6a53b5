"""Stage 1 (continued): the suite config, ``promptsuite.toml`` or ``[tool.promptsuite]``.

Unknown keys are errors that name the key and the file; paths are resolved against the config's
folder and must stay inside it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated
from typing import Any
from typing import Literal
from typing import Union
from urllib.parse import urlsplit

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError

from .cases import did_you_mean
from .errors import ConfigError
from .formats.tomlio import check_values
from .formats.tomlio import line_of
from .formats.tomlio import load_toml
from .scrub import public_url


__all__ = [
    "GateConfig",
    "ModelConfig",
    "ModelOverride",
    "Prices",
    "SuiteConfig",
    "SuiteSection",
    "TemplateConfig",
    "TemplateKind",
    "Thresholds",
    "VariantConfig",
    "base_url_problem",
    "confine",
    "find_config",
    "load_config",
    "suite_targets",
]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class SuiteSection(_Section):
    """``[suite]``: the case files to collect and the train file that gives in-context examples."""

    cases: list[str] = Field(default_factory=list)
    train: Union[str, None] = None


class Prices(_Section):
    """``[model] prices``: USD per million tokens, the one place a run's prices live (the reports'
    cost figures, a ``cost`` check without prices of its own, a budget)."""

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call's token counts; None when either count is unknown."""
        if prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


class ModelConfig(_Section):
    """A model: its spec and how to reach it. ``api_key_env`` names a variable, never a key."""

    spec: str = "fake"
    base_url: Union[str, None] = None
    api_key_env: str = "OPENAI_API_KEY"
    endpoint: Literal["chat", "completions"] = "chat"
    meta_template: Union[str, dict[str, Any], None] = None
    params: dict[str, Any] = Field(default_factory=dict)
    concurrency: Union[int, None] = Field(default=None, ge=1, le=1024)
    timeout_s: float = Field(default=60.0, gt=0, le=86400)
    max_retries: int = Field(default=3, ge=0, le=100)
    prices: Union[Prices, None] = None

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call at this model's ``prices``; None without prices or token counts."""
        return None if self.prices is None else self.prices.cost(prompt_tokens, completion_tokens)


def base_url_problem(url: str) -> str | None:
    """What is wrong with an endpoint's base URL (None: nothing). Credentials in it are refused:
    httpx would silently send ``user:password@`` as Basic auth in place of the bearer key."""
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        return "holds whitespace or a control character"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if parts.username is not None or parts.password is not None:
        return (
            "carries 'user:password@', which httpx would send as Basic auth in place of the API "
            "key; drop it and put the key in the variable api_key_env names"
        )
    try:
        parts.port  # noqa: B018 (reading it checks it)
    except ValueError:
        return "has a port that is not a number from 0 to 65535"
    if not parts.hostname:
        return "has no host"
    return None


def confine(root: Path, relative: str | Path) -> Path | None:
    """``root / relative`` resolved (links followed), or None when that leaves ``root``: the one
    rule for every file a config or a case file names."""
    base = root.resolve()
    target = (base / relative).resolve()
    return target if target == base or base in target.parents else None


class TemplateKind(Enum):
    """The three kinds of prompt a ``[template]`` table (after a variant's overrides) can make."""

    INFER_CFG = "infer_cfg"
    """An OpenCompass ``infer_cfg`` (``prompt_template`` / ``ice_template``), also the default."""
    TASK_PROMPTS = "task_prompts"
    """A NeMo Guardrails task prompt (``task_prompts`` + ``task``)."""
    FILE = "file"
    """A template file or inline ``template`` string with its ``renderer``."""

    @property
    def choosing_keys(self) -> tuple[str, ...]:
        """The keys that make a table of this kind (any one of them set)."""
        return _CHOOSING[self]

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key of this kind: the choosing keys and those that only modify it."""
        return _CHOOSING[self] + _MODIFYING[self]


#: The keys that choose a kind: a table that sets keys of two kinds here is an error.
_CHOOSING: dict[TemplateKind, tuple[str, ...]] = {
    TemplateKind.INFER_CFG: ("prompt_template", "ice_template", "multiturn_template"),
    TemplateKind.TASK_PROMPTS: ("task_prompts", "task"),
    TemplateKind.FILE: ("template_file", "template"),
}
#: The keys that only modify their kind. A variant that sets any key of a kind (choosing or
#: modifying) drops the ``[template]`` keys of the other kinds. ``output_column`` is of no kind.
_MODIFYING: dict[TemplateKind, tuple[str, ...]] = {
    TemplateKind.INFER_CFG: ("retriever", "infer_mode"),
    TemplateKind.TASK_PROMPTS: ("mode",),
    TemplateKind.FILE: ("renderer",),
}


class TemplateConfig(_Section):
    """How a case becomes a prompt (an ``infer_cfg``, a task prompt, or a template file)."""

    prompt_template: Union[dict[str, Any], str, None] = None
    ice_template: Union[dict[str, Any], str, None] = None
    retriever: Union[dict[str, Any], None] = None
    output_column: Union[str, None] = None
    task_prompts: Union[str, None] = None
    task: Union[str, None] = None
    mode: Union[str, None] = None
    template_file: Union[str, None] = None
    template: Union[str, None] = None
    renderer: Union[dict[str, Any], str, None] = None
    infer_mode: Union[str, None] = None
    multiturn_template: Union[dict[str, Any], None] = None

    def kind(self, *, path: Path | None = None) -> TemplateKind:
        """The kind of prompt this table makes (INFER_CFG when it sets no choosing key); called
        when the suite's prompts are built, so a mixture is a ConfigError then, naming ``path``."""
        chosen = [kind for kind in TemplateKind if any(getattr(self, k) is not None for k in kind.choosing_keys)]
        if len(chosen) > 1:
            raise ConfigError(
                f"{path}: [template] takes exactly one of: an infer_cfg (prompt_template), a task "
                "prompt (task_prompts + task) or a template file (template_file or template)"
            )
        return chosen[0] if chosen else TemplateKind.INFER_CFG

    def for_variant(self, override: TemplateConfig) -> TemplateConfig:
        """This table with ``override``'s keys over it; when the override sets a key of some kind,
        this table's keys of the other kinds are dropped (a file variant over task prompts)."""
        updates = {k: getattr(override, k) for k in override.model_fields_set if k in TemplateConfig.model_fields}
        kinds = {kind for kind in TemplateKind if any(k in updates for k in kind.keys)}
        base = self.model_dump()
        if kinds:
            for kind in TemplateKind:
                if kind not in kinds:
                    base.update(dict.fromkeys(kind.keys))
        base.update(updates)
        return type(self).model_validate(base)


class Thresholds(_Section):
    """``[thresholds]``: the pass rate each slice must reach, and the regression a baseline allows."""

    default: Union[float, None] = Field(default=None, ge=0, le=1)
    max_regression: Union[float, None] = Field(default=None, ge=0, le=1)
    slices: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)


class GateConfig(_Section):
    """``[gate]``: how a drop against the baseline is judged (see the README's "Is this drop
    real?"): the paired test's level, the correction over the run's comparisons, the rule, and
    whether each later prompt variant is gated against the first."""

    alpha: Union[float, None] = Field(default=None, gt=0, lt=1)
    correction: Union[Literal["holm", "none"], None] = None
    regression: Union[Literal["auto", "paired", "delta"], None] = None
    compare_variants: Union[bool, None] = None


class ModelOverride(_Section):
    """``[variants.NAME.model]``: the keys of ``[model]`` a prompt variant changes (the rest
    stay), so two models can be compared in one run under the same rule."""

    spec: Union[str, None] = None
    base_url: Union[str, None] = None
    api_key_env: Union[str, None] = None
    endpoint: Union[Literal["chat", "completions"], None] = None
    meta_template: Union[str, dict[str, Any], None] = None
    params: Union[dict[str, Any], None] = None
    concurrency: Union[int, None] = Field(default=None, ge=1)
    timeout_s: Union[float, None] = Field(default=None, gt=0)
    max_retries: Union[int, None] = Field(default=None, ge=0)
    prices: Union[Prices, None] = None


class VariantConfig(TemplateConfig):
    """``[variants.NAME]``: the ``[template]`` keys a prompt version overrides, and optionally
    its own ``model`` table."""

    model: Union[ModelOverride, None] = None


class SuiteCheck(_Section):
    """``[[checks]]``: checks for every case (``slice = "*"``), one slice, or a glob of slices."""

    slice: str = "*"
    assert_: list[dict[str, Any]] = Field(alias="assert")


class ReviewConfig(_Section):
    """``[review]``: what a review mark (``review`` on a case, a ``human-review`` check) does.
    ``outcome = "review"`` (default) leaves the case out of the pass rate; ``"failed"`` fails it."""

    outcome: Literal["review", "failed"] = "review"


class SuiteConfig(_Section):
    """A parsed suite config. ``path`` is the file it came from (None for the defaults)."""

    suite: SuiteSection = Field(default_factory=SuiteSection)
    model: ModelConfig = Field(default_factory=ModelConfig)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    template: TemplateConfig = Field(default_factory=TemplateConfig)
    variants: dict[str, VariantConfig] = Field(default_factory=dict)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    gate: GateConfig = Field(default_factory=GateConfig)
    checks: list[SuiteCheck] = Field(default_factory=list)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    #: ``[checks] python_modules``: modules ``python`` and ``pydantic`` checks may import.
    python_modules: tuple[str, ...] = Field(default=(), exclude=True)
    path: Union[Path, None] = Field(default=None, exclude=True)

    @property
    def root(self) -> Path:
        """The folder paths in this config are relative to."""
        return self.path.parent if self.path is not None else Path.cwd()

    def resolve(self, relative: str, *, key: str) -> Path:
        """Resolve a path of this config (links followed); it must stay inside the config's folder."""
        target = confine(self.root, relative)
        if target is None:
            raise ConfigError(
                f"{self.path}: {key} = {relative!r} points outside the suite's folder {self.root.resolve()}"
            )
        return target

    def case_paths(self) -> list[Path]:
        """The ``[suite] cases`` paths, resolved (each must stay inside the config's folder)."""
        return [self.resolve(p, key="suite.cases") for p in self.suite.cases]

    def template_for(self, variant: str | None) -> TemplateConfig:
        """The ``[template]`` table as ``variant`` sees it (None: ``[template]`` itself); see
        :meth:`TemplateConfig.for_variant`. ConfigError for a variant the config does not have."""
        if variant is None:
            return self.template
        if variant not in self.variants:
            raise ConfigError(
                f"{self.path}: no variant {variant!r}"
                + did_you_mean(variant, list(self.variants))
                + f"; variants: {', '.join(self.variants) or 'none'}"
            )
        return self.template.for_variant(self.variants[variant])

    def model_for(self, variant: str | None, base: ModelConfig | None = None) -> ModelConfig:
        """The model ``variant`` runs: ``base`` (default ``[model]``) with the keys of the
        variant's own ``model`` table over it."""
        base = base if base is not None else self.model
        override = self.variants[variant].model if variant is not None and variant in self.variants else None
        if override is None:
            return base
        return base.model_copy(update={k: getattr(override, k) for k in override.model_fields_set})


def _known_keys(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items() if name not in ("path", "python_modules")]


def _config_error(path: Path, exc: ValidationError, table: str) -> ConfigError:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        where = f"{table}.{loc}" if table else loc
        if err["type"] == "extra_forbidden":
            parent: type[BaseModel] = SuiteConfig
            for part in err["loc"][:-1]:
                field = parent.model_fields.get(str(part))
                annotation = getattr(field, "annotation", None)
                if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                    parent = annotation
            key = str(err["loc"][-1])
            lines.append(
                f"{path}: unknown key {where!r}" + did_you_mean(key, _known_keys(parent))
            )
        else:
            lines.append(f"{path}: {where}: {err['msg']}")
    return ConfigError("\n".join(lines))


_CHECKS_TABLE = ("python_modules", "rules")


def _checks_table(data: dict[str, Any], where: str) -> dict[str, Any]:
    """``[checks]`` written as a table (``python_modules``, and the suite checks as
    ``[[checks.rules]]``) folded into the fields ``checks`` and ``python_modules``. TOML cannot
    hold a ``[checks]`` table and ``[[checks]]`` tables both, hence the second spelling."""
    if "python_modules" in data:
        raise ConfigError(f"{where}: unknown key 'python_modules' (did you mean [checks] python_modules?)")
    table = data.get("checks")
    if not isinstance(table, dict):
        return data
    for key in table:
        if key not in _CHECKS_TABLE:
            raise ConfigError(
                f"{where}: unknown key 'checks.{key}'" + did_you_mean(str(key), list(_CHECKS_TABLE))
                + "; with [checks] python_modules, write the suite checks as [[checks.rules]]"
            )
    modules = table.get("python_modules", [])
    if not isinstance(modules, list) or not all(
        isinstance(m, str) and m and all(part.isidentifier() for part in m.split(".")) for m in modules
    ):
        raise ConfigError(f"{where}: checks.python_modules must be a list of module names like 'myapp.checks'")
    return {**data, "checks": table.get("rules", []), "python_modules": tuple(modules)}


def _check_base_urls(config: SuiteConfig, text: str, where: str, table: str) -> None:
    """Refuse a ``base_url`` of ``[model]`` or ``[models.NAME]`` that :func:`base_url_problem` finds wrong."""
    named = [("model", config.model), *((f"models.{k}", v) for k, v in config.models.items())]
    for key, model in named:
        problem = model.base_url and base_url_problem(model.base_url)
        if problem:
            line = line_of(text, "base_url")
            dotted = f"{table}.{key}" if table else key
            place = f"{where}:{line}" if line else where
            raise ConfigError(f"{place}: {dotted}.base_url = {public_url(model.base_url or '')!r} {problem}")


def load_config(path: Path | str) -> SuiteConfig:
    """Parse a ``promptsuite.toml`` (or the ``[tool.promptsuite]`` table of a ``pyproject.toml``)."""
    path = Path(path)
    document, text = load_toml(path)
    data: Any = document
    table = ""
    if path.name == "pyproject.toml":
        tool = document.get("tool")
        data = tool.get("promptsuite") if isinstance(tool, dict) else None
        table = "tool.promptsuite"
        if data is None:
            raise ConfigError(f"{path}: has no [tool.promptsuite] table")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: [{table}] must be a table")
    check_values(data, text, str(path), (table,) if table else ())
    data = _checks_table(data, str(path))
    try:
        config = SuiteConfig.model_validate(data)
    except ValidationError as exc:
        raise _config_error(path, exc, table) from exc
    _check_base_urls(config, text, str(path), table)
    config = config.model_copy(update={"path": path.resolve()})
    config.case_paths()  # refuse paths outside the folder now, not later
    if config.suite.train is not None:
        config.resolve(config.suite.train, key="suite.train")
    for key, model in [("model", config.model), *((f"models.{k}", v) for k, v in config.models.items())]:
        if model.spec.startswith("fake:") and confine(config.root, model.spec[len("fake:"):]) is None:
            raise ConfigError(  # the fake model's rules file is a path of the config like any other
                f"{config.path}: {key}.spec = {model.spec!r} points outside the suite's folder "
                f"{config.root.resolve()} (--prompt-model may name a file anywhere)"
            )
    return config


def find_config(case_file: Path, rootdir: Path) -> Path | None:
    """The config of a case file: ``promptsuite.toml`` beside it, else the nearest
    ``pyproject.toml`` with a ``[tool.promptsuite]`` table between it and ``rootdir``."""
    beside = case_file.parent / "promptsuite.toml"
    if beside.is_file():
        return beside
    rootdir = rootdir.resolve()
    folder = case_file.resolve().parent
    while True:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                tool = load_toml(candidate)[0].get("tool")
                if isinstance(tool, dict) and "promptsuite" in tool:
                    return candidate
            except ConfigError:  # not ours to report: a pyproject.toml that is not a suite's
                pass
        if folder == rootdir or folder.parent == folder:
            return None
        folder = folder.parent


def suite_targets(
    path: Path, *, load: Callable[[Path], SuiteConfig] = load_config
) -> tuple[SuiteConfig | None, list[Path]]:
    """What a ``--prompt-suite`` argument means: its config (if it names one) and what to collect.

    A ``*.toml`` is a suite config: its ``[suite] cases`` (else its folder). A folder with a
    ``promptsuite.toml`` is that config's suite. Anything else is collected as it is.
    """
    config_file: Path | None = None
    if path.suffix == ".toml":
        config_file = path
    elif path.is_dir() and (path / "promptsuite.toml").is_file():
        config_file = path / "promptsuite.toml"
    if config_file is None:
        return None, [path]
    config = load(config_file)
    return config, config.case_paths() or [config_file.parent if path.is_file() else path]
