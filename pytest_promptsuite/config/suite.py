"""The suite config, ``promptsuite.toml`` or ``[tool.promptsuite]``: its tables, and finding and reading one."""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Callable
from collections.abc import Collection
from dataclasses import dataclass
from dataclasses import field
from enum import Enum
from pathlib import Path
from typing import Any
from typing import Literal

from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import JudgeSettings
from pytest_promptsuite.config.settings import Thresholds
from pytest_promptsuite.config.tables import ConfigTable
from pytest_promptsuite.config.tables import ModelConfig as ModelConfig
from pytest_promptsuite.config.tables import Override
from pytest_promptsuite.config.tables import Prices as Prices
from pytest_promptsuite.config.tables import base_url_problem as base_url_problem
from pytest_promptsuite.config.tables import key
from pytest_promptsuite.config.tables import param_problem
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.formats.tomlio import check_values
from pytest_promptsuite.formats.tomlio import key_lines
from pytest_promptsuite.formats.tomlio import load_toml
from pytest_promptsuite.formats.tomlio import place
from pytest_promptsuite.safety.scrub import public_url


@dataclass(frozen=True)
class SuiteSection(ConfigTable):
    """``[suite]``: the case files to collect and the train file that gives in-context examples."""

    cases: list[str] = key(list, "Case files or folders to collect.")
    train: str | None = key(None, "Rows for in-context examples (not collected).")


def confine(root: Path, relative: str | Path) -> Path | None:
    """Resolve ``root / relative`` (links followed); None when that leaves ``root``.
    The one rule for every file a config or a case file names."""
    base = root.resolve()
    target = (base / relative).resolve()
    return target if target == base or base in target.parents else None


class TemplateKind(Enum):
    """The four kinds of prompt a ``[template]`` table (after a variant's overrides) can make."""

    INFER_CFG = "infer_cfg"
    """An OpenCompass ``infer_cfg`` (``prompt_template`` / ``ice_template``), also the default."""
    TASK_PROMPTS = "task_prompts"
    """A NeMo Guardrails task prompt (``task_prompts`` + ``task``)."""
    FILE = "file"
    """A template file or inline ``template`` string with its ``renderer``."""
    FUNCTION = "function"
    """A promptfoo prompt function (``prompt_function``), called when each case renders."""

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
    TemplateKind.FILE: ("template_file", "template", "system", "system_file"),
    TemplateKind.FUNCTION: ("prompt_function",),
}
#: The keys that only modify their kind. A variant that sets any key of a kind (choosing or
#: modifying) drops the ``[template]`` keys of the other kinds. ``output_column`` is of no kind.
_MODIFYING: dict[TemplateKind, tuple[str, ...]] = {
    TemplateKind.INFER_CFG: ("retriever", "infer_mode", "inferencer"),
    TemplateKind.TASK_PROMPTS: ("mode", "nemo_config", "semantics", "prompt_model"),
    TemplateKind.FILE: ("renderer",),
    TemplateKind.FUNCTION: ("prompt_context",),
}


