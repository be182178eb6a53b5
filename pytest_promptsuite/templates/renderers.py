"""Renderers for string templates (Spring AI's ``TemplateRenderer``): one template, one row, one
string, with the substitution syntax chosen per suite.

- ``format`` (the default): ``{name}`` placeholder substitution exactly as SPEC-templates §4 says
  (single pass; an unknown ``{name}`` stays verbatim, as in OpenCompass).
- ``delimiters``: ``start`` + name + ``end`` with tokens of your choice (``<composer>``,
  ``[[name]]``), so JSON-heavy prompts need no escaping. Strict by default: a placeholder-shaped
  name that is not in the row is an error naming it (Spring AI's StringTemplate throws too);
  ``strict = false`` keeps it verbatim instead.
- ``jinja``: Jinja2 in the same sandbox as task prompts (undefined variables are errors).
- ``none``: no substitution at all (the template is already the prompt).

Template files are read byte for byte relative to the suite config, and a path that leaves the
suite's folder (``../x.txt``, or a symlink pointing outside) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from functools import lru_cache
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol
from typing import Union
from typing import runtime_checkable

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from ..cases import did_you_mean
from ..cases import nearest
from ..errors import ConfigError
from ..errors import TemplateError
from .substitute import substitute
from .substitute import value_text
from .task_prompts import MakeFilter
from .task_prompts import MakeParser
from .task_prompts import TaskPrompt
from .task_prompts import builtin_factory
from .task_prompts import compile_template
from .task_prompts import install_filters
from .task_prompts import load_task_prompts
from .task_prompts import render_template
from .task_prompts import sandbox_environment
from .task_prompts import split_spec
from .task_prompts import task_row


if TYPE_CHECKING:
    from ..cases import PromptCase
    from ..suite import SuiteConfig
    from ..suite import TemplateConfig
    from .prompt import Prompt


__all__ = [
    "BUILTIN_RENDERERS",
    "DelimiterRenderer",
    "FormatRenderer",
    "JinjaRenderer",
    "MakeRenderer",
    "NoneRenderer",
    "PromptSource",
    "Renderer",
    "StringTemplate",
    "get_renderer",
    "load_template_file",
    "prompt_source",
    "string_template",
    "variant_template",
]


@runtime_checkable
class Renderer(Protocol):
    """Fills a template string from a row. Raise :class:`TemplateError` naming the variable."""

    def render(self, template: str, row: Mapping[str, Any]) -> str: ...


#: ``make(name, params) -> Renderer | None`` (the ``pytest_promptsuite_make_renderer`` hook).
MakeRenderer = Callable[[str, dict[str, Any]], Union[Renderer, None]]


@dataclass(frozen=True)
class FormatRenderer:
    """``{name}`` substitution of SPEC-templates §4 (unknown placeholders stay verbatim)."""

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        return substitute(template, row)


@dataclass(frozen=True)
class DelimiterRenderer:
    """``start`` + name + ``end`` substitution, one left-to-right pass (values never re-scanned).

    A placeholder is the tokens around either a key of the row or an identifier (letters,
    digits, ``_``); text that is neither (``{"a": 1}`` with ``{``/``}``) is never touched.
    """

    start: str
    end: str
    strict: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.start, str) or not isinstance(self.end, str) or not self.start or not self.end:
            raise ConfigError("renderer 'delimiters' needs non-empty strings 'start' and 'end'")

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in row:
                return value_text(row[name])
            if self.strict:
                known = ", ".join(sorted(k for k in row if isinstance(k, str)))
                hint = nearest(name, [k for k in row if isinstance(k, str)])
                raise TemplateError(
                    f"undefined variable {name!r} (placeholder {match.group(0)!r})"
                    + (f"; did you mean {hint!r}?" if hint else ".")
                    + f" The row has: {known or 'nothing'}. Use renderer strict = false to keep "
                    "unknown placeholders verbatim."
                )
            return match.group(0)

        if self.start not in template:
            return template
        keys = tuple(k for k in row if isinstance(k, str) and k)
        return _delimited(self.start, self.end, keys).sub(fill, template)


@lru_cache(maxsize=256)
def _delimited(start: str, end: str, keys: tuple[str, ...]) -> re.Pattern[str]:
    """``start`` + (a row key, longest first, or an identifier) + ``end``."""
    names = [re.escape(k) for k in sorted(keys, key=len, reverse=True)] + [r"[^\W\d]\w*"]
    return re.compile(re.escape(start) + "(" + "|".join(names) + ")" + re.escape(end))


@dataclass
class JinjaRenderer:
    """Jinja2 in the task prompts' sandbox; compiled templates are cached by their text."""

    make_filter: MakeFilter | None = None
    _env: SandboxedEnvironment = field(init=False, repr=False)
    _cache: dict[str, jinja2.Template] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._env = sandbox_environment()

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        compiled = self._cache.get(template)
        if compiled is None:
            install_filters(self._env, [template], self.make_filter)
            compiled = compile_template(self._env, template, None)
            self._cache[template] = compiled
        return render_template(compiled, row, None)


