"""The Jinja2 sandbox every task prompt and ``jinja`` template runs in.

Jinja's sandbox, stricter: no attribute of the data is reachable, only its items, and an undefined
variable is an error naming it. The environment starts with Jinja's own filters only; the filters
a template uses are asked of one lookup (``make_filter``, the ``pytest_promptsuite_make_jinja_filter``
hook under pytest), so a conftest's filter wins over ours and ours over Jinja's of the same name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext
from jinja2.sandbox import SandboxedEnvironment

from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.files.bounded import BOUNDED_BINOPS
from pytest_promptsuite.prompts.files.bounded import LimitRefused
from pytest_promptsuite.prompts.files.bounded import bounded_binop
from pytest_promptsuite.prompts.files.bounded import bounded_filter
from pytest_promptsuite.prompts.files.bounded import bounded_output
from pytest_promptsuite.prompts.files.bounded import bounded_range
from pytest_promptsuite.prompts.files.filters import MakeFilter
from pytest_promptsuite.safety.deadline import time_budget
from pytest_promptsuite.safety.limits import RENDER_SECONDS


__all__ = [
    "compile_template",
    "install_filters",
    "render_template",
    "sandbox_environment",
    "template_error",
    "used_filters",
]

_SAFE_RUNTIME = (LoopContext, jinja2.utils.Cycler, jinja2.utils.Joiner, jinja2.utils.Namespace)


class _DataSandbox(SandboxedEnvironment):
    """Jinja's sandbox, stricter: no attribute of the data is reachable, only its items, and the
    work a template can ask for is bounded (:mod:`.bounded`).

    The stock sandbox allows ``input.upper()`` or ``history.pop()``; a prompt needs neither
    (filters do the work), and refusing them all keeps a prompt file from being a program.
    """

    intercepted_binops = BOUNDED_BINOPS  # checked at run time, so never folded while compiling

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals["range"] = bounded_range
        self.filters = _Filters(self.filters)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, _SAFE_RUNTIME):
            return super().is_safe_attribute(obj, attr, value)
        return False

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        bounded_binop(operator, left, right)
        return self.binop_table[operator](left, right)


class _Filters(dict[str, Any]):
    """The environment's filters, each bounded as it is installed (Jinja's own and ours)."""

    def __init__(self, filters: Mapping[str, Any]) -> None:
        super().__init__()
        for name, function in filters.items():
            self[name] = function

    def __setitem__(self, name: str, function: Any) -> None:
        super().__setitem__(name, bounded_filter(name, function))


def sandbox_environment() -> SandboxedEnvironment:
    """The environment every task prompt and ``jinja`` renderer uses: sandboxed, strict about
    undefined variables, no autoescape, text kept as written (no newline trimming), Jinja's own
    filters only (:func:`install_filters` adds the ones a template uses)."""
    return _DataSandbox(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


def used_filters(env: SandboxedEnvironment, source: str) -> set[str]:
    """The filter names ``source`` uses: ``x | name``, ``{% filter name %}`` and the filter a
    ``map('name')`` applies. Raises jinja2.TemplateSyntaxError for a template that does not parse."""
    names = set()
    for node in env.parse(source).find_all(nodes.Filter):
        names.add(node.name)
        if node.name == "map" and node.args and isinstance(node.args[0], nodes.Const):
            if isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


def install_filters(env: SandboxedEnvironment, sources: Iterable[str], make_filter: MakeFilter) -> None:
    """Ask ``make_filter`` for every filter the templates use, and install what it makes (over
    Jinja's filter of the same name); a name it returns None for keeps Jinja's, if any."""
    names: set[str] = set()
    for source in sources:
        try:
            names |= used_filters(env, source)
        except (jinja2.TemplateSyntaxError, RecursionError):
            pass  # reported with its location when the template is compiled
    for name in sorted(names):
        made = make_filter(name)
        if made is not None:
            env.filters[name] = made


def _undefined_name(message: str) -> str | None:
    match = re.fullmatch(r"'([^']+)' is undefined", message)
    return match.group(1) if match else None


def template_error(where: str | None, exc: Exception) -> TemplateError:
    """One clear message for whatever Jinja raised while rendering ``where`` (None: no prefix)."""
    if isinstance(exc, LimitRefused):
        text = f"refused by the sandbox: {exc}"
    elif isinstance(exc, SecurityError):
        text = (
            f"refused by the sandbox: {exc} (templates may read items of the row, "
            "e.g. turn['content'], but no attributes or methods)"
        )
    elif isinstance(exc, jinja2.UndefinedError):
        name = _undefined_name(str(exc))
        text = f"undefined variable {name!r}" if name is not None else str(exc)
    elif isinstance(exc, PromptSuiteError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return TemplateError(f"{where}: {text}" if where else text)


def compile_template(env: SandboxedEnvironment, source: str, where: str | None) -> jinja2.Template:
    """Compile ``source``; a syntax error or an unknown filter is a TemplateError naming ``where``."""
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:  # unknown filters too (TemplateAssertionError)
        text = f"line {exc.lineno} of the template: {exc.message}"
        raise TemplateError(f"{where}: {text}" if where else text) from exc
    except RecursionError:  # Jinja's parser recurses once per bracket or parenthesis
        text = "the template nests its expressions deeper than Jinja's parser can read"
        raise TemplateError(f"{where}: {text}" if where else text) from None


def render_template(template: jinja2.Template, row: Mapping[str, Any], where: str | None) -> str:
    """Render a compiled template with ``row`` as its context, its output and time bounded;
    every failure is a TemplateError."""
    try:
        with time_budget(RENDER_SECONDS, "the template"):
            return bounded_output(template.root_render_func(template.new_context(dict(row))))
    except Exception as exc:  # jinja2 errors, ours from a filter, anything a filter raised
        raise template_error(where, exc) from exc