@dataclass(frozen=True)
class TemplateConfig(ConfigTable):
    """How a case becomes a prompt: an ``infer_cfg``, a task prompt, or a template file.
    Every key is optional, so a variant's table (:class:`VariantConfig`) is this one."""

    prompt_template: dict[str, Any] | str | None = key(
        None, "An OpenCompass prompt template: a string, or a table (template, ice_token, ...)."
    )
    ice_template: dict[str, Any] | str | None = key(None, "The template of each in-context example of an infer_cfg.")
    retriever: dict[str, Any] | None = key(
        None, "How the in-context examples are chosen: an OpenCompass retriever table (type = ...)."
    )
    output_column: str | None = key(None, "The row field that holds the answer (the label of each in-context example).")
    task_prompts: str | None = key(None, "A NeMo Guardrails prompts.yml (with task).")
    task: str | None = key(None, "The task whose prompt prompts.yml gives.")
    mode: str | None = key(None, "The task prompt's prompting mode (default standard).")
    template_file: str | None = key(None, "A template file, rendered by renderer.")
    template: str | None = key(None, "An inline template, rendered by renderer.")
    renderer: dict[str, Any] | str | None = key(
        None, "What renders template or template_file: a renderer's name, or a table with its type."
    )
    system: str | None = key(
        None,
        "A system message sent first, as written (not rendered); the user message is the rendered template or "
        "template_file, else the case's input. One of system and system_file.",
    )
    system_file: str | None = key(None, "A UTF-8 file holding the system message, as system (one of the two).")
    infer_mode: str | None = key(None, "Which turns of a multi-turn template are asked: every, every_with_gt or last.")
    multiturn_template: dict[str, Any] | None = key(None, "An OpenCompass multi-turn prompt template.")
    optional: list[str] | None = key(None, "Fields a case may leave out: they render empty.")
    nemo_config: str | None = key(
        None, "A NeMo Guardrails config folder: its prompts, instructions and models; NeMo semantics."
    )
    semantics: Literal["promptsuite", "nemo", "promptfoo", "opencompass"] | None = key(
        None,
        "Whose rules render the prompt: promptsuite's; NeMo Guardrails' (a task prompt); promptfoo's "
        "(a template file, or a task prompt's messages: Nunjucks, an undefined variable renders empty); or "
        "OpenCompass's (an infer_cfg: "
        "a {name} the row lacks is left as written).",
    )
    nunjucks_filters: dict[str, str] | None = key(
        None,
        'promptfoo\'s nunjucksFilters (semantics = "promptfoo"): a filter name to the JavaScript file that '
        "exports it, run in Node.js.",
    )
    prompt_function: str | None = key(
        None,
        'A promptfoo prompt function (semantics = "promptfoo"), called as each case renders: FILE.js (its export), '
        "FILE.js:NAME, FILE.py:NAME (or Class.method), or FILE.py alone (a script that prints the prompt). Its "
        "string is rendered with Nunjucks' rules; its chat messages are sent as messages.",
    )
    prompt_context: dict[str, Any] | None = key(
        None,
        "What a prompt_function is given besides the case's vars: {provider = {id, label}, config}, as promptfoo "
        "gives them.",
    )
    prompt_model: str | None = key(
        None, "The model name that selects a NeMo prompt (openai/gpt-4o), apart from the one that runs."
    )
    inferencer: Literal["gen", "ppl"] | None = key(
        None, "ppl: a label map's cases score one prompt per label and predict the likeliest."
    )
    tools: list[dict[str, Any]] | None = key(
        None, "OpenAI function tools sent with every chat request (a case's tools are added to them)."
    )
    tools_file: str | None = key(None, "A JSON file holding the tools (a list of OpenAI function tools).")
    tool_choice: str | dict[str, Any] | None = key(
        None, 'auto, none, required, or {type = "function", function = {name = ...}}.'
    )
    max_steps: int | None = key(
        None,
        "The most model calls of a case with tool_results (model, tool results, model...; default 5).",
        ge=1,
        le=100,
    )
    max_turns: int | None = key(
        None,
        "The most user turns of a conversation with a simulated user (default 6; a case's user.max_turns wins).",
        ge=1,
        le=100,
    )
    user_prompt: str | None = key(
        None,
        "The simulated user's system prompt, a template of {persona}, {goal} and {stop_marker} "
        "(default: the built-in one of the conversations guide).",
    )

    def kind(self, *, path: Path | None = None) -> TemplateKind:
        """Return the kind of prompt this table makes (INFER_CFG by default); a mixture is a ConfigError."""
        chosen = [kind for kind in TemplateKind if any(getattr(self, k) is not None for k in kind.choosing_keys)]
        if len(chosen) > 1:
            raise ConfigError(
                f"{path}: [template] takes exactly one of: an infer_cfg (prompt_template), a task "
                "prompt (task_prompts + task), a template file (template_file or template) or a prompt_function"
            )
        return chosen[0] if chosen else TemplateKind.INFER_CFG

    def set_keys(self) -> dict[str, Any]:
        """Return the ``[template]`` keys this table sets (TOML has no null: a key set is never None)."""
        return {k: getattr(self, k) for k in _TEMPLATE_FIELDS if getattr(self, k) is not None}

    def for_variant(self, override: TemplateConfig) -> TemplateConfig:
        """Lay ``override``'s keys over this table, dropping this table's keys of the kinds it does not set."""
        updates = override.set_keys()
        kinds = _chosen_kinds(updates)
        dropped = {k: None for kind in TemplateKind if kinds and kind not in kinds for k in kind.keys}
        if _SEMANTICS_KINDS.get(self.semantics or "", set()) & kinds:  # an imported suite's rules hold for its variants
            dropped.pop("semantics", None)
        return dataclasses.replace(self, **{**dropped, **updates})


