"""Stage 1 (continued): the suite config, ``promptsuite.toml`` or ``[tool.promptsuite]``.

Unknown keys are errors that name the key and the file; paths are resolved against the config's
folder and must stay inside it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any
from typing import Literal
from typing import Union

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError

from .cases import did_you_mean
from .errors import ConfigError


if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


__all__ = [
    "GateConfig",
    "ModelConfig",
    "ModelOverride",
    "SuiteConfig",
    "SuiteSection",
    "TemplateConfig",
    "TemplateKind",
    "Thresholds",
    "VariantConfig",
    "find_config",
    "load_config",
    "suite_targets",
]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SuiteSection(_Section):
    """``[suite]``: the case files to collect and the train file that gives in-context examples."""

    cases: list[str] = Field(default_factory=list)
    train: Union[str, None] = None


class ModelConfig(_Section):
    """A model: its spec and how to reach it. ``api_key_env`` names a variable, never a key."""

    spec: str = "fake"
    base_url: Union[str, None] = None
    api_key_env: str = "OPENAI_API_KEY"
    endpoint: Literal["chat", "completions"] = "chat"
    meta_template: Union[str, dict[str, Any], None] = None
    params: dict[str, Any] = Field(default_factory=dict)
    concurrency: Union[int, None] = Field(default=None, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0)


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
    slices: dict[str, float] = Field(default_factory=dict)


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
    path: Union[Path, None] = Field(default=None, exclude=True)

    @property
    def root(self) -> Path:
        """The folder paths in this config are relative to."""
        return self.path.parent if self.path is not None else Path.cwd()

    def resolve(self, relative: str, *, key: str) -> Path:
        """Resolve a path of this config; it must stay inside the config's folder."""
        root = self.root.resolve()
        target = (root / relative).resolve()
        if target != root and root not in target.parents:
            raise ConfigError(
                f"{self.path}: {key} = {relative!r} points outside the suite's folder {root}"
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
    return [info.alias or name for name, info in model.model_fields.items() if name != "path"]


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


def load_config(path: Path | str) -> SuiteConfig:
    """Parse a ``promptsuite.toml`` (or the ``[tool.promptsuite]`` table of a ``pyproject.toml``)."""
    path = Path(path)
    try:
        with path.open("rb") as fp:
            data = tomllib.load(fp)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the suite config: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    table = ""
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("promptsuite")
        table = "tool.promptsuite"
        if data is None:
            raise ConfigError(f"{path}: has no [tool.promptsuite] table")
    try:
        config = SuiteConfig.model_validate(data)
    except ValidationError as exc:
        raise _config_error(path, exc, table) from exc
    config = config.model_copy(update={"path": path.resolve()})
    config.case_paths()  # refuse paths outside the folder now, not later
    if config.suite.train is not None:
        config.resolve(config.suite.train, key="suite.train")
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
                with candidate.open("rb") as fp:
                    if "promptsuite" in tomllib.load(fp).get("tool", {}):
                        return candidate
            except (OSError, tomllib.TOMLDecodeError):
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