@dataclass(frozen=True)
class NoneRenderer:
    """No substitution: the template is sent as written."""

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        return template


def _format(params: dict[str, Any], make_filter: MakeFilter | None) -> Renderer:
    return FormatRenderer()


def _delimiters(params: dict[str, Any], make_filter: MakeFilter | None) -> Renderer:
    if "start" not in params or "end" not in params:
        raise ConfigError(
            "renderer 'delimiters' needs 'start' and 'end', "
            'e.g. { type = "delimiters", start = "<", end = ">" }'
        )
    strict = params.get("strict", True)
    if not isinstance(strict, bool):
        raise ConfigError("renderer 'delimiters': 'strict' must be true or false")
    return DelimiterRenderer(params["start"], params["end"], strict)


def _jinja(params: dict[str, Any], make_filter: MakeFilter | None) -> Renderer:
    return JinjaRenderer(make_filter)


def _none(params: dict[str, Any], make_filter: MakeFilter | None) -> Renderer:
    return NoneRenderer()


_Factory = Callable[[dict[str, Any], Union[MakeFilter, None]], Renderer]
#: name -> (factory(params, make_filter), the params it takes)
BUILTIN_RENDERERS: dict[str, tuple[_Factory, tuple[str, ...]]] = {
    "format": (_format, ()),
    "delimiters": (_delimiters, ("start", "end", "strict")),
    "jinja": (_jinja, ()),
    "none": (_none, ()),
}


def get_renderer(
    spec: str | Mapping[str, Any] | None = None,
    *,
    make: MakeRenderer | None = None,
    make_filter: MakeFilter | None = None,
) -> Renderer:
    """The renderer for ``renderer = NAME`` or ``{ type = NAME, ... }`` (None: ``format``).

    ``make`` (the ``pytest_promptsuite_make_renderer`` hook) is asked first, so a plugin can add
    a type or replace a built-in; ``make_filter`` gives the ``jinja`` renderer plugin filters.
    """
    name, params = ("format", {}) if spec is None else split_spec(spec, key="template.renderer")
    if make is not None:
        made = make(name, dict(params))
        if made is not None:
            if not callable(getattr(made, "render", None)):
                raise ConfigError(f"the renderer made for {name!r} has no render(template, row) method")
            return made
    factory = builtin_factory("renderer", name, params, BUILTIN_RENDERERS, "pytest_promptsuite_make_renderer")
    return factory(params, make_filter)  # type: ignore[no-any-return]


# --- suite config glue -----------------------------------------------------------------------


def load_template_file(config: SuiteConfig, relative: str) -> str:
    """The text of ``template_file = RELATIVE``, byte for byte (UTF-8, no newline translation).

    The path is resolved against the config's folder with links followed, and must stay inside
    it (ConfigError otherwise, from :meth:`SuiteConfig.resolve`).
    """
    path = config.resolve(relative, key="template.template_file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{config.path}: template.template_file = {relative!r}: cannot read {path}: {exc.strerror}"
        ) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the template file is not UTF-8 text: {exc}") from exc


@dataclass(frozen=True)
class StringTemplate:
    """A template string with its renderer and a name for errors (the file, or ``template``)."""

    text: str
    renderer: Renderer
    name: str

    def render(self, row: Mapping[str, Any]) -> str:
        """The prompt for ``row``; a TemplateError names this template."""
        try:
            return self.renderer.render(self.text, row)
        except TemplateError as exc:
            raise TemplateError(f"{self.name}: {exc}") from exc


def string_template(
    config: SuiteConfig,
    template: TemplateConfig | None = None,
    *,
    make: MakeRenderer | None = None,
    make_filter: MakeFilter | None = None,
) -> StringTemplate | None:
    """``template_file`` (or an inline ``template`` string) of a template table with its
    ``renderer``; None when the table has neither. ``template`` defaults to ``config.template``."""
    table = template if template is not None else config.template
    if table.template_file is not None and table.template is not None:
        raise ConfigError(f"{config.path}: [template] has both 'template_file' and 'template'; keep one")
    if table.template_file is not None:
        text = load_template_file(config, table.template_file)
        name = table.template_file
    elif table.template is not None:
        text, name = table.template, "template"
    else:
        if table.renderer is not None:
            raise ConfigError(f"{config.path}: template.renderer needs a 'template_file' or 'template'")
        return None
    try:
        renderer = get_renderer(table.renderer, make=make, make_filter=make_filter)
    except ConfigError as exc:
        raise ConfigError(f"{config.path}: {exc}") from exc
    return StringTemplate(text, renderer, name)