def _chosen_kinds(updates: dict[str, Any]) -> set[TemplateKind]:
    """Return the kinds of prompt an override's keys choose (a key that only modifies, as ``semantics``,
    chooses none of its own: then the kinds its keys belong to)."""
    kinds = {kind for kind in TemplateKind if any(k in updates for k in kind.choosing_keys)}
    return kinds or {kind for kind in TemplateKind if any(k in updates for k in kind.keys)}


#: The kinds of prompt each ``semantics`` applies to (``nemo``: task prompts, the kind it is listed with).
_SEMANTICS_KINDS = {"promptfoo": {TemplateKind.FILE, TemplateKind.FUNCTION}, "opencompass": {TemplateKind.INFER_CFG}}

#: The fields of ``[template]`` itself (a variant's table adds ``model``).
_TEMPLATE_FIELDS = tuple(f.name for f in dataclasses.fields(TemplateConfig))


@dataclass(frozen=True)
class VariantConfig(TemplateConfig):
    """``[variants.NAME]``: the ``[template]`` keys a prompt version overrides, and its own ``model`` keys."""

    model: Override[ModelConfig] | None = key(
        None, "The [model] keys this variant changes (any but batch and budget_usd)."
    )


@dataclass(frozen=True)
class SuiteCheck(ConfigTable):
    """``[[checks]]``: checks for every case (``slice = "*"``), one slice, or a glob of slices."""

    assert_: list[dict[str, Any]] = key(dataclasses.MISSING, "The checks, as a case's assert.", alias="assert")
    slice: str = key("*", "The slice they apply to: a name, a glob, or * for every case.")


@dataclass(frozen=True)
class ReviewConfig(ConfigTable):
    """``[review]``: what a review mark (``review`` on a case, a ``human-review`` check) does."""

    outcome: Literal["review", "failed"] = key(
        "review", "review: the case is left out of the pass rate; failed: it fails."
    )


@dataclass(frozen=True)
class SuiteTables(ConfigTable):
    """The tables of a suite config file (``[checks]`` may also be a table with ``[[checks.rules]]``)."""

    suite: SuiteSection = key(SuiteSection, "What to collect.")
    model: ModelConfig = key(ModelConfig, "The default model; --prompt-model replaces its spec or names one of models.")
    models: dict[str, ModelConfig] = key(
        dict, "More models by name (judge: the llm-rubric judge); same keys as [model]."
    )
    template: TemplateConfig = key(TemplateConfig, "How a case becomes a prompt.")
    variants: dict[str, VariantConfig] = key(dict, "Prompt versions by name; each overrides keys of [template].")
    thresholds: Thresholds = key(Thresholds, "The gate's pass rates.")
    gate: Override[GateSettings] = key(Override, "How a drop against the baseline is judged.")
    checks: list[SuiteCheck] = key(list, "Suite-level checks, for every case or for some slices.")
    review: ReviewConfig = key(ReviewConfig, "What a review mark does.")
    judge: JudgeSettings = key(JudgeSettings, "The llm-rubric judge's prompt, repeats and calibration.")


