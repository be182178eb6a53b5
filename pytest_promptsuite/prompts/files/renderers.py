"""Renderers for string templates (Spring AI's ``TemplateRenderer``): one template, one row, one
string, with the substitution syntax chosen per suite.

- ``format`` (the default): ``{name}`` placeholder substitution exactly as docs/templates.md says
  (single pass; an unknown ``{name}`` stays verbatim, as in OpenCompass).
- ``delimiters``: ``start`` + name + ``end`` with tokens of your choice (``<composer>``,
  ``[[name]]``), so JSON-heavy prompts need no escaping. Strict by default: a placeholder-shaped
  name that is not in the row is an error naming it (Spring AI's StringTemplate throws too);
  ``strict = false`` keeps it verbatim instead.
- ``jinja``: Jinja2 in the same sandbox as task prompts (undefined variables are errors).
- ``none``: no substitution at all (the template is already the prompt).

A renderer is made by one lookup, ``make_renderer(name, params)``: the
``pytest_promptsuite_make_renderer`` hook under pytest (a plugin's first, then
:func:`builtin_renderer`), :func:`builtin_renderer` itself elsewhere.
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

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.errors import nearest
from pytest_promptsuite.prompts.fields import FieldRead
from pytest_promptsuite.prompts.fields import jinja_reads
from pytest_promptsuite.prompts.fields import placeholder_reads
from pytest_promptsuite.prompts.files.filters import MakeFilter
from pytest_promptsuite.prompts.files.filters import builtin_filter
from pytest_promptsuite.prompts.opencompass.substitute import substitute
from pytest_promptsuite.prompts.opencompass.substitute import value_text
from pytest_promptsuite.prompts.pluggable import check_params
from pytest_promptsuite.prompts.pluggable import split_spec
from pytest_promptsuite.prompts.pluggable import unknown_part


if TYPE_CHECKING:
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment


__all__ = [
    "BUILTIN_RENDERERS",
    "DelimiterRenderer",
    "FormatRenderer",
    "JinjaRenderer",
    "MakeRenderer",
    "NeedsFilters",
    "NoneRenderer",
    "Renderer",
    "builtin_renderer",
    "get_renderer",
]


@runtime_checkable
class Renderer(Protocol):
    """Fills a template string from a row. Raise :class:`TemplateError` naming the variable."""

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """The filled template."""


@runtime_checkable
class NeedsFilters(Protocol):
    """A renderer that runs Jinja templates and so needs the suite's filter lookup.

    :func:`get_renderer` calls ``with_filters`` on what the renderer lookup made, because a hook
    caller may not pass ``make_filter`` to ``pytest_promptsuite_make_renderer``.
    """

    def with_filters(self, make_filter: MakeFilter) -> Renderer:
        """This renderer using ``make_filter`` (itself if it already has a filter lookup)."""


#: ``make(name, params) -> Renderer | None`` (the ``pytest_promptsuite_make_renderer`` hook).
MakeRenderer = Callable[[str, dict[str, Any]], Union[Renderer, None]]


@dataclass(frozen=True)
class FormatRenderer:
    """``{name}`` substitution as docs/templates.md says (unknown placeholders stay verbatim)."""

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """``template`` with each ``{name}`` of the row replaced (:func:`substitute`)."""
        return substitute(template, row)

    def fields(self, template: str) -> list[FieldRead]:
        """The ``{name}`` fields ``template`` reads (an unprovided one would stay verbatim)."""
        return placeholder_reads(template)


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
        """``template`` with each placeholder filled; an unknown one is an error when ``strict``."""

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
        """The identifier placeholders ``template`` reads; guarded (may be absent) unless ``strict``."""
        return placeholder_reads(template, _delimited(self.start, self.end, ()), guarded=not self.strict)


@lru_cache(maxsize=256)
def _delimited(start: str, end: str, keys: tuple[str, ...]) -> re.Pattern[str]:
    """``start`` + (a row key, longest first, or an identifier) + ``end``."""
    names = [re.escape(k) for k in sorted(keys, key=len, reverse=True)] + [r"[^\W\d]\w*"]
    return re.compile(re.escape(start) + "(" + "|".join(names) + ")" + re.escape(end))


@dataclass
class JinjaRenderer:
    """Jinja2 in the task prompts' sandbox; compiled templates are cached by their text.

    ``make_filter`` is asked for each filter a template uses; None until :meth:`with_filters`
    gives one, and the built-in filters (:func:`builtin_filter`) are used while it is None.
    """

    make_filter: MakeFilter | None = None
    _env: SandboxedEnvironment = field(init=False, repr=False)
    _cache: dict[str, jinja2.Template] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        from pytest_promptsuite.prompts.files.jinja import (
            sandbox_environment,  # Jinja2 loads with the first Jinja template
        )

        self._env = sandbox_environment()

    def with_filters(self, make_filter: MakeFilter) -> JinjaRenderer:
        """This renderer if it has a filter lookup already, else a new one using ``make_filter``."""
        return self if self.make_filter is not None else JinjaRenderer(make_filter)

    def _compiled(self, template: str) -> jinja2.Template:
        compiled = self._cache.get(template)
        if compiled is None:
            from pytest_promptsuite.prompts.files.jinja import compile_template
            from pytest_promptsuite.prompts.files.jinja import install_filters

            install_filters(self._env, [template], self.make_filter or builtin_filter)
            compiled = compile_template(self._env, template, None)
            self._cache[template] = compiled
        return compiled

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """``template`` rendered with the row as its context (compiled once per text)."""
        from pytest_promptsuite.prompts.files.jinja import render_template

        return render_template(self._compiled(template), row, None)

    def fields(self, template: str) -> list[FieldRead]:
        """The variables ``template`` reads; compiling it first, so a syntax error or an unknown
        filter is a TemplateError now (at collection), not once per case."""
        self._compiled(template)
        return jinja_reads(self._env, template)


@dataclass(frozen=True)
class NoneRenderer:
    """No substitution: the template is sent as written."""

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """``template`` itself."""
        return template

    def fields(self, template: str) -> list[FieldRead]:
        """Nothing: no field is read."""
        return []


def _delimiters(params: dict[str, Any]) -> Renderer:
    if "start" not in params or "end" not in params:
        raise ConfigError(
            "renderer 'delimiters' needs 'start' and 'end', "
            'e.g. { type = "delimiters", start = "<", end = ">" }'
        )
    strict = params.get("strict", True)
    if not isinstance(strict, bool):
        raise ConfigError("renderer 'delimiters': 'strict' must be true or false")
    return DelimiterRenderer(params["start"], params["end"], strict)


#: The names :func:`builtin_renderer` answers, and the params each takes.
_PARAMS: dict[str, tuple[str, ...]] = {"format": (), "delimiters": ("start", "end", "strict"), "jinja": (), "none": ()}
#: The names :func:`builtin_renderer` answers, for error messages.
BUILTIN_RENDERERS = tuple(_PARAMS)


def builtin_renderer(name: str, params: dict[str, Any]) -> Renderer | None:
    """Our renderer ``name`` made with ``params``, or None when ``name`` is not ours; a
    ConfigError for bad params. The built-in answer of the ``pytest_promptsuite_make_renderer``
    hook (``jinja`` gets its filter lookup from :func:`get_renderer`)."""
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
    """The renderer for ``renderer = NAME`` or ``{ type = NAME, ... }`` (None: ``format``).

    ``make`` (the ``pytest_promptsuite_make_renderer`` hook, else :func:`builtin_renderer`) makes
    it, and a renderer that runs Jinja (:class:`NeedsFilters`) gets ``make_filter``, the Jinja
    filter lookup (the ``pytest_promptsuite_make_jinja_filter`` hook, else the built-ins).
    """
    name, params = ("format", {}) if spec is None else split_spec(spec, key="template.renderer")
    made = make(name, dict(params))
    if made is None:
        raise unknown_part("renderer", name, BUILTIN_RENDERERS, "pytest_promptsuite_make_renderer")
    if not callable(getattr(made, "render", None)):
        raise ConfigError(f"the renderer made for {name!r} has no render(template, row) method")
    if isinstance(made, NeedsFilters):
        return made.with_filters(make_filter)
    return made