#: The three ways to make a prompt; a variant that sets a key of one drops the others' keys.
_KINDS = {
    "infer_cfg": ("prompt_template", "ice_template", "retriever", "infer_mode", "multiturn_template"),
    "task_prompts": ("task_prompts", "task", "mode"),
    "file": ("template_file", "template", "renderer"),
}


def variant_template(config: SuiteConfig, variant: str | None) -> TemplateConfig:
    """The ``[template]`` table as variant ``variant`` sees it: its keys override ``[template]``'s,
    and when it sets a key of another kind of prompt (say ``template_file`` over a
    ``task_prompts`` default), the default's keys of the other kinds are dropped."""
    if variant is None:
        return config.template
    if variant not in config.variants:
        raise ConfigError(
            f"{config.path}: no variant {variant!r}"
            + did_you_mean(variant, list(config.variants))
            + f"; variants: {', '.join(config.variants) or 'none'}"
        )
    override = config.variants[variant]
    updates = {k: getattr(override, k) for k in override.model_fields_set}
    kinds = {kind for kind, keys in _KINDS.items() if any(k in updates for k in keys)}
    base = config.template.model_dump()
    if kinds:
        for kind, keys in _KINDS.items():
            if kind not in kinds:
                for key in keys:
                    if key in base:
                        base[key] = None
    base.update(updates)
    return type(config.template).model_validate(base)


@dataclass(frozen=True)
class PromptSource:
    """What each case sends when its ``[template]`` table (after the variant) uses a task prompt
    or a string template: one of the two is set."""

    task_prompt: TaskPrompt | None = None
    string: StringTemplate | None = None

    def prompt(self, case: PromptCase) -> Prompt:
        """The prompt of ``case``: a string, or OpenAI-role messages (task prompts' ``messages``).
        TemplateError (naming the prompt or file, and the variable) when it does not render."""
        row = task_row(case)
        if self.task_prompt is not None:
            return self.task_prompt.render(row)
        assert self.string is not None
        return self.string.render(row)

    @property
    def params(self) -> dict[str, Any]:
        """Request params the task prompt sets (``stop``, ``max_tokens``); merge over the model's."""
        return self.task_prompt.params if self.task_prompt is not None else {}

    def parse_output(self, text: str) -> str:
        """The output the checks see (the task prompt's ``output_parser``); may raise
        :class:`OutputParserError`, which should fail the case, not error it."""
        return self.task_prompt.parse_output(text) if self.task_prompt is not None else text


def prompt_source(
    config: SuiteConfig,
    table: TemplateConfig | None = None,
    *,
    model: str | None = None,
    make_renderer: MakeRenderer | None = None,
    make_filter: MakeFilter | None = None,
    make_parser: MakeParser | None = None,
) -> PromptSource | None:
    """The prompt source of a ``[template]`` table (default ``config.template``; pass
    :func:`variant_template` for a variant), or None when it uses neither ``task_prompts`` nor
    ``template_file``/``template`` (the infer_cfg engine's business).

    Loads and compiles everything now, so any mistake is a ConfigError before a case runs; the
    task prompt is selected for ``model`` (the model's spec) and ``table.mode``.
    """
    table = table if table is not None else config.template
    uses_task = any(getattr(table, k) is not None for k in ("task_prompts", "task"))
    uses_string = any(getattr(table, k) is not None for k in ("template_file", "template"))
    uses_infer = any(
        getattr(table, k, None) is not None for k in ("prompt_template", "ice_template", "multiturn_template")
    )
    if sum((uses_task, uses_string, uses_infer)) > 1:
        raise ConfigError(
            f"{config.path}: [template] takes exactly one of: an infer_cfg (prompt_template), a task "
            "prompt (task_prompts + task) or a template file (template_file or template)"
        )
    if uses_task:
        if table.task_prompts is None or table.task is None:
            missing = "task_prompts" if table.task_prompts is None else "task"
            raise ConfigError(f"{config.path}: [template] uses task prompts but has no {missing!r}")
        prompts = load_task_prompts(
            config, table.task_prompts, make_filter=make_filter, make_parser=make_parser
        )
        return PromptSource(task_prompt=prompts.select(table.task, model, table.mode))
    if table.mode is not None:
        raise ConfigError(f"{config.path}: template.mode applies to task prompts; add task_prompts and task")
    string = string_template(config, table, make=make_renderer, make_filter=make_filter)
    return PromptSource(string=string) if string is not None else None