@dataclass(frozen=True)
class SuiteConfig(SuiteTables):
    """A parsed suite config: its tables, ``[checks] python_modules``, its file (None: defaults), each key's line."""

    python_modules: tuple[str, ...] = ()
    path: Path | None = None
    lines: dict[str, int] = field(default_factory=dict)

    def where(self, key: str) -> str:
        """Return ``path:line`` of the line setting ``key`` (``template.template_file``), else the path."""
        return place(self.path, self.lines, key)

    @property
    def root(self) -> Path:
        """The folder paths in this config are relative to."""
        return self.path.parent if self.path is not None else Path.cwd()

    def resolve(self, relative: str, *, key: str) -> Path:
        """Resolve a path of this config (links followed); it must stay inside the config's folder."""
        target = confine(self.root, relative)
        if target is None:
            raise ConfigError(f"{self.where(key)}: {key} = {relative!r} points outside the suite's folder {self.root}")
        return target

    def case_paths(self) -> list[Path]:
        """Return the ``[suite] cases`` paths, resolved (each must stay inside the config's folder)."""
        return [self.resolve(p, key="suite.cases") for p in self.suite.cases]

    def template_for(self, variant: str | None) -> TemplateConfig:
        """Return the ``[template]`` table as ``variant`` sees it (None: ``[template]`` itself)."""
        if variant is None:
            return self.template
        if variant not in self.variants:
            raise ConfigError(
                f"{self.where('variants')}: no variant {variant!r}"
                + did_you_mean(variant, list(self.variants))
                + f"; variants: {', '.join(self.variants) or 'none'}"
            )
        return self.template.for_variant(self.variants[variant])

    def template_key(self, variant: str | None, key: str) -> str:
        """Return where ``variant``'s ``[template]`` setting came from: ``variants.NAME.KEY`` or ``template.KEY``."""
        if variant is not None and variant in self.variants and key in self.variants[variant].set_keys():
            return f"variants.{variant}.{key}"
        return f"template.{key}"

    def refuse_keys_of_other_kinds(self, table: TemplateConfig, variant: str | None) -> None:
        """Refuse, on a table that is not a task prompt, the keys of task prompts (``mode``, ``nemo_config``,
        ``semantics``, ``prompt_model``; a ``semantics`` whose rules apply to its kind excepted),
        ``nunjucks_filters`` outside promptfoo's template files and ``renderer`` outside template files."""
        kind = table.kind(path=self.path)

        def where(name: str) -> str:
            return self.where(self.template_key(variant, name))

        for name in ("mode", "nemo_config", "semantics", "prompt_model"):
            if name == "semantics" and kind in _SEMANTICS_KINDS.get(table.semantics or "", set()):
                continue
            if getattr(table, name) is not None:
                raise ConfigError(f"{where(name)}: template.{name} applies to task prompts; add task_prompts and task")
        if table.nunjucks_filters and not (table.semantics == "promptfoo" and kind is TemplateKind.FILE):
            raise ConfigError(
                f"{where('nunjucks_filters')}: template.nunjucks_filters applies to semantics = 'promptfoo'"
            )
        if table.renderer is not None and kind is not TemplateKind.FILE:
            raise ConfigError(f"{where('renderer')}: template.renderer needs a 'template_file' or 'template'")

    def slice_problems(self, slices: Collection[str]) -> list[str]:
        """Return a ``path:line`` problem for each slice the config names (a threshold, a suite check's
        ``slice``) that no case of ``slices`` matches, with the nearest slice."""
        named = [(f"thresholds.slices.{name}", "[thresholds.slices]", name) for name in self.thresholds.slices]
        named += [(f"checks[{i}].slice", "[[checks]] slice =", check.slice) for i, check in enumerate(self.checks)]
        return [self._no_slice(at, label, name, slices) for at, label, name in named if not _matches(name, slices)]

    def _no_slice(self, at: str, label: str, name: str, slices: Collection[str]) -> str:
        """Say that the slice ``name`` of ``label`` (set at ``at``) matches no slice of the cases."""
        known = ", ".join(sorted(slices)) or "none"
        hint = did_you_mean(name, slices)
        return f"{self.where(at)}: {label} {name!r} matches no case's slice{hint}; the slices: {known}"

    def refuse_misplaced_system(self, variant: str | None) -> None:
        """Refuse ``system`` with ``system_file``, or beside a prompt that writes its own messages (an infer_cfg,
        a task prompt, a prompt function, an imported template's ``semantics``), naming the key's line."""
        table = self.template_for(variant)
        names = [name for name in ("system", "system_file") if getattr(table, name) is not None]
        if not names:
            return
        where = self.where(self.template_key(variant, names[0]))
        if len(names) == 2:
            raise ConfigError(f"{where}: [template] has both 'system' and 'system_file'; keep one")
        other = [k for kind in TemplateKind if kind is not TemplateKind.FILE for k in kind.choosing_keys]
        clash = [k for k in (*other, "semantics") if getattr(table, k) is not None]
        if clash:
            raise ConfigError(
                f"{where}: template.{names[0]} goes with a template, a template_file or no template (the input as "
                f"the user message), not with {clash[0]!r}, whose prompt writes its own messages"
                + _SYSTEM_HINTS.get(clash[0], "")
            )

    def named_models(self) -> list[tuple[str, ModelConfig]]:
        """Return each model table with its key: ``model``, then each ``models.NAME``."""
        return [("model", self.model), *((f"models.{k}", v) for k, v in self.models.items())]

    def model_for(self, variant: str | None, base: ModelConfig | None = None) -> ModelConfig:
        """Return the model ``variant`` runs: ``base`` (default ``[model]``) under the variant's ``model`` keys."""
        base = base if base is not None else self.model
        override = self.variants[variant].model if variant is not None and variant in self.variants else None
        return base if override is None else override.over(base)


