"""Renderers for string templates: one template and one row into one string, with the substitution
syntax a suite chooses (``format``, ``delimiters``, ``jinja``, ``none``)."""

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

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.errors import nearest
from pytest_promptsuite.prompts.fields import FieldRead
from pytest_promptsuite.prompts.fields import jinja_reads
from pytest_promptsuite.prompts.fields import placeholder_reads
from pytest_promptsuite.prompts.files.history_filters import MakeFilter
from pytest_promptsuite.prompts.files.history_filters import builtin_filter
from pytest_promptsuite.prompts.files.substitute import substitute
from pytest_promptsuite.prompts.files.substitute import value_text
from pytest_promptsuite.prompts.pluggable import check_params
from pytest_promptsuite.prompts.pluggable import split_spec
from pytest_promptsuite.prompts.pluggable import unknown_part


if TYPE_CHECKING:
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment


@runtime_checkable
class Renderer(Protocol):
    """Fills a template string from a row; raises :class:`TemplateError` naming the variable."""

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """Return ``template`` filled from ``row``."""


@runtime_checkable
class NeedsFilters(Protocol):
    """A renderer that runs Jinja templates, and so gets the suite's filter lookup from
    :func:`get_renderer` (the renderer hook does not pass it)."""

    def with_filters(self, make_filter: MakeFilter) -> Renderer:
        """Return this renderer using ``make_filter`` (itself if it has a filter lookup already)."""


#: ``make(name, params) -> Renderer | None`` (the ``pytest_promptsuite_make_renderer`` hook).
MakeRenderer = Callable[[str, dict[str, Any]], Union[Renderer, None]]


@dataclass(frozen=True)
class FormatRenderer:
    """``{name}`` substitution (docs/templates.md, "Filling ``{name}``")."""

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """Replace each ``{name}`` of the row in ``template``."""
        return substitute(template, row)

    def fields(self, template: str) -> list[FieldRead]:
        """Return the ``{name}`` fields ``template`` reads."""
        return placeholder_reads(template)


@dataclass(frozen=True)
class DelimiterRenderer:
    """``start`` + name + ``end`` substitution in one pass, a name being a key of the row or an
    identifier (so ``{"a": 1}`` with ``{``/``}`` stays); an unknown name is an error if ``strict``."""

    start: str
    end: str
    strict: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.start, str) or not isinstance(self.end, str) or not self.start or not self.end:
            raise ConfigError("renderer 'delimiters' needs non-empty strings 'start' and 'end'")

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """Fill each placeholder of ``template`` from ``row``."""

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

    def fields(self, template: str) -> list[FieldRead]:
        """Return the identifier placeholders ``template`` reads (guarded unless ``strict``)."""
        return placeholder_reads(template, _delimited(self.start, self.end, ()), guarded=not self.strict)


@lru_cache(maxsize=256)
def _delimited(start: str, end: str, keys: tuple[str, ...]) -> re.Pattern[str]:
    names = [re.escape(k) for k in sorted(keys, key=len, reverse=True)] + [r"[^\W\d]\w*"]
    return re.compile(re.escape(start) + "(" + "|".join(names) + ")" + re.escape(end))


@dataclass
class JinjaRenderer:
    """Jinja2 in the task prompts' sandbox, each template compiled once; ``make_filter`` (the
    built-in filters while None) is asked for each filter a template uses."""

    make_filter: MakeFilter | None = None
    _env: SandboxedEnvironment = field(init=False, repr=False)
    _cache: dict[str, jinja2.Template] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._env = self._environment()

    def _environment(self) -> SandboxedEnvironment:
        from pytest_promptsuite.prompts.files.jinja import sandbox_environment  # Jinja2 loads here

        return sandbox_environment()

    def _filter(self, name: str) -> Any:
        return (self.make_filter or builtin_filter)(name)

    def with_filters(self, make_filter: MakeFilter) -> JinjaRenderer:
        """Return this renderer if it has a filter lookup already, else a new one using ``make_filter``."""
        return self if self.make_filter is not None else type(self)(make_filter)

    def _compiled(self, template: str) -> jinja2.Template:
        compiled = self._cache.get(template)
        if compiled is None:
            from pytest_promptsuite.prompts.files.jinja import compile_template
            from pytest_promptsuite.prompts.files.jinja import install_filters

            install_filters(self._env, [template], self._filter)
            compiled = compile_template(self._env, template, None)
            self._cache[template] = compiled
        return compiled

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """Render ``template`` with the row as its context."""
        from pytest_promptsuite.prompts.files.jinja import render_template

        return render_template(self._compiled(template), row, None)

    def fields(self, template: str) -> list[FieldRead]:
        """Return the variables ``template`` reads, compiling it first so that a syntax error or an
        unknown filter is a TemplateError at collection, not once per case."""
        self._compiled(template)
        return jinja_reads(self._env, template)


@dataclass(frozen=True)
class NoneRenderer:
    """No substitution: the template is sent as written."""

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """Return ``template`` as written."""
        return template

    def fields(self, template: str) -> list[FieldRead]:
        """Return no field: none is read."""
        return []


def _delimiters(params: dict[str, Any]) -> Renderer:
    if "start" not in params or "end" not in params:
        raise ConfigError(
            "renderer 'delimiters' needs 'start' and 'end', e.g. { type = \"delimiters\", start = \"<\", end = \">\" }"
        )
    strict = params.get("strict", True)
    if not isinstance(strict, bool):
        raise ConfigError("renderer 'delimiters': 'strict' must be true or false")
    return DelimiterRenderer(params["start"], params["end"], strict)


#: The names :func:`builtin_renderer` answers, and the params each takes.
_PARAMS: dict[str, tuple[str, ...]] = {"format": (), "delimiters": ("start", "end", "strict"), "jinja": (), "none": ()}
BUILTIN_RENDERERS = tuple(_PARAMS)


def builtin_renderer(name: str, params: dict[str, Any]) -> Renderer | None:
    """Make our renderer ``name`` with ``params`` (None for a name not ours): the built-in answer
    of ``pytest_promptsuite_make_renderer``."""
    if name not in _PARAMS:
        return None
    check_params("renderer", name, params, _PARAMS[name])
    if name == "delimiters":
        return _delimiters(params)
    if name == "jinja":
        return JinjaRenderer()
    return NoneRenderer() if name == "none" else FormatRenderer()


def get_renderer(
    spec: str | Mapping[str, Any] | None = None,
    *,
    make: MakeRenderer = builtin_renderer,
    make_filter: MakeFilter = builtin_filter,
) -> Renderer:
    """Make the renderer of ``renderer = NAME`` or ``{ type = NAME, ... }`` (None: ``format``) with
    ``make``; one that runs Jinja (:class:`NeedsFilters`) gets the filter lookup ``make_filter``."""
    name, params = ("format", {}) if spec is None else split_spec(spec, key="template.renderer")
    made = make(name, dict(params))
    if made is None:
        raise unknown_part("renderer", name, BUILTIN_RENDERERS, "pytest_promptsuite_make_renderer")
    if not callable(getattr(made, "render", None)):
        raise ConfigError(f"the renderer made for {name!r} has no render(template, row) method")
    if isinstance(made, NeedsFilters):
        return made.with_filters(make_filter)
    return made