#: How a prompt of another kind says its system message.
_SYSTEM_HINTS = {
    "prompt_template": " (an infer_cfg's system message is a round entry with role = 'SYSTEM', or its meta "
    "template's begin)",
    "task_prompts": " (a task prompt's messages are in its prompts.yml)",
    "task": " (a task prompt's messages are in its prompts.yml)",
}


def _matches(pattern: str, slices: Collection[str]) -> bool:
    """Tell whether a slice name or glob (``*`` for every case) matches one of ``slices``."""
    return pattern in slices or any(fnmatch.fnmatchcase(name, pattern) for name in slices)


_CHECKS_TABLE = ("python_modules", "rules")


def _checks_table(data: dict[str, Any], path: Path, lines: dict[str, int]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Split a ``[checks]`` table into the suite checks (``[[checks.rules]]``) and ``python_modules``.
    TOML cannot hold a ``[checks]`` table and ``[[checks]]`` tables both, hence the second spelling."""
    if "python_modules" in data:
        at = place(path, lines, "python_modules")
        raise ConfigError(f"{at}: unknown key 'python_modules' (did you mean [checks] python_modules?)")
    table = data.get("checks")
    if not isinstance(table, dict):
        return data, ()
    for name in table:
        if name not in _CHECKS_TABLE:
            raise ConfigError(
                f"{place(path, lines, f'checks.{name}')}: unknown key 'checks.{name}'"
                + did_you_mean(str(name), list(_CHECKS_TABLE))
                + "; with [checks] python_modules, write the suite checks as [[checks.rules]]"
            )
    modules = table.get("python_modules", [])
    if not isinstance(modules, list) or not all(_is_module_name(m) for m in modules):
        raise ConfigError(
            f"{place(path, lines, 'checks.python_modules')}: checks.python_modules must be a list of module names "
            "like 'myapp.checks'"
        )
    return {**data, "checks": table.get("rules", [])}, tuple(modules)


def _is_module_name(name: Any) -> bool:
    return isinstance(name, str) and bool(name) and all(part.isidentifier() for part in name.split("."))


def _check_base_urls(config: SuiteConfig, table: str) -> None:
    """Refuse a ``base_url`` of ``[model]`` or ``[models.NAME]`` that :func:`base_url_problem` finds wrong."""
    for name, model in config.named_models():
        problem = model.base_url and base_url_problem(model.base_url)
        if problem:
            dotted, url = f"{table}.{name}" if table else name, public_url(model.base_url or "")
            raise ConfigError(f"{config.where(f'{name}.base_url')}: {dotted}.base_url = {url!r} {problem}")


def _check_params(config: SuiteConfig, table: str) -> None:
    """Refuse a ``params`` key of a model (a variant's too) that :func:`param_problem` finds a likely typo."""
    tables = [(name, model.params) for name, model in config.named_models()]
    tables += [
        (f"variants.{name}.model", v.model.get("params") or {}) for name, v in config.variants.items() if v.model
    ]
    for name, params in tables:
        for param in params:
            problem = param_problem(param)
            if problem:
                dotted = f"{table}.{name}" if table else name
                raise ConfigError(f"{config.where(f'{name}.params.{param}')}: {dotted}.params.{param} {problem}")


def load_config(path: Path | str) -> SuiteConfig:
    """Parse a ``promptsuite.toml`` (or the ``[tool.promptsuite]`` table of a ``pyproject.toml``)."""
    path = Path(path)
    document, text = load_toml(path)
    data, table = _our_table(document, path)
    check_values(data, text, str(path), (table,) if table else ())
    lines = key_lines(text)
    if table:
        lines = {k[len(table) + 1 :]: v for k, v in lines.items() if k.startswith(table + ".")}
    data, python_modules = _checks_table(data, path, lines)
    from pytest_promptsuite.config.config_schema import read_tables  # pydantic: loaded with the first config

    tables = read_tables(SuiteTables, data, path=path, prefix=table, lines=lines)
    read = {f.name: getattr(tables, f.name) for f in dataclasses.fields(tables)}
    config = SuiteConfig(**read, python_modules=python_modules, path=path.resolve(), lines=lines)
    _check_base_urls(config, table)
    _check_params(config, table)
    _check_paths(config)
    for variant in [None, *config.variants]:
        config.refuse_misplaced_system(variant)
    return config


def _our_table(document: dict[str, Any], path: Path) -> tuple[dict[str, Any], str]:
    """Return the config's table and its name: the file's top level, or a ``pyproject.toml``'s
    ``[tool.promptsuite]``."""
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
    return data, table


def _check_paths(config: SuiteConfig) -> None:
    """Refuse a path of the config outside its folder now, not later: case files, the train file, a fake model's
    rules (--prompt-model may name a file anywhere)."""
    config.case_paths()
    if config.suite.train is not None:
        config.resolve(config.suite.train, key="suite.train")
    for name, model in config.named_models():
        if model.spec.startswith("fake:") and confine(config.root, model.spec[len("fake:") :]) is None:
            raise ConfigError(
                f"{config.where(f'{name}.spec')}: {name}.spec = {model.spec!r} points outside the suite's folder "
                f"{config.root.resolve()} (--prompt-model may name a file anywhere)"
            )


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) of a ``promptsuite.toml``, for editors and the docs."""
    from pytest_promptsuite.config.config_schema import table_json_schema  # pydantic: loaded only when asked

    return table_json_schema(SuiteTables)


def find_config(case_file: Path, rootdir: Path) -> Path | None:
    """Find a case file's config: ``promptsuite.toml`` beside it, else the nearest ``pyproject.toml``
    with a ``[tool.promptsuite]`` table between it and ``rootdir``."""
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
    """Return the config a ``--prompt-suite`` argument names (if any) and what to collect.

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
